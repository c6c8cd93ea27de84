package cli

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/oxypipe/oxypipe/internal/statusworker"
	"github.com/oxypipe/oxypipe/pkg/messages"
	"github.com/oxypipe/oxypipe/pkg/oxytype"
)

// statusServer answers the statusworker's routes for one completed run with
// views built from the statusworker's own types; the end-to-end tests ask a
// real statusworker.
func statusServer(t *testing.T) *httptest.Server {
	t.Helper()
	code := 404
	started := time.Date(2026, 9, 29, 17, 4, 12, 345e6, time.UTC)
	run := statusworker.RunDetail{
		RunView: statusworker.RunView{
			Run: "20260929T170412.345Z", State: oxytype.RunStateCompleted, Total: 3, FinalDataType: "written",
			Destination: "results", RunLog: "logs", StartedAt: started,
			Completed: &messages.RunCompleted{Run: "20260929T170412.345Z", Total: 3, Done: 1, Faulted: 1, Unfetched: 1},
		},
		Stages: []statusworker.StageView{
			{DataType: "payload", Total: 3, Succeeded: 3},
			{DataType: "submitted", Total: 3, Succeeded: 1, SoftFailed: 1, HardFailed: 2},
			{DataType: "written", Total: 1, Succeeded: 1},
		},
	}
	failures := map[string]any{"count": 2, "truncated": false, "failures": []statusworker.RecordView{
		{Doc: "0", DataType: "submitted", Outcome: "hard_failure", State: oxytype.Unfetched, APIJobID: "7500000000000000001",
			Error: &oxytype.ErrorInfo{StatusCode: &code, Message: "Not Found"}},
		{Doc: "1", DataType: "submitted", Outcome: "hard_failure", State: oxytype.Faulted, APIJobID: "7500000000000000002",
			HardFailure: "job faulted"},
	}}
	errs := map[string]any{"errors": []statusworker.ErrorView{
		{Error: "stopped checking job 7500000000000000001, because the API returned 404 Not Found", DataType: "submitted", Count: 1},
		{Error: "job faulted", DataType: "submitted", Count: 1},
	}}
	mux := http.NewServeMux()
	reply := func(v any) http.HandlerFunc {
		return func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(v)
		}
	}
	mux.Handle("GET /runs/20260929T170412.345Z", reply(run))
	mux.Handle("GET /runs/20260929T170412.345Z/failures", reply(failures))
	mux.Handle("GET /runs/20260929T170412.345Z/errors", reply(errs))
	mux.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write([]byte(`{"error":"run not found"}`))
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

func TestStatus(t *testing.T) {
	t.Parallel()
	srv := statusServer(t)
	t.Run("prints the run, its stages, failures and errors as tables", func(t *testing.T) {
		t.Parallel()
		res := run(t, []string{"OXY_STATUS_URL=" + srv.URL}, "status", "20260929T170412.345Z")
		want := `Run 20260929T170412.345Z: completed, 3 payloads, started 2026-09-29 17:04:12 UTC
Destination: results
Run log: logs
Outcome: 1 done, 1 faulted, 1 unfetched

STAGE      TOTAL  SUCCEEDED  SOFT-FAILED  HARD-FAILED
payload        3          3            0            0
submitted      3          1            1            2
written        1          1            0            0

Failures (2):
DOC  STAGE      OUTCOME       STATE      JOB ID               ERROR
0    submitted  hard_failure  unfetched  7500000000000000001  404 Not Found
1    submitted  hard_failure  faulted    7500000000000000002  job faulted

Errors:
COUNT  STAGE      ERROR
1      submitted  stopped checking job 7500000000000000001, because the API returned 404 Not Found
1      submitted  job faulted
`
		if res.code != 0 || res.stdout != want {
			t.Errorf("exit %d, stderr %q, stdout:\n%s\nwant:\n%s", res.code, res.stderr, res.stdout, want)
		}
	})
	t.Run("--json prints one object", func(t *testing.T) {
		t.Parallel()
		res := run(t, nil, "status", "20260929T170412.345Z", "--url", srv.URL, "--json")
		var rep statusReport
		if res.code != 0 || json.Unmarshal([]byte(res.stdout), &rep) != nil || strings.Count(res.stdout, "\n") != 1 {
			t.Fatalf("exit %d, stdout %q", res.code, res.stdout)
		}
		if rep.Run.Completed.Unfetched != 1 || len(rep.Run.Stages) != 3 || rep.Failures.Count != 2 || len(rep.Errors.Errors) != 2 {
			t.Errorf("report %+v", rep)
		}
	})
	t.Run("an unknown run exits 1", func(t *testing.T) {
		t.Parallel()
		res := run(t, nil, "status", "nope", "--url", srv.URL)
		if res.code != 1 || res.stderr != "error: statusworker /runs/nope: not found: run not found\n" {
			t.Errorf("exit %d, stderr %q", res.code, res.stderr)
		}
	})
	t.Run("without --url it says where to get one", func(t *testing.T) {
		t.Parallel()
		res := run(t, nil, "status", "20260929T170412.345Z")
		if res.code != 2 || !strings.HasPrefix(res.stderr, "error: --url is required") || !strings.Contains(res.stderr, "oxy run --status-addr") {
			t.Errorf("exit %d, stderr %q", res.code, res.stderr)
		}
	})
}
