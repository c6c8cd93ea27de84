package payload_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"reflect"
	"testing"

	"github.com/oxypipe/oxypipe/pkg/payload"
)

// FuzzParse checks that Parse never panics, that what it accepts is exactly
// what encoding/json accepts as an object, and that a parsed payload
// re-emits a document with the same meaning which parses to the same bytes.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		`{"source":"universal","url":"https://sandbox.oxylabs.io/","render":"html","pages":2}`,
		`{"source":"google_search","query":"a\u0026b","context":[{"key":"filter","value":1}]}`,
		`{"url":"a","url":"b"}`,
		`{"a":1e400}`,
		`[1,2]`, `"x"`, `null`, `{`, `{"a":}`, `{} {}`, "{\"a\":\"\xff\"}",
		`{"storage_url":"s3://K:S@h/b/{{ job_id }}.{{ extension }}","source":"universal","url":"http://127.0.0.1"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		p, err := payload.Parse(line, 1)
		obj, jsonErr := decodeObject(line)
		isObject := jsonErr == nil && obj != nil
		if (err == nil) != isObject {
			t.Fatalf("Parse error %v, encoding/json error %v (object %v) for %q", err, jsonErr, isObject, line)
		}
		if err != nil {
			return
		}
		out := p.JSON()
		again, err := decodeObject(out)
		if err != nil {
			t.Fatalf("JSON() = %q is not valid JSON: %v", out, err)
		}
		if !reflect.DeepEqual(obj, again) {
			t.Fatalf("meaning changed: %q became %q", line, out)
		}
		q, err := payload.Parse(out, 1)
		if err != nil {
			t.Fatalf("re-parse of %q: %v", out, err)
		}
		if !bytes.Equal(q.JSON(), out) {
			t.Fatalf("not idempotent: %q then %q", out, q.JSON())
		}
		// None of these may panic on any object.
		_ = p.Validate()
		_ = p.BatchKey()
		_ = p.Pages()
		_ = p.Rendered()
		_ = p.Redacted()
		if p.Batchable() {
			if _, err := payload.BatchBody([]payload.Payload{p, p}); err != nil {
				t.Fatalf("BatchBody of a batchable payload: %v", err)
			}
		}
	})
}

// decodeObject is encoding/json's view of a line: one object, numbers kept
// as written, nothing after it.
func decodeObject(b []byte) (map[string]any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var obj map[string]any
	if err := dec.Decode(&obj); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("data after the object")
	}
	return obj, nil
}
