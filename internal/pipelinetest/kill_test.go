package pipelinetest

import (
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/oxypipe/oxypipe/internal/topology"
	"github.com/oxypipe/oxypipe/pkg/emulator"
	"github.com/oxypipe/oxypipe/pkg/messages"
	"github.com/oxypipe/oxypipe/pkg/oxytype"
)

// killSetup is what differs between the children of this test binary (the
// default) and the built binaries with their production timings
// (OXY_PIPELINETEST_REAL_BINARIES=1).
type killSetup struct {
	real bool
	// rate and window are the submitter's and the emulator's rate limit.
	rate   int
	window time.Duration
	// deadline bounds the wait for every doc's final outcome after the
	// restart: redelivery after AckWait, then a stale claim.
	deadline time.Duration
}

// killMode returns the setup the environment asks for.
func killMode() killSetup {
	if os.Getenv(realBinariesEnv) != "" {
		// AckWait 60 s, then the claim left inside a request is waited for
		// until it is 150 s old (ClaimStaleAfter) and recorded as an
		// unknown outcome.
		return killSetup{real: true, rate: 200, window: time.Second, deadline: 6 * time.Minute}
	}
	return killSetup{rate: 20, window: rateWindow, deadline: 60 * time.Second}
}

// api is the emulator of the kill tests: 600 docs at 200 jobs/s take three
// seconds to submit; jobs take 300 ms; 5% fault. first are rules tried
// before the scenario's.
func (k killSetup) api(s scenario, first ...emulator.Rule) emulator.Config {
	return emulator.Config{Seed: 5, JobTime: 3 * time.Second, TimeScale: 0.1,
		RateLimit: k.rate, RenderRateLimit: k.rate, RateWindow: k.window,
		Rules: append(first, s.rules()...)}
}

func TestSubmitterKilledInsideItsRequestLosesNoDocAndBillsNothingTwice(t *testing.T) {
	t.Parallel()
	k := killMode()
	s := scenario{n: 600, fault: 5}
	victim := s.n / 2
	// The submission of the victim doc is held inside the API (after the
	// request was read, before any job is created) until the gate opens,
	// and the submitter is killed right there, the worst crash point. (Held
	// longer than its SubmitTimeout, the submitter would time out instead:
	// an unknown outcome, marked may-have-billed and not sent again, which
	// is not the crash this test is about.)
	var first atomic.Pointer[proc]
	g := newGate(nil)
	g.onEnter = func() { first.Load().kill() }
	hold := emulator.Rule{Match: func(sub emulator.Submission) bool {
		if sub.Input == s.url(victim) {
			g.hold()
		}
		return false
	}}
	c := newCluster(t, s.n, k.api(s, hold), g, k.real)
	c.rate = k.rate
	c.start(topology.Poller, "poller-1")
	c.start(topology.Writer, "writer-1")
	first.Store(c.start(topology.Submitter, "submitter-1"))
	c.feed(s.bodies(), 0)

	g.waitEntered(t, 30*time.Second, "the submitter is inside the request that submits doc "+messages.DocID(victim))
	before := c.events.count(func(ev messages.StatusEvent) bool {
		return ev.DataType == oxytype.DataSubmitted && ev.Outcome == oxytype.Success
	})
	// The API goes on with the request of the dead submitter: the jobs of
	// its batch are created and bill, and nobody will hear of their ids.
	g.open()
	c.start(topology.Submitter, "submitter-2")
	t.Logf("submitter-1 killed after %d of %d docs were submitted", before, s.n)
	if before == 0 || before >= s.n {
		t.Fatalf("the kill came at %d submitted docs of %d; the test means to kill mid-run", before, s.n)
	}

	c.events.waitFinal(t, c.run, s.n, k.deadline)
	c.waitSettled(30 * time.Second)
	t.Logf("%d docs: %s", s.n, c.events.outcomes(c.run, s.n))

	stranded := map[int]bool{}
	for i := range s.n {
		fs := c.events.finals(c.run, messages.DocID(i))
		if len(fs) > 0 && unknownOutcome(fs[len(fs)-1]) {
			stranded[i] = true
		}
	}
	if !stranded[victim] {
		t.Errorf("doc %d, whose request the submitter died in, does not end with an unknown outcome: %s",
			victim, describe(c.events.finals(c.run, messages.DocID(victim))))
	}
	// The dead submitter held at most its MaxInFlight (2 × BatchSize)
	// payloads; only those may have an unknown outcome.
	if len(stranded) > 200 {
		t.Errorf("%d docs have an unknown outcome; the killed submitter held at most 200", len(stranded))
	}
	c.verify(s.n, func(i int) expectation {
		if stranded[i] {
			return expectation{state: oxytype.Unsubmitted}
		}
		return s.expect(i)
	}, s.url, false) // a late heartbeat (AckWait is 2 s) may legitimately redeliver
	if n := c.api.emu.Stats().CreatedByInput[s.url(victim)]; n != 1 {
		t.Errorf("the victim's input was created %d times, want once (by the request the submitter died in)", n)
	}
}

func TestWriterKilledMidWriteLosesNoFile(t *testing.T) {
	t.Parallel()
	k := killMode()
	s := scenario{n: 600, fault: 5}
	// After 150 results requests, the next ones are held: the writer is
	// killed holding messages whose results it is fetching.
	var results atomic.Int64
	g := newGate(func(r *http.Request) bool {
		return r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/results") && results.Add(1) > 150
	})
	c := newCluster(t, s.n, k.api(s), g, k.real)
	c.rate = k.rate
	c.start(topology.Submitter, "submitter-1")
	c.start(topology.Poller, "poller-1")
	first := c.start(topology.Writer, "writer-1")
	c.feed(s.bodies(), 0)

	g.waitEntered(t, 30*time.Second, "the writer has written 150 files and is fetching more")
	first.kill()
	g.open()
	c.start(topology.Writer, "writer-2")

	c.events.waitFinal(t, c.run, s.n, k.deadline)
	c.waitSettled(30 * time.Second)
	t.Logf("%d docs: %s", s.n, c.events.outcomes(c.run, s.n))
	by := func(name string) int {
		return c.events.count(func(ev messages.StatusEvent) bool {
			return ev.DataType == oxytype.DataWritten && ev.Outcome == oxytype.Success && ev.Origin.Name == name
		})
	}
	t.Logf("files written by writer-1: %d, by writer-2: %d", by("writer-1"), by("writer-2"))
	if by("writer-1") == 0 || by("writer-2") == 0 {
		t.Errorf("writer-1 wrote %d files and writer-2 %d; the test means to kill the writer mid-run", by("writer-1"), by("writer-2"))
	}
	// A Done the killed writer had written but not acked is written again
	// by the next one (same file, same bytes): several successes, one job.
	c.verify(s.n, s.expect, s.url, false)
}
