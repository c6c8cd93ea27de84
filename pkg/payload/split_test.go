package payload

import (
	"encoding/json"
	"reflect"
	"testing"
)

// FuzzSplitMatchesDecode checks the fast path of parseObject against the
// streaming decoder it stands in for: on every valid object both give the
// same keys, in the same order, with the same compacted values.
func FuzzSplitMatchesDecode(f *testing.F) {
	for _, s := range []string{
		`{"source":"universal","url":"https://sandbox.oxylabs.io/","render":"html","pages":2}`,
		" { \"source\" : \"x\" ,\t\"context\" : [ { \"key\" : \"a\" , \"value\" : 1 } ] } ",
		`{"source":"x","query":"a\u0026b \"c\" \/ é <>","n":-0,"f":1e2,"t":true,"z":null}`,
		`{"url":"a","url":"b"}`, `{}`, `{"a":{}}`, `{"a":[]}`, `{"":""}`,
		`{"k\u00e9y":1,"\ud83d\ude00":2,"a\"b":3}`,
		"{\"\xff\":\"\xfe\"}",
		`{"a":{"b":[1, {"c" : "d e"}, "f\\"g"]}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		b := trimJSONSpace(line)
		if len(b) == 0 || b[0] != '{' || !json.Valid(b) {
			return
		}
		want, err := decodeObject(b)
		if err != nil {
			t.Fatalf("decodeObject(%q): %v", b, err)
		}
		got := splitObject(b)
		if len(want) == 0 && len(got) == 0 {
			return
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("splitObject(%q) = %q, decodeObject = %q", b, got, want)
		}
	})
}
