package emulator

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// receiver is a callback listener that records what it gets.
type receiver struct {
	mu     sync.Mutex
	jobs   []map[string]any
	status int // what it answers; 200 unless set
	calls  int
	srv    *httptest.Server
}

func newReceiver(t *testing.T, status int) *receiver {
	rc := &receiver{status: status}
	rc.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var job map[string]any
		_ = json.Unmarshal(body, &job)
		rc.mu.Lock()
		rc.calls++
		if r.Header.Get("Content-Type") == "application/json" {
			rc.jobs = append(rc.jobs, job)
		}
		st := rc.status
		rc.mu.Unlock()
		w.WriteHeader(st)
	}))
	t.Cleanup(rc.srv.Close)
	return rc
}

func (rc *receiver) snapshot() (int, []map[string]any) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return rc.calls, append([]map[string]any(nil), rc.jobs...)
}

func TestCallbacks(t *testing.T) {
	t.Parallel()
	t.Run("one callback per job, after the final status, with the job object", func(t *testing.T) {
		t.Parallel()
		rc := newReceiver(t, 200)
		f := setup(t, Config{Rules: []Rule{{Pattern: regexp.MustCompile(`/b$`), Outcome: Outcome{Fault: true, JobTime: 5 * time.Second}}}})
		b := f.do("POST", "/v1/queries/batch", `{"source":"universal","callback_url":"`+rc.srv.URL+`/cb","url":["https://shop.com/a","https://shop.com/b"]}`).expect(t, 202).batch(t)
		if len(b.Queries) != 2 || b.Queries[0]["callback_url"] != rc.srv.URL+"/cb" {
			t.Fatalf("%+v", b.Queries)
		}
		waitFor(t, "the callback loop to wait on the clock", func() bool { return f.clock.Timers() > 0 })
		if calls, _ := rc.snapshot(); calls != 0 {
			t.Fatal("no callback before the job finishes")
		}
		f.clock.Advance(2 * time.Second)
		waitFor(t, "the first callback", func() bool { n, _ := rc.snapshot(); return n == 1 })
		waitFor(t, "the callback loop to wait again", func() bool { return f.clock.Timers() > 0 })
		f.clock.Advance(3 * time.Second)
		waitFor(t, "the second callback", func() bool { n, _ := rc.snapshot(); return n == 2 })
		_, jobs := rc.snapshot()
		if jobs[0]["id"] != "7500000000000000001" || jobs[0]["status"] != "done" || jobs[0]["updated_at"] != "2026-01-01 00:00:02" {
			t.Fatalf("first callback %v %v %v", jobs[0]["id"], jobs[0]["status"], jobs[0]["updated_at"])
		}
		if jobs[1]["id"] != "7500000000000000002" || jobs[1]["status"] != "faulted" {
			t.Fatalf("second callback %v %v", jobs[1]["id"], jobs[1]["status"])
		}
		if _, ok := jobs[0]["_links"]; !ok {
			t.Fatal("the callback carries _links")
		}
		waitFor(t, "stats", func() bool { return f.srv.Emulator.Stats().CallbacksSent == 2 })
	})

	t.Run("a failing listener is retried with backoff, then given up", func(t *testing.T) {
		t.Parallel()
		rc := newReceiver(t, 500)
		f := setup(t, Config{CallbackAttempts: 3, CallbackBackoff: time.Second})
		f.submit(`{"source":"universal","url":"https://shop.com/","callback_url":"` + rc.srv.URL + `"}`)
		waitFor(t, "the callback loop", func() bool { return f.clock.Timers() > 0 })
		f.clock.Advance(2 * time.Second)
		waitFor(t, "the first attempt", func() bool { n, _ := rc.snapshot(); return n == 1 })
		waitFor(t, "the retry timer", func() bool { return f.clock.Timers() > 0 })
		f.clock.Advance(time.Second)
		waitFor(t, "the second attempt", func() bool { n, _ := rc.snapshot(); return n == 2 })
		waitFor(t, "the retry timer", func() bool { return f.clock.Timers() > 0 })
		f.clock.Advance(1999 * time.Millisecond)
		if n, _ := rc.snapshot(); n != 2 {
			t.Fatal("the backoff doubles")
		}
		f.clock.Advance(time.Millisecond)
		waitFor(t, "the third attempt", func() bool { n, _ := rc.snapshot(); return n == 3 })
		waitFor(t, "giving up", func() bool { return f.srv.Emulator.Stats().CallbacksFailed == 1 })
	})

	t.Run("real clock with a time scale", func(t *testing.T) {
		t.Parallel()
		rc := newReceiver(t, 200)
		f := setup(t, Config{Clock: RealClock(), JobTime: 2 * time.Second, TimeScale: 0.001})
		f.submit(`{"source":"universal","url":"https://shop.com/","callback_url":"` + rc.srv.URL + `"}`)
		waitFor(t, "the callback", func() bool { n, _ := rc.snapshot(); return n == 1 })
	})

	t.Run("close stops pending callbacks", func(t *testing.T) {
		t.Parallel()
		rc := newReceiver(t, 200)
		e, err := New(Config{Clock: NewFakeClock(time.Time{}), JobTime: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		srv := httptest.NewServer(e)
		defer srv.Close()
		req, _ := http.NewRequest("POST", srv.URL+"/v1/queries", strings.NewReader(`{"source":"universal","url":"https://shop.com/","callback_url":"`+rc.srv.URL+`"}`))
		req.SetBasicAuth("u", "p")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if err := e.Close(); err != nil {
			t.Fatal(err)
		}
		e.cfg.Clock.(*FakeClock).Advance(time.Hour)
		if n, _ := rc.snapshot(); n != 0 {
			t.Fatal("a closed emulator sends no callbacks")
		}
	})
}
