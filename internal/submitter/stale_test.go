package submitter_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/oxypipe/oxypipe/internal/submitter"
	"github.com/oxypipe/oxypipe/internal/testutil"
	"github.com/oxypipe/oxypipe/internal/topology"
	"github.com/oxypipe/oxypipe/pkg/emulator"
	"github.com/oxypipe/oxypipe/pkg/messages"
	"github.com/oxypipe/oxypipe/pkg/oxytype"
	"github.com/oxypipe/oxypipe/pkg/payload"
)

// spendDeliveries takes the next payload message from the submitter's
// consumer n times and gives it back at once, as n earlier deliveries
// that ended in retries would: the submitter's next delivery of it is past
// a MaxDeliver of n and goes to the dead letter.
func (e *env) spendDeliveries(n int) {
	e.t.Helper()
	cons, err := e.js.Consumer(context.Background(), topology.StreamPayloads, string(topology.Submitter))
	if err != nil {
		e.t.Fatal(err)
	}
	for i := 1; i <= n; i++ {
		m, err := cons.Next(jetstream.FetchMaxWait(5 * time.Second))
		if err != nil {
			e.t.Fatalf("delivery %d: %v", i, err)
		}
		if err := m.Nak(); err != nil {
			e.t.Fatal(err)
		}
	}
}

func TestFaultAHeldClaimIsNotDeadLetteredBeforeItIsStale(t *testing.T) {
	t.Parallel()
	configure := func(c *submitter.Config) { c.ClaimRecheck = 500 * time.Millisecond } // 20 × 0.5s covers 8s + 2 looks

	t.Run("a payload out of deliveries waits for a live submitter, whose job is then its success, billed once", func(t *testing.T) {
		t.Parallel()
		e := setup(t, options{maxDeliver: 20, configure: configure})
		ctx := context.Background()
		// Another submitter claimed the doc and is inside its request.
		ref, err := e.topo.Claims().Acquire(ctx, run, "0", 0, "slow-pod", time.Now())
		if err != nil {
			t.Fatal(err)
		}
		e.feedUniversal(0, 1)
		e.spendDeliveries(20)
		e.start()
		testutil.Eventually(t, 10*time.Second, "two looks past MaxDeliver", func() bool {
			return e.counter("oxy_stage_messages_total", "wait") >= 2
		})
		if evs := e.events(); len(evs) != 0 {
			t.Fatalf("%d events while the claim is young, want none: %+v", len(evs), evs)
		}
		// The slow submitter's request returns; it stores the job id.
		p, err := payload.Parse(universal(0), 0)
		if err != nil {
			t.Fatal(err)
		}
		job, _, err := e.cfg.API.Submit(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		if err := e.topo.Claims().MarkSubmitted(ctx, ref, job.ID, time.Now()); err != nil {
			t.Fatal(err)
		}
		evs := e.settled()
		if len(evs) != 1 || evs[0].Outcome != oxytype.Success || evs[0].DataType != oxytype.DataSubmitted || evs[0].APIJobID != job.ID {
			t.Fatalf("events = %+v, want the slow submitter's job as the success at submitted", evs)
		}
		if subs := e.submitted(); len(subs) != 1 || subs[0].APIJobID != job.ID {
			t.Fatalf("Submitted = %+v, want the slow submitter's job", subs)
		}
		if st := e.api.Emulator.Stats(); st.JobsCreated != 1 || st.CreatedByInput[url(0)] != 1 {
			t.Fatalf("%d jobs, %d for the doc's input; want it billed once", st.JobsCreated, st.CreatedByInput[url(0)])
		}
	})

	t.Run("the outcome is called unknown only once the claim is stale", func(t *testing.T) {
		t.Parallel()
		e := setup(t, options{maxDeliver: 20, configure: configure})
		// Claimed by a submitter that died inside its request; the claim
		// goes stale (8s) two seconds from now.
		claimedAt := time.Now().Add(-6 * time.Second)
		if _, err := e.topo.Claims().Acquire(context.Background(), run, "0", 0, "dead-pod", claimedAt); err != nil {
			t.Fatal(err)
		}
		e.feedUniversal(0, 1)
		e.spendDeliveries(20)
		e.start()
		evs := e.settled()
		staleAt := claimedAt.Add(e.cfg.ClaimStaleAfter)
		if len(evs) != 1 || evs[0].Outcome != oxytype.HardFailure || evs[0].State != oxytype.Unsubmitted ||
			evs[0].Error == nil || evs[0].Error.Message != unknownOutcomeErrorText {
			t.Fatalf("events = %+v, want one unknown outcome", evs)
		}
		if !strings.HasPrefix(evs[0].Reason, "poison message: delivered ") ||
			!strings.Contains(evs[0].Reason, "outcome of this payload's submission is unknown: dead-pod claimed it") {
			t.Fatalf("reason %q: want the dead letter's, naming the claimant", evs[0].Reason)
		}
		if evs[0].Time.Before(staleAt) {
			t.Fatalf("called unknown at %v, before the claim was stale at %v", evs[0].Time, staleAt)
		}
		if n := e.requests(emulator.EndpointSubmit) + e.requests(emulator.EndpointBatch); n != 0 {
			t.Fatalf("%d requests, want none", n)
		}
	})
}

func TestFaultSettingsRefuseAConsumerThatCannotWaitOutAClaim(t *testing.T) {
	t.Parallel()
	e := setup(t, options{})
	for _, tc := range []struct {
		name       string
		maxDeliver int
		recheck    time.Duration
		want       string
	}{{
		name: "MaxDeliver × ClaimRecheck shorter than the staleness limit", maxDeliver: 10, recheck: 500 * time.Millisecond,
		want: "submitter: MaxDeliver 10 × ClaimRecheck 500ms = 5s does not outlast ClaimStaleAfter 8s plus 2 rechecks: " +
			"a payload waiting for a live submitter's claim would run out of deliveries before the claim is stale; " +
			"raise ClaimRecheck to at least 1s or the consumer's MaxDeliver",
	}, {
		name: "the staleness limit is covered, but not with the margin", maxDeliver: 10, recheck: 900 * time.Millisecond,
		want: "submitter: MaxDeliver 10 × ClaimRecheck 900ms = 9s does not outlast ClaimStaleAfter 8s plus 2 rechecks: " +
			"a payload waiting for a live submitter's claim would run out of deliveries before the claim is stale; " +
			"raise ClaimRecheck to at least 1s or the consumer's MaxDeliver",
	}, {
		name: "no delivery left to wait", maxDeliver: 2, recheck: time.Hour,
		want: "submitter: the consumer's MaxDeliver 2 leaves no delivery to wait for a claim another submitter holds; it must be above 2 (or 0: no limit)",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := e.cfg
			cfg.Stage.Registerer = nil
			cfg.Stage.Consumer.MaxDeliver = tc.maxDeliver
			cfg.ClaimRecheck = tc.recheck
			_, err := submitter.New(cfg)
			if err == nil || err.Error() != tc.want {
				t.Fatalf("New = %v\nwant %s", err, tc.want)
			}
		})
	}
	t.Run("the defaults wait out the staleness limit", func(t *testing.T) {
		cfg := submitter.Config{}.WithDefaults()
		if cfg.ClaimStaleAfter != 150*time.Second || cfg.ClaimRecheck != 18750*time.Millisecond || cfg.Stage.Consumer.MaxDeliver != 10 {
			t.Fatalf("defaults: ClaimStaleAfter %v, ClaimRecheck %v, MaxDeliver %d", cfg.ClaimStaleAfter, cfg.ClaimRecheck, cfg.Stage.Consumer.MaxDeliver)
		}
		cfg = e.cfg
		cfg.Stage.Registerer = nil
		cfg.ClaimRecheck = 0
		cfg = cfg.WithDefaults()
		if _, err := submitter.New(cfg); err != nil {
			t.Fatalf("a derived ClaimRecheck (%v) is refused: %v", cfg.ClaimRecheck, err)
		}
	})
}

// A claim create whose answer was lost, and which could not be read back
// either (a broker too slow for KVTimeout), leaves a claim by this very
// submitter that nothing was sent under. The next delivery takes it as its
// own and submits: before, it was waited for until stale and ended as a
// false "outcome unknown" that nothing had billed (the docs of whole
// batches, under the race detector).
func TestFaultAClaimWhoseAnswerWasLostIsTakenBackNotAnUnknownOutcome(t *testing.T) {
	t.Parallel()
	e := setup(t, options{})
	at := time.Now().UTC()
	// What the lost create wrote.
	if _, err := e.topo.Claims().Acquire(context.Background(), run, "0", 0, e.cfg.Stage.Instance, at); err != nil {
		t.Fatal(err)
	}
	submitter.LoseClaimAnswer(e.sub, run, "0", at)
	// A second lost create of the same doc, which did not land (the first
	// one's claim was there): both are remembered, and the claim in the
	// bucket is still recognised as this process's.
	submitter.LoseClaimAnswer(e.sub, run, "0", at.Add(time.Second))
	// Another submitter's claim of the same age is still waited for.
	if _, err := e.topo.Claims().Acquire(context.Background(), run, "1", 0, e.cfg.Stage.Instance+"-other", at); err != nil {
		t.Fatal(err)
	}
	e.feedUniversal(0, 2)
	e.start()
	testutil.Eventually(t, 10*time.Second, "doc 0 submitted", func() bool { return len(e.eventsOf("0", oxytype.Success)) == 1 })

	ok := e.eventsOf("0", oxytype.Success)
	if ok[0].DataType != oxytype.DataSubmitted || ok[0].APIJobID == "" {
		t.Fatalf("doc 0: %+v, want a success at submitted with a job id", ok[0])
	}
	if c := e.claim(0); c == nil || c.State != messages.ClaimSubmitted || c.APIJobID != ok[0].APIJobID {
		t.Fatalf("doc 0's claim = %+v, want it to hold job %s", c, ok[0].APIJobID)
	}
	if n := e.api.Emulator.Stats().CreatedByInput[url(0)]; n != 1 {
		t.Fatalf("doc 0 billed %d times, want once", n)
	}
	if n := len(e.events()) - 1; n != 0 || e.api.Emulator.Stats().CreatedByInput[url(1)] != 0 {
		t.Fatalf("doc 1, whose claim another submitter holds, has %d events and %d jobs; want it waited for",
			n, e.api.Emulator.Stats().CreatedByInput[url(1)])
	}
}
