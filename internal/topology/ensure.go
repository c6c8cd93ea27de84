package topology

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/oxypipe/oxypipe/pkg/messages"
)

// Topology is the ensured set of streams and buckets, with typed access to
// the buckets.
type Topology struct {
	js     jetstream.JetStream
	cfg    Config
	claims *Claims
	runs   *Runs
	feeds  *Feeds
}

// StreamConfigs returns the stream configurations [Ensure] applies, for
// inspection and for tools that create them another way.
func StreamConfigs(cfg Config) []jetstream.StreamConfig {
	cfg = cfg.WithDefaults()
	base := func(name, desc string, subjects []string, ret jetstream.RetentionPolicy, maxAge time.Duration) jetstream.StreamConfig {
		return jetstream.StreamConfig{
			Name:        name,
			Description: desc,
			Subjects:    subjects,
			Retention:   ret,
			MaxAge:      maxAge,
			Storage:     cfg.Storage,
			Replicas:    cfg.Replicas,
			Duplicates:  cfg.DuplicateWindow,
			MaxMsgSize:  cfg.MaxMsgSize,
			Discard:     jetstream.DiscardOld,
		}
	}
	runs := base(StreamRuns, "oxypipe run announcements and completions", []string{messages.AllRuns}, jetstream.LimitsPolicy, 0)
	runs.MaxMsgsPerSubject = 1
	return []jetstream.StreamConfig{
		runs,
		base(StreamPayloads, "oxypipe payloads to submit", []string{messages.AllPayloads}, jetstream.WorkQueuePolicy, cfg.WorkMaxAge),
		base(StreamSubmitted, "oxypipe submitted jobs to poll", []string{messages.AllSubmitted}, jetstream.WorkQueuePolicy, cfg.WorkMaxAge),
		base(StreamDone, "oxypipe done jobs to write", []string{messages.AllDone}, jetstream.WorkQueuePolicy, cfg.WorkMaxAge),
		base(StreamStatus, "oxypipe status events for the ledger", []string{messages.AllStatus}, jetstream.LimitsPolicy, 0),
		feedStreamConfig(cfg),
	}
}

// KeyValueConfigs returns the bucket configurations [Ensure] applies.
func KeyValueConfigs(cfg Config) []jetstream.KeyValueConfig {
	cfg = cfg.WithDefaults()
	return append([]jetstream.KeyValueConfig{
		{Bucket: BucketClaims, Description: "oxypipe submission claims per doc", Storage: cfg.Storage, Replicas: cfg.Replicas,
			LimitMarkerTTL: claimMarkerTTL},
		{Bucket: BucketRuns, Description: "oxypipe run records", Storage: cfg.Storage, Replicas: cfg.Replicas},
	}, feedBucketConfigs(cfg)...)
}

// ConsumerConfig returns the durable consumer configuration for a stage's
// settings.
func ConsumerConfig(s ConsumerSettings) jetstream.ConsumerConfig {
	return jetstream.ConsumerConfig{
		Durable:       string(s.Stage),
		Description:   "oxypipe " + string(s.Stage) + " (shared by all replicas)",
		FilterSubject: s.FilterSubject,
		DeliverPolicy: jetstream.DeliverAllPolicy,
		AckPolicy:     jetstream.AckExplicitPolicy,
		AckWait:       s.AckWait,
		MaxAckPending: s.MaxAckPending,
		// Unlimited: the runtime dead-letters past MaxDeliver itself, because
		// a server-side limit stops delivering without telling anyone.
		MaxDeliver:    -1,
		ReplayPolicy:  jetstream.ReplayInstantPolicy,
		MaxWaiting:    512,
		HeadersOnly:   false,
		MemoryStorage: false,
	}
}

// Ensure creates the streams and buckets that are missing and updates those
// whose configuration differs. It is idempotent and safe to call from many
// workers at once. It does not create consumers: each worker ensures its own
// with EnsureConsumer, so one stage's settings are never overwritten by
// another stage's defaults.
//
// A change the server cannot apply in place (a stream's retention, its
// storage type) fails with the server's error; such a change needs the
// stream to be migrated by hand.
//
// With cfg.CreateOnly, existing streams and buckets are used as they are
// and only missing ones are created.
func Ensure(ctx context.Context, js jetstream.JetStream, cfg Config) (*Topology, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	for _, sc := range StreamConfigs(cfg) {
		if err := retryRace(ctx, func() error {
			if cfg.CreateOnly {
				return createStreamIfMissing(ctx, js, sc)
			}
			_, err := js.CreateOrUpdateStream(ctx, sc)
			return err
		}); err != nil {
			return nil, fmt.Errorf("topology: stream %s: %w", sc.Name, err)
		}
	}
	var kvs [4]jetstream.KeyValue
	for i, kc := range KeyValueConfigs(cfg) {
		if err := retryRace(ctx, func() error {
			var kv jetstream.KeyValue
			var err error
			if cfg.CreateOnly {
				kv, err = createBucketIfMissing(ctx, js, kc)
			} else {
				kv, err = js.CreateOrUpdateKeyValue(ctx, kc)
				if errors.Is(err, jetstream.ErrLimitMarkerTTLNotSupported) {
					// A server before 2.11: claims are removed through the
					// stream's purge API instead (see Claims.removeKey).
					kc.LimitMarkerTTL = 0
					kv, err = js.CreateOrUpdateKeyValue(ctx, kc)
				}
			}
			kvs[i] = kv
			return err
		}); err != nil {
			return nil, fmt.Errorf("topology: bucket %s: %w", kc.Bucket, err)
		}
	}
	claims, err := newClaims(ctx, js, kvs[0])
	if err != nil {
		return nil, fmt.Errorf("topology: bucket %s: %w", BucketClaims, err)
	}
	return &Topology{js: js, cfg: cfg, claims: claims, runs: &Runs{kv: kvs[1]}, feeds: &Feeds{kv: kvs[2], ids: kvs[3]}}, nil
}

// createStreamIfMissing creates the stream unless it exists; an existing
// one is left as it is, whatever its configuration.
func createStreamIfMissing(ctx context.Context, js jetstream.JetStream, sc jetstream.StreamConfig) error {
	_, err := js.Stream(ctx, sc.Name)
	if !errors.Is(err, jetstream.ErrStreamNotFound) {
		return err // nil: it exists
	}
	_, err = js.CreateStream(ctx, sc)
	return err // a lost creation race is retried, and then finds it
}

// createBucketIfMissing opens the bucket, creating it when it is missing;
// an existing one is left as it is.
func createBucketIfMissing(ctx context.Context, js jetstream.JetStream, kc jetstream.KeyValueConfig) (jetstream.KeyValue, error) {
	kv, err := js.KeyValue(ctx, kc.Bucket)
	if !errors.Is(err, jetstream.ErrBucketNotFound) {
		return kv, err
	}
	return js.CreateKeyValue(ctx, kc)
}

// createConsumerIfMissing returns the durable consumer of s, creating it
// when it is missing; an existing one is left as it is.
func createConsumerIfMissing(ctx context.Context, js jetstream.JetStream, s ConsumerSettings) (jetstream.Consumer, error) {
	c, err := js.Consumer(ctx, s.Stream, string(s.Stage))
	if !errors.Is(err, jetstream.ErrConsumerNotFound) {
		return c, err
	}
	return js.CreateConsumer(ctx, s.Stream, ConsumerConfig(s))
}

// EnsureConsumer creates or updates a stage's durable consumer and returns
// it. Idempotent and safe to race. With the topology's Config.CreateOnly an
// existing consumer is returned as it is, and only a missing one created.
func (t *Topology) EnsureConsumer(ctx context.Context, s ConsumerSettings) (jetstream.Consumer, error) {
	if !t.cfg.CreateOnly {
		return EnsureConsumer(ctx, t.js, s)
	}
	if err := s.Validate(); err != nil {
		return nil, err
	}
	var c jetstream.Consumer
	err := retryRace(ctx, func() error {
		var err error
		c, err = createConsumerIfMissing(ctx, t.js, s)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("topology: consumer %s on %s: %w", s.Stage, s.Stream, err)
	}
	return c, nil
}

// EnsureConsumer is [Topology.EnsureConsumer] for callers that only have a
// JetStream handle (the stream must exist). It always updates a consumer
// whose configuration differs.
func EnsureConsumer(ctx context.Context, js jetstream.JetStream, s ConsumerSettings) (jetstream.Consumer, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	var c jetstream.Consumer
	err := retryRace(ctx, func() error {
		var err error
		c, err = js.CreateOrUpdateConsumer(ctx, s.Stream, ConsumerConfig(s))
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("topology: consumer %s on %s: %w", s.Stage, s.Stream, err)
	}
	return c, nil
}

// EnsureAll is Ensure plus every stage's consumer with its default
// settings, for the one-process shape and tests. overrides replace the
// defaults of the stages they name. cfg.CreateOnly applies to the
// consumers too.
func EnsureAll(ctx context.Context, js jetstream.JetStream, cfg Config, overrides ...ConsumerSettings) (*Topology, error) {
	t, err := Ensure(ctx, js, cfg)
	if err != nil {
		return nil, err
	}
	for _, stage := range Stages() {
		s, err := DefaultConsumer(stage)
		if err != nil {
			return nil, err
		}
		for _, o := range overrides {
			if o.Stage == stage {
				s = o
			}
		}
		if _, err := t.EnsureConsumer(ctx, s); err != nil {
			return nil, err
		}
	}
	return t, nil
}

// JetStream returns the handle the topology was ensured with.
func (t *Topology) JetStream() jetstream.JetStream { return t.js }

// Config returns the configuration Ensure was given, with defaults applied.
// With CreateOnly, streams and buckets that existed keep their own
// settings, which may differ from it.
func (t *Topology) Config() Config { return t.cfg }

// Claims returns the claims bucket.
func (t *Topology) Claims() *Claims { return t.claims }

// Runs returns the runs bucket.
func (t *Topology) Runs() *Runs { return t.runs }

// Feeds returns the feeds and feed-ids buckets.
func (t *Topology) Feeds() *Feeds { return t.feeds }

// retryRace retries op when it lost a creation race with another worker
// (both saw "not found", one created, the other's create collided).
func retryRace(ctx context.Context, op func() error) error {
	var err error
	for attempt := 0; attempt < 5; attempt++ {
		err = op()
		if err == nil || !lostRace(err) {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Duration(attempt+1) * 20 * time.Millisecond):
		}
	}
	return err
}

func lostRace(err error) bool {
	if errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) || errors.Is(err, jetstream.ErrBucketExists) ||
		errors.Is(err, jetstream.ErrConsumerExists) {
		return true
	}
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) {
		switch apiErr.ErrorCode {
		case jetstream.JSErrCodeStreamNameInUse, jetstream.JSErrCodeConsumerAlreadyExists, jetstream.JSErrCodeConsumerExists:
			return true
		}
	}
	return false
}
