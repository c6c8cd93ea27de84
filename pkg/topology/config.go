package topology

import (
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// Config says how the streams and buckets are created. The zero value is the
// one-process default: one replica, file storage.
type Config struct {
	// Replicas is the number of copies of every stream and bucket: 1 for the
	// embedded server, 3 for a production cluster. Default 1.
	Replicas int
	// Storage is jetstream.FileStorage (the default) or MemoryStorage (tests
	// that need no durability).
	Storage jetstream.StorageType
	// StatusMaxAge is how long status events are kept (the statusworker
	// rebuilds a memory ledger from them). Default 7 days.
	StatusMaxAge time.Duration
	// RunsMaxAge is how long run announcements, completions and run records
	// are kept. Default 7 days.
	RunsMaxAge time.Duration
	// ClaimsMaxAge is how long a doc's claim is kept. It must outlive any
	// redelivery of the doc's payload, or a late redelivery could bill again.
	// Default 30 days.
	ClaimsMaxAge time.Duration
	// WorkMaxAge bounds the age of messages in the work streams. Default 0:
	// no limit, because an expired work message is a lost doc.
	WorkMaxAge time.Duration
	// DuplicateWindow is how long JetStream remembers message ids to drop
	// duplicates. Default 2 minutes.
	DuplicateWindow time.Duration
	// MaxMsgSize caps one message in bytes (0: the server's max payload).
	MaxMsgSize int32

	// CreateOnly makes Ensure, EnsureAll and Topology.EnsureConsumer create
	// what is missing and use what exists as it is, never updating it: the
	// settings above apply only to streams, buckets and consumers created
	// now. It is the mode of a client of a deployed pipeline (a feeder on
	// an external NATS), which must not rewrite the replicas, retention or
	// max ages the workers or the operators set. Workers leave it false, so
	// that a configuration change rolls out with them.
	CreateOnly bool
}

// DefaultStatusMaxAge and the other defaults of [Config].
const (
	DefaultStatusMaxAge    = 7 * 24 * time.Hour
	DefaultRunsMaxAge      = 7 * 24 * time.Hour
	DefaultClaimsMaxAge    = 30 * 24 * time.Hour
	DefaultDuplicateWindow = 2 * time.Minute
)

// WithDefaults returns c with every unset field set to its default.
func (c Config) WithDefaults() Config {
	if c.Replicas == 0 {
		c.Replicas = 1
	}
	if c.StatusMaxAge == 0 {
		c.StatusMaxAge = DefaultStatusMaxAge
	}
	if c.RunsMaxAge == 0 {
		c.RunsMaxAge = DefaultRunsMaxAge
	}
	if c.ClaimsMaxAge == 0 {
		c.ClaimsMaxAge = DefaultClaimsMaxAge
	}
	if c.DuplicateWindow == 0 {
		c.DuplicateWindow = DefaultDuplicateWindow
	}
	return c
}

func (c Config) validate() error {
	switch {
	case c.Replicas < 1 || c.Replicas > 5:
		return fmt.Errorf("topology: Replicas %d: want 1 to 5", c.Replicas)
	case c.Storage != jetstream.FileStorage && c.Storage != jetstream.MemoryStorage:
		return fmt.Errorf("topology: unknown Storage %v", c.Storage)
	case c.StatusMaxAge < 0 || c.RunsMaxAge < 0 || c.ClaimsMaxAge < 0 || c.WorkMaxAge < 0:
		return fmt.Errorf("topology: max ages must not be negative")
	case c.DuplicateWindow < 0:
		return fmt.Errorf("topology: DuplicateWindow must not be negative")
	case c.WorkMaxAge > 0 && c.WorkMaxAge < c.DuplicateWindow:
		return fmt.Errorf("topology: WorkMaxAge %v is shorter than DuplicateWindow %v", c.WorkMaxAge, c.DuplicateWindow)
	case c.StatusMaxAge < c.DuplicateWindow || c.RunsMaxAge < c.DuplicateWindow:
		return fmt.Errorf("topology: StatusMaxAge and RunsMaxAge must be at least DuplicateWindow %v", c.DuplicateWindow)
	}
	return nil
}
