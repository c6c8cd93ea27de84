package pipelinetest

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/oxypipe/oxypipe/internal/natsserver"
	"github.com/oxypipe/oxypipe/internal/topology"
	"github.com/oxypipe/oxypipe/pkg/emulator"
)

// logsEnv names a folder where the logs of every worker process are saved
// (one file per process), for looking into a failure.
const logsEnv = "OXY_PIPELINETEST_LOGS"

// cluster is a broker listening on TCP and an emulator on loopback, for
// workers running as separate processes.
type cluster struct {
	*broker
	srv *natsserver.Server
	// real runs the built binaries; else children of this test binary.
	real bool
	// rate is the submitter's rate limit (per second for the binaries, per
	// rateWindow for the children).
	rate int
}

// newCluster starts a TCP broker and the emulator for cfg (with gate, if
// any) and announces a run of n docs.
func newCluster(t *testing.T, n int, cfg emulator.Config, g *gate, real bool) *cluster {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	srv, err := natsserver.Start(ctx, natsserver.Config{StoreDir: t.TempDir(), Listen: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			t.Errorf("nats-server shutdown: %v", err)
		}
	})
	nc, err := srv.Connect()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	api := startAPI(t, cfg, g)
	return &cluster{broker: newBroker(t, nc, api, n), srv: srv, real: real}
}

// proc is one worker process.
type proc struct {
	t       testing.TB
	name    string
	cmd     *exec.Cmd
	logs    *lockedBuffer
	exited  chan struct{}
	state   *os.ProcessState
	waitErr error
	endedAt time.Time
}

// start starts a worker process of a stage named name (its instance name).
func (c *cluster) start(s topology.Stage, name string) *proc {
	c.t.Helper()
	env := []string{
		"NATS_URL=" + c.srv.ClientURL(),
		"OXY_API_URL=" + c.api.URL,
		"OXY_WSA_USERNAME=" + apiUser,
		"OXY_WSA_PASSWORD=" + apiPassword,
		"OXY_HTTP_ADDR=127.0.0.1:0",
		"OXY_INSTANCE=" + name,
		"OXY_LOG_LEVEL=info",
	}
	if s == topology.Submitter && c.rate != 0 {
		env = append(env, "OXY_RATE_LIMIT="+strconv.Itoa(c.rate))
	}
	var path string
	if c.real {
		path = built.path(c.t, s)
	} else {
		self, err := os.Executable()
		if err != nil {
			c.t.Fatal(err)
		}
		path = self
		env = append(env, roleEnv+"="+string(s))
	}
	p := &proc{t: c.t, name: name, logs: &lockedBuffer{}, exited: make(chan struct{})}
	p.cmd = exec.Command(path)
	p.cmd.Env = append(cleanEnv(), env...)
	p.cmd.Stdout, p.cmd.Stderr = p.logs, p.logs
	if err := p.cmd.Start(); err != nil {
		c.t.Fatalf("starting %s: %v", name, err)
	}
	go func() {
		p.waitErr = p.cmd.Wait()
		p.state, p.endedAt = p.cmd.ProcessState, time.Now()
		close(p.exited)
	}()
	c.t.Cleanup(func() {
		p.kill()
		if dir := os.Getenv(logsEnv); dir != "" {
			file := filepath.Join(dir, strings.ReplaceAll(c.t.Name(), "/", "_")+"."+name+".log")
			if err := os.WriteFile(file, []byte(p.logs.String()), 0o644); err != nil {
				c.t.Errorf("saving the logs of %s: %v", name, err)
			}
		}
		if c.t.Failed() {
			c.t.Logf("last lines of %s:\n%s", name, p.logs.tail(40))
		}
	})
	return p
}

// cleanEnv is this process's environment without the settings the
// workers read, so that nothing of the caller's leaks into them.
func cleanEnv() []string {
	var out []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "NATS_") || strings.HasPrefix(kv, "OXY_") {
			continue
		}
		out = append(out, kv)
	}
	return out
}

// kill sends SIGKILL and waits until the process is gone.
func (p *proc) kill() {
	select {
	case <-p.exited:
		return
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGKILL) // it may have exited meanwhile
	<-p.exited
}

// terminate sends SIGTERM and returns when it was sent.
func (p *proc) terminate() time.Time {
	p.t.Helper()
	at := time.Now()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		p.t.Fatalf("SIGTERM to %s: %v", p.name, err)
	}
	return at
}

// wait waits up to timeout for the process to exit and returns its exit
// code and when it exited.
func (p *proc) wait(timeout time.Duration) (int, time.Time) {
	p.t.Helper()
	select {
	case <-p.exited:
	case <-time.After(timeout):
		p.t.Fatalf("%s did not exit within %v; last lines:\n%s", p.name, timeout, p.logs.tail(40))
	}
	var exit *exec.ExitError
	if p.waitErr != nil && !errors.As(p.waitErr, &exit) {
		p.t.Fatalf("waiting for %s: %v", p.name, p.waitErr)
	}
	return p.state.ExitCode(), p.endedAt
}

// lockedBuffer is a bytes.Buffer safe for the process's writes and the
// test's reads.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// tail returns the last n lines.
func (b *lockedBuffer) tail(n int) string {
	lines := strings.Split(strings.TrimRight(b.String(), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
