package pipelinetest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/spf13/pflag"

	"github.com/oxypipe/oxypipe/internal/topology"
	"github.com/oxypipe/oxypipe/internal/worker"
	"github.com/oxypipe/oxypipe/pkg/wsa"
)

// roleEnv, when set in the environment of this test binary, makes it run
// as a worker process of that stage (see workerSpec) instead of running
// tests.
const roleEnv = "OXY_PIPELINETEST_ROLE"

// realBinariesEnv makes the SIGKILL tests run the built binaries instead of
// children of this test binary.
const realBinariesEnv = "OXY_PIPELINETEST_REAL_BINARIES"

// built holds the worker binaries built from cmd/, once per test binary.
// TestMain removes them; it is the only state the tests share, because
// building costs half a minute.
var built binaries

func TestMain(m *testing.M) {
	if role := os.Getenv(roleEnv); role != "" {
		os.Exit(worker.Main(os.Args[1:], workerSpec(topology.Stage(role))))
	}
	code := m.Run()
	built.remove()
	os.Exit(code)
}

// binaries builds cmd/submitter, cmd/poller and cmd/writer into a
// temporary folder the first time they are asked for.
type binaries struct {
	once sync.Once
	dir  string
	err  error
}

// path returns the binary of a stage, building all three first if needed.
func (b *binaries) path(t testing.TB, s topology.Stage) string {
	t.Helper()
	b.once.Do(b.build)
	if b.err != nil {
		t.Fatalf("building the worker binaries: %v", b.err)
	}
	return filepath.Join(b.dir, string(s))
}

func (b *binaries) build() {
	root, err := moduleRoot()
	if err != nil {
		b.err = err
		return
	}
	if b.dir, b.err = os.MkdirTemp("", "oxypipe-pipelinetest-"); b.err != nil {
		return
	}
	cmd := exec.Command("go", "build", "-o", b.dir+string(filepath.Separator), "./cmd/submitter", "./cmd/poller", "./cmd/writer")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		b.err = fmt.Errorf("go build: %w\n%s", err, out)
	}
}

func (b *binaries) remove() {
	if b.dir != "" {
		_ = os.RemoveAll(b.dir) // a temporary folder; nothing to report
	}
}

// moduleRoot is the folder of the go.mod this package belongs to.
func moduleRoot() (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		return "", errors.New("not inside a Go module")
	}
	return filepath.Dir(gomod), nil
}

// workerSpec is the worker binary of a stage, as cmd/<stage> builds it,
// with the test-sized timings of stages_test.go. The submitter's rate
// limit per rateWindow comes from OXY_RATE_LIMIT (0 or unset: unlimited).
func workerSpec(s topology.Stage) worker.Spec {
	var (
		api    worker.APIFlags
		client *wsa.Client
	)
	return worker.Spec{
		Name:    string(s),
		Summary: "The " + string(s) + " stage with the test timings of internal/pipelinetest.",
		Flags:   func(fs *pflag.FlagSet) { api.RegisterFlags(fs, os.Getenv) },
		Check: func() error {
			var err error
			client, err = api.Client(os.Getenv)
			return err
		},
		Setup: func(ctx context.Context, env *worker.Env) (worker.Service, error) {
			rate, _ := strconv.Atoi(os.Getenv("OXY_RATE_LIMIT"))
			o := stageOptions{rateLimit: rate, ackWait: processAckWait, claimStaleAfter: processClaimStaleAfter}
			if _, err := env.Topology.EnsureConsumer(ctx, consumer(s, o)); err != nil {
				return nil, err
			}
			switch s {
			case topology.Submitter:
				sub, err := newSubmitter(env.Conn, env.Topology, client, env.Instance, env.Log, o)
				if err != nil {
					return nil, err
				}
				env.AddCheck(string(s), sub)
				return sub.Run, nil
			case topology.Poller:
				p, err := newPoller(env.Conn, client, env.Instance, env.Log, o)
				if err != nil {
					return nil, err
				}
				env.AddCheck(string(s), p)
				return p.Run, nil
			case topology.Writer:
				w, err := newWriter(env.Conn, env.Topology, client, env.Instance, env.Log, o)
				if err != nil {
					return nil, err
				}
				env.AddCheck(string(s), w)
				return w.Run, nil
			}
			return nil, worker.Usagef("no worker for stage %q", s)
		},
	}
}
