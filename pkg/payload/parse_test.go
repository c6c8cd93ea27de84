package payload_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/oxypipe/oxypipe/pkg/payload"
)

func TestParseRoundTripsTheBodyAsGiven(t *testing.T) {
	t.Parallel()
	cases := []struct{ name, in, want string }{
		{"key order and unknown keys are kept",
			`{"url":"https://a.io/","source":"universal","zz_unknown":{"b":1,"a":2},"parse":"true"}`,
			`{"url":"https://a.io/","source":"universal","zz_unknown":{"b":1,"a":2},"parse":"true"}`},
		{"numbers keep their spelling", `{"source":"x","query":"q","pages":1.0,"limit":1e2,"n":-0}`,
			`{"source":"x","query":"q","pages":1.0,"limit":1e2,"n":-0}`},
		{"strings keep their escapes", `{"source":"x","query":"a\u0026b \"c\" \/ é <>"}`,
			`{"source":"x","query":"a\u0026b \"c\" \/ é <>"}`},
		{"whitespace between tokens goes", " { \"source\" : \"x\" ,\t\"context\" : [ { \"key\" : \"a\" , \"value\" : 1 } ] } ",
			`{"source":"x","context":[{"key":"a","value":1}]}`},
		{"a key set twice is kept twice", `{"source":"x","url":"a","url":"b"}`, `{"source":"x","url":"a","url":"b"}`},
		{"empty object", `{}`, `{}`},
		{"html stays unescaped", `{"source":"x","url":"https://a.io/?a=1&b=<2>"}`, `{"source":"x","url":"https://a.io/?a=1&b=<2>"}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p, err := payload.Parse([]byte(tc.in), 1)
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if got := string(p.JSON()); got != tc.want {
				t.Fatalf("JSON() = %s, want %s", got, tc.want)
			}
			b, err := p.MarshalJSON()
			if err != nil || string(b) != tc.want {
				t.Fatalf("MarshalJSON() = %s, %v", b, err)
			}
		})
	}
}

func TestParseNamesTheLineAndTheReason(t *testing.T) {
	t.Parallel()
	cases := []struct{ name, in, want string }{
		{"not json", `{"source": universal}`, "line 7: invalid JSON: invalid character 'u' looking for beginning of value at byte 12"},
		{"truncated", `{"source":"universal"`, "line 7: invalid JSON: unexpected end of line"},
		{"an array", `[{"source":"x"}]`, "line 7: a payload must be a JSON object, not an array"},
		{"a string", `"https://a.io"`, "line 7: a payload must be a JSON object, not a string"},
		{"a number", `42`, "line 7: a payload must be a JSON object, not a number"},
		{"null", `null`, "line 7: a payload must be a JSON object, not null"},
		{"two objects", `{"a":1} {"b":2}`, "line 7: invalid JSON: data after the object at byte 8"},
		{"blank", "  ", "line 7: empty line"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := payload.Parse([]byte(tc.in), 7)
			var le *payload.LineError
			if !errors.As(err, &le) || le.Line != 7 {
				t.Fatalf("Parse error = %v, want a *LineError for line 7", err)
			}
			if err.Error() != tc.want {
				t.Fatalf("error = %q, want %q", err, tc.want)
			}
		})
	}
}

func TestParseErrorNeverShowsTheLine(t *testing.T) {
	t.Parallel()
	_, err := payload.Parse([]byte(`{"source":"x","storage_url":"s3://KEY:SECRET@h/b",}`), 2)
	if err == nil || strings.Contains(err.Error(), "SECRET") {
		t.Fatalf("error = %v, want one without the line's content", err)
	}
	var le *payload.LineError
	if !errors.As(err, &le) || !errors.Is(err, le.Err) {
		t.Fatal("LineError does not unwrap to its reason")
	}
}

func TestParseNonObjectIsErrNotObject(t *testing.T) {
	t.Parallel()
	_, err := payload.Parse([]byte(`[1]`), 1)
	if !errors.Is(err, payload.ErrNotObject) {
		t.Fatalf("error = %v, want ErrNotObject", err)
	}
}

// BenchmarkParse parses a typical payload line, as every stage does for
// every payload.
func BenchmarkParse(b *testing.B) {
	line := []byte(`{"source":"universal","url":"https://sandbox.oxylabs.io/products/12345","render":"html","geo_location":"United States","context":[{"key":"follow_redirects","value":true}]}`)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := payload.Parse(line, 1); err != nil {
			b.Fatal(err)
		}
	}
}
