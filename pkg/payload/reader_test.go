package payload_test

import (
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/oxypipe/oxypipe/pkg/payload"
)

type readResult struct {
	line int
	json string
	err  string
}

func readAll(r *payload.Reader) []readResult {
	var out []readResult
	for {
		p, line, err := r.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			var le *payload.LineError
			if !errors.As(err, &le) {
				return append(out, readResult{line: line, err: "stream: " + err.Error()})
			}
			out = append(out, readResult{line: line, err: err.Error()})
			continue
		}
		out = append(out, readResult{line: line, json: string(p.JSON())})
	}
}

func TestReaderYieldsPayloadsWithLineNumbers(t *testing.T) {
	t.Parallel()
	in := "\xef\xbb\xbf{\"source\":\"a\",\"query\":\"1\"}\r\n\n   \n{\"source\":\"b\",\n{\"source\":\"c\",\"query\":\"3\"}"
	got := readAll(payload.NewReader(strings.NewReader(in)))
	want := []readResult{
		{line: 1, json: `{"source":"a","query":"1"}`},
		{line: 4, err: "line 4: invalid JSON: unexpected end of line"},
		{line: 5, json: `{"source":"c","query":"3"}`},
	}
	if len(got) != len(want) {
		t.Fatalf("got %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("result %d = %+v, want %+v", i, got[i], want[i])
		}
	}
}

func TestReaderHandlesLongLines(t *testing.T) {
	t.Parallel()
	big := strings.Repeat("x", 5<<20) // 5 MiB inside one value
	in := `{"source":"universal","url":"https://a.io","client_notes":"` + big + `"}` + "\n" + `{"source":"u","query":"after"}` + "\n"
	r := payload.NewReader(iotest.HalfReader(strings.NewReader(in)))
	p, line, err := r.Next()
	if err != nil || line != 1 {
		t.Fatalf("Next() = line %d, %v", line, err)
	}
	if notes, _ := p.GetString("client_notes"); len(notes) != len(big) {
		t.Fatalf("client_notes has %d bytes, want %d", len(notes), len(big))
	}
	if _, line, err := r.Next(); err != nil || line != 2 {
		t.Fatalf("second Next() = line %d, %v", line, err)
	}
}

func TestReaderSkipsLinesOverTheLimit(t *testing.T) {
	t.Parallel()
	in := `{"source":"u","query":"` + strings.Repeat("y", 300) + `"}` + "\n" + `{"source":"u","query":"ok"}`
	r := payload.NewReader(strings.NewReader(in))
	r.MaxLineBytes = 100
	got := readAll(r)
	if len(got) != 2 || got[0].err != "line 1: line too long: more than 100 bytes" || got[1].json != `{"source":"u","query":"ok"}` || got[1].line != 2 {
		t.Fatalf("got %+v", got)
	}
}

func TestReaderReturnsStreamErrors(t *testing.T) {
	t.Parallel()
	boom := errors.New("disk on fire")
	r := payload.NewReader(io.MultiReader(strings.NewReader(`{"source":"u","query":"1"}`+"\n"), iotest.ErrReader(boom)))
	if _, _, err := r.Next(); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, _, err := r.Next(); !errors.Is(err, boom) {
			t.Fatalf("Next() = %v, want the stream's error, again and again", err)
		}
	}
}
