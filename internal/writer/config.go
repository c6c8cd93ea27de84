package writer

import (
	"errors"
	"fmt"
	"time"

	"github.com/oxypipe/oxypipe/internal/stage"
	"github.com/oxypipe/oxypipe/internal/topology"
	"github.com/oxypipe/oxypipe/pkg/destination"
	"github.com/oxypipe/oxypipe/pkg/wsa"
)

// Defaults of Config.
const (
	// DefaultMaxRuns is how many runs' destinations a writer remembers.
	DefaultMaxRuns = 1024
	// DefaultOutputRetries and DefaultOutputRetryDelay: a failed write is
	// tried twice more, half a second apart, before its run is stopped.
	DefaultOutputRetries    = 2
	DefaultOutputRetryDelay = 500 * time.Millisecond
)

// Config configures a Writer.
type Config struct {
	// Stage configures the runtime the writer runs in. Conn is required.
	// Consumer defaults to topology.DefaultConsumer(topology.Writer); Run
	// ensures it. Its RetryBackoff spaces the retries of a failed write and
	// its MaxDeliver ends them. Instance, Logger and Registerer are used by
	// the writer too.
	Stage stage.Config

	// Topology is the ensured topology: the writer's consumer is ensured
	// with it, and each run's destination is read from (and a failed run
	// stopped in) its runs bucket. Required.
	Topology *topology.Topology

	// API fetches the results. Required.
	API *wsa.Client

	// Destinations configures how destinations are opened. The zero value
	// reads credentials from the standard AWS_*, GOOGLE_* and AZURE_*
	// environment variables.
	Destinations destination.Config

	// MaxRuns bounds how many runs the writer remembers as probed (and as
	// stopped). A run forgotten and seen again is probed again. Default
	// DefaultMaxRuns.
	MaxRuns int

	// OutputRetries is how many times a write the destination failed is
	// tried again at once, OutputRetryDelay apart, before the run is
	// stopped: a failed write stops the run's submissions (see the package
	// documentation). A failure that no quick retry cures
	// (destination.IsPermanent: a full disk, a denied write, a missing
	// bucket) stops the run at the first attempt. Default
	// DefaultOutputRetries; a negative value means none.
	OutputRetries int
	// OutputRetryDelay is the wait between those tries. Default
	// DefaultOutputRetryDelay.
	OutputRetryDelay time.Duration
}

// WithDefaults returns c with every unset field filled in.
func (c Config) WithDefaults() Config {
	if c.Stage.Consumer.Stage == "" {
		c.Stage.Consumer, _ = topology.DefaultConsumer(topology.Writer)
	}
	c.Stage = c.Stage.WithDefaults()
	if c.MaxRuns == 0 {
		c.MaxRuns = DefaultMaxRuns
	}
	if c.OutputRetries == 0 {
		c.OutputRetries = DefaultOutputRetries
	}
	if c.OutputRetryDelay == 0 {
		c.OutputRetryDelay = DefaultOutputRetryDelay
	}
	return c
}

// validate checks a configuration that WithDefaults has filled in.
func (c Config) validate() error {
	switch {
	case c.Stage.Conn == nil:
		return errors.New("writer: Config.Stage.Conn is required")
	case c.API == nil:
		return errors.New("writer: Config.API is required")
	case c.Topology == nil:
		return errors.New("writer: Config.Topology is required")
	case c.Stage.Consumer.Stage != topology.Writer:
		return fmt.Errorf("writer: Config.Stage.Consumer is the %q consumer, want %q", c.Stage.Consumer.Stage, topology.Writer)
	case c.MaxRuns < 1:
		return fmt.Errorf("writer: MaxRuns %d must be positive", c.MaxRuns)
	case c.OutputRetryDelay < 0:
		return fmt.Errorf("writer: OutputRetryDelay %v is negative", c.OutputRetryDelay)
	}
	return nil
}
