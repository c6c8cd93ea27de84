package cli

import (
	"bytes"
	"encoding/json"
	"io"
	"sync"

	"github.com/oxypipe/oxypipe/internal/redact"
	"github.com/oxypipe/oxypipe/pkg/payload"
	"github.com/oxypipe/oxypipe/pkg/wsa"
)

// jobLine is the JSON line printed on stdout for each finished job, by run,
// get and recover, so that the output pipes into jq:
//
//	{"id":"7500000000000000001","status":"done","source":"universal","input":"https://…","file":"results/7500000000000000001.json"}
//
// The keys are those of a run's job lines (progress.Job), so one jq filter
// reads both. Doc is the payload's position in a run log (recover only);
// File is set only when the job's body was written to the destination.
type jobLine struct {
	Doc    *int   `json:"doc,omitempty"`
	ID     string `json:"id"`
	Status string `json:"status"`
	Source string `json:"source"`
	Input  string `json:"input"`
	File   string `json:"file,omitempty"`
}

// lineWriter writes jobLines to stdout, each in one write, from any
// goroutine.
type lineWriter struct {
	mu  sync.Mutex
	w   io.Writer
	err error // the first write error; later lines are dropped
}

func newLineWriter(w io.Writer) *lineWriter { return &lineWriter{w: w} }

// write prints l as one line. The input is redacted: it may be a URL with
// credentials.
func (lw *lineWriter) write(l jobLine) {
	l.Input = redact.String(l.Input)
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // URLs keep their & and <>
	if err := enc.Encode(l); err != nil {
		return // a struct of strings always encodes
	}
	lw.mu.Lock()
	defer lw.mu.Unlock()
	if lw.err != nil {
		return
	}
	_, lw.err = lw.w.Write(buf.Bytes())
}

// writeRaw prints one line that is already JSON (a progress.Job's).
func (lw *lineWriter) writeRaw(line []byte) {
	buf := make([]byte, 0, len(line)+1)
	buf = append(append(buf, line...), '\n')
	lw.mu.Lock()
	defer lw.mu.Unlock()
	if lw.err != nil {
		return
	}
	_, lw.err = lw.w.Write(buf)
}

// Err returns the first write error (stdout closed, a full disk).
func (lw *lineWriter) Err() error {
	lw.mu.Lock()
	defer lw.mu.Unlock()
	return lw.err
}

// jobInput returns the job object's input value (its url, query, …): the
// first input key that holds a non-empty string.
func jobInput(job wsa.Job) string {
	for _, k := range payload.InputKeys() {
		raw, ok := job.Field(k)
		if !ok {
			continue
		}
		var s string
		if json.Unmarshal(raw, &s) == nil && s != "" {
			return s
		}
	}
	return ""
}
