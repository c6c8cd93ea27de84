package pipelinetest

import (
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/oxypipe/oxypipe/internal/testutil"
	"github.com/oxypipe/oxypipe/internal/topology"
	"github.com/oxypipe/oxypipe/pkg/emulator"
	"github.com/oxypipe/oxypipe/pkg/messages"
	"github.com/oxypipe/oxypipe/pkg/oxytype"
	"github.com/oxypipe/oxypipe/pkg/payload"
)

// gracePeriod is the longest a worker binary may take to exit after
// SIGTERM: its stage runtime's DrainTimeout (20 s by default) plus the
// shell's shutdown of the health server and connection (5 s), which is
// what a Kubernetes terminationGracePeriodSeconds must cover.
const gracePeriod = 25 * time.Second

// AckWait of the binaries' submitter and writer consumers: a message a
// stopped worker left un-acked would come back only after it.
const productionAckWait = 60 * time.Second

func TestSubmitterBinaryOnSIGTERMDrainsAndLeavesNothingHeld(t *testing.T) {
	t.Parallel()
	s := scenario{n: 300}
	// 50 jobs/s: the submitter holds up to 200 claimed payloads waiting for
	// the rate budget when SIGTERM comes.
	c := newCluster(t, s.n, emulator.Config{Seed: 9, JobTime: time.Hour, RateLimit: 50, RenderRateLimit: 50, Rules: s.rules()}, nil, true)
	c.rate = 50
	first := c.start(topology.Submitter, "submitter-1")
	c.feed(s.bodies(), 0)
	submitted := func() int {
		return c.events.count(func(ev messages.StatusEvent) bool {
			return ev.DataType == oxytype.DataSubmitted && ev.Outcome == oxytype.Success
		})
	}
	testutil.EventuallyExplain(t, 30*time.Second, func() bool { return submitted() >= 60 }, says("60 docs are submitted"))

	sent := first.terminate()
	code, exited := first.wait(gracePeriod + 5*time.Second)
	took := exited.Sub(sent)
	t.Logf("submitter-1 exited %d, %v after SIGTERM, with %d of %d docs submitted; consumer then: %s",
		code, took.Round(time.Millisecond), submitted(), s.n, pending(c.consumerInfo(topology.Submitter)))
	if code != 0 {
		t.Errorf("exit code %d after SIGTERM, want 0", code)
	}
	if took > gracePeriod {
		t.Errorf("took %v to exit after SIGTERM, more than the grace period of %v", took, gracePeriod)
	}
	if submitted() >= s.n {
		t.Fatal("every doc was submitted before SIGTERM; the test means to stop the submitter mid-work")
	}

	// Whatever it held was given back (not left to AckWait): the next
	// submitter gets it at once.
	restarted := time.Now()
	c.start(topology.Submitter, "submitter-2")
	testutil.EventuallyExplain(t, 30*time.Second, func() bool { return submitted() >= s.n }, func() string {
		return "every doc is submitted"
	})
	t.Logf("submitter-2 submitted the rest in %v", time.Since(restarted).Round(time.Millisecond))
	if took := time.Since(restarted); took >= productionAckWait {
		t.Errorf("the rest took %v after the restart: messages were left to AckWait", took)
	}
	c.waitEmpty(10*time.Second, topology.StreamPayloads)
	testutil.EventuallyExplain(t, 10*time.Second, func() bool { return c.consumerInfo(topology.Submitter).NumAckPending == 0 },
		says("the submitter's consumer holds nothing un-acked"))

	for i := range s.n {
		evs := c.events.docEvents(c.run, messages.DocID(i))
		// Soft failures are fine (submitter-2 starts with the default
		// budget and meets 429s until it reads the API's headers).
		var got []messages.StatusEvent
		for _, ev := range evs {
			if ev.DataType != oxytype.DataPayload || ev.Outcome == oxytype.HardFailure {
				got = append(got, ev)
			}
		}
		if len(got) != 1 || got[0].DataType != oxytype.DataSubmitted || got[0].Outcome != oxytype.Success || got[0].APIJobID == "" {
			t.Errorf("doc %d: want exactly one success at submitted with a job id and no hard failure, got %s", i, describe(got))
		}
	}
	stats := c.api.emu.Stats()
	for i := range s.n {
		if n := stats.CreatedByInput[s.url(i)]; n != 1 {
			t.Errorf("doc %d was created %d times, want once", i, n)
		}
	}
	if stats.JobsCreated != int64(s.n) {
		t.Errorf("%d jobs created, want %d", stats.JobsCreated, s.n)
	}
}

func TestWriterBinaryStuckInWritesOnSIGTERMExitsWithinItsGracePeriodAndLeavesNothingHeld(t *testing.T) {
	t.Parallel()
	s := scenario{n: 120}
	// After 40 results requests the next ones hang: the writer holds
	// writes that will not finish by themselves when SIGTERM comes.
	var results atomic.Int64
	g := newGate(func(r *http.Request) bool {
		return r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/results") && results.Add(1) > 40
	})
	c := newCluster(t, s.n, emulator.Config{Seed: 13, JobTime: time.Millisecond,
		RateLimit: emulator.Unlimited, RenderRateLimit: emulator.Unlimited, Rules: s.rules()}, g, true)

	// The jobs exist and are done; their Done messages are published as
	// the poller would.
	bodies := s.bodies()
	ps := make([]payload.Payload, s.n)
	for i, body := range bodies {
		ps[i] = mustParse(t, body)
	}
	res, _, err := c.client.SubmitBatch(t.Context(), ps)
	if err != nil {
		t.Fatal(err)
	}
	testutil.EventuallyExplain(t, 10*time.Second, func() bool { return c.api.emu.Stats().JobsDone == int64(s.n) }, says("the jobs are done"))
	for i, it := range res.Items {
		if it.Err != nil {
			t.Fatalf("doc %d: %v", i, it.Err)
		}
		c.publishAsync(c.msg(&messages.Done{Run: c.run, Doc: messages.DocID(i), APIJobID: it.Job.ID,
			Payload: bodies[i], FinishedAt: time.Now().UTC()}))
	}
	c.flush()

	first := c.start(topology.Writer, "writer-1")
	g.waitEntered(t, 30*time.Second, "the writer is fetching its 41st result")
	written := func(name string) int {
		return c.events.count(func(ev messages.StatusEvent) bool {
			return ev.DataType == oxytype.DataWritten && ev.Outcome == oxytype.Success && ev.Origin.Name == name
		})
	}
	testutil.EventuallyExplain(t, 10*time.Second, func() bool { return written("writer-1") == 40 }, says("writer-1 wrote 40 files"))

	sent := first.terminate()
	code, exited := first.wait(gracePeriod + 5*time.Second)
	took := exited.Sub(sent)
	info := c.consumerInfo(topology.Writer)
	t.Logf("writer-1 exited %d, %v after SIGTERM; consumer then: %s", code, took.Round(time.Millisecond), pending(info))
	if code != 0 {
		t.Errorf("exit code %d after SIGTERM, want 0", code)
	}
	if took > gracePeriod {
		t.Errorf("took %v to exit after SIGTERM, more than the grace period of %v", took, gracePeriod)
	}
	if hard := c.events.count(func(ev messages.StatusEvent) bool { return ev.Outcome == oxytype.HardFailure }); hard != 0 {
		t.Errorf("%d hard failures: a drain cut short is no failure of the jobs", hard)
	}

	g.open()
	restarted := time.Now()
	c.start(topology.Writer, "writer-2")
	c.events.waitFinal(t, c.run, s.n, 30*time.Second)
	t.Logf("writer-2 wrote the rest in %v", time.Since(restarted).Round(time.Millisecond))
	if took := time.Since(restarted); took >= productionAckWait {
		t.Errorf("the rest took %v after the restart: messages were left to AckWait", took)
	}
	c.waitSettled(10 * time.Second)
	testutil.EventuallyExplain(t, 10*time.Second, func() bool { return c.consumerInfo(topology.Writer).NumAckPending == 0 },
		says("the writer's consumer holds nothing un-acked"))
	t.Logf("files written by writer-1: %d, by writer-2: %d", written("writer-1"), written("writer-2"))
	if got := written("writer-2"); got != s.n-40 {
		t.Errorf("writer-2 wrote %d files, want the %d writer-1 had not", got, s.n-40)
	}
	c.verify(s.n, func(int) expectation { return expectation{state: oxytype.Done} }, s.url, true)
}

// pending describes what a consumer holds.
func pending(info *jetstream.ConsumerInfo) string {
	return fmt.Sprintf("%d un-acked (%d of them redelivered), %d not yet delivered", info.NumAckPending, info.NumRedelivered, info.NumPending)
}
