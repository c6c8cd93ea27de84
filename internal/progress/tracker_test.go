package progress_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/oxypipe/oxypipe/internal/progress"
	"github.com/oxypipe/oxypipe/pkg/messages"
	"github.com/oxypipe/oxypipe/pkg/oxytype"
)

const run = "20260929T170412.345Z"

func product(n int) json.RawMessage {
	return json.RawMessage(fmt.Sprintf(`{"source":"universal","url":"https://sandbox.oxylabs.io/products/%d"}`, n))
}

func success(doc int, dt oxytype.DataType, id string) *messages.StatusEvent {
	ev := &messages.StatusEvent{Run: run, Doc: messages.DocID(doc), DataType: dt, Outcome: oxytype.Success, Facts: oxytype.Facts{APIJobID: id}}
	if dt == oxytype.DataPayload {
		ev.Payload = product(doc + 1)
	}
	return ev
}

func hard(doc int, dt oxytype.DataType, state oxytype.State, id string, info *oxytype.ErrorInfo, reason string) *messages.StatusEvent {
	return &messages.StatusEvent{Run: run, Doc: messages.DocID(doc), DataType: dt, Outcome: oxytype.HardFailure, Facts: oxytype.Facts{State: state, APIJobID: id, Error: info}, Reason: reason}
}

func code(n int) *int { return &n }

// seedRun applies the three-payload example of examples/sandbox-rules.json: products/1
// unfetched after a 404, products/2 faulted, products/3 done and written.
func seedRun(t *testing.T) (*progress.Tracker, []progress.Job) {
	t.Helper()
	tr := progress.NewTracker(messages.RunAnnounced{Run: run, Total: 3, Destination: "results"})
	var finished []progress.Job
	apply := func(ev *messages.StatusEvent) {
		if j, ok := tr.Apply(ev); ok {
			finished = append(finished, j)
		}
	}
	for d := range 3 {
		apply(success(d, oxytype.DataPayload, ""))
	}
	if got := tr.Progress().String(); got != "0/3 done, 3 unsubmitted, 0ms" {
		t.Fatalf("after feeding: %q", got)
	}
	apply(success(0, oxytype.DataSubmitted, "7500000000000000001"))
	apply(success(1, oxytype.DataSubmitted, "7500000000000000002"))
	apply(success(2, oxytype.DataSubmitted, "7500000000000000003"))
	apply(&messages.StatusEvent{Run: run, Doc: "2", DataType: oxytype.DataSubmitted, Outcome: oxytype.SoftFailure, Reason: "500 Internal Server Error"})
	if got := tr.Progress().String(); got != "0/3 done, 3 pending, 1 retry, 0ms" {
		t.Fatalf("after submitting: %q", got)
	}
	apply(hard(0, oxytype.DataSubmitted, oxytype.Unfetched, "7500000000000000001",
		&oxytype.ErrorInfo{StatusCode: code(404), Message: "Not Found", TraceID: "00000001-000000000000000000000000"}, "404 Not Found"))
	apply(hard(1, oxytype.DataSubmitted, oxytype.Faulted, "7500000000000000002", nil, "the job faulted"))
	apply(success(2, oxytype.DataDone, "7500000000000000003"))
	if got := tr.Progress().String(); got != "1/3 done, 1 faulted, 1 unfetched, 1 retry, 0ms" {
		t.Fatalf("after the checks: %q", got)
	}
	apply(success(2, oxytype.DataWritten, "7500000000000000003"))
	return tr, finished
}

func TestTrackerFollowsTheSeedRun(t *testing.T) {
	t.Parallel()
	tr, finished := seedRun(t)
	if got := tr.Progress().String(); got != "1/3 done, 1 faulted, 1 unfetched, 1 written, 1 retry, 0ms" {
		t.Errorf("final progress = %q", got)
	}
	if tr.Finished() != 3 {
		t.Errorf("finished = %d, want 3", tr.Finished())
	}
	var got []string
	for _, j := range finished {
		b, err := json.Marshal(j)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, string(b))
	}
	want := []string{
		`{"doc":0,"id":"7500000000000000001","status":"unfetched","source":"universal","input":"https://sandbox.oxylabs.io/products/1","error":{"status_code":404,"message":"Not Found","trace_id":"00000001-000000000000000000000000"}}`,
		`{"doc":1,"id":"7500000000000000002","status":"faulted","source":"universal","input":"https://sandbox.oxylabs.io/products/2","error":null}`,
		`{"doc":2,"id":"7500000000000000003","status":"done","source":"universal","input":"https://sandbox.oxylabs.io/products/3","file":"results/7500000000000000003.json","error":null}`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("finished jobs:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	p, err := finished[1].ParsePayload()
	if err != nil || string(p.JSON()) != string(product(2)) {
		t.Errorf("ParsePayload = %s, %v", p.JSON(), err)
	}
}

func TestTrackerNeverMovesADocBack(t *testing.T) {
	t.Parallel()
	tr := progress.NewTracker(messages.RunAnnounced{Run: run, Total: 2, Destination: "s3://bucket/out/"})
	tr.Apply(success(0, oxytype.DataDone, "7500000000000000001"))
	tr.Apply(success(0, oxytype.DataPayload, ""))                      // late
	tr.Apply(success(0, oxytype.DataSubmitted, "7500000000000000001")) // late
	if got := tr.Progress(); got.Done != 1 || got.Pending != 0 || got.Unsubmitted != 1 {
		t.Fatalf("progress = %+v", got)
	}
	j, ok := tr.Apply(success(0, oxytype.DataWritten, "7500000000000000001"))
	if !ok || j.File != "s3://bucket/out/7500000000000000001.json" || j.Payload == nil {
		t.Fatalf("written: %v %+v", ok, j)
	}
	if _, ok := tr.Apply(success(0, oxytype.DataWritten, "7500000000000000001")); ok {
		t.Error("a doc finished twice")
	}
	if _, ok := tr.Apply(hard(0, oxytype.DataDone, oxytype.Unfetched, "7500000000000000001", nil, "late")); ok {
		t.Error("a hard failure after the doc finished finished it again")
	}
	if _, ok := tr.Apply(success(7, oxytype.DataPayload, "")); ok {
		t.Error("a doc beyond the total finished")
	}
	tr.Apply(&messages.StatusEvent{Run: run, Doc: messages.UnknownDocID("OXY_PAYLOADS", 4), DataType: oxytype.DataPayload, Outcome: oxytype.HardFailure})
	if tr.Ignored() != 2 {
		t.Errorf("Ignored() = %d, want 2", tr.Ignored())
	}
	if got := tr.Progress().String(); got != "1/2 done, 1 unsubmitted, 1 written, 0ms" {
		t.Errorf("progress = %q", got)
	}
}

func TestTrackerWriterFailureTurnsDoneIntoUnfetched(t *testing.T) {
	t.Parallel()
	tr := progress.NewTracker(messages.RunAnnounced{Run: run, Total: 1, Destination: "results"})
	tr.Apply(success(0, oxytype.DataPayload, ""))
	tr.Apply(success(0, oxytype.DataSubmitted, "7500000000000000001"))
	tr.Apply(success(0, oxytype.DataDone, "7500000000000000001"))
	j, ok := tr.Apply(hard(0, oxytype.DataDone, "", "", nil, "put results/7500000000000000001.json: access denied"))
	if !ok || j.Status != oxytype.Unfetched || j.ID != "7500000000000000001" || j.Error == nil || j.Error.StatusCode != nil {
		t.Fatalf("job = %v %+v", ok, j)
	}
	if got := tr.Progress().String(); got != "0/1 done, 1 unfetched, 0ms" {
		t.Errorf("progress = %q", got)
	}
	want := "Could not write job 7500000000000000001, because put results/7500000000000000001.json: access denied: universal https://sandbox.oxylabs.io/products/1"
	if got := progress.ReportLines(tr.Problems()); len(got) != 1 || got[0] != want {
		t.Errorf("report = %q", got)
	}
}

func TestTrackerCountsUploads(t *testing.T) {
	t.Parallel()
	tr := progress.NewTracker(messages.RunAnnounced{Run: run, Total: 2})
	ev := success(0, oxytype.DataDone, "1")
	ev.Upload = &oxytype.Upload{Code: 13000, Message: "ok"}
	tr.Apply(ev)
	ev = hard(1, oxytype.DataSubmitted, oxytype.Faulted, "2", nil, "")
	ev.Upload = &oxytype.Upload{Code: 10001, Message: "exists"}
	j, _ := tr.Apply(ev)
	if j.Upload == nil || j.Upload.Code != 10001 {
		t.Errorf("upload of the faulted job = %+v", j.Upload)
	}
	p := tr.Progress()
	if p.Uploaded != 1 || p.Unuploaded != 1 {
		t.Errorf("uploaded %d, unuploaded %d", p.Uploaded, p.Unuploaded)
	}
}

// TestAFailedUploadMakesTheRunIncomplete: a done job whose upload failed,
// or was never reported, makes the run incomplete (as oxy run's exit code
// 1 says), though it is no problem of the run log's states.
func TestAFailedUploadMakesTheRunIncomplete(t *testing.T) {
	t.Parallel()
	tr := progress.NewTracker(messages.RunAnnounced{Run: run, Total: 3, FinalDataType: oxytype.DataDone})
	for d, up := range []*oxytype.Upload{
		{Code: 13000, Message: "ok"},
		{Code: 13102, Message: "No such path"},
		{Message: "no upload entry within 1m0s after the job finished"},
	} {
		ev := success(d, oxytype.DataDone, fmt.Sprint(7500000000000000001+d))
		ev.Upload = up
		if _, ok := tr.Apply(ev); !ok {
			t.Fatalf("doc %d did not finish at done", d)
		}
	}
	if p := tr.Progress(); p.Unuploaded != len(tr.FailedUploads()) || p.Unuploaded != 2 {
		t.Errorf("%d unuploaded counted, %d failed uploads listed, want 2 of each", p.Unuploaded, len(tr.FailedUploads()))
	}
	if err := progress.NewIncompleteRunError(tr.Problems(), nil, nil, true); err != nil {
		t.Fatalf("without the failed uploads: %v", err)
	}
	err := progress.NewIncompleteRunError(tr.Problems(), tr.FailedUploads(), nil, true)
	if err == nil || err.Error() != "2 unuploaded" {
		t.Fatalf("err = %v, want 2 unuploaded", err)
	}
	var got []string
	for _, j := range err.Unuploaded {
		got = append(got, fmt.Sprintf("%d %s %d", j.Doc, j.ID, j.Upload.Code))
	}
	if want := "1 7500000000000000002 13102, 2 7500000000000000003 0"; strings.Join(got, ", ") != want {
		t.Errorf("unuploaded = %s, want %s", strings.Join(got, ", "), want)
	}
}

func TestReportAndIncompleteRunError(t *testing.T) {
	t.Parallel()
	tr, _ := seedRun(t)
	err := progress.NewIncompleteRunError(tr.Problems(), nil, nil, false)
	if err == nil || err.Error() != "1 unfetched" {
		t.Fatalf("error = %v", err)
	}
	if ids := err.UnfetchedIDs(); len(ids) != 1 || ids[0] != "7500000000000000001" {
		t.Errorf("UnfetchedIDs = %v", ids)
	}
	var b strings.Builder
	if werr := progress.WriteReport(&b, tr.Problems(), err); werr != nil {
		t.Fatal(werr)
	}
	want := "Stopped checking job 7500000000000000001, because the API returned 404 Not Found: universal https://sandbox.oxylabs.io/products/1\n" +
		"Job 7500000000000000002 faulted: universal https://sandbox.oxylabs.io/products/2\n" +
		"\n" +
		"1 unfetched\n"
	if b.String() != want {
		t.Errorf("report:\n%s\nwant:\n%s", b.String(), want)
	}
}

func TestReportLinesForEveryProblem(t *testing.T) {
	t.Parallel()
	tr := progress.NewTracker(messages.RunAnnounced{Run: run, Total: 10})
	for d := range 10 {
		tr.Apply(success(d, oxytype.DataPayload, ""))
	}
	full := "Stopped submitting, because a write to the destination failed: no space left on device"
	tr.Apply(hard(9, oxytype.DataPayload, oxytype.Unsubmitted, "", &oxytype.ErrorInfo{Message: full}, full))
	stopped := &oxytype.ErrorInfo{Message: "the run was stopped"}
	unknown := &oxytype.ErrorInfo{StatusCode: code(500), Message: "Internal Server Error; " + oxytype.MayHaveBilledText, MayHaveBilled: true}
	tr.Apply(hard(8, oxytype.DataPayload, oxytype.Unsubmitted, "", unknown, "500"))
	tr.Apply(hard(7, oxytype.DataPayload, oxytype.Unsubmitted, "", unknown, "500"))
	tr.Apply(hard(6, oxytype.DataPayload, oxytype.Unsubmitted, "", stopped, "the run was stopped"))
	tr.Apply(hard(5, oxytype.DataPayload, oxytype.Unsubmitted, "", stopped, "the run was stopped"))
	tr.Apply(hard(4, oxytype.DataPayload, oxytype.Unsubmitted, "", &oxytype.ErrorInfo{StatusCode: code(403), Message: "Forbidden"}, "403 Forbidden"))
	tr.Apply(hard(3, oxytype.DataPayload, oxytype.Rejected, "", &oxytype.ErrorInfo{StatusCode: code(400), Message: "The hostname cannot be an ip address.", TraceID: "x"}, ""))
	tr.Apply(hard(2, oxytype.DataPayload, oxytype.Rejected, "", &oxytype.ErrorInfo{Message: "Parameter `url` has invalid top level domain format."}, ""))
	tr.Apply(hard(1, oxytype.DataSubmitted, oxytype.Unfetched, "7500000000000000002", nil, "still pending after 1h0m0s; stopped checking"))
	tr.Apply(hard(0, oxytype.DataSubmitted, oxytype.Faulted, "7500000000000000001", nil, ""))
	want := []string{
		"Job 7500000000000000001 faulted: universal https://sandbox.oxylabs.io/products/1",
		"Stopped checking job 7500000000000000002, because still pending after 1h0m0s; stopped checking: universal https://sandbox.oxylabs.io/products/2",
		"Rejected universal https://sandbox.oxylabs.io/products/3: Parameter `url` has invalid top level domain format.",
		"Rejected universal https://sandbox.oxylabs.io/products/4: 400 The hostname cannot be an ip address.",
		"Stopped submitting, because the API returned 403 Forbidden; 1 payload stays unsubmitted",
		"Stopped submitting, because the run was stopped; 2 payloads stay unsubmitted",
		"Not submitted again, because the API returned 500 Internal Server Error; " + oxytype.MayHaveBilledText + "; 2 payloads stay unsubmitted",
		"Stopped submitting, because a write to the destination failed: no space left on device; 1 payload stays unsubmitted",
	}
	got := progress.ReportLines(tr.Problems())
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("report:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	err := progress.NewIncompleteRunError(tr.Problems(), nil, nil, false)
	if err.Error() != "2 rejected, 6 unsubmitted, 1 unfetched" {
		t.Errorf("error = %q", err.Error())
	}
	if err.Rejections[0].Doc != 2 || err.Rejections[1].Doc != 3 || err.Unsubmitted[0].Doc != 4 {
		t.Errorf("not in input order: %+v", err)
	}
}

func TestIncompleteRunErrorIsNilOrStopped(t *testing.T) {
	t.Parallel()
	faulted := []progress.Job{{Doc: 0, ID: "1", Status: oxytype.Faulted}}
	if err := progress.NewIncompleteRunError(faulted, nil, nil, true); err != nil {
		t.Errorf("faulted jobs alone made an error: %v", err)
	}
	stop := &oxytype.StoppedError{Reason: "interrupted"}
	if err := progress.NewIncompleteRunError(faulted, nil, stop, true); err != nil {
		t.Errorf("a stop that left every payload done or faulted made an error: %v", err)
	}
	err := progress.NewIncompleteRunError(nil, nil, stop, false)
	if err == nil || err.Error() != "the run stopped" {
		t.Fatalf("error = %v", err)
	}
	var se *oxytype.StoppedError
	if !errors.As(err, &se) || se.Reason != "interrupted" {
		t.Errorf("cause = %v", err.Cause)
	}
}

// The tracker decides a doc by the run log's rule (runlog.DocOutcome), not
// by the first final event: its Problems and counts end where the run log
// does.
func TestTrackerDecidesADocAsTheRunLogDoes(t *testing.T) {
	t.Parallel()
	const id = "7500000000000000001"
	newRun := func() *progress.Tracker {
		tr := progress.NewTracker(messages.RunAnnounced{Run: run, Total: 1, Destination: "results"})
		tr.Apply(success(0, oxytype.DataPayload, ""))
		tr.Apply(success(0, oxytype.DataSubmitted, id))
		return tr
	}
	t.Run("a written file after a hard failure makes the doc done", func(t *testing.T) {
		t.Parallel()
		tr := newRun()
		if _, ok := tr.Apply(hard(0, oxytype.DataSubmitted, oxytype.Unfetched, id, nil, "stopped checking")); !ok {
			t.Fatal("the hard failure did not finish the doc")
		}
		if _, ok := tr.Apply(success(0, oxytype.DataWritten, id)); ok {
			t.Error("a doc was reported twice")
		}
		if p := tr.Progress(); len(tr.Problems()) != 0 || p.Done != 1 || p.Unfetched != 0 || p.Written != 1 || tr.Finished() != 1 {
			t.Errorf("problems %+v, progress %+v; want none, 1 done and written", tr.Problems(), p)
		}
	})
	t.Run("a hard failure at a later stage replaces one at an earlier stage", func(t *testing.T) {
		t.Parallel()
		tr := newRun()
		tr.Apply(hard(0, oxytype.DataSubmitted, oxytype.Unfetched, id, nil, "poller gave up"))
		tr.Apply(hard(0, oxytype.DataDone, oxytype.Unfetched, id, &oxytype.ErrorInfo{Message: "disk full"}, "writing"))
		tr.Apply(hard(0, oxytype.DataSubmitted, oxytype.Unfetched, id, nil, "an older stage again"))
		ps := tr.Problems()
		if len(ps) != 1 || ps[0].Stage != oxytype.DataDone || ps[0].Error.Message != "disk full" || tr.Progress().Unfetched != 1 {
			t.Errorf("problems %+v, progress %+v; want the writer's failure only", ps, tr.Progress())
		}
	})
	t.Run("a done doc stays done", func(t *testing.T) {
		t.Parallel()
		tr := newRun()
		tr.Apply(success(0, oxytype.DataWritten, id))
		tr.Apply(hard(0, oxytype.DataDone, oxytype.Unfetched, id, nil, "a duplicate failed"))
		if p := tr.Progress(); len(tr.Problems()) != 0 || p.Done != 1 || p.Unfetched != 0 {
			t.Errorf("problems %+v, progress %+v; want 1 done", tr.Problems(), p)
		}
	})
	t.Run("a lost report does not finish the doc", func(t *testing.T) {
		t.Parallel()
		tr := newRun()
		if _, ok := tr.Apply(hard(0, oxytype.DataStatus, oxytype.Unsubmitted, "", nil, "undecodable")); ok || tr.Finished() != 0 {
			t.Errorf("a hard failure at %q finished the doc", oxytype.DataStatus)
		}
	})
	t.Run("the may-have-billed mark sticks to a doc without a job id", func(t *testing.T) {
		t.Parallel()
		tr := progress.NewTracker(messages.RunAnnounced{Run: run, Total: 1})
		tr.Apply(success(0, oxytype.DataPayload, ""))
		tr.Apply(&messages.StatusEvent{Run: run, Doc: "0", DataType: oxytype.DataPayload, Outcome: oxytype.SoftFailure,
			Facts: oxytype.Facts{Error: &oxytype.ErrorInfo{Message: "503", MayHaveBilled: true}}})
		tr.Apply(hard(0, oxytype.DataPayload, oxytype.Unsubmitted, "", &oxytype.ErrorInfo{Message: "the run stopped"}, "stopped"))
		if ps := tr.Problems(); len(ps) != 1 || !ps[0].Error.MayHaveBilled {
			t.Errorf("problems %+v: want the mark kept", ps)
		}
	})
}

// TestTrackerKeepsAByteOrSoPerFinishedDoc: a run of millions must not hold
// a tracker entry per payload beyond a byte or so; a doc's job id and
// payload are let go when it finishes done. Not parallel: it reads the
// heap.
func TestTrackerKeepsAByteOrSoPerFinishedDoc(t *testing.T) {
	const n = 200_000
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	tr := progress.NewTracker(messages.RunAnnounced{Run: run, Total: n, Destination: "results"})
	for d := range n {
		id := fmt.Sprintf("75%017d", d)
		for _, dt := range []oxytype.DataType{oxytype.DataPayload, oxytype.DataSubmitted, oxytype.DataDone, oxytype.DataWritten} {
			tr.Apply(success(d, dt, id))
		}
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	if got := tr.Progress().String(); got != "200,000/200,000 done, 200,000 written, 0ms" {
		t.Fatalf("progress = %q", got)
	}
	runtime.KeepAlive(tr)
	per := (int64(after.HeapAlloc) - int64(before.HeapAlloc)) / n
	t.Logf("%d bytes per finished doc", per)
	if per > 4 {
		t.Errorf("the tracker holds %d bytes per finished doc, want at most 4", per)
	}
}
