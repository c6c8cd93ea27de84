package health

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sort"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.uber.org/zap"
)

// Status is one component's answer to a probe.
type Status struct {
	// OK decides the HTTP status: 200 when every component is OK, else 503.
	OK bool `json:"-"`
	// State is a short machine-readable word ("ready", "consumer_lost",
	// "reconnecting", "stuck", …).
	State string `json:"state"`
	// Detail explains State for a human.
	Detail string `json:"detail,omitempty"`
}

// Checker is a component whose health the server reports.
type Checker interface {
	// Ready reports whether the component can do its work now.
	Ready() Status
	// Live reports whether the component is not stuck.
	Live() Status
}

// DefaultAddr is where the server listens when Config.Addr is empty.
const DefaultAddr = ":8080"

// Config configures a [Server].
type Config struct {
	// Addr is the listen address, host:port. Default DefaultAddr; ":0"
	// picks a free port (see Server.Addr).
	Addr string
	// Gatherer is served on /metrics. Nil serves an empty exposition.
	Gatherer prometheus.Gatherer
	// Checks are the components reported, by name. Their names key the
	// "checks" object of the response bodies.
	Checks map[string]Checker
	// Logger receives bind and serve errors. Default: no logging.
	Logger *zap.Logger
	// ShutdownTimeout bounds Shutdown when its context has no deadline.
	// Default 5s.
	ShutdownTimeout time.Duration
}

// Server serves /live, /ready and /metrics.
type Server struct {
	cfg    Config
	mux    *http.ServeMux
	srv    *http.Server
	mu     sync.Mutex
	ln     net.Listener
	served chan struct{}
}

// New returns a server that is not yet listening.
func New(cfg Config) (*Server, error) {
	if cfg.Addr == "" {
		cfg.Addr = DefaultAddr
	}
	if cfg.Logger == nil {
		cfg.Logger = zap.NewNop()
	}
	if cfg.ShutdownTimeout <= 0 {
		cfg.ShutdownTimeout = 5 * time.Second
	}
	if cfg.Gatherer == nil {
		cfg.Gatherer = prometheus.NewRegistry()
	}
	for name, c := range cfg.Checks {
		if c == nil {
			return nil, fmt.Errorf("health: check %q is nil", name)
		}
	}
	s := &Server{cfg: cfg, mux: http.NewServeMux()}
	s.mux.HandleFunc("GET /live", s.probe(Checker.Live, "live"))
	s.mux.HandleFunc("GET /ready", s.probe(Checker.Ready, "ready"))
	s.mux.Handle("GET /metrics", promhttp.HandlerFor(cfg.Gatherer, promhttp.HandlerOpts{}))
	s.mux.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusNotFound, struct{}{})
	})
	return s, nil
}

// Handle adds an endpoint (for example the statusworker's stage counts).
// Call it before Start.
func (s *Server) Handle(pattern string, h http.Handler) {
	s.mux.Handle(pattern, h)
}

// Handler returns the server's routes, for tests or for mounting elsewhere.
func (s *Server) Handler() http.Handler { return s.mux }

// Start binds Config.Addr and serves in the background. A bind failure is
// returned; the caller decides whether the worker carries on without its
// endpoints.
func (s *Server) Start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ln != nil {
		return errors.New("health: already started")
	}
	ln, err := net.Listen("tcp", s.cfg.Addr)
	if err != nil {
		return fmt.Errorf("health: listen on %s: %w", s.cfg.Addr, err)
	}
	s.ln = ln
	s.srv = &http.Server{Handler: s.mux, ReadHeaderTimeout: 5 * time.Second}
	s.served = make(chan struct{})
	go func() {
		defer close(s.served)
		if err := s.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.cfg.Logger.Error("health endpoint stopped", zap.Error(err))
		}
	}()
	return nil
}

// Addr returns the bound address once started ("" before).
func (s *Server) Addr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ln == nil {
		return ""
	}
	return s.ln.Addr().String()
}

// Shutdown stops accepting connections and waits for open requests, up to
// ctx's deadline (or Config.ShutdownTimeout).
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	srv, served := s.srv, s.served
	s.mu.Unlock()
	if srv == nil {
		return nil
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, s.cfg.ShutdownTimeout)
		defer cancel()
	}
	err := srv.Shutdown(ctx)
	<-served
	return err
}

// Body is the JSON body of /live and /ready.
type Body struct {
	// State is "ready" or "live" when every check is OK, else the state of
	// the first failing check (by name).
	State string `json:"state"`
	// Checks holds each component's status by name.
	Checks map[string]Status `json:"checks"`
}

func (s *Server) probe(ask func(Checker) Status, okState string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		body := Body{State: okState, Checks: make(map[string]Status, len(s.cfg.Checks))}
		names := make([]string, 0, len(s.cfg.Checks))
		for name := range s.cfg.Checks {
			names = append(names, name)
		}
		sort.Strings(names)
		code := http.StatusOK
		for _, name := range names {
			st := ask(s.cfg.Checks[name])
			body.Checks[name] = st
			if !st.OK && code == http.StatusOK {
				code = http.StatusServiceUnavailable
				body.State = st.State
			}
		}
		writeJSON(w, code, body)
	}
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}
