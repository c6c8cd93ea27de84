package emulator

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"
)

func FuzzDecodeObject(f *testing.F) {
	for _, s := range []string{
		`{"source":"universal","url":"https://a.com/"}`,
		` { "a" : [1, {"b":"]}\"x"}] , "c":null,"a":2 } `,
		`{}`, `[]`, `null`, `{"a":}`, `{"a\u0062":"\u00e9"}`, `{"a":"b"`, "{\"a\":\"\\\\\"}",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		got, ok := decodeObject(body)
		var want map[string]json.RawMessage
		wantOK := json.Unmarshal(body, &want) == nil && want != nil
		if ok != wantOK {
			t.Fatalf("decodeObject ok=%v, encoding/json ok=%v for %q", ok, wantOK, body)
		}
		if !ok {
			return
		}
		if len(got) != len(want) {
			t.Fatalf("%d keys, want %d", len(got), len(want))
		}
		for k, w := range want {
			var a, b bytes.Buffer
			if json.Compact(&a, got[k]) != nil || json.Compact(&b, w) != nil || a.String() != b.String() {
				t.Fatalf("key %q: %q, want %q", k, got[k], w)
			}
		}
	})
}

func FuzzAppendString(f *testing.F) {
	for _, s := range []string{"", "plain", "quote\" back\\slash", "ctl\x00\x1f\n\t", "é\u2028\u2029", "bad\xff utf8"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		enc := appendString(nil, s)
		var got string
		if err := json.Unmarshal(enc, &got); err != nil {
			t.Fatalf("%q encodes to invalid JSON %q: %v", s, enc, err)
		}
		want, _ := json.Marshal(s)
		var w string
		_ = json.Unmarshal(want, &w)
		if got != w {
			t.Fatalf("%q round-trips to %q, want %q", s, got, w)
		}
	})
}

func TestAppendStampMatchesTheAPIFormat(t *testing.T) {
	t.Parallel()
	for _, ts := range []time.Time{
		FakeEpoch(), time.Date(2026, 9, 24, 20, 7, 7, 999_999_999, time.UTC),
		time.Date(1999, 12, 31, 23, 59, 59, 0, time.UTC), time.Date(2026, 2, 28, 9, 5, 3, 0, time.FixedZone("X", 3600)),
	} {
		want := `"` + ts.UTC().Format(time.DateTime) + `"`
		if got := string(appendStamp(nil, ts.UnixNano())); got != want {
			t.Errorf("%v: %s, want %s", ts, got, want)
		}
	}
}
