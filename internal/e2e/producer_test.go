package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/oxypipe/oxypipe/internal/natsserver"
	"github.com/oxypipe/oxypipe/internal/topology"
	"github.com/oxypipe/oxypipe/pkg/messages"
	"github.com/oxypipe/oxypipe/pkg/oxytype"
	"github.com/oxypipe/oxypipe/pkg/runlog"
)

// python3 returns the Python interpreter, or skips the test saying why:
// the Python producer is part of the wire contract's proof, so a machine
// without it must show the test as skipped, never as passed.
func python3(t *testing.T) string {
	t.Helper()
	path, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("SKIPPED: python3 is not installed, so examples/producer.py (the wire contract's Python producer) is not tested")
	}
	return path
}

// buildWorkers builds the four worker binaries into a temporary folder.
func buildWorkers(t *testing.T) string {
	t.Helper()
	bin := t.TempDir()
	build := exec.Command("go", "build", "-o", bin+string(filepath.Separator),
		"./cmd/submitter", "./cmd/poller", "./cmd/writer", "./cmd/statusworker")
	build.Dir = repoRoot
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the workers: %v\n%s", err, out)
	}
	return bin
}

// producerResult is one finished run of examples/producer.py.
type producerResult struct {
	code           int
	stdout, stderr string
}

func runProducer(t *testing.T, python, dir string, args ...string) producerResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, python, append([]string{filepath.Join(repoRoot, "examples", "producer.py")}, args...)...)
	cmd.Dir = dir
	cmd.Env = env()
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	res := producerResult{code: cmd.ProcessState.ExitCode(), stdout: stdout.String(), stderr: stderr.String()}
	if err != nil && res.code <= 0 {
		t.Fatalf("producer.py did not run: %v\nstderr:\n%s", err, res.stderr)
	}
	return res
}

// TestFaultPythonProducerRetryBillsOnce feeds a run from the dependency-free
// Python producer against the real binaries. It publishes every payload
// while only the statusworker runs (nothing may be lost or billed), then the
// other workers start and the producer is run again with the same run id, as
// a producer retrying after a crash would: every input is billed exactly
// once, the payload without a source is rejected at no cost, the files are
// the run log's jobs and the run log has one line per input, in order.
func TestFaultPythonProducerRetryBillsOnce(t *testing.T) {
	t.Parallel()
	python := python3(t)
	bin := buildWorkers(t)
	srv, err := natsserver.Start(t.Context(), natsserver.Config{StoreDir: t.TempDir(), Listen: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Shutdown(context.Background()) })
	natsURL := srv.ClientURL()
	sb := startSandbox(t, "")
	workerEnv := sb.env("NATS_URL="+natsURL, "OXY_HTTP_ADDR=127.0.0.1:0")
	workers := map[string]*worker{"statusworker": startWorker(t, filepath.Join(bin, "statusworker"), workerEnv)}

	dir := t.TempDir()
	results, logs := filepath.Join(dir, "results"), filepath.Join(dir, "logs")
	inputs := []string{
		`{"source": "universal", "url": "https://sandbox.oxylabs.io/products/1"}`,
		`{"source": "universal", "url": "https://sandbox.oxylabs.io/products/2"}`,
		`{"url": "https://sandbox.oxylabs.io/products/3"}`,
		`{"source": "universal", "url": "https://sandbox.oxylabs.io/products/4?a=<b>&c"}`,
		`{"source": "universal", "url": "https://sandbox.oxylabs.io/products/5"}`,
	}
	input := filepath.Join(dir, "payloads.jsonl")
	writeFile(t, input, strings.Join(inputs, "\n")+"\n")
	const run = "py-20260929.1"
	args := []string{"--nats", natsURL, "--run", run, "--destination", results, "--run-log", logs, "--origin", "producer/e2e", input}

	first := runProducer(t, python, dir, append([]string{"--no-wait"}, args...)...)
	if first.code != 0 || !strings.Contains(first.stderr, "published 5 payloads of run "+run+" (0 already stored)") {
		t.Fatalf("the first feed: exit %d\nstderr:\n%s\nworkers:\n%s", first.code, first.stderr, dumpWorkers(workers))
	}
	if st := sb.stats(t); submissions(st) != 0 || st.JobsCreated != 0 {
		t.Fatalf("with no submitter running, the sandbox saw %d submissions, %d jobs", submissions(st), st.JobsCreated)
	}

	for _, name := range []string{"submitter", "poller", "writer"} {
		workers[name] = startWorker(t, filepath.Join(bin, name), workerEnv)
	}
	retry := runProducer(t, python, dir, args...)
	if !strings.Contains(retry.stderr, "run "+run+" exists with the same announcement: continuing it") ||
		!strings.Contains(retry.stderr, "published 5 payloads of run "+run+" (5 already stored)") {
		t.Errorf("the retry did not continue the run with every payload dropped as a copy; stderr:\n%s", retry.stderr)
	}
	if retry.code != 1 {
		t.Fatalf("the retry exited %d, want 1 (one payload rejected)\nstdout: %s\nstderr:\n%s\nworkers:\n%s",
			retry.code, retry.stdout, retry.stderr, dumpWorkers(workers))
	}
	var completed messages.RunCompleted
	if err := json.Unmarshal([]byte(strings.TrimSpace(retry.stdout)), &completed); err != nil {
		t.Fatalf("the producer printed %q: %v", retry.stdout, err)
	}
	if completed.Run != run || completed.Total != 5 || completed.Done != 4 || completed.Rejected != 1 ||
		completed.Faulted+completed.Unsubmitted+completed.Unfetched+completed.Unidentified != 0 {
		t.Errorf("completion %+v, want 5 docs: 4 done, 1 rejected", completed)
	}

	_, lines := readRunLog(t, logs)
	if len(lines) != len(inputs) {
		t.Fatalf("run log has %d lines, want %d", len(lines), len(inputs))
	}
	var jobs []string
	for i, l := range lines {
		var got, want any
		if err := json.Unmarshal(l.Payload, &got); err != nil {
			t.Fatalf("line %d: payload %s: %v", i+1, l.Payload, err)
		}
		_ = json.Unmarshal([]byte(inputs[i]), &want)
		if !reflect.DeepEqual(got, want) {
			t.Errorf("line %d has payload %s, want input line %d %s", i+1, l.Payload, i+1, inputs[i])
		}
		if i == 2 {
			if l.State != oxytype.Rejected || l.ID != nil || l.Error == nil || !strings.Contains(strings.ToLower(l.Error.Message), "source") {
				t.Errorf("line 3 (no source): %+v, error %+v; want rejected without a job, naming the source", l, l.Error)
			}
			continue
		}
		if l.State != oxytype.Done || l.ID == nil || l.Error != nil {
			t.Fatalf("line %d: %+v, want done with a job id", i+1, l)
		}
		jobs = append(jobs, *l.ID+".json")
	}
	slices.Sort(jobs)
	if got := files(t, results); !reflect.DeepEqual(got, jobs) {
		t.Errorf("the writer wrote %v, want the run log's jobs %v", got, jobs)
	}
	st := sb.stats(t)
	if st.JobsCreated != 4 {
		t.Errorf("the sandbox created %d jobs for 4 good payloads", st.JobsCreated)
	}
	for _, i := range []int{0, 1, 3, 4} {
		var p struct{ URL string }
		_ = json.Unmarshal([]byte(inputs[i]), &p)
		if n := st.CreatedByInput[p.URL]; n != 1 {
			t.Errorf("input %s was billed %d times, want once (by input: %v)", p.URL, n, st.CreatedByInput)
		}
	}
	for name, w := range workers {
		if code := w.stop(t); code != 0 {
			t.Errorf("%s exited %d after SIGTERM; stderr:\n%s", name, code, w.stderr.String())
		}
	}
}

// TestPythonProducerFeed feeds a standing feed from the Python producer
// while no worker runs (the topology exists, as after any earlier
// deployment), then starts the four workers and runs the producer again
// with the same input and --close, as a producer retrying would: the feed
// is cut into runs of three, every input is billed once whatever the
// retries and the duplicate line, the payload without a source is rejected
// at no cost, and each run has its run log.
func TestPythonProducerFeed(t *testing.T) {
	t.Parallel()
	python := python3(t)
	bin := buildWorkers(t)
	srv, err := natsserver.Start(t.Context(), natsserver.Config{StoreDir: t.TempDir(), Listen: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Shutdown(context.Background()) })
	natsURL := srv.ClientURL()
	nc, err := nats.Connect(natsURL)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := topology.Ensure(t.Context(), js, topology.Config{}); err != nil {
		t.Fatal(err)
	}
	sb := startSandbox(t, "")

	dir := t.TempDir()
	results, logs := filepath.Join(dir, "results"), filepath.Join(dir, "logs")
	inputs := []string{
		`{"source": "universal", "url": "https://sandbox.oxylabs.io/products/1"}`,
		`{"source": "universal", "url": "https://sandbox.oxylabs.io/products/2"}`,
		`{"url": "https://sandbox.oxylabs.io/products/3"}`,
		`{"source": "universal", "url": "https://sandbox.oxylabs.io/products/1"}`,
		`{"source": "universal", "url": "https://sandbox.oxylabs.io/products/4"}`,
		`{"source": "universal", "url": "https://sandbox.oxylabs.io/products/5"}`,
	}
	input := filepath.Join(dir, "payloads.jsonl")
	writeFile(t, input, strings.Join(inputs, "\n")+"\n")
	args := []string{"--nats", natsURL, "--feed", "web", "--max-payloads", "3", "--destination", results, "--run-log", logs, input}

	first := runProducer(t, python, dir, append([]string{"--no-wait"}, args...)...)
	if first.code != 0 || !strings.Contains(first.stderr, "published 6 payloads on feed web (1 dropped as copies)") {
		t.Fatalf("feeding with no worker running: exit %d\nstderr:\n%s", first.code, first.stderr)
	}
	workerEnv := sb.env("NATS_URL="+natsURL, "OXY_HTTP_ADDR=127.0.0.1:0")
	workers := map[string]*worker{}
	for _, name := range []string{"statusworker", "submitter", "poller", "writer"} {
		workers[name] = startWorker(t, filepath.Join(bin, name), workerEnv)
	}
	retry := runProducer(t, python, dir, append([]string{"--close"}, args...)...)
	if retry.code != 1 {
		t.Fatalf("the retry exited %d, want 1 (one payload rejected)\nstdout: %s\nstderr:\n%s\nworkers:\n%s",
			retry.code, retry.stdout, retry.stderr, dumpWorkers(workers))
	}
	var runs []messages.RunCompleted
	for _, l := range nonEmptyLines(retry.stdout) {
		var c messages.RunCompleted
		if err := json.Unmarshal([]byte(l), &c); err != nil {
			t.Fatalf("the producer printed %q: %v", l, err)
		}
		runs = append(runs, c)
	}
	if len(runs) != 2 || runs[0].Run != "web.1" || runs[0].Total != 3 || runs[0].Done != 2 || runs[0].Rejected != 1 ||
		runs[1].Run != "web.2" || runs[1].Total != 2 || runs[1].Done != 2 {
		t.Errorf("completions %+v, want web.1 (3: 2 done, 1 rejected) and web.2 (2 done)", runs)
	}
	var jobs []string
	for _, run := range []string{"web.1", "web.2"} {
		for i, l := range readLines(t, filepath.Join(logs, runlog.FileName(run))) {
			if run == "web.1" && i == 2 {
				if l.State != oxytype.Rejected || l.ID != nil {
					t.Errorf("%s line 3 (no source): %+v, want rejected without a job", run, l)
				}
				continue
			}
			if l.State != oxytype.Done || l.ID == nil {
				t.Fatalf("%s line %d: %+v, want done", run, i+1, l)
			}
			jobs = append(jobs, *l.ID+".json")
		}
	}
	slices.Sort(jobs)
	if got := files(t, results); !reflect.DeepEqual(got, jobs) {
		t.Errorf("the writer wrote %v, want the run logs' jobs %v", got, jobs)
	}
	st := sb.stats(t)
	if st.JobsCreated != 4 {
		t.Errorf("the sandbox created %d jobs for 4 distinct good payloads", st.JobsCreated)
	}
	for _, n := range []int{1, 2, 4, 5} {
		if url := fmt.Sprintf("https://sandbox.oxylabs.io/products/%d", n); st.CreatedByInput[url] != 1 {
			t.Errorf("input %s was billed %d times, want once", url, st.CreatedByInput[url])
		}
	}
	for name, w := range workers {
		if code := w.stop(t); code != 0 {
			t.Errorf("%s exited %d after SIGTERM; stderr:\n%s", name, code, w.stderr.String())
		}
	}
}

// TestPythonProducerRefusesBadInput checks that the producer refuses an
// input it cannot send before it connects, naming the line: a line that is
// not JSON, one that is not an object, one over the broker's limit.
func TestPythonProducerRefusesBadInput(t *testing.T) {
	t.Parallel()
	python := python3(t)
	dir := t.TempDir()
	for _, tc := range []struct{ name, input, want string }{
		{"not JSON", `{"source": "universal", "url": "https://example.com"}` + "\n{oops\n", "line 2: not JSON"},
		{"not an object", `["universal"]` + "\n", "line 1: a payload must be a JSON object"},
		{"too large", `{"source": "universal", "url": "https://example.com/` + strings.Repeat("x", 1<<20) + `"}` + "\n", "line 1: the payload is larger than"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			input := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "-")+".jsonl")
			writeFile(t, input, tc.input)
			// No server listens on this address: the input is refused first.
			res := runProducer(t, python, dir, "--nats", "nats://127.0.0.1:1", "--run", "r1", "--destination", "out", input)
			if res.code != 2 || !strings.Contains(res.stderr, tc.want) {
				t.Errorf("exit %d, stderr %q; want 2 and %q", res.code, res.stderr, tc.want)
			}
		})
	}
	good := filepath.Join(dir, "good.jsonl")
	writeFile(t, good, `{"source": "universal", "url": "https://example.com"}`+"\n")
	for _, args := range [][]string{{"--run", "a_b", "--destination", "out"}, {"--run", "unknown", "--destination", "out"}, {"--feed", "web.1"}} {
		res := runProducer(t, python, dir, append([]string{"--nats", "nats://127.0.0.1:1", good}, args...)...)
		if res.code != 2 || !strings.Contains(res.stderr, "want 1-") {
			t.Errorf("%v: exit %d, stderr %q; want 2 naming the allowed form", args, res.code, res.stderr)
		}
	}
}
