package runlog_test

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/oxypipe/oxypipe/pkg/oxytype"
	"github.com/oxypipe/oxypipe/pkg/runlog"
)

func TestReader(t *testing.T) {
	t.Parallel()
	t.Run("a written run log reads back to the same lines and bytes", func(t *testing.T) {
		t.Parallel()
		lines, err := runlog.ReadAll(strings.NewReader(seedLog))
		if err != nil {
			t.Fatal(err)
		}
		if len(lines) != 3 {
			t.Fatalf("%d lines", len(lines))
		}
		if lines[0].State != oxytype.Unfetched || *lines[0].ID != "7500000000000000001" ||
			*lines[0].Error.StatusCode != 404 || lines[0].Error.TraceID != "00000001-000000000000000000000000" {
			t.Fatalf("line 1: %+v", lines[0])
		}
		if lines[1].State != oxytype.Faulted || lines[1].Error != nil {
			t.Fatalf("line 2: %+v", lines[1])
		}
		var buf bytes.Buffer
		w := runlog.NewWriter(&buf)
		for _, l := range lines {
			if err := w.WriteLine(l); err != nil {
				t.Fatal(err)
			}
		}
		if buf.String() != seedLog || w.Lines() != 3 {
			t.Fatalf("rewritten:\n%s", buf.String())
		}
	})

	t.Run("spacing after separators, extra keys and blank lines are accepted", func(t *testing.T) {
		t.Parallel()
		in := "\n" + `{"state": "faulted", "id": "2", "payload": {"source": "universal"}, "error": null, "upload": null, "extra": 1}` + "\n\n"
		lines, err := runlog.ReadAll(strings.NewReader(in))
		if err != nil {
			t.Fatal(err)
		}
		if len(lines) != 1 || string(lines[0].Payload) != `{"source": "universal"}` {
			t.Fatalf("%+v", lines)
		}
	})

	bad := []struct{ name, line, reason string }{
		{"not JSON", `state=done`, "not a JSON object"},
		{"truncated", `{"state":"done"`, "not valid JSON"},
		{"a missing key", `{"state":"done","id":"1","payload":null,"error":null}`, `missing key "upload"`},
		{"an unknown state", `{"state":"lost","id":null,"payload":null,"error":null,"upload":null}`, `state "lost"`},
		{"done without an id", `{"state":"done","id":null,"payload":null,"error":null,"upload":null}`, `no "id"`},
	}
	for _, tc := range bad {
		t.Run("an invalid line is named: "+tc.name, func(t *testing.T) {
			t.Parallel()
			in := seedLog + tc.line + "\n"
			r := runlog.NewReader(strings.NewReader(in))
			for range 3 {
				if _, _, err := r.Next(); err != nil {
					t.Fatal(err)
				}
			}
			_, n, err := r.Next()
			var pe *runlog.ParseError
			if !errors.As(err, &pe) || !errors.Is(err, runlog.ErrInvalidLine) {
				t.Fatalf("err = %v", err)
			}
			if pe.Line != 4 || n != 4 || !strings.Contains(err.Error(), "run log line 4: ") || !strings.Contains(pe.Reason, tc.reason) {
				t.Fatalf("err = %v (line %d), want line 4 and %q", err, n, tc.reason)
			}
			if _, _, err := r.Next(); !errors.Is(err, io.EOF) {
				t.Fatalf("after the bad line: %v", err)
			}
		})
	}

	t.Run("a last line without a newline is read", func(t *testing.T) {
		t.Parallel()
		lines, err := runlog.ReadAll(strings.NewReader(strings.TrimSuffix(seedLog, "\n")))
		if err != nil || len(lines) != 3 {
			t.Fatalf("%d lines, %v", len(lines), err)
		}
	})
}
