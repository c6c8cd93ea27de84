package oxy

import (
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"go.uber.org/zap"

	"github.com/oxypipe/oxypipe/internal/local"
	"github.com/oxypipe/oxypipe/pkg/destination"
	"github.com/oxypipe/oxypipe/pkg/emulator"
	"github.com/oxypipe/oxypipe/pkg/jobresults"
	"github.com/oxypipe/oxypipe/pkg/wsa"
)

var (
	// ErrNoCredentials: the API username or password is missing (and the
	// client does not use the sandbox).
	ErrNoCredentials = errors.New("oxy: the API username and password are required (" + wsa.EnvUsername + ", " + wsa.EnvPassword + "), or use the sandbox")
	// ErrNoDestination: Options.Destination is empty.
	ErrNoDestination = errors.New("oxy: a destination is required")
	// ErrClosed: the client was closed.
	ErrClosed = errors.New("oxy: client closed")
)

// Config configures a Client.
type Config struct {
	// Username and Password are the Web Scraper API credentials. Required
	// unless Sandbox is set. With NATSURL they are used by Get only: the
	// deployed workers hold their own.
	Username string
	Password string
	// BaseURL is the API's base URL. Default wsa.DefaultBaseURL.
	BaseURL string

	// Sandbox runs the in-process pipeline against the built-in API
	// emulator; credentials and BaseURL are ignored.
	Sandbox bool
	// Emulator configures the sandbox. When it sets neither JobTime,
	// JobTimeFunc nor TimeScale, jobs take 1 s; its rate limit defaults to
	// 50 jobs per second.
	Emulator emulator.Config

	// NATSURL is an external NATS server of a deployed pipeline: the client
	// then feeds and watches runs, and the workers do the stages. Empty: the
	// pipeline runs in this process.
	NATSURL string
	// NATSOptions are extra options for the external connection
	// (credentials, TLS); see package natsconn for the usual ones.
	NATSOptions []nats.Option
	// Conn is an existing connection to an external NATS, instead of
	// NATSURL (the CLI connects with package natsconn). The client does not
	// close it.
	Conn *nats.Conn
	// Replicas is the replica count of the streams and buckets the client
	// creates on an external NATS when they are missing (the workers
	// normally created them): 1 for a single server, 3 for a production
	// cluster. Existing ones are used as they are, never updated, so that
	// the client cannot rewrite the replicas or max ages of a deployed
	// pipeline. Default 1.
	Replicas int

	// StateDir keeps the in-process broker's files, so that a run killed
	// outright can be resumed (Resume) by a client on the same directory.
	// Empty: a temporary directory removed by Close.
	StateDir string
	// Ledger is the in-process statusworker's ledger. Default: memory.
	Ledger jobresults.Ledger
	// RetryUnknownOnce makes the in-process submitter send a payload
	// exactly once more after an answer that left its outcome unknown (a
	// 5xx, an answer lost after the request was sent, an unreadable 2xx
	// without a job id). Off (the default), such a payload is never sent
	// again: it ends unsubmitted with error.may_have_billed in the run log.
	// On, it costs a second bill for each such payload whose first request
	// did create a job. With NATSURL it cannot apply: the deployed submitters
	// have their own setting (OXY_RETRY_UNKNOWN_ONCE).
	RetryUnknownOnce bool
	// local adjusts the in-process pipeline's configuration after the
	// client filled it in (stage tuning, for this package's tests).
	local func(*local.Config)

	// Destinations configures how destinations and run-log locations are
	// opened (object-store endpoints, credentials). Default: the
	// environment's AWS_*, GOOGLE_* and AZURE_* settings.
	Destinations destination.Config
	// ReadyTimeout is how long Execute waits for a statusworker to accept a
	// run. Default 30s.
	ReadyTimeout time.Duration
	// Instance names this client in what it publishes. Default: the host
	// name.
	Instance string
	// Logger receives the client's and the in-process stages' logs.
	// Default: none.
	Logger *zap.Logger
}

// WithDefaults returns c with every unset field filled in.
func (c Config) WithDefaults() Config {
	if c.BaseURL == "" {
		c.BaseURL = wsa.DefaultBaseURL
	}
	if c.Logger == nil {
		c.Logger = zap.NewNop()
	}
	return c
}

func (c Config) validate() error {
	// With an external NATS the deployed workers hold the credentials;
	// only Get needs them here, and it says so when they are missing.
	if !c.Sandbox && !c.external() && (c.Username == "" || c.Password == "") {
		return ErrNoCredentials
	}
	if c.Sandbox && c.external() {
		return errors.New("oxy: Sandbox runs the pipeline in this process; it cannot be combined with NATSURL")
	}
	if c.Replicas < 0 || c.Replicas > 5 {
		return fmt.Errorf("oxy: Replicas %d is outside 1..5", c.Replicas)
	}
	if c.RetryUnknownOnce && c.external() {
		return errors.New("oxy: RetryUnknownOnce sets the in-process submitter; the deployed submitters have their own setting (OXY_RETRY_UNKNOWN_ONCE)")
	}
	return nil
}

// external reports whether the stages run elsewhere.
func (c Config) external() bool { return c.NATSURL != "" || c.Conn != nil }
