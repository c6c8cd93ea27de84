package oxy_test

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/oxypipe/oxypipe/internal/feeder"
	"github.com/oxypipe/oxypipe/internal/local"
	"github.com/oxypipe/oxypipe/internal/natsserver/natstest"
	"github.com/oxypipe/oxypipe/internal/submitter"
	"github.com/oxypipe/oxypipe/internal/testutil"
	"github.com/oxypipe/oxypipe/internal/topology"
	"github.com/oxypipe/oxypipe/pkg/emulator"
	"github.com/oxypipe/oxypipe/pkg/messages"
	"github.com/oxypipe/oxypipe/pkg/oxy"
	"github.com/oxypipe/oxypipe/pkg/oxytype"
	"github.com/oxypipe/oxypipe/pkg/runlog"
)

// A feeder killed part-way leaves docs fed, docs whose payload is in the
// pipeline without their event, and docs never fed; Resume publishes
// exactly what is missing.
func TestResumeFeedsOnlyWhatIsMissing(t *testing.T) {
	t.Parallel()
	ctx := testContext(t, 60*time.Second)
	c := sandboxClient(t, emulator.Config{RateLimit: emulator.Unlimited})
	topo, err := c.Topology(ctx)
	if err != nil {
		t.Fatal(err)
	}
	f, err := feeder.New(feeder.Config{Topology: topo, Instance: "test"})
	if err != nil {
		t.Fatal(err)
	}
	const n, k = 20, 8
	ps := products(1, n)
	run, err := f.Announce(ctx, feeder.Slice(ps), feeder.Announcement{Destination: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	// The first k docs were fed in full.
	if res, err := f.Feed(ctx, run, feeder.Slice(ps[:k])); err != nil || res.Payloads != k || res.Events != k {
		t.Fatalf("feed = %+v, %v", res, err)
	}
	// Doc k's payload was stored, then the feeder died before its event.
	msg, err := messages.NewMsg(&messages.Payload{Run: run, Doc: messages.DocID(k), Payload: ps[k].JSON()}, f.Origin())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := topo.JetStream().PublishMsg(ctx, msg); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 10*time.Second, "the submitter to claim doc k", func() bool {
		_, err := topo.Claims().Get(ctx, run, messages.DocID(k))
		return err == nil
	})

	res, err := f.Resume(ctx, run, feeder.Slice(ps))
	if err != nil {
		t.Fatal(err)
	}
	if want := (feeder.FeedResult{Payloads: n - k - 1, Events: n - k, Skipped: k}); res != want {
		t.Errorf("resume published %+v, want %+v", res, want)
	}

	r, err := c.Watch(ctx, run, oxy.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Wait(ctx); err != nil {
		t.Fatalf("run ended with %v", err)
	}
	if got := r.Progress(); got.Done != n || got.Written != n {
		t.Errorf("progress %s", got)
	}
	cl, err := c.Cluster(ctx)
	if err != nil {
		t.Fatal(err)
	}
	st := cl.Emulator().Emulator.Stats()
	if st.JobsCreated != n {
		t.Errorf("%d jobs created for %d payloads", st.JobsCreated, n)
	}

	t.Run("a completed run needs nothing", func(t *testing.T) {
		if _, err := f.Resume(ctx, run, feeder.Slice(ps)); !errors.Is(err, oxytype.ErrRunCompleted) {
			t.Errorf("Resume of a completed run = %v", err)
		}
	})
	t.Run("resuming a completed run only watches it", func(t *testing.T) {
		again, err := c.Resume(ctx, run, nil, oxy.Options{})
		if err != nil {
			t.Fatal(err)
		}
		jobs := 0
		for _, err := range again.Jobs() {
			if err != nil {
				t.Fatal(err)
			}
			jobs++
		}
		if jobs != n || again.Err() != nil {
			t.Errorf("%d jobs, Err() = %v", jobs, again.Err())
		}
	})
}

// The whole process dies (the broker's clients vanish mid-run); a new
// process on the same state directory resumes the run: it completes, and no
// input is billed twice.
func TestResumeAfterAbruptStop(t *testing.T) {
	t.Parallel()
	ctx := testContext(t, 60*time.Second)
	em := emulator.NewServer(t, emulator.Config{JobTime: fastJobs, RateLimit: 20})
	state := t.TempDir()
	dir := t.TempDir()
	results, logs := filepath.Join(dir, "results"), filepath.Join(dir, "logs")
	// The submitter holds few payloads at a time. A payload is claimed only
	// once the rate budget admitted its request, so only the ones inside a
	// request at the kill are left claimed without a job id and end
	// "outcome unknown"; those still waiting for the budget hold no claim
	// and are submitted after the resume.
	const held = 5
	tune := func(lc *local.Config) {
		fast(lc)
		prev := lc.Submitter
		lc.Submitter = func(sc *submitter.Config) {
			prev(sc)
			sc.Stage.BatchSize, sc.Stage.MaxInFlight = held, held
		}
	}
	newClient := func() *oxy.Client {
		c, err := oxy.NewClient(oxy.WithLocal(oxy.Config{Username: em.Username, Password: em.Password, BaseURL: em.URL, StateDir: state}, tune))
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	const n = 60
	ps := products(1, n)
	opts := oxy.Options{Destination: results, RunLog: logs}

	// The input is read from JSONL like the CLI reads it, and spooled; the
	// client keeps the spool in the state directory for the resume.
	var input strings.Builder
	for _, p := range ps {
		input.Write(p.JSON())
		input.WriteByte('\n')
	}
	spool, err := feeder.ReadJSONL(strings.NewReader(input.String()), feeder.ReadConfig{Dir: state})
	if err != nil {
		t.Fatal(err)
	}
	// Keep the input under the run's id, as the CLI does, so that the
	// resumed process needs no input file.
	opts.Run = messages.NewRunID(time.Now())
	kept := filepath.Join(state, "payloads", opts.Run+".jsonl")
	if err := spool.MoveTo(kept); err != nil {
		t.Fatal(err)
	}
	first := newClient()
	run, err := first.ExecuteSource(ctx, spool, opts)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 5; i++ {
		if _, err := run.Next(ctx); err != nil {
			t.Fatal(err)
		}
	}
	cl, err := first.Cluster(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := cl.Kill(ctx); err != nil {
		t.Logf("kill: %v", err)
	}
	run.Abandon()
	_ = first.Close(ctx)
	createdAtKill := em.Emulator.Stats().JobsCreated
	if createdAtKill >= n {
		t.Fatalf("the run was not stopped mid-way: %d jobs created", createdAtKill)
	}

	t.Logf("killed at %s", run.Progress())
	second := newClient()
	t.Cleanup(func() { _ = second.Close(context.Background()) })
	reopened, err := feeder.OpenSpool(kept)
	if err != nil {
		t.Fatal(err)
	}
	resumed, err := second.Resume(ctx, run.ID(), reopened, opts)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int]oxy.Job{}
	for job, err := range resumed.Jobs() {
		if err != nil {
			t.Fatal(err)
		}
		if _, dup := seen[job.Doc]; dup {
			t.Fatalf("doc %d finished twice", job.Doc)
		}
		seen[job.Doc] = job
	}
	if len(seen) != n {
		t.Fatalf("%d docs finished after the resume, want %d", len(seen), n)
	}

	st := em.Emulator.Stats()
	for input, times := range st.CreatedByInput {
		if times > 1 {
			t.Errorf("%s was billed %d times", input, times)
		}
	}
	counts := map[oxytype.State]int{}
	for _, j := range seen {
		counts[j.Status]++
		if j.Status == oxytype.Unsubmitted && !strings.Contains(j.Error.Message, "unknown") {
			// Only a payload whose request was in flight at the kill may end
			// unsubmitted, and it says that its outcome is unknown.
			t.Errorf("doc %d unsubmitted: %+v", j.Doc, j.Error)
		}
	}
	unknownBilled := 0
	for _, j := range seen {
		if j.Status == oxytype.Unsubmitted && st.CreatedByInput[j.Input] == 1 {
			unknownBilled++
		}
	}
	t.Logf("created at the kill %d, in all %d; %v (outcome unknown and billed: %d); %s",
		createdAtKill, st.JobsCreated, counts, unknownBilled, resumed.Progress())
	if counts[oxytype.Done]+counts[oxytype.Unsubmitted] != n || counts[oxytype.Unsubmitted] > held || int64(counts[oxytype.Done]) > st.JobsCreated {
		t.Errorf("outcomes %v with %d jobs created", counts, st.JobsCreated)
	}
	for _, j := range seen {
		if j.Status == oxytype.Done && st.CreatedByInput[j.Input] != 1 {
			t.Errorf("done doc %d was billed %d times", j.Doc, st.CreatedByInput[j.Input])
		}
	}
	lines := readLines(t, runLogPath(t, logs))
	if len(lines) != n {
		t.Fatalf("run log has %d lines, want %d", len(lines), n)
	}
	for doc, l := range lines {
		var line runlog.Line
		if err := json.Unmarshal([]byte(l), &line); err != nil {
			t.Fatal(err)
		}
		if line.State != seen[doc].Status {
			t.Errorf("run log line %d: %s, the run yielded %s", doc, line.State, seen[doc].Status)
		}
	}
	if got := len(files(t, results)); got != counts[oxytype.Done] {
		t.Errorf("%d files for %d done jobs", got, counts[oxytype.Done])
	}
}

// A client on an external NATS feeds and watches; the stages run elsewhere
// (here: another client's in-process pipeline listening on TCP).
func TestExternalNATS(t *testing.T) {
	t.Parallel()
	ctx := testContext(t, 60*time.Second)
	em := emulator.NewServer(t, emulator.Config{JobTime: fastJobs, RateLimit: emulator.Unlimited})
	workers, err := oxy.NewClient(oxy.WithLocal(oxy.Config{Username: em.Username, Password: em.Password, BaseURL: em.URL}, func(lc *local.Config) {
		fast(lc)
		lc.Listen = true
	}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = workers.Close(context.Background()) })
	cl, err := workers.Cluster(ctx)
	if err != nil {
		t.Fatal(err)
	}

	feeding, err := oxy.NewClient(oxy.Config{Username: em.Username, Password: em.Password, BaseURL: em.URL, NATSURL: cl.ClientURL()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = feeding.Close(context.Background()) })
	dest := t.TempDir()
	run, err := feeding.Execute(ctx, products(1, 5), oxy.Options{Destination: dest})
	if err != nil {
		t.Fatal(err)
	}
	if w := run.Warnings(); len(w) != 1 || !strings.Contains(w[0], "writers") {
		t.Errorf("warnings = %q", w)
	}
	if err := run.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	if p := run.Progress(); p.Done != 5 || p.Written != 5 || len(files(t, dest)) != 5 {
		t.Errorf("progress %s, files %v", p, files(t, dest))
	}
}

// Without a statusworker nothing accepts the run, and nothing is fed.
func TestNoStatusWorker(t *testing.T) {
	t.Parallel()
	ctx := testContext(t, 30*time.Second)
	_, nc := natstest.Start(t)
	c, err := oxy.NewClient(oxy.Config{Username: "user", Password: "pass", Conn: nc, ReadyTimeout: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close(context.Background()) })
	_, err = c.Execute(ctx, products(1, 2), oxy.Options{Destination: t.TempDir()})
	var nsw *oxytype.NoStatusWorkerError
	if !errors.As(err, &nsw) || err.Error() != "no statusworker answered within 300ms; is one running?" {
		t.Fatalf("Execute = %v", err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	s, err := js.Stream(ctx, topology.StreamPayloads)
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.State.Msgs != 0 {
		t.Errorf("%d payloads were fed to a run nobody accepted", info.State.Msgs)
	}
}
