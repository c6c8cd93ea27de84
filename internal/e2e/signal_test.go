package e2e

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/oxypipe/oxypipe/internal/statusworker"
	"github.com/oxypipe/oxypipe/internal/testutil"
	"github.com/oxypipe/oxypipe/pkg/oxytype"
	"github.com/oxypipe/oxypipe/pkg/runlog"
)

// TestCtrlCStopsSubmittingAndWritesTheRunLog interrupts a run half-way
// through its submissions: the jobs already submitted are finished and
// written, the rest stay unsubmitted, the run log is written, exit 130.
// While the run goes on, `oxy status` reads its counts from the in-process
// statusworker.
func TestCtrlCStopsSubmittingAndWritesTheRunLog(t *testing.T) {
	t.Parallel()
	// 50 jobs per second and 2s jobs: 1,000 payloads take 20s to submit.
	sb := startSandbox(t, "", "--job-time", "2s")
	dir := t.TempDir()
	const total = 1000
	writeFile(t, filepath.Join(dir, "payloads.jsonl"), products(1, total))
	p := start(t, dir, nil, sb.env(), "run", "payloads.jsonl", "-d", "results", "--run-log", "logs", "--status-addr", "127.0.0.1:0")

	statusURL := waitForStatusURL(t, p)
	testutil.Eventually(t, 30*time.Second, "the first 50 jobs", func() bool { return sb.stats(t).JobsCreated >= 50 })

	// The run log was written empty before the first submission; its name
	// is the run's id.
	logs := files(t, filepath.Join(dir, "logs"))
	if len(logs) != 1 {
		t.Fatalf("logs %v, want the empty run log", logs)
	}
	run := strings.TrimSuffix(logs[0], runlog.Ext)
	st := oxy(t, dir, env(), nil, "status", run, "--url", statusURL)
	if st.code != 0 {
		t.Fatalf("oxy status: exit %d\n%s", st.code, st.stderr)
	}
	for _, want := range []string{"Run " + run + ": ready, 1,000 payloads", "STAGE", "payload", "1,000"} {
		if !strings.Contains(st.stdout, want) {
			t.Errorf("oxy status lacks %q:\n%s", want, st.stdout)
		}
	}

	p.signal(t, os.Interrupt)
	res := p.wait(t, 45*time.Second)
	if res.code != 130 {
		t.Fatalf("exit %d, want 130; stderr:\n%s", res.code, res.stderr)
	}
	if !strings.Contains(res.stderr, "hint: stopping: nothing more is submitted") {
		t.Errorf("stderr lacks the stopping hint:\n%s", res.stderr)
	}
	_, lines := readRunLog(t, filepath.Join(dir, "logs"))
	n := states(lines)
	billed := sb.stats(t)
	if len(lines) != total || n[oxytype.Done]+n[oxytype.Unsubmitted] != total || n[oxytype.Unsubmitted] == 0 {
		t.Fatalf("run log has %d lines, states %v: want %d lines, done or unsubmitted, some unsubmitted", len(lines), n, total)
	}
	if int64(n[oxytype.Done]) != billed.JobsCreated {
		t.Errorf("%d done lines, but the sandbox created %d jobs: every submitted job must be finished and written", n[oxytype.Done], billed.JobsCreated)
	}
	if got := len(files(t, filepath.Join(dir, "results"))); got != n[oxytype.Done] {
		t.Errorf("%d result files, want %d", got, n[oxytype.Done])
	}
	if len(res.lines()) != total {
		t.Errorf("%d stdout lines, want one per payload (%d)", len(res.lines()), total)
	}
	want := "Stopped submitting, because the run was stopped"
	if !strings.Contains(res.stderr, want) {
		t.Errorf("stderr lacks %q:\n%s", want, res.stderr)
	}
}

// TestKilledRunResumes kills a run outright (SIGKILL) once every payload is
// submitted and its jobs are pending, then resumes it from its state
// directory: each job is finished and written, and nothing is billed twice.
// The sandbox is a separate process, so its counts survive the kill.
func TestKilledRunResumes(t *testing.T) {
	t.Parallel()
	sb := startSandbox(t, "", "--job-time", "3s")
	dir := t.TempDir()
	const total = 40
	writeFile(t, filepath.Join(dir, "payloads.jsonl"), products(1, total))
	p := start(t, dir, nil, sb.env(), "run", "payloads.jsonl", "-d", "results", "--run-log", "logs", "--state-dir", "state", "--status-addr", "127.0.0.1:0")
	// Killed inside a submission, a payload's outcome is unknown (it may
	// have billed) and is never resubmitted: wait until the submitter has
	// stored every job id, which the statusworker sees as "submitted".
	statusURL := waitForStatusURL(t, p)
	testutil.Eventually(t, 30*time.Second, "every payload submitted and recorded", func() bool {
		return sb.stats(t).JobsCreated == total && stageSucceeded(t, statusURL, dir, "submitted") == total
	})
	p.signal(t, syscall.SIGKILL)
	killed := p.wait(t, 10*time.Second)
	if killed.code != -1 {
		t.Fatalf("exit %d after SIGKILL", killed.code)
	}

	// The run's id is in the resume hint, and its payloads are kept.
	m := regexp.MustCompile(`oxy run --resume (\S+) --state-dir state`).FindStringSubmatch(killed.stderr)
	if m == nil {
		t.Fatalf("stderr lacks the resume hint:\n%s", killed.stderr)
	}
	run := m[1]
	if got := files(t, filepath.Join(dir, "state", "payloads")); len(got) != 1 || got[0] != run+".jsonl" {
		t.Fatalf("kept payloads %v, want %s.jsonl", got, run)
	}
	if info, err := os.Stat(filepath.Join(dir, "logs", run+".jsonl")); err != nil || info.Size() != 0 {
		t.Fatalf("the killed run's log: %v, %v; want an empty file", info, err)
	}

	began := time.Now()
	// A resume waits up to the consumers' AckWait (60 s) for what the dead
	// process held before it is redelivered: give it room on a loaded machine.
	res := start(t, dir, nil, sb.env(), "run", "--resume", run, "--state-dir", "state").wait(t, 3*time.Minute)
	t.Logf("the resumed run took %v: %s", time.Since(began).Round(time.Millisecond), res.lastLine())
	if res.code != 0 {
		t.Fatalf("resume: exit %d; stderr:\n%s", res.code, res.stderr)
	}
	if got := progressCounts(t, res.lastLine()); got != "40/40 done, 40 written" {
		t.Errorf("final line %q", res.lastLine())
	}
	st := sb.stats(t)
	if st.JobsCreated != total || len(st.CreatedByInput) != total {
		t.Errorf("the sandbox created %d jobs for %d inputs, want %d each", st.JobsCreated, len(st.CreatedByInput), total)
	}
	for input, n := range st.CreatedByInput {
		if n != 1 {
			t.Errorf("%s was billed %d times", input, n)
		}
	}
	_, lines := readRunLog(t, filepath.Join(dir, "logs"))
	if n := states(lines); len(lines) != total || n[oxytype.Done] != total {
		t.Errorf("run log: %d lines, %v", len(lines), n)
	}
	if got := len(files(t, filepath.Join(dir, "results"))); got != total {
		t.Errorf("%d result files, want %d", got, total)
	}
	if got := files(t, filepath.Join(dir, "state", "payloads")); len(got) != 0 {
		t.Errorf("the finished run's payloads are still kept: %v", got)
	}
}

// waitForStatusURL returns the address of the statusworker API that
// `oxy run --status-addr` announces on stderr.
func waitForStatusURL(t *testing.T, p *proc) string {
	t.Helper()
	addr := regexp.MustCompile(`the statusworker's API is at (http://\S+)`)
	var url string
	testutil.Eventually(t, 30*time.Second, "the statusworker's address", func() bool {
		if m := addr.FindStringSubmatch(p.stderrSoFar()); m != nil {
			url = m[1]
		}
		return url != ""
	})
	return url
}

// stageSucceeded asks the statusworker how many docs of the run whose log
// is in dir/logs succeeded at a data type (0 before the run log exists).
func stageSucceeded(t *testing.T, statusURL, dir, dataType string) int {
	t.Helper()
	logs := files(t, filepath.Join(dir, "logs"))
	if len(logs) != 1 {
		return 0
	}
	resp, err := http.Get(statusURL + "/runs/" + strings.TrimSuffix(logs[0], runlog.Ext) + "/stages")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	var body struct {
		Stages []statusworker.StageView `json:"stages"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatalf("stages: %s: %v", resp.Status, err)
	}
	for _, s := range body.Stages {
		if s.DataType == dataType {
			return s.Succeeded
		}
	}
	return 0
}

// TestSIGTERMStopsLikeCtrlC: SIGTERM (a container being stopped) stops the
// run the way the first Ctrl+C does, and the exit code says which signal.
// (How many payloads stay unsubmitted depends on what the submitter already
// holds; TestCtrlCStopsSubmittingAndWritesTheRunLog checks that part.)
func TestSIGTERMStopsLikeCtrlC(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	const total = 300
	writeFile(t, filepath.Join(dir, "payloads.jsonl"), products(1, total))
	writeFile(t, filepath.Join(dir, "rules.json"), `{"job_time": "1s"}`)
	p := start(t, dir, nil, env(), "run", "--sandbox", "--sandbox-rules", "rules.json", "payloads.jsonl", "-d", "results", "--run-log", "logs")
	// The empty run log exists once the run may bill.
	testutil.Eventually(t, 30*time.Second, "the empty run log", func() bool { return len(files(t, filepath.Join(dir, "logs"))) == 1 })
	p.signal(t, syscall.SIGTERM)
	res := p.wait(t, 45*time.Second)
	if res.code != 143 {
		t.Fatalf("exit %d, want 143; stderr:\n%s", res.code, res.stderr)
	}
	_, lines := readRunLog(t, filepath.Join(dir, "logs"))
	n := states(lines)
	if len(lines) != total || n[oxytype.Done]+n[oxytype.Unsubmitted] != total {
		t.Errorf("run log: %d lines, %v", len(lines), n)
	}
	if !strings.Contains(res.stderr, "hint: stopping: nothing more is submitted") {
		t.Errorf("stderr lacks the stopping hint:\n%s", res.stderr)
	}
}
