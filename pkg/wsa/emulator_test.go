package wsa_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/oxypipe/oxypipe/pkg/emulator"
	"github.com/oxypipe/oxypipe/pkg/payload"
	"github.com/oxypipe/oxypipe/pkg/wsa"
)

// The client against the project's emulator: the emulator's answers go
// through the same decoding as the live API's.

func emulated(t *testing.T, cfg emulator.Config) (*wsa.Client, *emulator.Server) {
	t.Helper()
	srv := emulator.NewServer(t, cfg)
	c, err := wsa.New(wsa.Config{BaseURL: srv.URL, Username: srv.Username, Password: srv.Password, Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return c, srv
}

func TestEmulatorLifecycle(t *testing.T) {
	t.Parallel()
	clock := emulator.NewFakeClock(emulator.FakeEpoch())
	c, srv := emulated(t, emulator.Config{Clock: clock, JobTime: 2 * time.Second})
	ctx := context.Background()
	const url = "https://sandbox.oxylabs.io/products/1"

	job, rl, err := c.Submit(ctx, universal(url))
	if err != nil {
		t.Fatal(err)
	}
	if len(job.ID) != 19 || job.Status != wsa.JobPending || job.CreatedAt.IsZero() || !job.HasStatuses {
		t.Fatalf("submitted job = %+v", job)
	}
	if !rl.Known || rl.Total != 50 || rl.TotalRemaining != 49 {
		t.Fatalf("rate limit = %+v", rl)
	}

	_, err = c.Results(ctx, job.ID)
	if !errors.Is(err, wsa.ErrPending) {
		t.Fatalf("Results while pending = %v, want ErrPending", err)
	}
	if st, err := c.Status(ctx, job.ID); err != nil || st.Status != wsa.JobPending {
		t.Fatalf("Status while pending = %+v, %v", st, err)
	}

	clock.Advance(2 * time.Second)
	st, err := c.Status(ctx, job.ID)
	if err != nil || st.Status != wsa.JobDone || !st.UpdatedAt.After(st.CreatedAt) {
		t.Fatalf("Status when done = %+v, %v", st, err)
	}

	rr, err := c.Results(ctx, job.ID)
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(rr.Body)
	_ = rr.Body.Close()
	if err != nil || rr.JobStatus != wsa.JobDone {
		t.Fatalf("read %d bytes, %v, job status %q", len(body), err, rr.JobStatus)
	}
	var streamed wsa.Results
	if err := json.Unmarshal(body, &streamed); err != nil || streamed.Job.ID != job.ID {
		t.Fatalf("streamed body: %v, job %q", err, streamed.Job.ID)
	}

	res, err := c.ResultsDecoded(ctx, job.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Results) != 1 || res.Results[0].Type != "raw" || res.Results[0].Page != 1 || res.Results[0].StatusCode != 200 || res.Job.Status != wsa.JobDone {
		t.Fatalf("decoded = %+v", res)
	}
	if html, err := res.Results[0].Text(); err != nil || !strings.Contains(html, "<html") {
		t.Fatalf("raw content = %.60q, %v", html, err)
	}
	if n := srv.Emulator.Stats().CreatedByInput[url]; n != 1 {
		t.Fatalf("billed %d times", n)
	}
}

func TestEmulatorBatch(t *testing.T) {
	t.Parallel()
	c, srv := emulated(t, emulator.Config{HeaderStyle: emulator.HeaderUnderscored, JobTime: time.Hour})
	ps := []payload.Payload{
		universal("https://sandbox.oxylabs.io/products/1"),
		universal("https://shop.invalid/x"),
		universal("https://sandbox.oxylabs.io/products/2"),
		universal("https://sandbox.oxylabs.io/products/1"),
	}
	res, rl, err := c.SubmitBatch(context.Background(), ps)
	if err != nil {
		t.Fatal(err)
	}
	if !rl.Known || rl.Total != 50 {
		t.Fatalf("underscored rate-limit headers not read: %+v", rl)
	}
	if res.Accepted() != 3 || len(res.UnmatchedJobs) != 0 || len(res.UnmatchedErrors) != 0 {
		t.Fatalf("accepted %d, outcomes %q", res.Accepted(), outcomes(res))
	}
	ids := map[string]bool{}
	for i, it := range res.Items {
		if i == 1 {
			if it.Err == nil || wsa.Classify(it.Err) != wsa.Reject || !strings.HasPrefix(it.Err.Error(), "202 ") {
				t.Fatalf("invalid value = %v", it.Err)
			}
			continue
		}
		_, want := ps[i].Input()
		var echoed string
		if v, ok := it.Job.Field("url"); !ok || json.Unmarshal(v, &echoed) != nil || echoed != want || ids[it.Job.ID] {
			t.Fatalf("item %d: job %s echoes %q, want %q and a new id", i, it.Job.ID, echoed, want)
		}
		ids[it.Job.ID] = true
	}
	if st := srv.Emulator.Stats(); st.JobsCreated != 3 || st.CreatedByInput["https://sandbox.oxylabs.io/products/1"] != 2 {
		t.Fatalf("stats = %+v", st)
	}
}

func TestEmulatorErrorsDecodeLikeTheLiveAPI(t *testing.T) {
	t.Parallel()
	c, _ := emulated(t, emulator.Config{
		Rules: []emulator.Rule{
			{Pattern: regexp.MustCompile(`/throttled$`), Outcome: emulator.Outcome{Throttle: true}},
			{Pattern: regexp.MustCompile(`/broken$`), Outcome: emulator.Outcome{SubmitFailure: &emulator.Failure{Status: 500}}},
		},
	})
	ctx := context.Background()
	submit := func(p payload.Payload) error { _, _, err := c.Submit(ctx, p); return err }

	err := submit(universal("https://a.io/throttled"))
	if wsa.Classify(err) != wsa.Throttle || !errors.Is(err, wsa.ErrDomainThrottle) {
		t.Fatalf("throttle = %v (%v)", err, wsa.Classify(err))
	}
	err = submit(universal("https://a.io/broken"))
	var ae *wsa.APIError
	if !errors.As(err, &ae) || ae.StatusCode != 500 || ae.TraceID == "" || wsa.Classify(err) != wsa.Retry {
		t.Fatalf("500 = %#v", err)
	}
	err = submit(universal("http://127.0.0.1/"))
	if err == nil || err.Error() != "400 The hostname cannot be an ip address." {
		t.Fatalf("IP host = %v", err)
	}
	err = submit(payload.New("no_such_source", "query", "q"))
	if err == nil || err.Error() != "400 Unsupported source." || wsa.Classify(err) != wsa.Reject {
		t.Fatalf("unknown source = %v", err)
	}
	if _, err := c.Status(ctx, "7599999999999999999"); err == nil || err.Error() != "404 Query not found." {
		t.Fatalf("unknown id = %v", err)
	}
	if _, err := c.Status(ctx, "abc"); err == nil || err.Error() != "404 Resource not found" {
		t.Fatalf("non-numeric id = %v", err)
	}
}

func TestEmulatorWrongCredentials(t *testing.T) {
	t.Parallel()
	srv := emulator.NewServer(t, emulator.Config{Username: "alice", Password: "right"})
	c, err := wsa.New(wsa.Config{BaseURL: srv.URL, Username: "alice", Password: "wrong"})
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = c.Submit(context.Background(), universal("https://a.io"))
	if err == nil || err.Error() != "401 Unauthorized" || wsa.Classify(err) != wsa.Stop {
		t.Fatalf("wrong password = %v", err)
	}
}

func TestEmulatorBatchOverBudgetIsRefusedWhole(t *testing.T) {
	t.Parallel()
	c, srv := emulated(t, emulator.Config{RateLimit: 3, JobTime: time.Hour})
	ps := make([]payload.Payload, 5)
	for i := range ps {
		ps[i] = universal("https://sandbox.oxylabs.io/products/" + string(rune('1'+i)))
	}
	_, _, err := c.SubmitBatch(context.Background(), ps)
	if !errors.Is(err, wsa.ErrTooManyRequests) || wsa.Classify(err) != wsa.Retry || wsa.MayHaveCreatedJob(err) {
		t.Fatalf("over-budget batch = %v", err)
	}
	if n := srv.Emulator.Stats().JobsCreated; n != 0 {
		t.Fatalf("%d jobs created by a refused batch", n)
	}
}

// TestEmulatorPacerKeepsUnderTheLimit submits more jobs than one window
// allows, through a Pacer, and expects no 429.
func TestEmulatorPacerKeepsUnderTheLimit(t *testing.T) {
	t.Parallel()
	const window = 100 * time.Millisecond
	c, srv := emulated(t, emulator.Config{RateLimit: 4, RateWindow: window, JobTime: time.Hour})
	pacer, err := wsa.NewPacer(wsa.PacerConfig{Limit: 4, Window: window})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var tooMany atomic.Int32
	done := make(chan error, 10)
	for i := range 10 {
		go func() {
			p := universal("https://sandbox.oxylabs.io/products/" + string(rune('a'+i)))
			tk, err := pacer.Wait(ctx, wsa.CostOf(p))
			if err != nil {
				done <- err
				return
			}
			_, rl, err := c.Submit(ctx, p)
			pacer.Done(tk, rl, err)
			if errors.Is(err, wsa.ErrTooManyRequests) {
				tooMany.Add(1)
				err = nil
			}
			done <- err
		}()
	}
	for range 10 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	if n := tooMany.Load(); n != 0 {
		t.Fatalf("%d submissions got 429 through the pacer", n)
	}
	if n := srv.Emulator.Stats().JobsCreated; n != 10 {
		t.Fatalf("%d jobs created, want 10", n)
	}
}

// TestEmulatorUnlimitedLetsThePacerRun submits through a Pacer that starts at
// the Starter budget (50 a second) to an unlimited emulator: the first answer
// advertises emulator.UnlimitedBudget, and the pacer applies it within the
// window already open, so thousands of jobs go without the clock moving.
func TestEmulatorUnlimitedLetsThePacerRun(t *testing.T) {
	t.Parallel()
	c, srv := emulated(t, emulator.Config{RateLimit: emulator.Unlimited, RenderRateLimit: emulator.Unlimited, JobTime: time.Hour})
	pacer, clock := newPacer(t, wsa.PacerConfig{})
	ctx := context.Background()
	const batches, size = 20, 500
	for b := range batches {
		ps := make([]payload.Payload, size)
		for i := range ps {
			ps[i] = universal(fmt.Sprintf("https://sandbox.oxylabs.io/products/%d", b*size+i))
		}
		tk := mustWait(t, pacer, wsa.CostOf(ps...)) // fails when the pacer waits for the (frozen) clock
		res, rl, err := c.SubmitBatch(ctx, ps)
		pacer.Done(tk, rl, err)
		if err != nil || res.Accepted() != size {
			t.Fatalf("batch %d: %v, %d accepted", b, err, res.Accepted())
		}
		if !rl.Known || rl.Total != emulator.UnlimitedBudget {
			t.Fatalf("batch %d: rate limit %+v, want the advertised %d", b, rl, emulator.UnlimitedBudget)
		}
	}
	if got := pacer.Limits(); got.Total != emulator.UnlimitedBudget {
		t.Fatalf("pacer limits = %+v, want %d", got, emulator.UnlimitedBudget)
	}
	if clock.pending() != 0 {
		t.Fatal("the pacer waited on the clock")
	}
	if n := srv.Emulator.Stats().JobsCreated; n != batches*size {
		t.Fatalf("%d jobs created, want %d", n, batches*size)
	}
}
