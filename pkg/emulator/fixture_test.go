package emulator

import (
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/oxypipe/oxypipe/internal/testutil"
)

// fixture is one emulator on a loopback port, driven by a fake clock.
type fixture struct {
	t      *testing.T
	srv    *Server
	clock  *FakeClock
	client *http.Client
}

// setup starts an emulator for cfg; it uses a fake clock unless cfg has a
// clock, and fixed two-second jobs unless cfg says otherwise.
func setup(t *testing.T, cfg Config) *fixture {
	t.Helper()
	f := &fixture{t: t}
	if cfg.Clock == nil {
		f.clock = NewFakeClock(time.Time{})
		cfg.Clock = f.clock
	} else if fc, ok := cfg.Clock.(*FakeClock); ok {
		f.clock = fc
	}
	if cfg.JobTime == 0 && cfg.JobTimeFunc == nil {
		cfg.JobTime = 2 * time.Second
	}
	f.srv = NewServer(t, cfg)
	f.client = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 16}, Timeout: 10 * time.Second}
	t.Cleanup(f.client.CloseIdleConnections)
	return f
}

// reply is one HTTP answer, read whole.
type reply struct {
	status int
	header http.Header
	body   []byte
}

func (f *fixture) basic() string {
	return "Basic " + base64.StdEncoding.EncodeToString([]byte(f.srv.Username+":"+f.srv.Password))
}

// do sends a request with the server's credentials.
func (f *fixture) do(method, path, body string) reply {
	f.t.Helper()
	return f.doAuth(method, path, body, f.basic())
}

// doAuth sends a request with the given Authorization header ("" for none).
func (f *fixture) doAuth(method, path, body, auth string) reply {
	f.t.Helper()
	req, err := http.NewRequest(method, f.srv.URL+path, strings.NewReader(body))
	if err != nil {
		f.t.Fatal(err)
	}
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := f.client.Do(req)
	if err != nil {
		f.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		f.t.Fatalf("%s %s: reading body: %v", method, path, err)
	}
	return reply{status: resp.StatusCode, header: resp.Header, body: b}
}

// submit POSTs one payload and requires a 202; it returns the job object.
func (f *fixture) submit(payload string) map[string]any {
	f.t.Helper()
	r := f.do("POST", "/v1/queries", payload)
	if r.status != http.StatusAccepted {
		f.t.Fatalf("submit %s: %d %s", payload, r.status, r.body)
	}
	return r.object(f.t)
}

// object decodes the body as a JSON object.
func (r reply) object(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.body, &m); err != nil {
		t.Fatalf("body is not a JSON object: %v: %s", err, r.body)
	}
	return m
}

// message returns the error body's message ("" if none).
func (r reply) message(t *testing.T) string {
	t.Helper()
	s, _ := r.object(t)["message"].(string)
	return s
}

func (r reply) expect(t *testing.T, status int) reply {
	t.Helper()
	if r.status != status {
		t.Fatalf("status = %d, want %d; body %s", r.status, status, r.body)
	}
	return r
}

func jobPath(id any) string { return "/v1/queries/" + id.(string) }

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	testutil.Eventually(t, 5*time.Second, what, cond)
}
