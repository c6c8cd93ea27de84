package cli

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/oxypipe/oxypipe/internal/statusworker"
	"github.com/oxypipe/oxypipe/pkg/messages"
	"github.com/oxypipe/oxypipe/pkg/oxytype"
)

func TestStatusFeed(t *testing.T) {
	t.Parallel()
	opened := time.Date(2026, 9, 29, 17, 0, 0, 0, time.UTC)
	view := statusworker.FeedView{
		Record: messages.FeedRecord{
			V: 1, Feed: "crawler", State: messages.FeedStateOpen, Cut: messages.FeedCut{MaxPayloads: 1000, MaxAge: time.Hour},
			Destination: "results", RunLog: "logs", Assigned: 1004, Duplicates: 2, Opened: 2,
			Runs:    []messages.FeedRun{{Run: "crawler.1", Docs: 1000, OpenedAt: opened, Cutting: true}},
			Current: &messages.FeedRun{Run: "crawler.2", Docs: 4, OpenedAt: opened.Add(time.Hour)},
		},
		RunStates: map[string]oxytype.RunState{"crawler.1": oxytype.RunStateCompleted, "crawler.2": oxytype.RunStateReady},
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /feeds/crawler", func(w http.ResponseWriter, _ *http.Request) { _ = json.NewEncoder(w).Encode(view) })
	mux.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write([]byte(`{"error":"no feed nope"}`))
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)

	t.Run("prints the feed and its runs", func(t *testing.T) {
		t.Parallel()
		res := run(t, nil, "status", "--url", srv.URL, "--feed", "crawler")
		want := `Feed crawler: open, runs cut at 1,000 payloads or 1h0m0s after a run opened
Destination: results
Run log: logs
Payloads: 1,004 assigned, 2 dropped as retries

RUN        PAYLOADS  OPENED                   STATE
crawler.1  1,000     2026-09-29 17:00:00 UTC  completed
crawler.2  4         2026-09-29 18:00:00 UTC  ready (taking payloads)
`
		if res.code != 0 || res.stdout != want {
			t.Errorf("exit %d, stderr %q, stdout:\n%s\nwant:\n%s", res.code, res.stderr, res.stdout, want)
		}
	})
	t.Run("an unknown feed exits 1", func(t *testing.T) {
		t.Parallel()
		res := run(t, nil, "status", "--url", srv.URL, "--feed", "nope")
		if res.code != 1 || res.stderr != "error: statusworker /feeds/nope: not found: no feed nope\n" {
			t.Errorf("exit %d, stderr %q", res.code, res.stderr)
		}
	})
	t.Run("a run id with --feed is a usage error", func(t *testing.T) {
		t.Parallel()
		res := run(t, nil, "status", "--url", srv.URL, "--feed", "crawler", "run-1")
		if res.code != 2 {
			t.Errorf("exit %d, stderr %q", res.code, res.stderr)
		}
	})
}
