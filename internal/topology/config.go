package topology

import (
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// Config says how the streams and buckets are created. The zero value is the
// one-process default: one replica, file storage.
//
// Nothing that belongs to a run expires by age: not its record (oxy_runs),
// its announcements (OXY_RUNS), its claims (oxy_claims) nor its status
// events (OXY_STATUS). A run may stay open for as long as it needs (a long
// or paused run must still complete, resume, and tell the writers its
// destination), and a claim must outlive every delivery of its payload, so
// none of them has a max age to set. A finished run's state is removed a
// retention after it finished, by the statusworker (its RunRetention) with
// [Topology.ForgetRun].
type Config struct {
	// Replicas is the number of copies of every stream and bucket: 1 for the
	// embedded server, 3 for a production cluster. Default 1.
	Replicas int
	// Storage is jetstream.FileStorage (the default) or MemoryStorage (tests
	// that need no durability).
	Storage jetstream.StorageType
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

// DefaultDuplicateWindow is the default of Config.DuplicateWindow.
const DefaultDuplicateWindow = 2 * time.Minute

// WithDefaults returns c with every unset field set to its default.
func (c Config) WithDefaults() Config {
	if c.Replicas == 0 {
		c.Replicas = 1
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
	case c.WorkMaxAge < 0:
		return fmt.Errorf("topology: WorkMaxAge must not be negative")
	case c.DuplicateWindow < 0:
		return fmt.Errorf("topology: DuplicateWindow must not be negative")
	case c.WorkMaxAge > 0 && c.WorkMaxAge < c.DuplicateWindow:
		return fmt.Errorf("topology: WorkMaxAge %v is shorter than DuplicateWindow %v", c.WorkMaxAge, c.DuplicateWindow)
	}
	return nil
}
