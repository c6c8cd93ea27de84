package pipelinetest

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/oxypipe/oxypipe/pkg/emulator"
	"github.com/oxypipe/oxypipe/pkg/wsa"
)

// API credentials the emulator accepts in these tests.
const (
	apiUser     = "pipeline"
	apiPassword = "pipeline-s3cret"
)

// apiServer is the emulator served on a loopback port, with an optional
// gate that holds chosen requests (a worker "inside its request").
type apiServer struct {
	URL  string
	emu  *emulator.Emulator
	gate *gate
}

// startAPI serves an emulator for cfg until the test ends. Requests the
// gate matches (if any) wait until it opens.
func startAPI(t testing.TB, cfg emulator.Config, g *gate) *apiServer {
	t.Helper()
	cfg.Username, cfg.Password = apiUser, apiPassword
	emu, err := emulator.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var h http.Handler = emu
	if g != nil {
		h = g.wrap(emu)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	served := make(chan struct{})
	go func() {
		defer close(served)
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("emulator server: %v", err)
		}
	}()
	t.Cleanup(func() {
		if g != nil {
			g.open()
		}
		_ = srv.Close() // requests still in flight are dropped; the test is over
		<-served
		if err := emu.Close(); err != nil {
			t.Errorf("emulator close: %v", err)
		}
	})
	return &apiServer{URL: "http://" + ln.Addr().String(), emu: emu, gate: g}
}

// client returns an API client for the server.
func (a *apiServer) client(t testing.TB) *wsa.Client {
	t.Helper()
	c, err := wsa.New(wsa.Config{BaseURL: a.URL, Username: apiUser, Password: apiPassword, Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// body fetches a job's results body as the API serves it, retrying the
// transient failures the emulator may inject.
func (a *apiServer) body(ctx context.Context, c *wsa.Client, id string) ([]byte, error) {
	var last error
	for range 50 {
		res, err := c.Results(ctx, id)
		if err == nil {
			b, rerr := io.ReadAll(res.Body)
			cerr := res.Body.Close()
			if rerr == nil && cerr == nil {
				return b, nil
			}
			last = errors.Join(rerr, cerr)
			continue
		}
		last = err
		if wsa.Classify(err) != wsa.Retry {
			return nil, err
		}
	}
	return nil, last
}

// gate holds the requests its match function picks until it is opened.
// entered is closed when the first such request arrives.
type gate struct {
	match func(r *http.Request) bool
	// onEnter, when set, runs once, in the first held request, before it
	// waits (to kill the worker that sent it at that very moment).
	onEnter   func()
	entered   chan struct{}
	enterOnce sync.Once
	opened    chan struct{}
	openOnce  sync.Once
}

// newGate returns a closed gate for the requests match picks (nil: none;
// the gate then holds only the callers of hold).
func newGate(match func(r *http.Request) bool) *gate {
	return &gate{match: match, entered: make(chan struct{}), opened: make(chan struct{})}
}

func (g *gate) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if g.match != nil && g.match(r) {
			g.hold()
		}
		next.ServeHTTP(w, r)
	})
}

// hold is the function form of the gate, for an emulator Rule's Match:
// it blocks the submission it is called for until the gate opens.
func (g *gate) hold() {
	g.enter()
	<-g.opened
}

func (g *gate) enter() {
	g.enterOnce.Do(func() {
		if g.onEnter != nil {
			g.onEnter()
		}
		close(g.entered)
	})
}

// open lets every held request go on; later ones pass at once.
func (g *gate) open() { g.openOnce.Do(func() { close(g.opened) }) }

// waitEntered waits until a request is held.
func (g *gate) waitEntered(t testing.TB, timeout time.Duration, what string) {
	t.Helper()
	select {
	case <-g.entered:
	case <-time.After(timeout):
		t.Fatalf("timed out after %v waiting until %s", timeout, what)
	}
}
