package topology

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/oxypipe/oxypipe/pkg/messages"
)

// The stream and buckets of standing feeds (see messages.FeedPayload).
const (
	// StreamFeeds holds the feeds' payloads and control messages until the
	// statusworker assigned them: no age limit, so nothing published while
	// no worker runs is lost.
	StreamFeeds = "OXY_FEEDS"
	// BucketFeeds holds one messages.FeedRecord per feed.
	BucketFeeds = "oxy_feeds"
	// BucketFeedIDs holds one messages.FeedAssignment per producer id: the
	// durable record that a retried id bills once, however long after the
	// broker's duplicate window it comes. Kept for the bucket's life.
	BucketFeedIDs = "oxy_feed_ids"
)

// FeedControlConsumer is the durable consumer of the feeds' control
// messages, shared by every statusworker.
const FeedControlConsumer = "feedctl"

// FeedConsumer is the durable consumer of one feed's payloads. It has
// MaxAckPending 1, across every statusworker: a feed's payloads are
// assigned one at a time, in stream order, which is what makes the
// assignment of doc positions safe.
func FeedConsumer(feed string) string { return "feed_" + feed }

// ErrFeedNotFound: no record for this feed.
var ErrFeedNotFound = errors.New("topology: feed not found")

func feedStreamConfig(cfg Config) jetstream.StreamConfig {
	return jetstream.StreamConfig{
		Name:        StreamFeeds,
		Description: "oxypipe standing feeds: payloads and control messages",
		Subjects:    []string{messages.AllFeedPayloads, messages.AllFeedControls},
		Retention:   jetstream.LimitsPolicy,
		Storage:     cfg.Storage,
		Replicas:    cfg.Replicas,
		Duplicates:  cfg.DuplicateWindow,
		MaxMsgSize:  cfg.MaxMsgSize,
		Discard:     jetstream.DiscardOld,
	}
}

func feedBucketConfigs(cfg Config) []jetstream.KeyValueConfig {
	return []jetstream.KeyValueConfig{
		{Bucket: BucketFeeds, Description: "oxypipe standing feeds", Storage: cfg.Storage, Replicas: cfg.Replicas},
		{Bucket: BucketFeedIDs, Description: "oxypipe feed payload ids and their runs", Storage: cfg.Storage, Replicas: cfg.Replicas},
	}
}

// Feeds is the feeds bucket and the feed-ids bucket.
type Feeds struct {
	kv  jetstream.KeyValue
	ids jetstream.KeyValue
}

// FeedRef is a feed record as read, with the revision a compare-and-set
// must match (0: the feed has no record yet).
type FeedRef struct {
	Record   messages.FeedRecord
	Revision uint64
}

// Get returns a feed's record, or ErrFeedNotFound.
func (f *Feeds) Get(ctx context.Context, feed string) (*FeedRef, error) {
	e, err := f.kv.Get(ctx, feed)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil, fmt.Errorf("%w: %s", ErrFeedNotFound, feed)
	}
	if err != nil {
		return nil, fmt.Errorf("topology: feed %s: %w", feed, err)
	}
	rec, err := messages.DecodeFeedRecord(e.Value())
	if err != nil {
		return nil, err
	}
	return &FeedRef{Record: *rec, Revision: e.Revision()}, nil
}

// List returns every feed's record.
func (f *Feeds) List(ctx context.Context) ([]messages.FeedRecord, error) {
	keys, err := f.kv.ListKeys(ctx)
	if err != nil {
		return nil, fmt.Errorf("topology: list feeds: %w", err)
	}
	var out []messages.FeedRecord
	for k := range keys.Keys() {
		ref, err := f.Get(ctx, k)
		if errors.Is(err, ErrFeedNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out = append(out, ref.Record)
	}
	return out, nil
}

// Put stores next over ref (revision 0: creates it). The error wraps
// jetstream.ErrKeyExists or a wrong-sequence error when another writer
// changed the record first: read it again and decide again.
func (f *Feeds) Put(ctx context.Context, ref *FeedRef, next messages.FeedRecord) (*FeedRef, error) {
	next.V = messages.Version
	next.UpdatedAt = time.Now().UTC()
	data, err := json.Marshal(next)
	if err != nil {
		return nil, err
	}
	var rev uint64
	if ref == nil || ref.Revision == 0 {
		rev, err = f.kv.Create(ctx, next.Feed, data)
	} else {
		rev, err = f.kv.Update(ctx, next.Feed, data, ref.Revision)
	}
	if err != nil {
		return nil, fmt.Errorf("topology: feed %s: %w", next.Feed, err)
	}
	return &FeedRef{Record: next, Revision: rev}, nil
}

// Watch watches every feed record (see jetstream.KeyValue.WatchAll).
func (f *Feeds) Watch(ctx context.Context) (jetstream.KeyWatcher, error) {
	return f.kv.WatchAll(ctx)
}

// AssignmentRef is a producer id's assignment as read.
type AssignmentRef struct {
	Assignment messages.FeedAssignment
	Revision   uint64
}

// Assignment returns the assignment of a producer's id, or nil when the id
// was never assigned.
func (f *Feeds) Assignment(ctx context.Context, feed, id string) (*AssignmentRef, error) {
	e, err := f.ids.Get(ctx, messages.FeedIDKey(feed, id))
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("topology: feed %s id: %w", feed, err)
	}
	var a messages.FeedAssignment
	if err := json.Unmarshal(e.Value(), &a); err != nil {
		return nil, fmt.Errorf("topology: feed %s id: %w", feed, err)
	}
	return &AssignmentRef{Assignment: a, Revision: e.Revision()}, nil
}

// Assign stores a producer id's assignment over ref (nil: creates it). It
// fails when another writer stored one first.
func (f *Feeds) Assign(ctx context.Context, feed, id string, ref *AssignmentRef, a messages.FeedAssignment) (*AssignmentRef, error) {
	a.V = messages.Version
	data, err := json.Marshal(a)
	if err != nil {
		return nil, err
	}
	key := messages.FeedIDKey(feed, id)
	var rev uint64
	if ref == nil {
		rev, err = f.ids.Create(ctx, key, data)
	} else {
		rev, err = f.ids.Update(ctx, key, data, ref.Revision)
	}
	if err != nil {
		return nil, fmt.Errorf("topology: feed %s id: %w", feed, err)
	}
	return &AssignmentRef{Assignment: a, Revision: rev}, nil
}
