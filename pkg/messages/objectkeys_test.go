package messages

import (
	"encoding/json"
	"reflect"
	"regexp"
	"testing"
)

// referenceExtra is the two-pass definition unknownFields must match:
// decode the object into a map and drop the known names.
func referenceExtra(data []byte, known map[string]struct{}) Extra {
	var all map[string]json.RawMessage
	if json.Unmarshal(data, &all) != nil {
		return nil
	}
	var extra Extra
	for k, raw := range all {
		if _, ok := known[k]; ok {
			continue
		}
		if extra == nil {
			extra = make(Extra)
		}
		extra[k] = raw
	}
	return extra
}

var objectSeeds = []string{
	`{}`,
	` { } `,
	`null`,
	`{"v":1,"run":"r","doc":"3"}`,
	`{"v":1,"future":{"a":[1,2,"}]\"{"]},"zz":"last"}`,
	"{\n\t\"v\" : 1 ,\r\n \"x\" :\t[ {\"y\" : null} , true, false, -1.5e3 ] , \"n\" : 0 }",
	`{"x":1,"x":2,"v":1,"v":3}`,
	`{"V":1,"Run":"r","doc":"3"}`,
	`{"d\u006fc":"3","k\u00e9y":"v","caf\u00e9":1,"tab\t":2}`,
	`{"\"quoted\"":"\\","back\\slash":"\"","":"empty key"}`,
	"{\"bad\xffutf8\":1,\"ok\":\"\xff\"}",
	`{"emoji😀":{"nested":{"deep":[[[]]]}},"s":"a\"b\\"}`,
	`{"payload":{"source":"universal","url":"https://x/?a=1&b=<2>"},"time":"2026-09-29T17:04:12Z"}`,
	`{"a":"}","b":"]","c":"{","d":"["}`,
}

func TestUnknownFieldsMatchesAMapDecode(t *testing.T) {
	t.Parallel()
	for _, in := range objectSeeds {
		got := unknownFields([]byte(in), statusEventKeys)
		want := referenceExtra([]byte(in), statusEventKeys)
		if !reflect.DeepEqual(got, want) {
			t.Errorf("unknownFields(%q)\n got %q\nwant %q", in, got, want)
		}
	}
}

// Calling an envelope's UnmarshalJSON directly (as decode does) gives the
// same value and the same error as json.Unmarshal.
func TestDirectUnmarshalMatchesJSONUnmarshal(t *testing.T) {
	t.Parallel()
	inputs := append([]string{
		``, ` `, `{`, `{"v":1`, `{"v":1} x`, `[1]`, `"s"`, `12`, `true`,
		`{"v":"1"}`, `{"time":"yesterday"}`, `{"origin":{"type":5}}`, `{"error":{"status_code":"x"}}`,
		` {"v":1,"run":"r"} `,
	}, objectSeeds...)
	for _, in := range inputs {
		var direct, viaJSON StatusEvent
		errDirect := direct.UnmarshalJSON([]byte(in))
		errJSON := json.Unmarshal([]byte(in), &viaJSON)
		if (errDirect == nil) != (errJSON == nil) || (errDirect != nil && errDirect.Error() != errJSON.Error()) {
			t.Errorf("%q: direct error %v, json.Unmarshal error %v", in, errDirect, errJSON)
			continue
		}
		if errDirect == nil && !reflect.DeepEqual(direct, viaJSON) {
			t.Errorf("%q: direct %+v, json.Unmarshal %+v", in, direct, viaJSON)
		}
		if errDirect != nil && reflect.TypeOf(errDirect) != reflect.TypeOf(errJSON) {
			t.Errorf("%q: error types %T and %T", in, errDirect, errJSON)
		}
	}
}

func FuzzUnknownFields(f *testing.F) {
	for _, s := range objectSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var obj map[string]json.RawMessage
		if json.Unmarshal(data, &obj) != nil {
			return // unknownFields only ever sees valid JSON
		}
		got := unknownFields(data, payloadKeys)
		want := referenceExtra(data, payloadKeys)
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("unknownFields(%q)\n got %q\nwant %q", data, got, want)
		}
	})
}

// runIDPattern is the definition validRunID implements without a regexp.
var runIDPattern = regexp.MustCompile(`^[0-9A-Za-z][0-9A-Za-z.-]{0,63}$`)

var runIDSeeds = []string{
	"", "a", "0", ".a", "-a", "a.", "a-b.c", "a_b", "a b", "a\n", "\na", "é", "a\xff", "A9z.Z-0",
	"20260929T170412.345Z", "01J9ZQ5X8M6V0Q2D3E4F5G6H7J",
	"a123456789012345678901234567890123456789012345678901234567890123",
	"a1234567890123456789012345678901234567890123456789012345678901234",
}

func TestValidRunIDMatchesThePattern(t *testing.T) {
	t.Parallel()
	for _, s := range runIDSeeds {
		if got, want := validRunID(s), runIDPattern.MatchString(s); got != want {
			t.Errorf("validRunID(%q) = %v, want %v", s, got, want)
		}
	}
}

func FuzzValidRunID(f *testing.F) {
	for _, s := range runIDSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := validRunID(s), runIDPattern.MatchString(s); got != want {
			t.Fatalf("validRunID(%q) = %v, want %v", s, got, want)
		}
	})
}
