package local

import (
	"errors"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/oxypipe/oxypipe/internal/poller"
	"github.com/oxypipe/oxypipe/internal/statusworker"
	"github.com/oxypipe/oxypipe/internal/submitter"
	"github.com/oxypipe/oxypipe/internal/writer"
	"github.com/oxypipe/oxypipe/pkg/destination"
	"github.com/oxypipe/oxypipe/pkg/emulator"
	"github.com/oxypipe/oxypipe/pkg/jobresults"
	"github.com/oxypipe/oxypipe/pkg/wsa"
)

// DemoJobTime is how long a sandbox job stays pending unless
// Config.Emulator says otherwise: short enough for a demo, long enough that
// the poller's schedule is exercised.
const DemoJobTime = time.Second

// DefaultDrainTimeout bounds how long Close waits for the stages to finish
// the messages they hold.
const DefaultDrainTimeout = 20 * time.Second

// ErrNoCredentials is returned by Start without Sandbox when Username or
// Password is empty.
var ErrNoCredentials = errors.New("local: the API username and password are required (or use the sandbox)")

// Config configures Start.
type Config struct {
	// StateDir holds the embedded JetStream's files (under "nats"). Reuse it
	// to resume after a crash. Empty: a temporary directory that Close
	// removes.
	StateDir string
	// Listen also serves NATS over TCP on 127.0.0.1 (see Cluster.ClientURL),
	// so other processes (a worker binary, any producer of payloads) can
	// join.
	Listen bool

	// Sandbox runs the API emulator in this process and points the stages
	// at it; Username, Password and APIURL are then ignored.
	Sandbox bool
	// Emulator configures the sandbox. When it sets neither JobTime,
	// JobTimeFunc nor TimeScale, jobs take DemoJobTime.
	Emulator emulator.Config

	// APIURL is the Web Scraper API's base URL. Default wsa.DefaultBaseURL.
	APIURL string
	// Username and Password are the API credentials. Required without
	// Sandbox.
	Username string
	Password string

	// Ledger is the job-results ledger the statusworker writes. Default: a
	// memory store, rebuilt from the status stream at start.
	Ledger jobresults.Ledger

	// Destinations configures how the writer and the statusworker open
	// destinations and run-log locations. Default: the environment's
	// credentials.
	Destinations destination.Config

	// Submitter, Poller, Writer and StatusWorker, when set, adjust a stage's
	// configuration after this package filled it in (connection, topology,
	// API client, ledger) and before the stage is created.
	Submitter    func(*submitter.Config)
	Poller       func(*poller.Config)
	Writer       func(*writer.Config)
	StatusWorker func(*statusworker.Config)

	// DrainTimeout bounds Close's wait for the stages. Default
	// DefaultDrainTimeout.
	DrainTimeout time.Duration
	// Instance names this process in claims, status events and logs.
	// Default "local".
	Instance string
	// Logger receives the stages' logs (and the embedded server's warnings).
	// Default: none.
	Logger *zap.Logger
	// Registerer receives the stages' metrics. Default: none.
	Registerer prometheus.Registerer
}

// WithDefaults returns c with every unset field filled in.
func (c Config) WithDefaults() Config {
	if c.APIURL == "" {
		c.APIURL = wsa.DefaultBaseURL
	}
	if c.DrainTimeout <= 0 {
		c.DrainTimeout = DefaultDrainTimeout
	}
	if c.Instance == "" {
		c.Instance = "local"
	}
	if c.Logger == nil {
		c.Logger = zap.NewNop()
	}
	if c.Sandbox && c.Emulator.JobTime == 0 && c.Emulator.JobTimeFunc == nil && c.Emulator.TimeScale == 0 {
		c.Emulator.JobTime = DemoJobTime
	}
	return c
}

func (c Config) validate() error {
	if !c.Sandbox && (c.Username == "" || c.Password == "") {
		return ErrNoCredentials
	}
	return nil
}
