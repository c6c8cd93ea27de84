package worker

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/spf13/pflag"
	"go.uber.org/zap"

	"github.com/oxypipe/oxypipe/internal/health"
	"github.com/oxypipe/oxypipe/internal/logging"
	"github.com/oxypipe/oxypipe/internal/natsconn"
	"github.com/oxypipe/oxypipe/internal/procenv"
	"github.com/oxypipe/oxypipe/internal/stage"
	"github.com/oxypipe/oxypipe/internal/topology"
)

// Config is what every worker takes from flags and the environment.
type Config struct {
	// NATS says how to reach the broker (NATS_URL and friends).
	NATS natsconn.Options
	// HTTPAddr serves /live, /ready, /metrics and any routes the service
	// adds (OXY_HTTP_ADDR). Default ":8080".
	HTTPAddr string
	// LogLevel is debug, info, warn or error (OXY_LOG_LEVEL). Default info.
	LogLevel string
	// Replicas is the replica count of the streams and buckets this worker
	// creates when they do not exist yet (OXY_NATS_REPLICAS): 1 for a single
	// server, 3 for a production cluster. Default 1.
	Replicas int
	// Instance names this replica in logs and status events (OXY_INSTANCE).
	// Default: the host name, which is the pod name in Kubernetes.
	Instance string
	// ShutdownTimeout bounds the health server's and connection's shutdown
	// after the service has drained. Default 5s.
	ShutdownTimeout time.Duration
}

// RegisterFlags adds the common flags to fs with env's values as defaults
// (a malformed one is reported by env.Err).
func (c *Config) RegisterFlags(fs *pflag.FlagSet, env *procenv.Env) {
	c.NATS.RegisterFlags(fs)
	fs.StringVar(&c.HTTPAddr, "http-addr", env.String("OXY_HTTP_ADDR", health.DefaultAddr), "address of /live, /ready and /metrics (env OXY_HTTP_ADDR)")
	fs.StringVar(&c.LogLevel, "log-level", env.String("OXY_LOG_LEVEL", "info"), "log level: debug, info, warn or error (env OXY_LOG_LEVEL)")
	fs.IntVar(&c.Replicas, "nats-replicas", env.Int("OXY_NATS_REPLICAS", 0), "replicas of the streams and buckets created at start-up (env OXY_NATS_REPLICAS; default 1)")
	fs.StringVar(&c.Instance, "instance", env.Get("OXY_INSTANCE"), "name of this replica in logs and status events (env OXY_INSTANCE; default the host name)")
}

// WithDefaults fills unset fields.
func (c Config) WithDefaults() Config {
	if c.HTTPAddr == "" {
		c.HTTPAddr = health.DefaultAddr
	}
	if c.LogLevel == "" {
		c.LogLevel = "info"
	}
	if c.Replicas == 0 {
		c.Replicas = 1
	}
	if c.Instance == "" {
		c.Instance = procenv.Hostname()
	}
	if c.ShutdownTimeout == 0 {
		c.ShutdownTimeout = 5 * time.Second
	}
	return c
}

func (c Config) validate() error {
	if c.Replicas < 1 || c.Replicas > 5 {
		return fmt.Errorf("worker: --nats-replicas must be between 1 and 5, got %d", c.Replicas)
	}
	return nil
}

// Env is what a service is built from.
type Env struct {
	// Log is the worker's logger.
	Log *zap.Logger
	// Conn is the broker connection; the shell closes it after the service
	// returns.
	Conn *nats.Conn
	// JetStream is Conn's JetStream handle.
	JetStream jetstream.JetStream
	// Topology is the ensured streams and buckets.
	Topology *topology.Topology
	// Registry receives the service's metrics; it is served on /metrics.
	Registry *prometheus.Registry
	// Instance names this replica.
	Instance string

	checks map[string]health.Checker
	routes map[string]http.Handler
}

// AddCheck reports c on /live and /ready under name.
func (e *Env) AddCheck(name string, c health.Checker) { e.checks[name] = c }

// Stage is the runtime configuration a stage of this process runs with:
// its connection, its instance name, its logger and its metrics registry.
// The stage fills in its own consumer.
func (e *Env) Stage() stage.Config {
	return stage.Config{Conn: e.Conn, Instance: e.Instance, Logger: e.Log, Registerer: e.Registry}
}

// Runner is a stage as a worker serves it.
type Runner interface {
	health.Checker
	Run(ctx context.Context) error
}

// Serve reports r on /live and /ready under name and returns its Run as the
// service.
func (e *Env) Serve(name string, r Runner) Service {
	e.AddCheck(name, r)
	return r.Run
}

// Handle serves h on the worker's HTTP port (for example the statusworker's
// JSON API).
func (e *Env) Handle(pattern string, h http.Handler) { e.routes[pattern] = h }

// Service runs until ctx is cancelled (then drains and returns nil) or fails.
type Service func(ctx context.Context) error

// Spec describes one worker binary.
type Spec struct {
	// Name is the binary's name, used in --help, logs and the NATS
	// connection name.
	Name string
	// Summary is one paragraph for --help: what the worker does.
	Summary string
	// Getenv reads the environment. Default os.Getenv; tests give a map.
	Getenv func(string) string
	// Flags adds the worker's own flags, with env's values as their
	// defaults. A malformed environment value exits 2, naming the variable,
	// before Check. Optional.
	Flags func(fs *pflag.FlagSet, env *procenv.Env)
	// Check validates the worker's own settings after the flags are parsed
	// and before anything connects, so a missing credential exits 2 at once
	// even when the broker is down. An error exits 2. Optional.
	Check func(env *procenv.Env) error
	// Setup validates the worker's own settings and builds its service.
	// An error wrapping ErrUsage exits 2; any other error exits 1.
	Setup func(ctx context.Context, env *Env) (Service, error)
}

// ErrUsage marks a configuration error: Main prints it and exits 2.
var ErrUsage = errors.New("usage")

// Usagef returns an error that makes Main exit 2 with the message.
func Usagef(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrUsage}, args...)...)
}

// Main runs the worker described by spec with args (without the program
// name) until SIGTERM or SIGINT, and returns the process exit code.
func Main(args []string, spec Spec) int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	return Run(ctx, args, spec, os.Stderr)
}

// Run is Main with the context and the error output given, for tests: the
// worker stops when ctx is cancelled.
func Run(ctx context.Context, args []string, spec Spec, stderr io.Writer) int {
	var cfg Config
	fs := pflag.NewFlagSet(spec.Name, pflag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: %s [flags]\n\n%s\n\nFlags:\n%s", spec.Name, spec.Summary, fs.FlagUsages())
	}
	env := procenv.New(spec.Getenv)
	cfg.RegisterFlags(fs, env)
	if spec.Flags != nil {
		spec.Flags(fs, env)
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) || errors.Is(err, flag.ErrHelp) {
			return 0
		}
		fmt.Fprintf(stderr, "%s: %v\n", spec.Name, err)
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "%s: unexpected arguments %q\n", spec.Name, fs.Args())
		return 2
	}
	if err := env.Err(); err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", spec.Name, err)
		return 2
	}
	cfg = cfg.WithDefaults()
	if err := cfg.validate(); err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", spec.Name, err)
		return 2
	}
	if spec.Check != nil {
		if err := spec.Check(env); err != nil {
			fmt.Fprintf(stderr, "%s: %s\n", spec.Name, message(err))
			return 2
		}
	}
	log, err := logging.New(logging.Config{Level: cfg.LogLevel, Output: stderr})
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", spec.Name, err)
		return 2
	}
	log = log.With(zap.String("worker", spec.Name), zap.String("instance", cfg.Instance))
	defer func() { _ = log.Sync() }()

	if err := run(ctx, cfg, spec, log); err != nil {
		log.Error("worker stopped", zap.Error(err))
		if errors.Is(err, ErrUsage) {
			fmt.Fprintf(stderr, "%s: %s\n", spec.Name, message(err))
			return 2
		}
		return 1
	}
	log.Info("worker stopped")
	return 0
}

func run(ctx context.Context, cfg Config, spec Spec, log *zap.Logger) error {
	log.Info("connecting", zap.String("nats", cfg.NATS.Redacted()))
	nc, err := cfg.NATS.Connect(spec.Name+"/"+cfg.Instance, log)
	if err != nil {
		return err
	}
	defer func() {
		if err := nc.Drain(); err != nil {
			nc.Close()
		}
	}()
	js, err := jetstream.New(nc)
	if err != nil {
		return fmt.Errorf("jetstream: %w", err)
	}
	topo, err := topology.Ensure(ctx, js, topology.Config{Replicas: cfg.Replicas})
	if err != nil {
		return err
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	env := &Env{
		Log: log, Conn: nc, JetStream: js, Topology: topo, Registry: reg, Instance: cfg.Instance,
		checks: map[string]health.Checker{}, routes: map[string]http.Handler{},
	}
	svc, err := spec.Setup(ctx, env)
	if err != nil {
		return err
	}
	srv, err := health.New(health.Config{Addr: cfg.HTTPAddr, Gatherer: reg, Checks: env.checks, Logger: log, ShutdownTimeout: cfg.ShutdownTimeout})
	if err != nil {
		return err
	}
	for pattern, h := range env.routes {
		srv.Handle(pattern, h)
	}
	if err := srv.Start(); err != nil {
		// The origin carries on without its endpoints; here probes would then
		// fail and Kubernetes would restart the pod in a loop, so say it loudly.
		log.Error("health endpoint not started; /live, /ready and /metrics are unavailable", zap.String("addr", cfg.HTTPAddr), zap.Error(err))
	} else {
		log.Info("serving health and metrics", zap.String("addr", srv.Addr()))
		defer func() {
			sctx, cancel := context.WithTimeout(context.Background(), cfg.ShutdownTimeout)
			defer cancel()
			_ = srv.Shutdown(sctx)
		}()
	}
	log.Info("worker started")
	return svc(ctx)
}

// message is err's text without the "usage: " marker Usagef adds.
func message(err error) string {
	return strings.TrimPrefix(err.Error(), ErrUsage.Error()+": ")
}
