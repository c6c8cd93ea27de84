package jsonscan

import (
	"encoding/json"
	"reflect"
	"testing"
)

var seeds = []string{
	`{}`,
	` { } `,
	`null`,
	`[]`,
	` [ 1 , "a" , {"b":[2]} , null ] `,
	`{"v":1,"run":"r","doc":"3"}`,
	`{"v":1,"future":{"a":[1,2,"}]\"{"]},"zz":"last"}`,
	"{\n\t\"v\" : 1 ,\r\n \"x\" :\t[ {\"y\" : null} , true, false, -1.5e3 ] , \"n\" : 0 }",
	`{"x":1,"x":2,"v":1,"v":3}`,
	`{"d\u006fc":"3","k\u00e9y":"v","caf\u00e9":1,"tab\t":2}`,
	`{"\"quoted\"":"\\","back\\slash":"\"","":"empty key"}`,
	"{\"bad\xffutf8\":1,\"ok\":\"\xff\"}",
	`{"emoji😀":{"nested":{"deep":[[[]]]}},"s":"a\"b\\"}`,
	`{"a":"}","b":"]","c":"{","d":"["}`,
	`"a string"`, `12`, `true`,
}

// referenceObject is what Object must agree with: encoding/json's decode of
// the object into a map (the last of a repeated name wins).
func referenceObject(data []byte) (map[string]json.RawMessage, bool) {
	var m map[string]json.RawMessage
	if json.Unmarshal(data, &m) != nil || m == nil {
		return nil, false
	}
	return m, true
}

func objectMap(data []byte) (map[string]json.RawMessage, bool) {
	m := map[string]json.RawMessage{}
	ok := Object(data, func(name, value []byte) {
		m[string(name)] = json.RawMessage(value)
	})
	if !ok {
		return nil, false
	}
	return m, true
}

func check(t *testing.T, data []byte) {
	t.Helper()
	if !json.Valid(data) {
		return // the package's contract: valid JSON only
	}
	want, wantOK := referenceObject(data)
	got, gotOK := objectMap(data)
	if gotOK != wantOK || (wantOK && !reflect.DeepEqual(got, want)) {
		t.Fatalf("Object(%q) = %q, %t; encoding/json: %q, %t", data, got, gotOK, want, wantOK)
	}
	for name, v := range want {
		if m, ok := Member(data, name); !ok || string(m) != string(v) {
			t.Fatalf("Member(%q, %q) = %q, %t; want %q", data, name, m, ok, v)
		}
	}
	if _, ok := Member(data, "no such member"); ok && want["no such member"] == nil {
		t.Fatalf("Member(%q) found a member that is not there", data)
	}

	var wantElems []json.RawMessage
	wantArr := json.Unmarshal(data, &wantElems) == nil && wantElems != nil
	var gotElems []json.RawMessage
	gotArr := Array(data, func(v []byte) { gotElems = append(gotElems, v) })
	if gotArr != wantArr || (wantArr && len(gotElems)+len(wantElems) > 0 && !reflect.DeepEqual(gotElems, wantElems)) {
		t.Fatalf("Array(%q) = %q, %t; encoding/json: %q, %t", data, gotElems, gotArr, wantElems, wantArr)
	}

	var wantStr string
	wantIsStr := json.Unmarshal(data, &wantStr) == nil && data[SkipSpace(data, 0)] == '"'
	gotStr, gotIsStr := String(trimmed(data))
	if gotIsStr != wantIsStr || gotStr != wantStr {
		t.Fatalf("String(%q) = %q, %t; encoding/json: %q, %t", data, gotStr, gotIsStr, wantStr, wantIsStr)
	}
}

func trimmed(data []byte) []byte {
	i := SkipSpace(data, 0)
	return data[i:ValueEnd(data, i)]
}

func TestAgreesWithEncodingJSON(t *testing.T) {
	t.Parallel()
	for _, s := range seeds {
		check(t, []byte(s))
	}
}

func TestPlainNamesDoNotAllocate(t *testing.T) {
	data := []byte(`{"id":"7","status":"done","nested":{"a":[1,2,3]},"url":"https://example.com/"}`)
	allocs := testing.AllocsPerRun(100, func() {
		if v, ok := Member(data, "url"); !ok || len(v) == 0 {
			t.Fatal("url not found")
		}
	})
	if allocs != 0 {
		t.Fatalf("Member allocated %v times", allocs)
	}
}

// Invalid input gives unspecified answers, but always an answer.
func TestInvalidInputEnds(t *testing.T) {
	t.Parallel()
	for _, s := range []string{`{`, `{"a`, `{"a":`, `{"a":1 "b":2}`, `[,]`, `[1,,2`, `{"a":[}`, `"`, `{:}`, `[`, "\xff"} {
		Object([]byte(s), func(_, _ []byte) {})
		Array([]byte(s), func([]byte) {})
		Member([]byte(s), "a")
		String([]byte(s))
	}
}

func FuzzAgreesWithEncodingJSON(f *testing.F) {
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		check(t, data)
		// And never hangs or panics on anything.
		Object(data, func(_, _ []byte) {})
		Array(data, func([]byte) {})
	})
}
