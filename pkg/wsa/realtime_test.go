package wsa_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/oxypipe/oxypipe/pkg/emulator"
	"github.com/oxypipe/oxypipe/pkg/payload"
	"github.com/oxypipe/oxypipe/pkg/wsa"
)

func realtimeClient(t *testing.T, cfg emulator.Config) (*wsa.Client, *emulator.Server) {
	t.Helper()
	srv := emulator.NewServer(t, cfg)
	c, err := wsa.New(wsa.Config{BaseURL: srv.URL, RealtimeURL: srv.URL + emulator.RealtimePath, Username: srv.Username, Password: srv.Password, Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return c, srv
}

// realtimeAfter runs one Realtime call while the fake clock is advanced by
// d once the emulator waits on it.
func realtimeAfter(t *testing.T, c *wsa.Client, clock *emulator.FakeClock, p payload.Payload, d time.Duration) (wsa.RealtimeResult, error) {
	t.Helper()
	type answer struct {
		res wsa.RealtimeResult
		err error
	}
	done := make(chan answer, 1)
	go func() {
		res, err := c.Realtime(context.Background(), p)
		done <- answer{res, err}
	}()
	waitFor(t, "the emulator waits for the job", func() bool { return clock.Timers() > 0 })
	clock.Advance(d)
	a := <-done
	return a.res, a.err
}

func TestRealtime(t *testing.T) {
	t.Parallel()
	t.Run("a job that finishes is answered 200 with its results", func(t *testing.T) {
		t.Parallel()
		clock := emulator.NewFakeClock(emulator.FakeEpoch())
		c, srv := realtimeClient(t, emulator.Config{Clock: clock, JobTime: 2 * time.Second})
		res, err := realtimeAfter(t, c, clock, universal("https://sandbox.oxylabs.io/products/1"), 2*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		var body struct {
			Results []struct {
				Content string `json:"content"`
			} `json:"results"`
		}
		if err := json.Unmarshal(res.Body, &body); err != nil || len(body.Results) != 1 || !strings.Contains(body.Results[0].Content, "<html") {
			t.Fatalf("body %.200s: %v", res.Body, err)
		}
		if res.Job.Status != wsa.JobDone || !wsa.ValidJobID(res.Job.ID) {
			t.Fatalf("job %+v", res.Job)
		}
		var ae *wsa.APIError
		if _, err := c.Status(context.Background(), res.Job.ID); !errors.As(err, &ae) || ae.StatusCode != 404 {
			t.Fatalf("Status of a Realtime job = %v, want 404 (Realtime jobs are not visible to Push-Pull)", err)
		}
		st := srv.Emulator.Stats()
		if st.Requests[emulator.EndpointRealtime] != 1 || st.Requests[emulator.EndpointStatus] != 1 || st.Requests[emulator.EndpointResults] != 0 || st.JobsCreated != 1 {
			t.Fatalf("stats %+v", st)
		}
	})
	t.Run("a job of 150 s or longer is answered 408 Timed out. at 160 s", func(t *testing.T) {
		t.Parallel()
		clock := emulator.NewFakeClock(emulator.FakeEpoch())
		c, _ := realtimeClient(t, emulator.Config{Clock: clock, JobTime: 150 * time.Second})
		_, err := realtimeAfter(t, c, clock, universal("https://sandbox.oxylabs.io/products/1"), emulator.RealtimeTimeoutAfter)
		var ae *wsa.APIError
		if !errors.As(err, &ae) || ae.StatusCode != 408 || ae.Message != "Timed out." {
			t.Fatalf("err = %v, want 408 Timed out.", err)
		}
		if wsa.Classify(err) != wsa.Reject || wsa.MayHaveCreatedJob(err) {
			t.Fatalf("408 classified %v, may have created %v; want a rejection that created nothing to fetch", wsa.Classify(err), wsa.MayHaveCreatedJob(err))
		}
	})
	t.Run("storage_url and LLM sources are refused", func(t *testing.T) {
		t.Parallel()
		c, srv := realtimeClient(t, emulator.Config{})
		p := universal("https://sandbox.oxylabs.io/products/1")
		_ = p.Set("storage_type", "s3")
		_ = p.Set("storage_url", "s3://bucket/x")
		_, err := c.Realtime(context.Background(), p)
		var ae *wsa.APIError
		if !errors.As(err, &ae) || ae.StatusCode != 400 || ae.Message != "Parameter `storage_url` cannot be used with realtime." || wsa.Classify(err) != wsa.Reject {
			t.Fatalf("storage_url: err = %v", err)
		}
		_, err = c.Realtime(context.Background(), payload.New("chatgpt", "prompt", "hello"))
		if !errors.As(err, &ae) || ae.StatusCode != 422 || wsa.Classify(err) != wsa.Reject {
			t.Fatalf("LLM source: err = %v", err)
		}
		if st := srv.Emulator.Stats(); st.JobsCreated != 0 {
			t.Fatalf("refused Realtime calls created %d jobs", st.JobsCreated)
		}
	})
}
