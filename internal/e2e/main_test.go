package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/oxypipe/oxypipe/pkg/emulator"
	"github.com/oxypipe/oxypipe/pkg/oxytype"
	"github.com/oxypipe/oxypipe/pkg/runlog"
)

// oxyBin is the oxy binary built by TestMain.
var oxyBin string

// repoRoot is the module's root folder (for examples/).
var repoRoot string

func TestMain(m *testing.M) {
	os.Exit(buildAndRun(m))
}

func buildAndRun(m *testing.M) int {
	dir, err := os.MkdirTemp("", "oxy-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() { _ = os.RemoveAll(dir) }()
	_, file, _, _ := runtime.Caller(0)
	repoRoot = filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
	oxyBin = filepath.Join(dir, "oxy")
	build := exec.Command("go", "build", "-o", oxyBin, "./cmd/oxy")
	build.Dir = repoRoot
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building oxy:", err)
		return 1
	}
	return m.Run()
}

// result is a finished oxy process.
type result struct {
	code           int
	stdout, stderr string
}

// lines returns stdout's lines.
func (r result) lines() []string { return nonEmptyLines(r.stdout) }

// lastLine returns stderr's last line.
func (r result) lastLine() string {
	ls := nonEmptyLines(r.stderr)
	if len(ls) == 0 {
		return ""
	}
	return ls[len(ls)-1]
}

func nonEmptyLines(s string) []string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if l != "" {
			out = append(out, l)
		}
	}
	return out
}

// proc is an oxy process started with start.
type proc struct {
	cmd    *exec.Cmd
	stdout bytes.Buffer
	mu     sync.Mutex
	stderr bytes.Buffer
	done   chan struct{}
	res    result
}

// env is the environment of every oxy process: none of the caller's OXY_*,
// NATS_* or MONGODB_* settings, plus extra.
func env(extra ...string) []string {
	var out []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "OXY_") || strings.HasPrefix(kv, "NATS_") || strings.HasPrefix(kv, "MONGODB_") {
			continue
		}
		out = append(out, kv)
	}
	return append(out, extra...)
}

// start runs oxy with args in dir. stdin, when not nil, is its input.
func start(t *testing.T, dir string, stdin io.Reader, environ []string, args ...string) *proc {
	t.Helper()
	p := &proc{cmd: exec.Command(oxyBin, args...), done: make(chan struct{})}
	p.cmd.Dir = dir
	p.cmd.Env = environ
	p.cmd.Stdin = stdin
	p.cmd.Stdout = &p.stdout
	stderr, err := p.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(p.done)
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64<<10), 16<<20)
		for sc.Scan() {
			p.mu.Lock()
			p.stderr.Write(sc.Bytes())
			p.stderr.WriteByte('\n')
			p.mu.Unlock()
		}
		err := p.cmd.Wait()
		code := 0
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			code = ee.ExitCode()
		} else if err != nil {
			code = -1000
		}
		p.mu.Lock()
		p.res = result{code: code, stdout: p.stdout.String(), stderr: p.stderr.String()}
		p.mu.Unlock()
	}()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			_ = p.cmd.Process.Kill() // a test that failed half-way
			<-p.done
		}
	})
	return p
}

// stderrSoFar returns what the process wrote to stderr until now.
func (p *proc) stderrSoFar() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stderr.String()
}

// signal sends sig to the process.
func (p *proc) signal(t *testing.T, sig os.Signal) {
	t.Helper()
	if err := p.cmd.Process.Signal(sig); err != nil {
		t.Fatalf("signal %v: %v", sig, err)
	}
}

// wait waits for the process to end, at most timeout.
func (p *proc) wait(t *testing.T, timeout time.Duration) result {
	t.Helper()
	select {
	case <-p.done:
	case <-time.After(timeout):
		_ = p.cmd.Process.Signal(syscall.SIGQUIT) // dump goroutines into stderr
		<-p.done
		t.Fatalf("oxy %v did not end within %v; stderr:\n%s", p.cmd.Args[1:], timeout, trimDump(p.res.stderr))
	}
	return p.res
}

// trimDump keeps what a process wrote before its goroutine dump, and the
// dump's start.
func trimDump(stderr string) string {
	i := strings.Index(stderr, "SIGQUIT")
	if i < 0 {
		return stderr
	}
	dump := stderr[i:]
	if len(dump) > 8000 {
		dump = dump[:8000] + "\n…"
	}
	return stderr[:i] + dump
}

// oxy runs oxy to its end (at most a minute).
func oxy(t *testing.T, dir string, environ []string, stdin io.Reader, args ...string) result {
	t.Helper()
	return start(t, dir, stdin, environ, args...).wait(t, time.Minute)
}

// sandbox is an `oxy sandbox` process.
type sandbox struct {
	URL string
}

// startSandbox runs `oxy sandbox` on a free port with the rules file rules
// (JSON, "" for none) and extra flags, and stops it at the end of the test.
func startSandbox(t *testing.T, rules string, flags ...string) *sandbox {
	t.Helper()
	dir := t.TempDir()
	args := append([]string{"sandbox", "--addr", "127.0.0.1:0"}, flags...)
	if rules != "" {
		path := filepath.Join(dir, "rules.json")
		writeFile(t, path, rules)
		args = append(args, "--rules", path)
	}
	cmd := exec.Command(oxyBin, args...)
	cmd.Env = env()
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		_ = cmd.Wait() // it exits 0 after Ctrl+C
	})
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		_ = cmd.Process.Kill()
		t.Fatalf("oxy sandbox printed no address: %v; stderr:\n%s", err, stderr.String())
	}
	var info struct {
		URL, Username, Password, StatsURL string
	}
	if err := json.Unmarshal([]byte(line), &info); err != nil || info.URL == "" {
		t.Fatalf("oxy sandbox printed %q: %v", line, err)
	}
	return &sandbox{URL: info.URL}
}

// env is the environment of an oxy process that uses this sandbox.
func (s *sandbox) env(extra ...string) []string {
	return env(append([]string{"OXY_API_URL=" + s.URL, "OXY_WSA_USERNAME=user", "OXY_WSA_PASSWORD=pass"}, extra...)...)
}

// stats reads what the sandbox counted.
func (s *sandbox) stats(t *testing.T) emulator.Stats {
	t.Helper()
	resp, err := http.Get(s.URL + "/_sandbox/stats")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	var st emulator.Stats
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		t.Fatal(err)
	}
	return st
}

// submissions is how many submission requests the sandbox answered.
func submissions(st emulator.Stats) int64 {
	return st.Requests[emulator.EndpointSubmit] + st.Requests[emulator.EndpointBatch]
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// products returns n sandbox payloads for products first … first+n-1, one
// per line.
func products(first, n int) string {
	var b strings.Builder
	for i := first; i < first+n; i++ {
		fmt.Fprintf(&b, `{"source": "universal", "url": "https://sandbox.oxylabs.io/products/%d"}`+"\n", i)
	}
	return b.String()
}

// readRunLog reads the one run log in dir.
func readRunLog(t *testing.T, dir string) (string, []runlog.Line) {
	t.Helper()
	matches, err := filepath.Glob(filepath.Join(dir, "*.jsonl"))
	if err != nil || len(matches) != 1 {
		t.Fatalf("run logs in %s: %v (%v)", dir, matches, err)
	}
	return matches[0], readLines(t, matches[0])
}

func readLines(t *testing.T, path string) []runlog.Line {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines, err := runlog.ReadAll(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("run log %s: %v", path, err)
	}
	return lines
}

// states counts the run-log lines by state.
func states(lines []runlog.Line) map[oxytype.State]int {
	m := map[oxytype.State]int{}
	for _, l := range lines {
		m[l.State]++
	}
	return m
}

// files lists the names in dir (none when it does not exist).
func files(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

// progressLine matches a final progress line and captures everything before
// the elapsed time.
var progressLine = regexp.MustCompile(`^(.*), (\d+ms|\d+\.\d\ds|\d+m \d\ds|\d+h \d\dm \d\ds)$`)

// progressCounts returns the final progress line without its elapsed time.
func progressCounts(t *testing.T, line string) string {
	t.Helper()
	m := progressLine.FindStringSubmatch(line)
	if m == nil {
		t.Fatalf("%q is not a progress line", line)
	}
	return m[1]
}
