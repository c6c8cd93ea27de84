package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// The CLI scenarios (--cli-oxy): `oxy run` as a child process, the way a
// user runs it, measured from outside: wall time from its start to its exit
// (the payloads are read first, the run log is written last), its CPU time
// from the kernel's accounting of the child (rusage), its peak RSS from its
// own VmHWM (watchPeakRSS).

// cliJobTime is how long the emulator keeps each job pending in the CLI
// scenarios, the figure: long enough that the poller's schedule
// matters, short enough that the run is CPU-bound.
const cliJobTime = 50 * time.Millisecond

// cliResult is one CLI scenario's figures.
type cliResult struct {
	Scenario    string  `json:"scenario"`
	Payloads    int     `json:"payloads"`
	WallSeconds float64 `json:"wall_seconds"`
	DocsPerSec  float64 `json:"docs_per_second"`
	CPUSeconds  float64 `json:"cpu_seconds"`
	CPUPerDocMS float64 `json:"cpu_ms_per_doc"`
	// CoresBusy is CPU time over wall time.
	CoresBusy    float64 `json:"cores_busy"`
	PeakRSSBytes int64   `json:"peak_rss_bytes"`
	LoadBefore   string  `json:"load_average_before"`
	LoadAfter    string  `json:"load_average_after"`
	// RunLogLines and Done are read back from the run log, which must
	// have one line per payload in input order.
	RunLogLines int `json:"run_log_lines"`
	Done        int `json:"done"`
}

// cliBench runs `oxy run` against a separate `oxy sandbox` process, then
// with its in-process emulator (--sandbox), on payloads it writes into dir.
func cliBench(ctx context.Context, oxy string, payloads int, dir string, log io.Writer) ([]cliResult, error) {
	input := filepath.Join(dir, "payloads.jsonl")
	if err := writePayloads(input, payloads); err != nil {
		return nil, err
	}
	var out []cliResult
	fmt.Fprintf(log, "oxybench: oxy run of %d payloads against a separate oxy sandbox…\n", payloads)
	sb, err := startSandbox(ctx, oxy)
	if err != nil {
		return nil, err
	}
	r, err := oxyRun(ctx, oxy, "oxy run → oxy sandbox (separate process)", payloads, input, filepath.Join(dir, "separate"),
		[]string{"--api-url", sb.URL}, []string{"OXY_WSA_USERNAME=" + sb.Username, "OXY_WSA_PASSWORD=" + sb.Password})
	sb.stop()
	if err != nil {
		return nil, err
	}
	out = append(out, r)

	fmt.Fprintf(log, "oxybench: oxy run --sandbox of %d payloads…\n", payloads)
	rules := filepath.Join(dir, "rules.json")
	if err := os.WriteFile(rules, fmt.Appendf(nil, `{"rate_limit": 1000000, "job_time": %q}`, cliJobTime.String()), 0o600); err != nil {
		return nil, err
	}
	r, err = oxyRun(ctx, oxy, "oxy run --sandbox (emulator in-process)", payloads, input, filepath.Join(dir, "in-process"),
		[]string{"--sandbox", "--sandbox-rules", rules}, nil)
	if err != nil {
		return nil, err
	}
	return append(out, r), nil
}

// writePayloads writes n universal payloads, product i on line i.
func writePayloads(path string, n int) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	for i := range n {
		fmt.Fprintf(w, `{"source":"universal","url":"https://sandbox.oxylabs.io/products/%d"}`+"\n", i)
	}
	return errors.Join(w.Flush(), f.Close())
}

// sandbox is a running `oxy sandbox`.
type sandbox struct {
	URL, Username, Password string
	stop                    func()
}

func startSandbox(ctx context.Context, oxy string) (*sandbox, error) {
	cmd := exec.CommandContext(ctx, oxy, "sandbox", "--addr", "127.0.0.1:0", "--job-time", cliJobTime.String(), "--rate-limit", "0")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("oxy sandbox: %w", err)
	}
	stop := func() {
		_ = cmd.Process.Signal(os.Interrupt)
		_ = cmd.Wait() // it was asked to stop; its exit status says nothing here
	}
	var sb sandbox
	line, err := bufio.NewReader(stdout).ReadBytes('\n')
	if err == nil {
		err = json.Unmarshal(line, &sb)
	}
	if err == nil && sb.URL == "" {
		err = errors.New("no url")
	}
	if err != nil {
		stop()
		return nil, fmt.Errorf("oxy sandbox did not say where it listens: %w", err)
	}
	sb.stop = stop
	return &sb, nil
}

// oxyRun runs `oxy run` on input with results and the run log under dir,
// and measures it.
func oxyRun(ctx context.Context, oxy, name string, payloads int, input, dir string, args, env []string) (cliResult, error) {
	res := cliResult{Scenario: name, Payloads: payloads}
	results, logs := filepath.Join(dir, "results"), filepath.Join(dir, "logs")
	argv := append([]string{"run", "-q", "-d", results, "--run-log", logs}, args...)
	cmd := exec.CommandContext(ctx, oxy, append(argv, input)...)
	cmd.Env = append(os.Environ(), env...)
	var stderr strings.Builder
	cmd.Stderr = &stderr // stdout, a line per job, goes to the null device
	res.LoadBefore = loadAverage()
	start := time.Now()
	err := cmd.Start()
	var peak int64 = -1
	if err == nil {
		stop := watchPeakRSS(cmd.Process.Pid)
		err = cmd.Wait()
		peak = stop()
	}
	wall := time.Since(start)
	res.LoadAfter = loadAverage()
	if err != nil {
		return res, fmt.Errorf("%s: %w\n%s", name, err, stderr.String())
	}
	res.WallSeconds = wall.Seconds()
	res.DocsPerSec = float64(payloads) / wall.Seconds()
	cpu, rss := childUsage(cmd.ProcessState)
	res.PeakRSSBytes = peak
	if peak < 0 {
		res.PeakRSSBytes = rss // no /proc: the child's rusage, see watchPeakRSS
	}
	if cpu >= 0 {
		res.CPUSeconds = cpu.Seconds()
		res.CPUPerDocMS = cpu.Seconds() * 1000 / float64(payloads)
		res.CoresBusy = cpu.Seconds() / wall.Seconds()
	}
	var err2 error
	res.RunLogLines, res.Done, err2 = readRunLog(logs, payloads)
	return res, err2
}

// rssInterval is how often watchPeakRSS samples.
const rssInterval = 20 * time.Millisecond

// watchPeakRSS samples the peak RSS (VmHWM) of the running process pid until
// stop is called, and stop returns the highest value seen, or -1 where /proc
// is not available. The kernel's own accounting of a child (rusage) cannot
// serve: Linux starts a child from Go sharing the parent's memory until it
// executes its program, and the child's peak RSS then starts at this
// process's peak (a child of a process holding 400 MiB reports 400 MiB),
// which after the stage run here is the larger. VmHWM only rises, so the
// last sample before the child exits misses at most rssInterval of growth.
func watchPeakRSS(pid int) (stop func() int64) {
	status := fmt.Sprintf("/proc/%d/status", pid)
	peak := readPeakRSS(status)
	done, finished := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(rssInterval)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				// Once the child has exited the file is gone or has no
				// VmHWM: keep what was seen.
				peak = max(peak, readPeakRSS(status))
			}
		}
	}()
	return func() int64 {
		close(done)
		<-finished
		return peak
	}
}

// readRunLog checks the run log in dir: one line per payload, in input
// order; it returns the lines and how many are done.
func readRunLog(dir string, payloads int) (lines, done int, err error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.jsonl"))
	if err != nil {
		return 0, 0, err
	}
	if len(files) != 1 {
		return 0, 0, fmt.Errorf("want one run log in %s, found %d", dir, len(files))
	}
	f, err := os.Open(files[0])
	if err != nil {
		return 0, 0, err
	}
	defer func() { _ = f.Close() }() // read-only
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var line struct {
			State   string `json:"state"`
			Payload struct {
				URL string `json:"url"`
			} `json:"payload"`
		}
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			return lines, done, fmt.Errorf("run log line %d: %w", lines+1, err)
		}
		if want := fmt.Sprintf("/products/%d", lines); !strings.HasSuffix(line.Payload.URL, want) {
			return lines, done, fmt.Errorf("run log line %d is %s, want the payload ending %s (input order)", lines+1, line.Payload.URL, want)
		}
		lines++
		if line.State == "done" {
			done++
		}
	}
	if err := sc.Err(); err != nil {
		return lines, done, err
	}
	if lines != payloads {
		return lines, done, fmt.Errorf("the run log has %d lines, want %d", lines, payloads)
	}
	return lines, done, nil
}

// printCLI writes the CLI scenarios' table.
func printCLI(w io.Writer, rs []cliResult) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "\n`oxy run` as a child process, %v jobs, results and run log on disk (fsync); wall = start → exit (run log written)\n\n", cliJobTime)
	fmt.Fprintln(bw, "| scenario | payloads | wall | docs/s | CPU per doc | cores busy | peak RSS | load before → after | run log |")
	fmt.Fprintln(bw, "|---|---|---|---|---|---|---|---|---|")
	for _, r := range rs {
		fmt.Fprintf(bw, "| %s | %d | %.1f s | %.0f | %.2f ms | %.2f | %s | %s → %s | %d lines, %d done |\n",
			r.Scenario, r.Payloads, r.WallSeconds, r.DocsPerSec, r.CPUPerDocMS, r.CoresBusy, rss(r.PeakRSSBytes),
			r.LoadBefore, r.LoadAfter, r.RunLogLines, r.Done)
	}
	return bw.Flush()
}
