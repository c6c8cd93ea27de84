package oxy_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/oxypipe/oxypipe/internal/local"
	"github.com/oxypipe/oxypipe/internal/poller"
	"github.com/oxypipe/oxypipe/internal/statusworker"
	"github.com/oxypipe/oxypipe/internal/submitter"
	"github.com/oxypipe/oxypipe/internal/topology"
	"github.com/oxypipe/oxypipe/internal/writer"
	"github.com/oxypipe/oxypipe/pkg/emulator"
	"github.com/oxypipe/oxypipe/pkg/oxy"
	"github.com/oxypipe/oxypipe/pkg/payload"
)

// fastJobs is how long an emulated job is pending in these tests.
const fastJobs = 20 * time.Millisecond

// fast tunes the in-process pipeline for tests: dense polls for short jobs,
// quick drains, and claims that go stale quickly after a crash.
func fast(lc *local.Config) {
	lc.DrainTimeout = 5 * time.Second
	lc.Poller = func(pc *poller.Config) {
		pc.Stage.Consumer, _ = topology.DefaultConsumer(topology.Poller)
		pc.Stage.Consumer.AckWait = 2 * time.Second
		pc.Stage.FetchWait = 200 * time.Millisecond
		pc.Stage.PublishTimeout = time.Second
		pc.Schedule = poller.Schedule{First: 10 * time.Millisecond, Step: 10 * time.Millisecond, Until: 200 * time.Millisecond, Interval: 50 * time.Millisecond}
		pc.PendingLimit = 30 * time.Second
	}
	lc.Writer = func(wc *writer.Config) {
		wc.Stage.Consumer, _ = topology.DefaultConsumer(topology.Writer)
		wc.Stage.Consumer.AckWait = 2 * time.Second
		wc.Stage.FetchWait = 200 * time.Millisecond
		wc.Stage.PublishTimeout = time.Second
	}
	lc.StatusWorker = func(sc *statusworker.Config) {
		sc.Stage.Consumer, _ = topology.DefaultConsumer(topology.StatusWorker)
		sc.Stage.Consumer.MaxDeliver = 0
		sc.Stage.Consumer.AckWait = 2 * time.Second
		sc.RecheckInterval = time.Second
		sc.Stage.FetchWait = 200 * time.Millisecond
	}
	prev := lc.Submitter
	lc.Submitter = func(sc *submitter.Config) {
		sc.Stage.Consumer, _ = topology.DefaultConsumer(topology.Submitter)
		sc.Stage.Consumer.AckWait = 2 * time.Second
		sc.Stage.Consumer.HandlerTimeout = 3 * time.Second
		sc.SubmitTimeout = time.Second
		sc.KVTimeout = 500 * time.Millisecond
		sc.ClaimStaleAfter = 3 * time.Second
		sc.Stage.FetchWait = 200 * time.Millisecond
		sc.Stage.PublishTimeout = time.Second
		sc.ClaimRecheck = 500 * time.Millisecond
		// Follow the emulator's limit headers from the first answer on.
		sc.Pacer.Limit, sc.Pacer.RenderLimit = -1, -1
		if prev != nil {
			prev(sc)
		}
	}
}

// seedRules script the three-payload example of examples/sandbox-rules.json: products/1's status check
// answers 404 (no message: the API says "Not Found"), products/2 faults,
// the rest are done.
func seedRules() []emulator.Rule {
	return []emulator.Rule{
		{Pattern: regexp.MustCompile(`/products/1$`), Outcome: emulator.Outcome{StatusFailure: &emulator.Failure{Status: 404}}},
		{Pattern: regexp.MustCompile(`/products/2$`), Outcome: emulator.Outcome{Fault: true}},
	}
}

// sandboxClient returns a client running the in-process pipeline on the
// sandbox, closed when the test ends.
func sandboxClient(t *testing.T, em emulator.Config) *oxy.Client {
	t.Helper()
	if em.JobTime == 0 {
		em.JobTime = fastJobs
	}
	c, err := oxy.NewClient(oxy.WithLocal(oxy.Config{Sandbox: true, Emulator: em}, fast))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		start := time.Now()
		if err := c.Close(ctx); err != nil {
			t.Error(err)
		}
		t.Logf("closed in %v", time.Since(start))
	})
	return c
}

func products(from, to int) []payload.Payload {
	var ps []payload.Payload
	for n := from; n <= to; n++ {
		ps = append(ps, payload.New("universal", "url", fmt.Sprintf("https://sandbox.oxylabs.io/products/%d", n)))
	}
	return ps
}

func testContext(t *testing.T, d time.Duration) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// files lists a folder's file names, sorted.
func files(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), ".") {
			names = append(names, e.Name())
		}
	}
	sort.Strings(names)
	return names
}

func readLines(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
}

func runLogPath(t *testing.T, dir string) string {
	t.Helper()
	names := files(t, dir)
	if len(names) != 1 {
		t.Fatalf("run log folder holds %v, want one file", names)
	}
	return filepath.Join(dir, names[0])
}

func mustRegexp(s string) *regexp.Regexp { return regexp.MustCompile(s) }
