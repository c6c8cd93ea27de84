package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

func TestASmallRunPrintsEveryDocDoneAndTheRawRate(t *testing.T) {
	t.Parallel()
	var out, errs bytes.Buffer
	code := run(t.Context(), []string{"-n", "60", "--nosync", "--broker-sync", "--poll-first", "20ms", "--dir", t.TempDir()}, &out, &errs)
	if code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", code, errs.String())
	}
	for _, want := range []string{
		"| outcomes | done 60 |",
		"| broker store | fsync of every write before its ack (--broker-sync, as oxy run --state-dir) |",
		"| API requests per doc: status / results | 1.000 / 1.000 |",
		"docs/s**",
		"| **raw JetStream rate** |",
		"| submitter | 60 (60 / 0 / 0) |",
		"| writer | 60 (60 / 0 / 0) |",
		"| process CPU during the run (broker + emulator + 3 stages) |",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the table does not say %q:\n%s", want, out.String())
		}
	}
}

func TestBadFlagsExitTwo(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"-n", "0"}, {"--poll-first", "0s"}, {"--no-such-flag"}} {
		var out, errs bytes.Buffer
		if code := run(t.Context(), args, &out, &errs); code != 2 {
			t.Errorf("%v: exit %d, want 2", args, code)
		}
	}
}

func TestQuantileIsTheNearestRank(t *testing.T) {
	t.Parallel()
	var d []time.Duration
	for i := 1; i <= 100; i++ {
		d = append(d, time.Duration(i)*time.Millisecond)
	}
	if got := quantile(d, 0.5); got != 50*time.Millisecond {
		t.Errorf("p50 = %v, want 50ms", got)
	}
	if got := quantile(d, 0.99); got != 99*time.Millisecond {
		t.Errorf("p99 = %v, want 99ms", got)
	}
	if got := quantile(nil, 0.5); got != 0 {
		t.Errorf("p50 of nothing = %v, want 0", got)
	}
}

func TestCPUTextIsPerDocAndInCores(t *testing.T) {
	t.Parallel()
	r := &result{payloads: 1000, cpu: 1500 * time.Millisecond, wall: time.Second}
	if got, want := r.cpuText(), "1.50 s = 1500 µs per doc, 1.50 cores busy"; got != want {
		t.Errorf("cpuText() = %q, want %q", got, want)
	}
	r.cpu = -1
	if got := r.cpuText(); got != "unknown" {
		t.Errorf("cpuText() without a CPU reading = %q, want unknown", got)
	}
}

func TestTheCLIScenariosMeasureOxyRunAndReadBackItsRunLog(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds the oxy binary")
	}
	bin := filepath.Join(t.TempDir(), "oxy")
	build := exec.Command("go", "build", "-o", bin, "github.com/oxypipe/oxypipe/cmd/oxy")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	jsonPath := filepath.Join(t.TempDir(), "bench.json")
	var out, errs bytes.Buffer
	code := run(t.Context(), []string{"-n", "40", "--skip-stages", "--cli-oxy", bin, "--json", jsonPath, "--dir", t.TempDir()}, &out, &errs)
	if code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", code, errs.String())
	}
	for _, want := range []string{"| oxy run → oxy sandbox (separate process) | 40 |", "| oxy run --sandbox (emulator in-process) | 40 |", "| 40 lines, 40 done |"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the table does not say %q:\n%s", want, out.String())
		}
	}
	b, err := os.ReadFile(jsonPath)
	if err != nil {
		t.Fatal(err)
	}
	var rep report
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Stages != nil || len(rep.CLI) != 2 {
		t.Fatalf("JSON report: %s", b)
	}
	for _, r := range rep.CLI {
		if r.Payloads != 40 || r.RunLogLines != 40 || r.Done != 40 || r.WallSeconds <= 0 || r.CPUPerDocMS <= 0 || r.PeakRSSBytes < 1<<20 {
			t.Errorf("scenario %+v", r)
		}
	}
}

// A second run in the same --dir must not count the first run's broker
// store as its own: it once reused the folder, and the end to end figure
// came out negative.
func TestRunsInTheSameDirAreIndependent(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for i := range 2 {
		var out, errs bytes.Buffer
		code := run(t.Context(), []string{"-n", "40", "--nosync", "--skip-raw", "--poll-first", "20ms", "--dir", dir}, &out, &errs)
		if code != 0 {
			t.Fatalf("run %d: exit %d; stderr:\n%s", i+1, code, errs.String())
		}
		for _, want := range []string{"| outcomes | done 40 |", "| submitter | 40 (40 / 0 / 0) |", "| writer | 40 (40 / 0 / 0) |"} {
			if !strings.Contains(out.String(), want) {
				t.Errorf("run %d: the table does not say %q:\n%s", i+1, want, out.String())
			}
		}
		if strings.Contains(out.String(), "**-") {
			t.Errorf("run %d: a negative end to end figure:\n%s", i+1, out.String())
		}
	}
	if left, err := os.ReadDir(dir); err != nil || len(left) != 0 {
		t.Errorf("the runs left %d entries in --dir (err %v), want none", len(left), err)
	}
}

// TestTheChildsPeakRSSIsItsOwn checks what the CLI scenarios report as
// `oxy run`'s peak RSS: the child's, not this process's, which the
// kernel's accounting of a child started from Go includes.
func TestTheChildsPeakRSSIsItsOwn(t *testing.T) {
	if _, err := os.Stat("/proc/self/status"); err != nil {
		t.Skipf("SKIPPED: no /proc here (%v); the CLI scenarios report the child's rusage instead", err)
	}
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Skipf("SKIPPED: no sleep command: %v", err)
	}
	held := make([]byte, 128<<20) // this process's peak: at least 128 MiB
	for i := range held {
		held[i] = 1
	}
	cmd := exec.Command(sleep, "0.3")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	stop := watchPeakRSS(cmd.Process.Pid)
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	got := stop()
	_, rusage := childUsage(cmd.ProcessState)
	if got <= 0 || got >= 32<<20 {
		t.Fatalf("sleep's peak RSS = %d bytes, want more than 0 and less than 32 MiB", got)
	}
	if rusage < int64(len(held)) {
		t.Logf("the child's rusage says %d bytes: this kernel does not pass on the parent's peak", rusage)
	}
	runtime.KeepAlive(held)
}
