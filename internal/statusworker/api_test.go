package statusworker_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/oxypipe/oxypipe/internal/statusworker"
	"github.com/oxypipe/oxypipe/internal/testutil"
	"github.com/oxypipe/oxypipe/pkg/jobresults"
	"github.com/oxypipe/oxypipe/pkg/oxytype"
)

func TestAPI(t *testing.T) {
	t.Parallel()
	e := setup(t)
	sw := e.start(e.config(jobresults.NewMemoryStore(), nil))
	h := sw.w.Handler()
	get := func(t *testing.T, method, path string, wantCode int, into any) string {
		t.Helper()
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequestWithContext(t.Context(), method, path, nil))
		res := rec.Result()
		defer func() { _ = res.Body.Close() }()
		body := rec.Body.String()
		if res.StatusCode != wantCode {
			t.Fatalf("%s %s: %d %s, want %d", method, path, res.StatusCode, body, wantCode)
		}
		if ct := res.Header.Get("Content-Type"); ct != "application/json" {
			t.Fatalf("%s %s: content type %q", method, path, ct)
		}
		if into != nil {
			if err := json.Unmarshal(rec.Body.Bytes(), into); err != nil {
				t.Fatalf("%s %s: %v in %s", method, path, err, body)
			}
		}
		return body
	}

	// An open run: the seed example (seedEvents) without doc 2's last event.
	run, _ := e.announce(3, e.logDir)
	evs := seedEvents(run)
	e.publish(evs[:len(evs)-1]...)
	testutil.Eventually(t, 10*time.Second, "events applied", func() bool {
		return counter(t, sw.cfg, "oxy_statusworker_events_total", "result", "applied") == 9
	})

	t.Run("GET /runs lists runs with their progress", func(t *testing.T) {
		var got struct{ Runs []statusworker.RunView }
		get(t, "GET", "/runs", 200, &got)
		if len(got.Runs) != 1 {
			t.Fatalf("%+v", got)
		}
		r := got.Runs[0]
		if r.Run != run || r.State != oxytype.RunStateReady || r.Total != 3 || r.Progress == nil ||
			r.Progress.Done != 0 || r.Progress.HardFailed != 2 || r.FinalDataType != "written" {
			t.Fatalf("%+v %+v", r, r.Progress)
		}
		get(t, "GET", "/runs?state=completed", 200, &got)
		if len(got.Runs) != 0 {
			t.Fatalf("filtered: %+v", got)
		}
	})

	t.Run("GET /runs/{run} has the record and the stage counts", func(t *testing.T) {
		var got statusworker.RunDetail
		get(t, "GET", "/runs/"+run, 200, &got)
		want := []statusworker.StageView{
			{DataType: "done", Total: 1, Succeeded: 1},
			{DataType: "payload", Total: 3, Succeeded: 3},
			{DataType: "submitted", Total: 3, Succeeded: 1, HardFailed: 2},
		}
		if got.Run != run || len(got.Stages) != 3 || got.Stages[0] != want[0] || got.Stages[1] != want[1] || got.Stages[2] != want[2] {
			t.Fatalf("%+v", got)
		}
		var stages struct{ Stages []statusworker.StageView }
		get(t, "GET", "/runs/"+run+"/stages", 200, &stages)
		if len(stages.Stages) != 3 || stages.Stages[2] != want[2] {
			t.Fatalf("%+v", stages)
		}
	})

	t.Run("GET /runs/{run}/failures lists failed records, by stage", func(t *testing.T) {
		var got struct {
			Count     int
			Truncated bool
			Failures  []statusworker.RecordView
		}
		get(t, "GET", "/runs/"+run+"/failures?stage=submitted", 200, &got)
		if got.Count != 2 || got.Truncated || len(got.Failures) != 2 {
			t.Fatalf("%+v", got)
		}
		f := got.Failures[0]
		if f.Doc != "0" || f.State != oxytype.Unfetched || f.APIJobID != jobID(0) || f.Error == nil || *f.Error.StatusCode != 404 ||
			f.Consumer != "poller/pol-0" || f.Outcome != "hard_failure" {
			t.Fatalf("%+v", f)
		}
		get(t, "GET", "/runs/"+run+"/failures?limit=1", 200, &got)
		if got.Count != 2 || !got.Truncated || len(got.Failures) != 1 {
			t.Fatalf("limited: %+v", got)
		}
		get(t, "GET", "/runs/"+run+"/failures?stage=payload", 200, &got)
		if got.Count != 0 || got.Failures == nil {
			t.Fatalf("no failures: %+v", got)
		}
		get(t, "GET", "/runs/"+run+"/failures?limit=0", 400, nil)
	})

	t.Run("GET /runs/{run}/errors groups unique errors", func(t *testing.T) {
		var got struct{ Errors []statusworker.ErrorView }
		get(t, "GET", "/runs/"+run+"/errors", 200, &got)
		if len(got.Errors) != 2 || got.Errors[0].Count != 1 || got.Errors[0].DataType != "submitted" {
			t.Fatalf("%+v", got)
		}
	})

	t.Run("GET /runs/{run}/docs/{doc} has the doc's records and line", func(t *testing.T) {
		var got statusworker.DocView
		get(t, "GET", "/runs/"+run+"/docs/0", 200, &got)
		if !got.Resolved || got.Line.State != oxytype.Unfetched || len(got.Records) != 2 || *got.Line.ID != jobID(0) {
			t.Fatalf("%+v", got)
		}
		get(t, "GET", "/runs/"+run+"/docs/2", 200, &got)
		if got.Resolved || len(got.Records) != 3 {
			t.Fatalf("doc in flight: %+v", got)
		}
	})

	t.Run("errors are JSON with proper codes", func(t *testing.T) {
		body := get(t, "GET", "/runs/20200101T000000.000Z", 404, nil)
		if !strings.Contains(body, `"error":"unknown run`) {
			t.Fatalf("%s", body)
		}
		get(t, "GET", "/runs/no.such..run/stages", 404, nil)
		get(t, "GET", "/runs/"+run+"/docs/3", 404, nil)
		get(t, "GET", "/runs/"+run+"/docs/01", 404, nil)
		get(t, "GET", "/runs/"+run+"/nothing", 404, nil)
		get(t, "POST", "/runs", http.StatusMethodNotAllowed, nil)
	})

	t.Run("a completed run shows its completion", func(t *testing.T) {
		e.publish(evs[len(evs)-1])
		e.waitCompleted(run)
		// The worker updates its own view right after storing the record,
		// a moment after the bucket shows it.
		var got statusworker.RunDetail
		testutil.Eventually(t, 5*time.Second, "the API shows the completion", func() bool {
			got = statusworker.RunDetail{}
			get(t, "GET", "/runs/"+run, 200, &got)
			return got.State == oxytype.RunStateCompleted
		})
		if got.Completed == nil || got.Completed.Done != 1 || got.Progress != nil {
			t.Fatalf("%+v", got)
		}
	})
}
