package local

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/zap"

	"github.com/oxypipe/oxypipe/internal/health"
	"github.com/oxypipe/oxypipe/internal/natsserver"
	"github.com/oxypipe/oxypipe/internal/poller"
	"github.com/oxypipe/oxypipe/internal/progress"
	"github.com/oxypipe/oxypipe/internal/stage"
	"github.com/oxypipe/oxypipe/internal/statusworker"
	"github.com/oxypipe/oxypipe/internal/submitter"
	"github.com/oxypipe/oxypipe/internal/topology"
	"github.com/oxypipe/oxypipe/internal/writer"
	"github.com/oxypipe/oxypipe/pkg/destination"
	"github.com/oxypipe/oxypipe/pkg/emulator"
	"github.com/oxypipe/oxypipe/pkg/jobresults"
	"github.com/oxypipe/oxypipe/pkg/messages"
	"github.com/oxypipe/oxypipe/pkg/oxytype"
	"github.com/oxypipe/oxypipe/pkg/wsa"
)

// service is a stage as the cluster runs it.
type service interface {
	health.Checker
	Run(ctx context.Context) error
}

// StageError is a stage whose Run returned an error while the cluster was
// running (its consumer was lost for good, its connection closed).
type StageError struct {
	Stage topology.Stage
	Err   error
}

// Error implements error.
func (e *StageError) Error() string { return fmt.Sprintf("local: %s stopped: %v", e.Stage, e.Err) }

// Unwrap returns the stage's error.
func (e *StageError) Unwrap() error { return e.Err }

// Cluster is the pipeline running in this process. Create it with Start and
// end it with Close (or Kill, in tests of crashes).
type Cluster struct {
	cfg     Config
	dir     string
	tempDir bool
	srv     *natsserver.Server
	nc      *nats.Conn
	js      jetstream.JetStream
	topo    *topology.Topology
	emu     *emulator.Server
	api     *wsa.Client
	apiURL  string
	http    *http.Transport
	ledger  jobresults.Ledger
	// memLedger is ledger when it is the spilling memory store this cluster
	// made (and closes).
	memLedger *jobresults.MemoryStore
	status    *statusworker.StatusWorker
	// events hands the status events the statusworker decodes to the
	// progress watchers of this process (Events).
	events   *progress.Hub
	services map[topology.Stage]service

	cancel  context.CancelFunc
	wg      sync.WaitGroup
	failed  chan error
	endOnce sync.Once
	endErr  error
}

// ledgerSpillFile is the memory ledger's scratch file in the state
// directory (jobresults.WithSpill).
const ledgerSpillFile = "ledger.spill"

// duplicateWindow is how long the embedded broker remembers message ids.
// It covers every retry of a publish in this process (the feeder's and the
// stages' retries give up after 10s), so a retried publish never stores a
// copy. The broker holds about 250 bytes per id it remembers, an id per doc
// in each of the three work streams: the default two minutes held 135 MB
// in a million-payload run at 1,400 docs/s, 20 seconds hold 16 MB. What
// a shorter window lets through (a stage's output published again after
// its message came back, a minute later) is a copy every stage takes
// anyway: a payload's claim holds its job, a job is polled and written
// again to the same file, the ledger keeps one record.
const duplicateWindow = 20 * time.Second

// Start starts the embedded server, ensures the topology and runs the four
// stages (and the emulator with Config.Sandbox). ctx bounds the start only;
// the cluster runs until Close.
func Start(ctx context.Context, cfg Config) (*Cluster, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	c := &Cluster{cfg: cfg, dir: cfg.StateDir, failed: make(chan error, 4), services: map[topology.Stage]service{}}
	if err := c.start(ctx); err != nil {
		_ = c.shutdown(context.Background(), false)
		return nil, err
	}
	return c, nil
}

func (c *Cluster) start(ctx context.Context) error {
	cfg := c.cfg
	if c.dir == "" {
		dir, err := os.MkdirTemp("", "oxy-state-*")
		if err != nil {
			return fmt.Errorf("local: state dir: %w", err)
		}
		c.dir, c.tempDir = dir, true
	}
	srv, err := natsserver.Start(ctx, natsserver.Config{
		StoreDir: filepath.Join(c.dir, "nats"),
		Listen:   cfg.Listen,
		Logger:   cfg.Logger.Named("nats"),
		// A state directory is there to resume from, after a power loss
		// too: every acknowledged claim must be on the disk. A temporary
		// one is removed by Close; nothing resumes from it.
		SyncAlways: !c.tempDir,
	})
	if err != nil {
		return fmt.Errorf("local: %w", err)
	}
	c.srv = srv
	if c.nc, err = srv.Connect(nats.Name("oxy-local")); err != nil {
		return fmt.Errorf("local: connect: %w", err)
	}
	if c.js, err = jetstream.New(c.nc); err != nil {
		return fmt.Errorf("local: %w", err)
	}
	if c.topo, err = topology.Ensure(ctx, c.js, topology.Config{DuplicateWindow: duplicateWindow}); err != nil {
		return fmt.Errorf("local: %w", err)
	}

	user, pass := cfg.Username, cfg.Password
	c.apiURL = cfg.APIURL
	if cfg.Sandbox {
		if c.emu, err = emulator.Start("127.0.0.1:0", cfg.Emulator); err != nil {
			return fmt.Errorf("local: sandbox: %w", err)
		}
		c.apiURL, user, pass = c.emu.URL, c.emu.Username, c.emu.Password
	}
	// The same transport settings as the API client's default, kept here so
	// that Close can drop idle connections (a server waits seconds for a
	// connection that never carried a request before it shuts down).
	c.http = &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          256,
		MaxIdleConnsPerHost:   128,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: time.Second,
	}
	if c.api, err = wsa.New(wsa.Config{BaseURL: c.apiURL, Username: user, Password: pass, HTTPClient: &http.Client{Transport: c.http}}); err != nil {
		return fmt.Errorf("local: %w", err)
	}

	c.ledger = cfg.Ledger
	rebuild := false
	if c.ledger == nil {
		// The memory ledger keeps complete docs on the disk beside the
		// broker's files, so that its memory is that of the docs in flight
		// and the failures, not of the run's size. It is rebuilt from the
		// status stream on a restart, so a file left by a killed process is
		// overwritten.
		mem := jobresults.NewMemoryStore(jobresults.WithSpill(filepath.Join(c.dir, ledgerSpillFile), string(oxytype.FinalDataType)))
		if err := mem.SpillError(); err != nil {
			cfg.Logger.Warn("the memory ledger keeps every doc in memory", zap.Error(err))
		}
		c.memLedger, c.ledger, rebuild = mem, mem, true
	}
	return c.startStages(rebuild)
}

// startStages builds every stage from the same packages the worker binaries
// use and runs it; each stage ensures its own consumer.
func (c *Cluster) startStages(rebuild bool) error {
	cfg := c.cfg
	runtime := func(name string) stage.Config {
		return stage.Config{Conn: c.nc, Instance: cfg.Instance, Logger: cfg.Logger.Named(name), Registerer: cfg.Registerer, DrainTimeout: cfg.DrainTimeout}
	}

	sc := submitter.Config{Stage: runtime("submitter"), Topology: c.topo, API: c.api}
	if cfg.Submitter != nil {
		cfg.Submitter(&sc)
	}

	wc := writer.Config{Stage: runtime("writer"), Topology: c.topo, API: c.api, Destinations: cfg.Destinations}
	if cfg.Writer != nil {
		cfg.Writer(&wc)
	}
	wr, err := writer.New(wc)
	if err != nil {
		return fmt.Errorf("local: %w", err)
	}

	// The poller writes done jobs through the writer in this process: one
	// request and one message per job fewer (see poller.Sink). A Poller
	// hook may unset it to run the four stages apart.
	pc := poller.Config{Stage: runtime("poller"), Topology: c.topo, API: c.api, Sink: wr}
	if cfg.Poller != nil {
		cfg.Poller(&pc)
	}

	dests := cfg.Destinations
	swc := statusworker.Config{
		Stage: runtime("statusworker"), Topology: c.topo, Ledger: c.ledger, Rebuild: rebuild,
		Destination: []destination.Option{func(d *destination.Config) { *d = dests }},
	}
	if cfg.StatusWorker != nil {
		cfg.StatusWorker(&swc)
	}
	c.events = progress.NewHub()
	observe := swc.Observe
	swc.Observe = func(ev *messages.StatusEvent) {
		c.events.Observe(ev)
		if observe != nil {
			observe(ev)
		}
	}

	sub, err := submitter.New(sc)
	if err != nil {
		return fmt.Errorf("local: %w", err)
	}
	pol, err := poller.New(pc)
	if err != nil {
		return fmt.Errorf("local: %w", err)
	}
	c.status, err = statusworker.New(swc)
	if err != nil {
		return fmt.Errorf("local: %w", err)
	}
	c.services[topology.Submitter] = sub
	c.services[topology.Poller] = pol
	c.services[topology.Writer] = wr
	c.services[topology.StatusWorker] = c.status

	runCtx, cancel := context.WithCancel(context.Background())
	c.cancel = cancel
	for name, s := range c.services {
		c.wg.Add(1)
		go func() {
			defer c.wg.Done()
			err := s.Run(runCtx)
			if err != nil && runCtx.Err() == nil {
				c.cfg.Logger.Error("stage stopped", zap.String("stage", string(name)), zap.Error(err))
				select {
				case c.failed <- &StageError{Stage: name, Err: err}:
				default:
				}
			}
		}()
	}
	return nil
}

// Conn is the in-process connection the stages use.
func (c *Cluster) Conn() *nats.Conn { return c.nc }

// JetStream is the JetStream handle of Conn.
func (c *Cluster) JetStream() jetstream.JetStream { return c.js }

// Topology is the ensured streams and buckets.
func (c *Cluster) Topology() *topology.Topology { return c.topo }

// Server is the embedded nats-server.
func (c *Cluster) Server() *natsserver.Server { return c.srv }

// ClientURL is the TCP URL other processes connect to with Config.Listen,
// else "".
func (c *Cluster) ClientURL() string { return c.srv.ClientURL() }

// StateDir is the state directory (a temporary one without
// Config.StateDir).
func (c *Cluster) StateDir() string { return c.dir }

// Ledger is the job-results ledger the statusworker writes.
func (c *Cluster) Ledger() jobresults.Ledger { return c.ledger }

// Events is the hub of the status events this cluster's statusworker
// decodes, for the progress watchers of runs in this process
// (progress.Config.Hub).
func (c *Cluster) Events() *progress.Hub { return c.events }

// StatusWorker is the running statusworker, for its HTTP Handler (run counts,
// failures, unique errors).
func (c *Cluster) StatusWorker() *statusworker.StatusWorker { return c.status }

// Emulator is the sandbox (nil without Config.Sandbox); its Emulator.Stats
// counts what would have been billed.
func (c *Cluster) Emulator() *emulator.Server { return c.emu }

// API is the API client the stages use (pointed at the sandbox with
// Config.Sandbox); Get-style calls can share it.
func (c *Cluster) API() *wsa.Client { return c.api }

// APIURL is the base URL the stages call.
func (c *Cluster) APIURL() string { return c.apiURL }

// Checks returns the stages as health checkers, by stage name.
func (c *Cluster) Checks() map[string]health.Checker {
	out := make(map[string]health.Checker, len(c.services))
	for name, s := range c.services {
		out[string(name)] = s
	}
	return out
}

// Failed delivers a *StageError when a stage stops on its own while the
// cluster runs; the run cannot progress any more.
func (c *Cluster) Failed() <-chan error { return c.failed }

// Close stops the stages (each finishes or gives back the messages it holds,
// within Config.DrainTimeout), the emulator and the server, and removes a
// temporary state directory. It is safe to call more than once.
func (c *Cluster) Close(ctx context.Context) error {
	return c.shutdown(ctx, false)
}

// Kill ends the cluster as abruptly as a SIGKILL looks to the broker: the
// connection is closed first, so nothing in flight is acknowledged, stored
// or released; then the stages and the server are stopped. The state
// directory is kept (even a temporary one), so a test can Start again on it
// and resume.
func (c *Cluster) Kill(ctx context.Context) error {
	return c.shutdown(ctx, true)
}

func (c *Cluster) shutdown(ctx context.Context, kill bool) error {
	c.endOnce.Do(func() {
		var errs []error
		if kill && c.nc != nil {
			c.nc.Close()
		}
		if c.cancel != nil {
			c.cancel()
		}
		done := make(chan struct{})
		go func() { c.wg.Wait(); close(done) }()
		stopped := false
		select {
		case <-done:
			stopped = true
		case <-ctx.Done():
			errs = append(errs, fmt.Errorf("local: stages did not stop: %w", ctx.Err()))
		}
		if c.nc != nil {
			c.nc.Close()
		}
		if c.memLedger != nil && stopped {
			// The stages have stopped: nothing writes or reads it any more.
			if err := c.memLedger.Close(); err != nil {
				errs = append(errs, err)
			}
		}
		if c.http != nil {
			c.http.CloseIdleConnections()
		}
		if c.emu != nil {
			if err := c.emu.Shutdown(ctx); err != nil {
				errs = append(errs, err)
			}
		}
		if c.srv != nil {
			if err := c.srv.Shutdown(ctx); err != nil {
				errs = append(errs, err)
			}
		}
		if c.tempDir && !kill {
			if err := os.RemoveAll(c.dir); err != nil {
				errs = append(errs, err)
			}
		}
		c.endErr = errors.Join(errs...)
	})
	return c.endErr
}
