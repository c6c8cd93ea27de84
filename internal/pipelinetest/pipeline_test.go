package pipelinetest

import (
	"testing"
	"time"

	"github.com/oxypipe/oxypipe/internal/testutil"
	"github.com/oxypipe/oxypipe/pkg/emulator"
)

// flakyAPI is the emulator of the big run: jobs take 200 ms, 3% of the
// checks and fetches fail with a 500 page, 5% of submissions get a 429, and
// the rate limit is 150 jobs per 200 ms window while the submitter's pacer
// counts in 100 ms windows (a client whose idea of the window is off), so
// some batches are refused with real rate-limit 429s.
func flakyAPI(s scenario) emulator.Config {
	return emulator.Config{
		Seed: 7, JobTime: 2 * time.Second, TimeScale: 0.1,
		Faults: append(checkFailures(0.03), emulator.Fault{
			On:          []emulator.Endpoint{emulator.EndpointSubmit, emulator.EndpointBatch},
			Failure:     emulator.Failure{Status: 429},
			Probability: 0.05,
		}),
		RateLimit: 150, RenderRateLimit: 150, RateWindow: 2 * rateWindow,
		Rules: s.rules(),
	}
}

// checkFailures fail the given share of the checks and fetches (status,
// results, content) with a 500 page. Submissions are left alone: a 5xx on a
// submission proves nothing about the job, so its payloads end unsubmitted
// and marked as possibly billed rather than scripted outcomes (the
// submitter's fault tests cover that).
func checkFailures(rate float64) []emulator.Fault {
	return []emulator.Fault{{
		On:          []emulator.Endpoint{emulator.EndpointStatus, emulator.EndpointResults, emulator.EndpointContent},
		Failure:     emulator.Failure{Status: 500},
		Probability: rate,
	}}
}

// TestTwoThousandPayloadsEachReachExactlyOneTrueOutcome runs the stages
// apart, as the workers do, and with the poller writing done jobs through
// the writer, as oxy run does.
func TestTwoThousandPayloadsEachReachExactlyOneTrueOutcome(t *testing.T) {
	t.Parallel()
	for _, direct := range []bool{false, true} {
		name := "four stages"
		if direct {
			name = "direct writes"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			twoThousandPayloads(t, direct)
		})
	}
}

func twoThousandPayloads(t *testing.T, direct bool) {
	s := scenario{n: 2000, fault: 5, reject: 2, lost: 1}
	b := inProcess(t, flakyAPI(s), s.n, stageOptions{rateLimit: 1000, direct: direct})
	bodies := s.bodies()
	mustParse(t, bodies[0])

	start := time.Now()
	b.feed(bodies, 0)
	// Under the race detector the stages run about ten times slower: the
	// run takes minutes on a loaded 2-core machine (waitFinal widens it).
	b.events.waitFinal(t, b.run, s.n, time.Minute)
	b.waitSettled(10 * time.Second)
	t.Logf("%d docs in %v: %s", s.n, time.Since(start).Round(time.Millisecond), b.events.outcomes(b.run, s.n))

	b.verify(s.n, s.expect, s.url, true)
	stats := b.api.emu.Stats()
	t.Logf("emulator: %d jobs, %d rate-limited 429s, %d injected failures, requests %v",
		stats.JobsCreated, stats.RateLimited, stats.FaultsInjected, stats.Requests)
	switch {
	case stats.FaultsInjected == 0:
		t.Errorf("the run saw no injected failure; the test means to have them")
	case stats.RateLimited == 0 && testutil.RaceEnabled:
		// Under the race detector the stages run about ten times slower,
		// far below the 750 jobs/s of the emulator's limit.
		t.Logf("no rate-limit 429s: under the race detector the run is too slow to reach the rate limit")
	case stats.RateLimited == 0:
		t.Errorf("the run saw no rate-limit 429s; the test means to have them")
	}
	if bad := b.events.undecodable(); len(bad) > 0 {
		t.Errorf("%d status events do not decode: %s", len(bad), firstFew(bad, 3))
	}
}
