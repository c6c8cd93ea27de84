package writer_test

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/oxypipe/oxypipe/internal/testutil"
	"github.com/oxypipe/oxypipe/pkg/emulator"
	"github.com/oxypipe/oxypipe/pkg/messages"
	"github.com/oxypipe/oxypipe/pkg/oxytype"
)

// assertWritten checks that a doc's only event is a success at written.
func assertWritten(t *testing.T, evs []messages.StatusEvent, id string) {
	t.Helper()
	if len(evs) != 1 {
		t.Fatalf("events = %+v, want one success", evs)
	}
	ev := evs[0]
	if ev.Outcome != oxytype.Success || ev.DataType != oxytype.DataWritten || ev.APIJobID != id ||
		ev.Origin.Type != "writer" || ev.Error != nil || len(ev.Payload) == 0 {
		t.Fatalf("event = %+v, want a success at written for job %s", ev, id)
	}
}

func TestWritesToALocalFolder(t *testing.T) {
	t.Parallel()
	f := setup(t, emulator.Config{})
	f.start()
	dir := filepath.Join(t.TempDir(), "results") // created by the probe
	run := f.announce(dir, oxytype.FinalDataType)

	var ids []string
	var total int
	for i := range 3 {
		id, body := f.job(fmt.Sprintf("https://sandbox.oxylabs.io/products/%d", i))
		ids = append(ids, id)
		f.done(run, i, id, body)
	}
	for i, id := range ids {
		assertWritten(t, f.final(run, messages.DocID(i)), id)
		got, err := os.ReadFile(filepath.Join(dir, id+".json"))
		if err != nil {
			t.Fatal(err)
		}
		want := f.results(id)
		if !bytes.Equal(got, want) {
			t.Fatalf("%s.json differs from the API's body (%d vs %d bytes)", id, len(got), len(want))
		}
		total += len(got)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 3 {
		t.Fatalf("the folder holds %d entries, want the 3 files and nothing else", len(entries))
	}
	if got := f.counter("oxy_writer_probes_total", map[string]string{"result": "ok"}); got != 1 {
		t.Fatalf("probes = %v, want 1 for the run", got)
	}
	if got := f.counter("oxy_writer_bytes_total", nil); int(got) != total {
		t.Fatalf("bytes written = %v, want %d", got, total)
	}
}

func TestWritesToS3AndProbesOncePerRun(t *testing.T) {
	t.Parallel()
	s3 := startFakeS3(t)
	f := setup(t, emulator.Config{})
	f.cfg.Destinations.S3 = s3.config()
	f.start()
	runs := []string{f.announce("s3://"+bucket+"/first", oxytype.FinalDataType), f.announce("s3://"+bucket+"/second/run", oxytype.FinalDataType)}
	prefixes := []string{"first/", "second/run/"}

	type written struct{ run, doc, id, key string }
	var all []written
	for r, run := range runs {
		for i := range 3 {
			id, body := f.job(fmt.Sprintf("https://sandbox.oxylabs.io/run%d/%d", r, i))
			f.done(run, i, id, body)
			all = append(all, written{run, messages.DocID(i), id, prefixes[r] + id + ".json"})
		}
	}
	for _, w := range all {
		assertWritten(t, f.final(w.run, w.doc), w.id)
		if got, want := s3.object(t, w.key), f.results(w.id); !bytes.Equal(got, want) {
			t.Fatalf("object %s differs from the API's body (%d vs %d bytes)", w.key, len(got), len(want))
		}
	}
	if got := s3.lists.Load(); got != 2 {
		t.Fatalf("bucket listings = %d, want 2: one probe per run", got)
	}
}

func TestAFailedProbeRetriesThenRecordsUnfetched(t *testing.T) {
	t.Parallel()
	f := setup(t, emulator.Config{})
	f.start()
	file := filepath.Join(t.TempDir(), "a-file")
	if err := os.WriteFile(file, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	run := f.announce(filepath.Join(file, "results"), oxytype.FinalDataType) // a folder under a file
	id, body := f.job("https://sandbox.oxylabs.io/products/9")
	f.done(run, 0, id, body)

	evs := f.final(run, "0")
	if len(evs) != maxDeliver {
		t.Fatalf("events = %+v, want %d soft failures and a hard one", evs, maxDeliver-1)
	}
	for _, ev := range evs[:maxDeliver-1] {
		if ev.Outcome != oxytype.SoftFailure || ev.DataType != oxytype.DataDone {
			t.Fatalf("event = %+v, want a soft failure at done", ev)
		}
	}
	last := evs[maxDeliver-1]
	if last.Outcome != oxytype.HardFailure || last.State != oxytype.Unfetched || last.APIJobID != id || last.Error == nil ||
		last.Error.StatusCode != nil || last.Error.TraceID != "" {
		t.Fatalf("last event = %+v (error %+v), want unfetched without a status code", last, last.Error)
	}
	if msg := last.Error.Message; !strings.Contains(msg, file) || !strings.Contains(msg, "probe") {
		t.Fatalf("error message = %q, want the destination and the probe named", msg)
	}
	if strings.Contains(last.Reason, "poison") {
		t.Fatalf("reason = %q, want the probe's error, not the poison text", last.Reason)
	}
	if got := f.counter("oxy_writer_failures_total", map[string]string{"kind": "probe"}); got != maxDeliver {
		t.Fatalf("probe failures = %v, want %d", got, maxDeliver)
	}
}

func TestAFailedWriteRetriesThenRecordsUnfetched(t *testing.T) {
	t.Parallel()
	s3 := startFakeS3(t)
	s3.denyPuts.Store(true) // listing works, so the probe passes
	f := setup(t, emulator.Config{})
	f.cfg.Destinations.S3 = s3.config()
	f.start()
	run := f.announce("s3://"+bucket+"/denied", oxytype.FinalDataType)
	id, body := f.job("https://sandbox.oxylabs.io/products/10")
	f.done(run, 0, id, body)

	evs := f.final(run, "0")
	if len(evs) != maxDeliver {
		t.Fatalf("events = %+v, want %d soft failures and a hard one", evs, maxDeliver-1)
	}
	last := evs[maxDeliver-1]
	if last.Outcome != oxytype.HardFailure || last.State != oxytype.Unfetched || last.APIJobID != id ||
		last.Error == nil || last.Error.StatusCode != nil {
		t.Fatalf("last event = %+v (error %+v), want unfetched without a status code", last, last.Error)
	}
	if msg := last.Error.Message; !strings.Contains(msg, "s3://"+bucket+"/denied") || !strings.Contains(msg, "put "+id+".json") {
		t.Fatalf("error message = %q, want the destination and the file named", msg)
	}
	if strings.Contains(last.Error.Message, secretKey) || strings.Contains(last.Reason, secretKey) {
		t.Fatal("the secret key leaked into the status event")
	}
	if got := f.counter("oxy_writer_failures_total", map[string]string{"kind": "write"}); got != maxDeliver {
		t.Fatalf("write failures = %v, want %d", got, maxDeliver)
	}
	if got := s3.lists.Load(); got != 1 {
		t.Fatalf("bucket listings = %d, want 1 (the probe passed once)", got)
	}
}

func TestTransientResultsFailuresAreRetried(t *testing.T) {
	t.Parallel()
	f := setup(t, emulator.Config{Rules: []emulator.Rule{{Pattern: regexp.MustCompile(`flaky`),
		Outcome: emulator.Outcome{ResultsFailure: &emulator.Failure{Status: 500, Times: 2}}}}})
	f.start()
	dir := t.TempDir()
	run := f.announce(dir, oxytype.FinalDataType)
	id, body := f.job("https://sandbox.oxylabs.io/flaky")
	f.done(run, 0, id, body)

	evs := f.final(run, "0")
	if len(evs) != 3 {
		t.Fatalf("events = %+v, want two soft failures and a success", evs)
	}
	for _, ev := range evs[:2] {
		if ev.Outcome != oxytype.SoftFailure || ev.Error == nil || ev.Error.StatusCode == nil || *ev.Error.StatusCode != 500 || ev.Error.TraceID == "" {
			t.Fatalf("event = %+v (error %+v), want a soft failure with the 500 and its trace id", ev, ev.Error)
		}
	}
	assertWritten(t, evs[2:], id)
	got, err := os.ReadFile(filepath.Join(dir, id+".json"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, f.results(id)) {
		t.Fatal("the file differs from the API's body")
	}
}

func TestResultsOfAnUnknownJobAreRecordedUnfetchedAtOnce(t *testing.T) {
	t.Parallel()
	f := setup(t, emulator.Config{Rules: []emulator.Rule{{Pattern: regexp.MustCompile(`lost`),
		Outcome: emulator.Outcome{ResultsFailure: &emulator.Failure{Status: 404, Message: "Query not found."}}}}})
	f.start()
	dir := t.TempDir()
	run := f.announce(dir, oxytype.FinalDataType)
	id, body := f.job("https://sandbox.oxylabs.io/lost")
	f.done(run, 0, id, body)

	evs := f.final(run, "0")
	last := evs[len(evs)-1]
	if len(evs) != 1 || last.Outcome != oxytype.HardFailure || last.State != oxytype.Unfetched ||
		last.Error == nil || last.Error.StatusCode == nil || *last.Error.StatusCode != 404 || last.Error.Message != "Query not found." {
		t.Fatalf("events = %+v, last error %+v; want one unfetched with 404 Query not found., no retries", evs, last.Error)
	}
}

func TestExpiredResultsAreRecordedUnfetched(t *testing.T) {
	t.Parallel()
	f := setup(t, emulator.Config{Rules: []emulator.Rule{{Pattern: regexp.MustCompile(`old`),
		Outcome: emulator.Outcome{ResultsTTL: 1}}}}) // gone a nanosecond after the job finished
	f.start()
	dir := t.TempDir()
	run := f.announce(dir, oxytype.FinalDataType)
	id, body := f.job("https://sandbox.oxylabs.io/old")
	f.done(run, 0, id, body)

	evs := f.final(run, "0")
	last := evs[len(evs)-1]
	if len(evs) != maxDeliver || last.Outcome != oxytype.HardFailure || last.State != oxytype.Unfetched ||
		last.Error == nil || last.Error.StatusCode == nil || *last.Error.StatusCode != 204 {
		t.Fatalf("events = %+v, last error %+v; want retries then unfetched with 204", evs, last.Error)
	}
	if !strings.Contains(last.Error.Message, "results are gone") {
		t.Fatalf("error message = %q", last.Error.Message)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Fatalf("the folder holds %d files, want none", len(entries))
	}
	if got := f.counter("oxy_writer_failures_total", map[string]string{"kind": "expired"}); got != maxDeliver {
		t.Fatalf("expired failures = %v, want %d", got, maxDeliver)
	}
}

func TestARedeliveredDoneRewritesTheFile(t *testing.T) {
	t.Parallel()
	f := setup(t, emulator.Config{})
	f.start()
	dir := t.TempDir()
	run := f.announce(dir, oxytype.FinalDataType)
	id, body := f.job("https://sandbox.oxylabs.io/products/11")
	d := f.done(run, 0, id, body)
	assertWritten(t, f.final(run, "0"), id)
	path := filepath.Join(dir, id+".json")
	want := f.results(id)

	// The same Done published again is dropped by the broker: one success.
	f.done(run, 0, id, body)
	// The same Done delivered again (a writer died before its ack; here a
	// copy under another message id) rewrites the file whole.
	if err := os.WriteFile(path, []byte("stale"), 0o644); err != nil {
		t.Fatal(err)
	}
	m, err := messages.NewMsg(d, pollerActor)
	if err != nil {
		t.Fatal(err)
	}
	m.Header.Set(nats.MsgIdHdr, "redelivery")
	f.publishMsg(m)

	testutil.Eventuallyf(t, 10*time.Second, func() bool { return len(f.events(run, "0")) == 2 }, "the copy is written")
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("the file holds %q…, want the API's body again", got[:min(len(got), 20)])
	}
	for _, ev := range f.events(run, "0") {
		if ev.Outcome != oxytype.Success || ev.DataType != oxytype.DataWritten || ev.APIJobID != id {
			t.Fatalf("event %+v, want only successes at written for the one job", ev)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Fatalf("the folder holds %d entries, want the one file", len(entries))
	}
}

func TestMalformedAndUnwritableDones(t *testing.T) {
	t.Parallel()
	f := setup(t, emulator.Config{})
	f.start()
	dir := t.TempDir()
	run := f.announce(dir, oxytype.FinalDataType)
	doneOnly := f.announce("", oxytype.DataDone)
	subject := messages.DoneSubject(run)
	for _, data := range []string{
		"{not json",
		`{"v":1,"run":"` + run + `","doc":"5","api_job_id":"7500000000000000001","payload":{},"status":"faulted"}`,
		`{"v":1,"run":"` + run + `","doc":"6","api_job_id":"a/b","payload":{},"status":"done"}`,
	} {
		f.publishMsg(&nats.Msg{Subject: subject, Data: []byte(data)})
	}
	id, body := f.job("https://sandbox.oxylabs.io/products/12")
	f.done("20991231T000000.000Z", 0, id, body) // a run nobody announced
	f.done(doneOnly, 0, id, body)               // a run that writes nothing
	noDest := f.announce("", oxytype.FinalDataType)
	f.done(noDest, 0, id, body)
	badScheme := f.announce("ftp://example.com/results", oxytype.FinalDataType)
	f.done(badScheme, 0, id, body)
	f.done(run, 1, id, body)

	assertWritten(t, f.final(run, "1"), id)
	if evs := f.final("20991231T000000.000Z", "0"); len(evs) != maxDeliver || evs[maxDeliver-1].State != oxytype.Unfetched ||
		!strings.Contains(evs[maxDeliver-1].Error.Message, "runs bucket") {
		t.Fatalf("unknown run: events %+v", evs)
	}
	// A run that can never be written is given up at once.
	for r, want := range map[string]string{noDest: "names no destination", badScheme: "ftp"} {
		evs := f.final(r, "0")
		if len(evs) != 1 || evs[0].State != oxytype.Unfetched || evs[0].Error == nil || !strings.Contains(evs[0].Error.Message, want) {
			t.Fatalf("run %s: events %+v, want one hard failure naming %q", r, evs, want)
		}
	}
	testutil.Eventuallyf(t, 5*time.Second, func() bool {
		hard := 0
		for _, ev := range f.allEvents() {
			if ev.Run == run && ev.Outcome == oxytype.HardFailure {
				hard++
			}
		}
		return hard == 3
	}, "the three malformed messages are hard failures")
	for _, ev := range f.allEvents() {
		if ev.Run == doneOnly {
			t.Fatalf("a run without a destination got event %+v", ev)
		}
		if ev.Run != run || ev.Outcome != oxytype.HardFailure {
			continue
		}
		switch {
		case ev.Doc == "5" && strings.Contains(ev.Reason, `"status" is "faulted"`) && ev.State == oxytype.Unfetched:
		case ev.Doc == "6" && ev.Error != nil && ev.Error.Message == "invalid api job id":
		case messages.IsUnknownDocID(ev.Doc) && strings.Contains(ev.Reason, "malformed"):
		default:
			t.Errorf("unexpected hard failure %+v", ev)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Fatalf("the folder holds %d entries, want the one good file", len(entries))
	}
}

// Not parallel: it measures the process's allocations while a 20 MB body
// streams from the emulator to a file.
func TestALargeBodyStreams(t *testing.T) {
	const size = 20 << 20
	f := setup(t, emulator.Config{Rules: []emulator.Rule{{Pattern: regexp.MustCompile(`large`),
		Outcome: emulator.Outcome{ContentSize: size}}}})
	f.start()
	dir := t.TempDir()
	run := f.announce(dir, oxytype.FinalDataType)
	id, body := f.job("https://sandbox.oxylabs.io/large")
	want := f.resultsDigest(id) // also builds the emulator's padding once

	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f.done(run, 0, id, body)
	assertWritten(t, f.final(run, "0"), id)
	runtime.ReadMemStats(&after)

	file, err := os.Open(filepath.Join(dir, id+".json"))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = file.Close() }()
	h := sha256.New()
	n, err := io.Copy(h, file)
	if err != nil {
		t.Fatal(err)
	}
	if n < size || !bytes.Equal(h.Sum(nil), want) {
		t.Fatalf("the file (%d bytes) differs from the API's body", n)
	}
	allocated := after.TotalAlloc - before.TotalAlloc
	t.Logf("wrote %d bytes; the process allocated %.1f MB meanwhile", n, float64(allocated)/(1<<20))
	// The race detector inflates allocations (destinationtest skips its
	// bound there too): the bound holds in a plain build.
	if allocated > size/2 && !testutil.RaceEnabled {
		t.Fatalf("allocated %d bytes while writing a %d-byte body: it is not streamed", allocated, n)
	}
}

// resultsDigest is the SHA-256 of the API's body for a job, read as a stream.
func (f *fixture) resultsDigest(id string) []byte {
	f.t.Helper()
	res, err := f.client.Results(f.t.Context(), id)
	if err != nil {
		f.t.Fatal(err)
	}
	defer res.Body.Close()
	h := sha256.New()
	if _, err := io.Copy(h, res.Body); err != nil {
		f.t.Fatal(err)
	}
	return h.Sum(nil)
}
