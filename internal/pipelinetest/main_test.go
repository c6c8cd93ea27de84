package pipelinetest

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/oxypipe/oxypipe/internal/topology"
	"github.com/oxypipe/oxypipe/internal/worker"
	"github.com/oxypipe/oxypipe/internal/workerspec/pollerspec"
	"github.com/oxypipe/oxypipe/internal/workerspec/submitterspec"
	"github.com/oxypipe/oxypipe/internal/workerspec/writerspec"
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

// workerSpec is the worker binary of a stage, the spec cmd/<stage> runs,
// with the test-sized timings of stages_test.go. The submitter's rate
// limit per rateWindow comes from OXY_RATE_LIMIT (0 or unset: unlimited).
func workerSpec(s topology.Stage) worker.Spec {
	rate, _ := strconv.Atoi(os.Getenv("OXY_RATE_LIMIT"))
	o := stageOptions{rateLimit: rate, ackWait: processAckWait, claimStaleAfter: processClaimStaleAfter}
	switch s {
	case topology.Submitter:
		return submitterspec.Spec(tuneSubmitter(o))
	case topology.Poller:
		return pollerspec.Spec(tunePoller(o))
	case topology.Writer:
		return writerspec.Spec(tuneWriter(o))
	}
	panic(fmt.Sprintf("no worker for stage %q", s))
}
