package emulator

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"
)

// Server is an Emulator served over HTTP on a local address.
type Server struct {
	// URL is the base URL of the API, e.g. "http://127.0.0.1:40123"; a
	// client's base URL is this (paths start with /v1).
	URL string
	// Username and Password are credentials the emulator accepts: the
	// configured ones, or "user" and "pass" when any are accepted.
	Username string
	Password string
	// Emulator is the handler, for Stats and Config.
	Emulator *Emulator

	srv      *http.Server
	served   chan struct{} // closed when Serve returns
	serveErr error
	stopOnce sync.Once
	stopErr  error
}

// TB is the part of testing.TB that NewServer uses, so that this package
// does not import testing.
type TB interface {
	Helper()
	Cleanup(func())
	Fatalf(format string, args ...any)
}

// NewServer starts an emulator on a loopback port for a test and closes it
// when the test ends. It fails the test when cfg is invalid.
func NewServer(tb TB, cfg Config) *Server {
	tb.Helper()
	s, err := Start("127.0.0.1:0", cfg)
	if err != nil {
		tb.Fatalf("emulator: %v", err)
		return nil
	}
	tb.Cleanup(func() { _ = s.Close() }) // a close error cannot fail a finished test
	return s
}

// Start serves a new emulator on addr (host:port; port 0 picks one) in the
// background. Stop it with Shutdown or Close.
func Start(addr string, cfg Config) (*Server, error) {
	e, err := New(cfg)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		_ = e.Close() // nothing was started yet
		return nil, fmt.Errorf("emulator: listen on %s: %w", addr, err)
	}
	s := &Server{
		URL:      "http://" + ln.Addr().String(),
		Username: e.cfg.Username,
		Password: e.cfg.Password,
		Emulator: e,
		srv: &http.Server{
			Handler:           e,
			ReadHeaderTimeout: 10 * time.Second,
			IdleTimeout:       2 * time.Minute,
		},
		served: make(chan struct{}),
	}
	if s.Username == "" && s.Password == "" {
		s.Username, s.Password = "user", "pass"
	}
	go func() {
		err := s.srv.Serve(ln)
		if !errors.Is(err, http.ErrServerClosed) {
			s.serveErr = err
		}
		close(s.served)
	}()
	return s, nil
}

// Shutdown stops accepting requests, waits for those in flight until ctx
// ends, and stops the emulator's callbacks.
// Only the first of Shutdown and Close does anything; later calls return
// its result.
func (s *Server) Shutdown(ctx context.Context) error { return s.stop(ctx, true) }

// Close stops the server at once, dropping requests in flight.
func (s *Server) Close() error { return s.stop(context.Background(), false) }

func (s *Server) stop(ctx context.Context, graceful bool) error {
	s.stopOnce.Do(func() {
		var err error
		if graceful {
			if err = s.srv.Shutdown(ctx); err != nil {
				_ = s.srv.Close() // the graceful path failed; force it
			}
		} else {
			err = s.srv.Close()
		}
		<-s.served
		s.stopErr = errors.Join(err, s.Emulator.Close(), s.serveErr)
	})
	return s.stopErr
}

// ShutdownTimeout is how long ListenAndServe waits for requests in flight
// once its context is cancelled.
const ShutdownTimeout = 5 * time.Second

// ListenAndServe serves an emulator on addr until ctx is cancelled, then
// shuts it down gracefully (waiting up to ShutdownTimeout for requests in
// flight). It is what `oxy sandbox` runs; use Start instead to learn the
// address of a port-0 listener or to read Stats while it runs.
func ListenAndServe(ctx context.Context, addr string, cfg Config) error {
	s, err := Start(addr, cfg)
	if err != nil {
		return err
	}
	return s.ServeUntil(ctx)
}

// ServeUntil blocks until ctx is cancelled (or the server fails), then shuts
// the server down gracefully.
func (s *Server) ServeUntil(ctx context.Context) error {
	select {
	case <-ctx.Done():
	case <-s.served:
	}
	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), ShutdownTimeout)
	defer cancel()
	return s.Shutdown(shutdownCtx)
}
