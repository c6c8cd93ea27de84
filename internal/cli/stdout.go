package cli

import (
	"bytes"
	"encoding/json"
	"os"

	"github.com/oxypipe/oxypipe/internal/redact"
	"github.com/oxypipe/oxypipe/pkg/oxy"
	"github.com/oxypipe/oxypipe/pkg/oxytype"
	"github.com/oxypipe/oxypipe/pkg/wsa"
)

// printBody prints a done job's results body, {"results": …, "job": …}, on
// stdout as one compact JSON line and removes its file: a run without -d
// writes each body to a scratch folder first (the writer's destination), so
// that stdout gets every body exactly once, in the order jobs finish, and
// never holds more than one body in memory. Other jobs print nothing on
// stdout; the report on stderr says what became of them.
func (r *runner) printBody(job oxy.Job) {
	if job.Status != oxytype.Done || job.File == "" {
		return
	}
	body, err := os.ReadFile(job.File)
	if err != nil {
		warnf(r.console, "the body of job %s cannot be printed: %v", job.ID, err)
		return
	}
	var line bytes.Buffer
	if err := json.Compact(&line, body); err != nil {
		warnf(r.console, "the body of job %s is not JSON, so it is not printed", job.ID)
		return
	}
	r.console.aroundStdout(func() { r.lines.writeRaw(line.Bytes()) })
	_ = os.Remove(job.File) // printed: the scratch folder goes at the end anyway
}

// dryRun prints the payloads as they would be sent and, on stderr, what they
// bill at most. Nothing is announced or sent.
func (r *runner) dryRun(src *runSource) error {
	if src.Spool == nil {
		return usageErrorf("--dry-run needs the payloads: give a FILE, stdin, or a SOURCE and inputs")
	}
	bill, err := oxy.DryRun(src, r.env.Stdout)
	if err != nil {
		return err
	}
	r.console.final(bill.String())
	return nil
}

// reportUpload warns about a job whose cloud-storage upload failed (or was
// not reported in time): its results are not where the payload said.
func (r *runner) reportUpload(job oxy.Job) {
	if job.Upload == nil || job.Upload.Code == wsa.UploadOK {
		return
	}
	if job.Upload.Code == 0 { // the API reported nothing in time
		warnf(r.console, "The upload of job %s is not known to have happened: %s", job.ID, redact.String(job.Upload.Message))
		return
	}
	warnf(r.console, "The upload of job %s failed with %d %s", job.ID, job.Upload.Code, redact.String(job.Upload.Message))
}
