package feeder_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/oxypipe/oxypipe/internal/feeder"
	"github.com/oxypipe/oxypipe/pkg/oxytype"
	"github.com/oxypipe/oxypipe/pkg/payload"
)

func read(t *testing.T, input string, cfg feeder.ReadConfig) (*feeder.Spool, error) {
	t.Helper()
	if cfg.Dir == "" {
		cfg.Dir = t.TempDir()
	}
	return feeder.ReadJSONL(strings.NewReader(input), cfg)
}

func all(t *testing.T, src feeder.Source) []string {
	t.Helper()
	var out []string
	for p, err := range src.All() {
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, string(p.JSON()))
	}
	return out
}

func TestReadJSONLSpoolsEveryPayloadInOrder(t *testing.T) {
	t.Parallel()
	input := "\ufeff" + `{"source":"universal","url":"https://example.com/a","pages":1.0}` + "\r\n" +
		"\n   \n" +
		`{"source": "google_search", "query": "<b>&</b>", "x": {"y": [1, 2]}}` + "\n" +
		// Well formed, but the API would refuse it: fed, the submitter rejects it.
		`{"source":"universal","url":"https://127.0.0.1/"}`
	s, err := read(t, input, feeder.ReadConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s.Close() }()
	want := []string{
		`{"source":"universal","url":"https://example.com/a","pages":1.0}`,
		`{"source":"google_search","query":"<b>&</b>","x":{"y":[1,2]}}`,
		`{"source":"universal","url":"https://127.0.0.1/"}`,
	}
	if s.Len() != 3 || strings.Join(all(t, s), "\n") != strings.Join(want, "\n") {
		t.Fatalf("spool holds %d: %q", s.Len(), all(t, s))
	}
	if s.MaxBytes() != len(want[0]) {
		t.Errorf("MaxBytes = %d, want %d", s.MaxBytes(), len(want[0]))
	}
	// A source can be read more than once.
	if got := all(t, s); len(got) != 3 {
		t.Errorf("second read: %q", got)
	}

	kept := filepath.Join(t.TempDir(), "runs", "x.jsonl")
	if err := s.MoveTo(kept); err != nil {
		t.Fatal(err)
	}
	again, err := feeder.OpenSpool(kept)
	if err != nil {
		t.Fatal(err)
	}
	if again.Len() != 3 || again.MaxBytes() != s.MaxBytes() || strings.Join(all(t, again), "\n") != strings.Join(want, "\n") {
		t.Errorf("reopened spool: %d %d %q", again.Len(), again.MaxBytes(), all(t, again))
	}
	if err := again.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(kept); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Close left the spool file: %v", err)
	}
}

func TestReadJSONLStopsAtTheFirstBadLine(t *testing.T) {
	t.Parallel()
	ok := `{"source":"universal","url":"https://example.com/"}`
	for _, tc := range []struct {
		name   string
		line   string
		reason error
		text   string
	}{
		{"not JSON", `{"source":"universal","url":`, nil, "line 3: "},
		{"not an object", `["universal"]`, payload.ErrNotObject, "line 3: a payload must be a JSON object"},
		{"no source", `{"url":"https://example.com/"}`, oxytype.ErrNoSource, `line 3: the payload has no "source"`},
		{"a source that is not a string", `{"source":7,"url":"https://example.com/"}`, oxytype.ErrNoSource, `line 3: the payload has no "source"`},
		{"no input", `{"source":"universal","render":"html"}`, oxytype.ErrNoInput, "line 3: the payload has no input key"},
		{"too large", `{"source":"universal","url":"https://example.com/` + strings.Repeat("a", 200) + `"}`, oxytype.ErrTooLarge, "line 3: the payload is larger than the broker accepts"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			_, err := read(t, ok+"\n\n"+tc.line+"\n"+ok+"\n", feeder.ReadConfig{Dir: dir, MaxPayloadBytes: 100})
			var ie *oxytype.InputError
			if !errors.As(err, &ie) || ie.Line != 3 {
				t.Fatalf("err = %v", err)
			}
			if tc.reason != nil && !errors.Is(err, tc.reason) {
				t.Errorf("err = %v, want %v", err, tc.reason)
			}
			if !strings.HasPrefix(err.Error(), tc.text) {
				t.Errorf("text %q, want prefix %q", err.Error(), tc.text)
			}
			if strings.Contains(err.Error(), "example.com") {
				t.Errorf("the error shows the line's content: %q", err.Error())
			}
			if left, _ := os.ReadDir(dir); len(left) != 0 {
				t.Errorf("a failed read left %d files", len(left))
			}
		})
	}
}

func TestSliceCheck(t *testing.T) {
	t.Parallel()
	good := payload.New("universal", "url", "https://example.com/")
	noInput, err := payload.Parse([]byte(`{"source":"universal"}`), 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := feeder.Slice([]payload.Payload{good, good}).Check(0); err != nil {
		t.Errorf("Check = %v", err)
	}
	err = feeder.Slice([]payload.Payload{good, noInput}).Check(0)
	var ie *oxytype.InputError
	if !errors.As(err, &ie) || ie.Doc != 1 || ie.Line != 0 || !errors.Is(err, oxytype.ErrNoInput) {
		t.Errorf("Check = %v", err)
	}
	if err := feeder.Slice([]payload.Payload{good}).Check(10); !errors.Is(err, oxytype.ErrTooLarge) {
		t.Errorf("Check(10) = %v", err)
	}
}

func TestErrorTexts(t *testing.T) {
	t.Parallel()
	e := &oxytype.NoStatusWorkerError{Run: "r", Wait: 30e9}
	if e.Error() != "no statusworker answered within 30s; is one running?" || !errors.Is(e, oxytype.ErrNoStatusWorker) {
		t.Errorf("%q", e.Error())
	}
	f := &oxytype.RunFailedError{Run: "r", Reason: "the run log cannot be written to logs: access denied"}
	if !errors.Is(f, oxytype.ErrRunFailed) || f.Error() != "run r failed before anything was submitted: the run log cannot be written to logs: access denied" {
		t.Errorf("%q", f.Error())
	}
}
