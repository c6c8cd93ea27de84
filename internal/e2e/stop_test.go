package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/oxypipe/oxypipe/internal/testutil"
	"github.com/oxypipe/oxypipe/pkg/emulator"
	"github.com/oxypipe/oxypipe/pkg/messages"
	"github.com/oxypipe/oxypipe/pkg/oxytype"
	"github.com/oxypipe/oxypipe/pkg/runlog"
)

// stopBound is what `oxy run --help` promises for a stop: --stop-timeout
// (at least the settle time), then up to 20 s to record what is unfinished
// and write the run log.
func stopBound(stopTimeout time.Duration) time.Duration {
	return max(stopTimeout, messages.StopSettle) + 20*time.Second
}

// resultFiles counts the written results in dir (temporary files aside).
func resultFiles(dir string) int {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return 0
	}
	n := 0
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), ".") && strings.HasSuffix(e.Name(), ".json") {
			n++
		}
	}
	return n
}

// checkBilling checks each run-log line against what the sandbox billed for
// its input: done and unfetched jobs once, plainly unsubmitted payloads
// never; done jobs have their file in results.
func checkBilling(t *testing.T, lines []runlog.Line, st emulator.Stats, results string) map[oxytype.State]int {
	t.Helper()
	for i, l := range lines {
		billed := st.CreatedByInput[fmt.Sprintf("https://sandbox.oxylabs.io/products/%d", i+1)]
		switch {
		case billed > 1:
			t.Errorf("payload %d was billed %d times", i, billed)
		case l.State == oxytype.Done || l.State == oxytype.Unfetched:
			if l.ID == nil || billed != 1 {
				t.Errorf("payload %d %s with id %v, billed %d; want its id and one job", i, l.State, l.ID, billed)
			}
			if l.State == oxytype.Done {
				if _, err := os.Stat(filepath.Join(results, *l.ID+".json")); err != nil {
					t.Errorf("payload %d done, but its file: %v", i, err)
				}
			}
		case l.State == oxytype.Unsubmitted:
			if l.Error == nil || l.ID != nil || (billed != 0 && !l.Error.MayHaveBilled) {
				t.Errorf("payload %d unsubmitted with %+v, billed %d: billed payloads must carry the may-have-billed mark", i, l.Error, billed)
			}
		default:
			t.Errorf("payload %d ended %s", i, l.State)
		}
	}
	return states(lines)
}

// TestFaultSIGTERMWhileTheDestinationKeepsFailing: the destination fails
// half-way through the run (its folder replaced by a file) and the process
// gets SIGTERM: submission stops, the process ends within the documented
// bound with a complete run log, and exits 143.
func TestFaultSIGTERMWhileTheDestinationKeepsFailing(t *testing.T) {
	t.Parallel()
	sb := startSandbox(t, `{"rate_limit": 100, "job_time": "200ms"}`)
	dir := t.TempDir()
	const total = 1000
	writeFile(t, filepath.Join(dir, "payloads.jsonl"), products(1, total))
	const stopTimeout = 3 * time.Second
	p := start(t, dir, nil, sb.env(), "run", "payloads.jsonl", "-d", "results", "--run-log", "logs", "--stop-timeout", stopTimeout.String())
	results := filepath.Join(dir, "results")
	testutil.Eventually(t, 30*time.Second, "the first 20 files", func() bool { return resultFiles(results) >= 20 })

	moved, err := testutil.ReplaceWithFile(results)
	if err != nil {
		t.Skipf("SKIP: %v", err)
	}
	p.signal(t, syscall.SIGTERM)
	stopped := time.Now()
	res := p.wait(t, stopBound(stopTimeout)+15*time.Second)
	took := time.Since(stopped)
	t.Logf("ended %v after SIGTERM; %s", took.Round(time.Millisecond), res.lastLine())
	if res.code != 143 {
		t.Fatalf("exit %d, want 143; stderr:\n%s", res.code, res.stderr)
	}
	if took > stopBound(stopTimeout) {
		t.Errorf("the run ended %v after SIGTERM, want within %v", took, stopBound(stopTimeout))
	}
	_, lines := readRunLog(t, filepath.Join(dir, "logs"))
	if len(lines) != total {
		t.Fatalf("run log: %d lines, want %d", len(lines), total)
	}
	st := sb.stats(t)
	n := checkBilling(t, lines, st, moved)
	if n[oxytype.Unsubmitted] == 0 || st.JobsCreated >= total/2 {
		t.Errorf("%d of %d payloads billed (%v): submission did not stop", st.JobsCreated, total, n)
	}
	if !strings.Contains(res.stderr, "hint: stopping: nothing more is submitted") {
		t.Errorf("stderr lacks the stopping hint:\n%s", res.stderr)
	}
}

// TestFaultASecondSignalStillWritesTheRunLog: jobs that never finish hold a
// stopped run until its stop timeout (here ten minutes); a second Ctrl+C
// ends it with what is recorded at once (the settle time after the first)
// and still writes a complete run log: each job pending is unfetched with
// its id.
func TestFaultASecondSignalStillWritesTheRunLog(t *testing.T) {
	t.Parallel()
	sb := startSandbox(t, `{"rules": [{"outcome": {"stay_pending": true}}], "rate_limit": 100}`)
	dir := t.TempDir()
	const total = 400
	writeFile(t, filepath.Join(dir, "payloads.jsonl"), products(1, total))
	p := start(t, dir, nil, sb.env(), "run", "payloads.jsonl", "-d", "results", "--run-log", "logs", "--stop-timeout", "10m")
	testutil.Eventually(t, 30*time.Second, "the first jobs", func() bool { return sb.stats(t).JobsCreated >= 100 })

	p.signal(t, os.Interrupt)
	testutil.Eventually(t, 10*time.Second, "the stopping hint", func() bool {
		return strings.Contains(p.stderrSoFar(), "hint: stopping: nothing more is submitted")
	})
	p.signal(t, os.Interrupt)
	second := time.Now()
	res := p.wait(t, 45*time.Second)
	took := time.Since(second)
	t.Logf("ended %v after the second Ctrl+C; %s", took.Round(time.Millisecond), res.lastLine())
	if res.code != 130 {
		t.Fatalf("exit %d, want 130; stderr:\n%s", res.code, res.stderr)
	}
	if took > messages.StopSettle+15*time.Second {
		t.Errorf("the run ended %v after the second Ctrl+C, want within %v", took, messages.StopSettle+15*time.Second)
	}
	for _, want := range []string{"Ctrl+C again: a stopped run now ends with what is recorded", "hint: stopping now"} {
		if !strings.Contains(res.stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, res.stderr)
		}
	}
	_, lines := readRunLog(t, filepath.Join(dir, "logs"))
	if len(lines) != total {
		t.Fatalf("run log: %d lines, want %d", len(lines), total)
	}
	st := sb.stats(t)
	n := checkBilling(t, lines, st, filepath.Join(dir, "results"))
	if n[oxytype.Done] != 0 || n[oxytype.Unfetched] == 0 || int64(n[oxytype.Unfetched]) > st.JobsCreated {
		t.Errorf("states %v with %d jobs billed: want every billed job unfetched with its id", n, st.JobsCreated)
	}
}
