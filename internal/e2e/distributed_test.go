package e2e

import (
	"bytes"
	"context"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/oxypipe/oxypipe/internal/natsserver"
	"github.com/oxypipe/oxypipe/internal/testutil"
	"github.com/oxypipe/oxypipe/pkg/oxytype"
)

// TestDistributedRun is the README's distributed use on one machine: a
// nats-server, `oxy sandbox` as the API, the four worker binaries as
// separate processes, and `oxy run --nats` feeding them, following the run
// and getting its run log. Nothing of the stages runs inside oxy.
func TestDistributedRun(t *testing.T) {
	t.Parallel()
	bin := t.TempDir()
	build := exec.Command("go", "build", "-o", bin+string(filepath.Separator),
		"./cmd/submitter", "./cmd/poller", "./cmd/writer", "./cmd/statusworker")
	build.Dir = repoRoot
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the workers: %v\n%s", err, out)
	}
	srv, err := natsserver.Start(t.Context(), natsserver.Config{StoreDir: t.TempDir(), Listen: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Shutdown(context.Background()) })
	natsURL := srv.ClientURL()
	sb := startSandbox(t, "")

	workerEnv := sb.env("NATS_URL="+natsURL, "OXY_HTTP_ADDR=127.0.0.1:0")
	workers := map[string]*worker{}
	for _, name := range []string{"statusworker", "submitter", "poller", "writer"} {
		workers[name] = startWorker(t, filepath.Join(bin, name), workerEnv)
	}

	dir := t.TempDir()
	// The folders as the workers see them: they write the files and the
	// run log, from their own working directory.
	results, logs := filepath.Join(dir, "results"), filepath.Join(dir, "logs")
	res := oxy(t, dir, env("NATS_URL="+natsURL), nil,
		"run", filepath.Join(repoRoot, "examples", "payloads.jsonl"), "-d", results, "--run-log", logs)
	if res.code != 0 {
		t.Fatalf("exit %d, stderr:\n%s\nworkers:\n%s", res.code, res.stderr, dumpWorkers(workers))
	}
	if got := progressCounts(t, res.lastLine()); got != "6/6 done, 6 written" {
		t.Errorf("final line %q, want 6/6 done, 6 written, <elapsed>", res.lastLine())
	}

	_, lines := readRunLog(t, logs)
	if len(lines) != 6 {
		t.Fatalf("run log has %d lines, want 6", len(lines))
	}
	var want []string
	for i, l := range lines {
		if l.State != oxytype.Done || l.ID == nil || l.Error != nil {
			t.Fatalf("run log line %d: %+v", i+1, l)
		}
		want = append(want, *l.ID+".json")
	}
	slices.Sort(want)
	if got := files(t, results); !reflect.DeepEqual(got, want) {
		t.Errorf("the writer wrote %v, want the run log's jobs %v", got, want)
	}
	if st := sb.stats(t); st.JobsCreated != 6 {
		t.Errorf("the sandbox created %d jobs for 6 payloads", st.JobsCreated)
	}

	// The workers stop cleanly on SIGTERM once the run is over.
	for name, w := range workers {
		if code := w.stop(t); code != 0 {
			t.Errorf("%s exited %d after SIGTERM; stderr:\n%s", name, code, w.stderr.String())
		}
	}
}

// worker is a worker process of TestDistributedRun.
type worker struct {
	cmd    *exec.Cmd
	stderr bytes.Buffer // written by the process until it exits
	done   chan struct{}
	code   int
}

func startWorker(t *testing.T, path string, environ []string) *worker {
	t.Helper()
	w := &worker{cmd: exec.Command(path), done: make(chan struct{})}
	w.cmd.Env = environ
	w.cmd.Stderr = &w.stderr
	if err := w.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(w.done)
		err := w.cmd.Wait()
		w.code = w.cmd.ProcessState.ExitCode()
		if err != nil && w.code == 0 {
			w.code = -1
		}
	}()
	t.Cleanup(func() {
		_ = w.cmd.Process.Kill() // a test that failed half-way; no-op once exited
		<-w.done
	})
	return w
}

// stop sends SIGTERM and returns the exit code.
func (w *worker) stop(t *testing.T) int {
	t.Helper()
	if err := w.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatalf("SIGTERM %s: %v", w.cmd.Path, err)
	}
	testutil.Eventually(t, time.Minute, filepath.Base(w.cmd.Path)+" exits", func() bool {
		select {
		case <-w.done:
			return true
		default:
			return false
		}
	})
	return w.code
}

// dumpWorkers is the end of each worker's log, for a failure message.
func dumpWorkers(ws map[string]*worker) string {
	var b strings.Builder
	for name, w := range ws {
		select {
		case <-w.done:
		default:
			_ = w.cmd.Process.Kill()
			<-w.done
		}
		log := w.stderr.String()
		if len(log) > 4000 {
			log = "…" + log[len(log)-4000:]
		}
		b.WriteString("== " + name + "\n" + log + "\n")
	}
	return b.String()
}
