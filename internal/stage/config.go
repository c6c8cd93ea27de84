package stage

import (
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/oxypipe/oxypipe/internal/procenv"
	"github.com/oxypipe/oxypipe/internal/topology"
)

// Config configures a [Worker]. Conn and Consumer are required; every other
// field has a default.
type Config struct {
	// Conn is the connection to the broker. The worker does not close it.
	Conn *nats.Conn
	// Consumer is the stage's durable consumer and its limits, normally
	// topology.DefaultConsumer(stage) with any overrides. The consumer should
	// exist (topology.EnsureConsumer); while it does not, the worker is
	// "consumer_lost".
	Consumer topology.ConsumerSettings
	// Instance names this replica in status events and logs. Default:
	// procenv.Hostname (the pod name in Kubernetes).
	Instance string
	// MaxInFlight bounds the messages this replica holds at once (fetched and
	// not yet settled). Default min(MaxAckPending, 64), or for a batch handler
	// min(MaxAckPending, 2×BatchSize).
	MaxInFlight int
	// FetchWait is how long one pull request waits for messages. It also
	// bounds how long stopping takes to stop fetching. Default 1s.
	FetchWait time.Duration
	// BatchSize is the most messages a BatchHandler gets at once. Default 100.
	BatchSize int
	// BatchLinger is how long a batch waits for more messages after its first
	// one. Default 20ms.
	BatchLinger time.Duration
	// RecordLinger is how long a status event a handler records waits for
	// others of its run to go out with it in one message (see Msg.Record).
	// Each message's settlement waits that much longer; the broker handles
	// one message per batch instead of one per event. Default 5ms.
	RecordLinger time.Duration
	// Heartbeat is the InProgress interval while a message is held (sent at
	// most 1.5 Heartbeat apart). Default AckWait/3.
	Heartbeat time.Duration
	// DrainTimeout is how long Run waits for handlers in flight after its
	// context is cancelled, before cancelling them. Keep it below the pod's
	// termination grace period. Default 20s.
	DrainTimeout time.Duration
	// PublishTimeout bounds the wait for the broker to store a publish.
	// Default 10s.
	PublishTimeout time.Duration
	// PublishRetryDelay is how soon a message whose outputs could not be
	// published is redelivered. Default 2s.
	PublishRetryDelay time.Duration
	// WatchdogInterval is how often the consumer is checked. Default 5s.
	WatchdogInterval time.Duration
	// ProbeTimeout bounds one consumer check. Default 1s.
	ProbeTimeout time.Duration
	// ConsumerLostGrace is how long the consumer may be lost, with a live
	// connection, before Run gives up. Default 60s.
	ConsumerLostGrace time.Duration
	// Logger receives the worker's logs. Default: none.
	Logger *zap.Logger
	// Registerer receives the worker's metrics. Several workers may share
	// one (their series differ by the stage label). Default: no metrics.
	Registerer prometheus.Registerer
}

// WithDefaults returns c with every unset field that does not depend on
// the kind of handler filled in (MaxInFlight, and BatchSize's cap, are set
// by New or NewBatch). A stage calls it to read its Instance and Logger
// before it builds its Worker.
func (c Config) WithDefaults() Config {
	if c.Instance == "" {
		c.Instance = procenv.Hostname()
	}
	if c.BatchSize <= 0 {
		c.BatchSize = 100
	}
	if c.BatchLinger <= 0 {
		c.BatchLinger = 20 * time.Millisecond
	}
	if c.FetchWait <= 0 {
		c.FetchWait = time.Second
	}
	if c.RecordLinger <= 0 {
		c.RecordLinger = 5 * time.Millisecond
	}
	if c.Heartbeat <= 0 {
		c.Heartbeat = c.Consumer.AckWait / 3
	}
	if c.DrainTimeout <= 0 {
		c.DrainTimeout = 20 * time.Second
	}
	if c.PublishTimeout <= 0 {
		c.PublishTimeout = 10 * time.Second
	}
	if c.PublishRetryDelay <= 0 {
		c.PublishRetryDelay = 2 * time.Second
	}
	if c.WatchdogInterval <= 0 {
		c.WatchdogInterval = 5 * time.Second
	}
	if c.ProbeTimeout <= 0 {
		c.ProbeTimeout = time.Second
	}
	if c.ConsumerLostGrace <= 0 {
		c.ConsumerLostGrace = 60 * time.Second
	}
	if c.Logger == nil {
		c.Logger = zap.NewNop()
	}
	return c
}

func (c Config) withDefaults(batch bool) (Config, error) {
	if c.Conn == nil {
		return c, errors.New("stage: Config.Conn is required")
	}
	if err := c.Consumer.Validate(); err != nil {
		return c, fmt.Errorf("stage: %w", err)
	}
	c = c.WithDefaults()
	if c.MaxInFlight <= 0 {
		c.MaxInFlight = 64
		if batch {
			c.MaxInFlight = 2 * c.BatchSize
		}
		c.MaxInFlight = min(c.MaxInFlight, c.Consumer.MaxAckPending)
	}
	if batch && c.BatchSize > c.MaxInFlight {
		c.BatchSize = c.MaxInFlight
	}
	switch {
	case c.Heartbeat >= c.Consumer.AckWait:
		return c, fmt.Errorf("stage: Heartbeat %v must be shorter than AckWait %v", c.Heartbeat, c.Consumer.AckWait)
	case c.FetchWait < 10*time.Millisecond:
		return c, fmt.Errorf("stage: FetchWait %v is below 10ms", c.FetchWait)
	}
	return c, nil
}
