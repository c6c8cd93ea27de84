package writer_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/oxypipe/oxypipe/internal/testutil"
	"github.com/oxypipe/oxypipe/pkg/emulator"
	"github.com/oxypipe/oxypipe/pkg/messages"
	"github.com/oxypipe/oxypipe/pkg/oxytype"
)

// record reads a run's record.
func (f *fixture) record(run string) messages.RunRecord {
	f.t.Helper()
	ref, err := f.topo.Runs().Get(f.t.Context(), run)
	if err != nil {
		f.t.Fatal(err)
	}
	return ref.Record
}

// ready marks an announced run ready, as the statusworker does.
func (f *fixture) ready(run string) {
	f.t.Helper()
	if _, _, err := f.topo.Runs().Transition(f.t.Context(), run, func(r *messages.RunRecord) bool {
		r.State = oxytype.RunStateReady
		return true
	}); err != nil {
		f.t.Fatal(err)
	}
}

// fill writes a file into dir until the disk is full.
func fill(t *testing.T, dir string) string {
	t.Helper()
	path := filepath.Join(dir, "filler")
	file, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = file.Close() }()
	chunk := bytes.Repeat([]byte("x"), 4096)
	for {
		if _, err := file.Write(chunk); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatal(err)
			}
			return path
		}
	}
}

// A full disk stops the run at the first failed write (no quick retries:
// they cannot free space), so no more of its payloads is billed; the job's
// write is still retried with back-off, and lands once space is freed.
func TestFaultAFullDiskStopsTheRunAndTheJobIsWrittenOnceSpaceIsFreed(t *testing.T) {
	t.Parallel()
	f := setup(t, emulator.Config{})
	f.cfg.Stage.Consumer.RetryBackoff = []time.Duration{500 * time.Millisecond}
	f.cfg.Stage.Consumer.MaxDeliver = 20
	f.start()
	dir := testutil.SmallDisk(t, 64<<10)
	filler := fill(t, dir)
	run := f.announce(dir, oxytype.FinalDataType)
	f.ready(run)
	id, body := f.job("https://sandbox.oxylabs.io/products/21")
	f.done(run, 0, id, body)

	testutil.Eventually(t, 10*time.Second, "the run stopped", func() bool { return f.record(run).State == oxytype.RunStateStopping })
	rec := f.record(run)
	if rec.Stop == nil || rec.Stop.Cause != messages.StopByOutput || !rec.Stop.Deadline.After(rec.Stop.At) ||
		!strings.HasPrefix(rec.Reason, "Stopped submitting, because a write to the destination failed: destination "+dir) ||
		!strings.Contains(rec.Reason, "no space left on device") {
		t.Fatalf("run record: reason %q, stop %+v; want stopped by the output, naming the folder and the full disk", rec.Reason, rec.Stop)
	}
	if got := f.counter("oxy_writer_failures_total", map[string]string{"kind": "write"}); got != 1 {
		t.Fatalf("write failures = %v after the first delivery, want 1: a full disk is not retried at once", got)
	}
	if got := f.counter("oxy_writer_run_stops_total", map[string]string{"result": "stopped"}); got != 1 {
		t.Fatalf("run stops = %v, want 1", got)
	}

	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	evs := f.final(run, "0")
	last := evs[len(evs)-1]
	if last.Outcome != oxytype.Success || last.DataType != oxytype.DataWritten {
		t.Fatalf("last event = %+v, want written once space was freed", last)
	}
	for _, ev := range evs[:len(evs)-1] {
		if ev.Outcome != oxytype.SoftFailure || !strings.Contains(ev.Error.Message, "no space left on device") {
			t.Fatalf("event = %+v, want soft failures saying the disk is full", ev)
		}
	}
	got, err := os.ReadFile(filepath.Join(dir, id+".json"))
	if err != nil || !bytes.Equal(got, f.results(id)) {
		t.Fatalf("the file: %v; want the API's body", err)
	}
}

// A failure no rule calls permanent is tried again at once, and stops the
// run only when the quick tries fail too; one that passes within them
// stops nothing.
func TestFaultAFailedWriteIsRetriedQuicklyBeforeItStopsTheRun(t *testing.T) {
	t.Parallel()
	s3 := startFakeS3(t)
	f := setup(t, emulator.Config{})
	f.cfg.Destinations.S3 = s3.config()
	f.cfg.OutputRetries, f.cfg.OutputRetryDelay = 2, 10*time.Millisecond
	f.start()

	t.Run("a failure that passes stops nothing", func(t *testing.T) {
		run := f.announce("s3://"+bucket+"/passing", oxytype.FinalDataType)
		f.ready(run)
		s3.failPuts.Store(2)
		id, body := f.job("https://sandbox.oxylabs.io/products/22")
		f.done(run, 0, id, body)
		assertWritten(t, f.final(run, "0"), id)
		if rec := f.record(run); rec.State != oxytype.RunStateReady {
			t.Fatalf("run %s, want ready", rec.State)
		}
	})
	t.Run("a failure that outlasts the quick tries stops the run", func(t *testing.T) {
		run := f.announce("s3://"+bucket+"/failing", oxytype.FinalDataType)
		f.ready(run)
		s3.failPuts.Store(-1)
		before := s3.puts.Load()
		id, body := f.job("https://sandbox.oxylabs.io/products/23")
		f.done(run, 0, id, body)
		testutil.Eventually(t, 10*time.Second, "the run stopped", func() bool { return f.record(run).State == oxytype.RunStateStopping })
		if got := s3.puts.Load() - before; got < 3 {
			t.Fatalf("%d uploads before the stop, want 3 (one and two quick tries)", got)
		}
		if rec := f.record(run); rec.Stop == nil || rec.Stop.Cause != messages.StopByOutput || !strings.Contains(rec.Reason, "InvalidArgument") {
			t.Fatalf("run record: reason %q, stop %+v", rec.Reason, rec.Stop)
		}
		s3.failPuts.Store(0)
	})
}

// Once the run has ended (its stop's deadline passed and the statusworker
// completed it), a failing write is not retried: the job is recorded
// unfetched at once, with its id.
func TestFaultAWriteOfAnEndedRunIsNotRetried(t *testing.T) {
	t.Parallel()
	f := setup(t, emulator.Config{})
	f.cfg.Stage.Consumer.RetryBackoff = []time.Duration{time.Minute}
	f.start()
	file := filepath.Join(t.TempDir(), "a-file")
	if err := os.WriteFile(file, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	run := f.announce(filepath.Join(file, "results"), oxytype.FinalDataType)
	if _, _, err := f.topo.Runs().Transition(t.Context(), run, func(r *messages.RunRecord) bool {
		r.State = oxytype.RunStateCompleted
		return true
	}); err != nil {
		t.Fatal(err)
	}
	id, body := f.job("https://sandbox.oxylabs.io/products/24")
	f.done(run, 0, id, body)
	evs := f.final(run, "0")
	last := evs[len(evs)-1]
	if len(evs) != 1 || last.Outcome != oxytype.HardFailure || last.State != oxytype.Unfetched || last.APIJobID != id ||
		!strings.Contains(last.Reason, "the run has ended; the job can be fetched by id at no cost") {
		t.Fatalf("events = %+v, want one unfetched saying the run ended", evs)
	}
}

// A results body that is not JSON (a proxy's page, a body cut short) is a
// failed fetch: retried, then unfetched with a clear error, and never a
// file; one that comes right on a retry is written.
func TestFaultAResultsBodyThatIsNotJSONIsNeverWritten(t *testing.T) {
	t.Parallel()
	f := setup(t, emulator.Config{Rules: []emulator.Rule{
		{Pattern: regexp.MustCompile(`html-once`), Outcome: emulator.Outcome{ResultsFailure: &emulator.Failure{
			Body: "<html><body>502 Bad Gateway</body></html>", Times: 1}}},
		{Pattern: regexp.MustCompile(`cut-short`), Outcome: emulator.Outcome{ResultsFailure: &emulator.Failure{
			Body: `{"results":[{"content":"<html>`}}},
	}})
	f.start()
	dir := t.TempDir()
	run := f.announce(dir, oxytype.FinalDataType)

	once, onceBody := f.job("https://sandbox.oxylabs.io/html-once")
	f.done(run, 0, once, onceBody)
	short, shortBody := f.job("https://sandbox.oxylabs.io/cut-short")
	f.done(run, 1, short, shortBody)

	evs := f.final(run, "0")
	if len(evs) != 2 || evs[0].Outcome != oxytype.SoftFailure ||
		!strings.Contains(evs[0].Error.Message, "reading the results of job "+once+": not JSON: expected a value, found '<' at byte 0") {
		t.Fatalf("events = %+v, want a soft failure saying the body is not JSON, then a success", evs)
	}
	assertWritten(t, evs[1:], once)

	evs = f.final(run, "1")
	last := evs[len(evs)-1]
	if len(evs) != maxDeliver || last.Outcome != oxytype.HardFailure || last.State != oxytype.Unfetched || last.APIJobID != short ||
		last.Error == nil || !strings.Contains(last.Error.Message, "not JSON: unexpected end of input") {
		t.Fatalf("events = %+v, want retries then unfetched saying the body is not JSON", evs)
	}
	if got := f.counter("oxy_writer_failures_total", map[string]string{"kind": "fetch"}); got != maxDeliver+1 {
		t.Fatalf("fetch failures = %v, want %d", got, maxDeliver+1)
	}
	names, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(names) != 1 || names[0].Name() != once+".json" {
		t.Fatalf("the folder holds %v, want only %s.json", names, once)
	}
	if rec := f.record(run); rec.State == oxytype.RunStateStopping {
		t.Fatal("a body that is not JSON stopped the run: it is the API's failure, not the destination's")
	}
}
