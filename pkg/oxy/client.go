package oxy

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/zap"

	"github.com/oxypipe/oxypipe/internal/feeder"
	"github.com/oxypipe/oxypipe/internal/local"
	"github.com/oxypipe/oxypipe/internal/submitter"
	"github.com/oxypipe/oxypipe/internal/topology"
	"github.com/oxypipe/oxypipe/pkg/wsa"
)

// Client runs payloads through the pipeline and fetches jobs by id. It holds
// the credentials, the API's base URL and, once used, the in-process
// pipeline or the connection to an external one. It is safe for concurrent
// use; Close it when done.
type Client struct {
	cfg Config
	api *wsa.Client // nil with Sandbox until the cluster starts

	mu      sync.Mutex
	closed  bool
	cluster *local.Cluster
	nc      *nats.Conn // external, owned
	topo    *topology.Topology
	feed    *feeder.Feeder
}

// NewClient returns a client for cfg. It checks the configuration
// (credentials above all) and starts nothing: the in-process pipeline starts
// on the first Execute, and an external NATS is connected then.
func NewClient(cfg Config) (*Client, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	c := &Client{cfg: cfg}
	if !cfg.Sandbox && cfg.Username != "" && cfg.Password != "" {
		api, err := wsa.New(wsa.Config{BaseURL: cfg.BaseURL, Username: cfg.Username, Password: cfg.Password})
		if err != nil {
			return nil, fmt.Errorf("oxy: %w", err)
		}
		c.api = api
	}
	return c, nil
}

// backend returns the topology and the feeder, starting the in-process
// pipeline or connecting to the external one on first use.
func (c *Client) backend(ctx context.Context) (*topology.Topology, *feeder.Feeder, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, nil, ErrClosed
	}
	if c.topo != nil {
		return c.topo, c.feed, nil
	}
	var topo *topology.Topology
	if c.cfg.external() {
		nc := c.cfg.Conn
		if nc == nil {
			var err error
			nc, err = nats.Connect(c.cfg.NATSURL, append([]nats.Option{nats.Name("oxy"), nats.MaxReconnects(-1)}, c.cfg.NATSOptions...)...)
			if err != nil {
				return nil, nil, fmt.Errorf("oxy: connect to NATS: %w", err)
			}
			c.nc = nc
		}
		js, err := jetstream.New(nc)
		if err != nil {
			return nil, nil, fmt.Errorf("oxy: %w", err)
		}
		// The deployed workers own the topology: create only what is
		// missing, never rewrite their replicas or max ages.
		tc := topology.Config{Replicas: c.cfg.Replicas, CreateOnly: true}
		if topo, err = topology.Ensure(ctx, js, tc); err != nil {
			return nil, nil, fmt.Errorf("oxy: %w", err)
		}
	} else {
		lc := local.Config{
			StateDir:     c.cfg.StateDir,
			Sandbox:      c.cfg.Sandbox,
			Emulator:     c.cfg.Emulator,
			APIURL:       c.cfg.BaseURL,
			Username:     c.cfg.Username,
			Password:     c.cfg.Password,
			Ledger:       c.cfg.Ledger,
			Destinations: c.cfg.Destinations,
			Logger:       c.cfg.Logger,
		}
		if c.cfg.local != nil {
			c.cfg.local(&lc)
		}
		if c.cfg.RetryUnknownOnce {
			tune := lc.Submitter
			lc.Submitter = func(sc *submitter.Config) {
				if tune != nil {
					tune(sc)
				}
				sc.RetryUnknownOnce = true
			}
		}
		cl, err := local.Start(ctx, lc)
		if err != nil {
			return nil, nil, fmt.Errorf("oxy: start the pipeline: %w", err)
		}
		c.cluster, topo = cl, cl.Topology()
		if c.cfg.Sandbox {
			c.api = cl.API()
		}
	}
	f, err := feeder.New(feeder.Config{
		Topology:     topo,
		Instance:     c.cfg.Instance,
		ReadyTimeout: c.cfg.ReadyTimeout,
		Logger:       c.cfg.Logger.Named("feeder"),
	})
	if err != nil {
		return nil, nil, err
	}
	c.topo, c.feed = topo, f
	return topo, f, nil
}

// Start starts the in-process pipeline (or connects to the external one)
// now instead of on first use, so that a start-up failure is reported
// before the input is read, for example.
func (c *Client) Start(ctx context.Context) error {
	_, _, err := c.backend(ctx)
	return err
}

// inProcess returns the in-process pipeline, starting it if needed (nil
// with an external NATS).
func (c *Client) inProcess(ctx context.Context) (*local.Cluster, error) {
	if _, _, err := c.backend(ctx); err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.cluster, nil
}

// ErrExternal: what was asked for exists only in the in-process pipeline,
// and the client uses an external one (Config.NATSURL or Config.Conn).
var ErrExternal = errors.New("oxy: the pipeline runs elsewhere (NATS); this exists only in the in-process pipeline")

// StatusHandler is the in-process statusworker's JSON API (GET /runs,
// /runs/{run}, its stages, failures, errors and docs), starting the
// pipeline if needed, for a program to serve; ErrExternal with an external
// NATS, whose statusworkers serve their own.
func (c *Client) StatusHandler(ctx context.Context) (http.Handler, error) {
	cl, err := c.inProcess(ctx)
	if err != nil {
		return nil, err
	}
	if cl == nil {
		return nil, ErrExternal
	}
	return cl.StatusWorker().Handler(), nil
}

// APIClient is the Web Scraper API client of Get: the configured
// credentials' or, with Sandbox, the in-process emulator's (started if
// needed). ErrNoCredentials without either.
func (c *Client) APIClient(ctx context.Context) (*wsa.Client, error) {
	return c.apiClient(ctx)
}

// apiClient returns the API client for Get: the configured one, or the
// sandbox's.
func (c *Client) apiClient(ctx context.Context) (*wsa.Client, error) {
	c.mu.Lock()
	api := c.api
	c.mu.Unlock()
	if api != nil {
		return api, nil
	}
	if !c.cfg.Sandbox {
		// Only the sandbox's client comes from the backend; an external
		// pipeline's workers hold their own credentials.
		return nil, ErrNoCredentials
	}
	if _, _, err := c.backend(ctx); err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.api == nil {
		return nil, ErrNoCredentials
	}
	return c.api, nil
}

// Close stops the in-process pipeline (the stages finish what they hold;
// runs not yet completed stay in the state directory, resumable) or closes
// the external connection it opened. Runs still watched end with an error.
func (c *Client) Close(ctx context.Context) error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	cl, nc := c.cluster, c.nc
	c.mu.Unlock()
	var errs []error
	if cl != nil {
		if err := cl.Close(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	if nc != nil {
		if err := nc.Drain(); err != nil && !errors.Is(err, nats.ErrConnectionClosed) {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		c.cfg.Logger.Warn("close", zap.Error(err))
		return err
	}
	return nil
}
