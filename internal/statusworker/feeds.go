package statusworker

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/zap"

	"github.com/oxypipe/oxypipe/internal/redact"
	"github.com/oxypipe/oxypipe/internal/topology"
	"github.com/oxypipe/oxypipe/pkg/messages"
	"github.com/oxypipe/oxypipe/pkg/oxytype"
)

// Standing feeds (see messages.FeedPayload): the statusworker runs them
// because it owns the runs' lifecycle. Every statusworker consumes the
// control messages (one shared durable consumer) and runs a pump per feed
// that is not closed; the pumps of one feed share a durable consumer with
// MaxAckPending 1, so a feed's payloads are assigned one at a time, in
// stream order, whichever replica holds one.

// feedPoll is how long a pump waits for a payload before it looks at its
// feed's record again (a pause, a close, a run old enough to cut).
const feedPoll = time.Second

// feedAckWait is the pumps' and the control consumer's AckWait: far longer
// than one assignment (about ten bucket and stream round trips).
const feedAckWait = 30 * time.Second

// feedPumps tracks the running pumps by feed.
type feedPumps struct {
	mu      sync.Mutex
	running map[string]context.CancelFunc
	wg      sync.WaitGroup
}

// runFeeds runs the control consumer and the feeds' pumps until ctx ends.
func (w *StatusWorker) runFeeds(ctx context.Context) {
	pumps := &feedPumps{running: map[string]context.CancelFunc{}}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		w.feedControlLoop(ctx)
	}()
	w.feedWatchLoop(ctx, pumps)
	wg.Wait()
	pumps.wg.Wait()
}

// feedWatchLoop starts a pump for every feed that is not closed, as the
// feeds bucket says, and stops it once the feed is closed.
func (w *StatusWorker) feedWatchLoop(ctx context.Context, pumps *feedPumps) {
	for ctx.Err() == nil {
		watcher, err := w.cfg.Topology.Feeds().Watch(ctx)
		if err != nil {
			w.log.Warn("cannot watch the feeds; trying again", zap.Error(err))
			sleepCtx(ctx, 2*time.Second)
			continue
		}
		for e := range watcher.Updates() {
			if e == nil || e.Operation() != jetstream.KeyValuePut {
				continue
			}
			rec, err := messages.DecodeFeedRecord(e.Value())
			if err != nil {
				w.log.Warn("unreadable feed record", zap.String("feed", e.Key()), zap.Error(err))
				continue
			}
			pumps.mu.Lock()
			_, running := pumps.running[rec.Feed]
			switch {
			case rec.State == messages.FeedStateClosed && running:
				pumps.running[rec.Feed]()
				delete(pumps.running, rec.Feed)
			case rec.State != messages.FeedStateClosed && !running:
				pctx, cancel := context.WithCancel(ctx)
				pumps.running[rec.Feed] = cancel
				pumps.wg.Add(1)
				go func(feed string) {
					defer pumps.wg.Done()
					w.pumpFeed(pctx, feed)
				}(rec.Feed)
			}
			pumps.mu.Unlock()
		}
		_ = watcher.Stop()
	}
}

func sleepCtx(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// feedControlLoop applies the feeds' control messages.
func (w *StatusWorker) feedControlLoop(ctx context.Context) {
	var cons jetstream.Consumer
	for ctx.Err() == nil && cons == nil {
		var err error
		cons, err = w.cfg.Topology.JetStream().CreateOrUpdateConsumer(ctx, topology.StreamFeeds, jetstream.ConsumerConfig{
			Durable: topology.FeedControlConsumer, FilterSubject: messages.AllFeedControls,
			AckPolicy: jetstream.AckExplicitPolicy, AckWait: feedAckWait, MaxAckPending: 1,
		})
		if err != nil {
			w.log.Warn("cannot create the feed control consumer; trying again", zap.Error(err))
			sleepCtx(ctx, 2*time.Second)
		}
	}
	for ctx.Err() == nil {
		batch, err := cons.Fetch(1, jetstream.FetchMaxWait(feedPoll))
		if err != nil {
			sleepCtx(ctx, feedPoll)
			continue
		}
		for m := range batch.Messages() {
			if err := w.applyFeedControl(ctx, m); err != nil {
				w.log.Warn("feed control not applied yet; retrying", zap.String("subject", m.Subject()), zap.Error(err))
				_ = m.NakWithDelay(time.Second)
				continue
			}
			_ = m.Ack()
		}
	}
}

// applyFeedControl applies one control message. A message that cannot be
// used (malformed, or for a feed that was never opened) is logged and
// dropped: there is no run to record it in, and redelivering it would
// change nothing. An error means "try again" (a bucket conflict or outage).
func (w *StatusWorker) applyFeedControl(ctx context.Context, m jetstream.Msg) error {
	c, err := messages.DecodeFeedControl(m.Subject(), m.Data())
	if err != nil {
		w.log.Error("feed control message dropped", zap.String("subject", m.Subject()), zap.String("reason", redact.String(err.Error())))
		return nil
	}
	feeds := w.cfg.Topology.Feeds()
	ref, err := feeds.Get(ctx, c.Feed)
	if errors.Is(err, topology.ErrFeedNotFound) {
		ref = nil
	} else if err != nil {
		return err
	}
	if ref == nil && c.Op != messages.FeedOpen {
		w.log.Error("feed control message dropped: the feed was never opened", zap.String("feed", c.Feed), zap.String("op", string(c.Op)))
		return nil
	}
	var next messages.FeedRecord
	if ref != nil {
		next = ref.Record
	}
	switch c.Op {
	case messages.FeedOpen:
		next.Feed, next.Cut, next.Destination, next.RunLog = c.Feed, c.Cut, c.Destination, c.RunLog
		if next.State == "" || next.State == messages.FeedStateClosed || next.State == messages.FeedStatePaused {
			next.State, next.CloseAfter = messages.FeedStateOpen, 0
		}
	case messages.FeedPause:
		if next.State != messages.FeedStateOpen {
			return nil
		}
		next.State = messages.FeedStatePaused
	case messages.FeedResume:
		if next.State != messages.FeedStatePaused {
			return nil
		}
		next.State = messages.FeedStateOpen
	case messages.FeedClose:
		if next.State == messages.FeedStateClosing || next.State == messages.FeedStateClosed {
			return nil
		}
		last, err := w.lastFeedSeq(ctx, c.Feed)
		if err != nil {
			return err
		}
		next.State, next.CloseAfter = messages.FeedStateClosing, last
	}
	if _, err := feeds.Put(ctx, ref, next); err != nil {
		return err
	}
	w.log.Info("feed control applied", zap.String("feed", c.Feed), zap.String("op", string(c.Op)), zap.String("state", string(next.State)))
	return nil
}

// lastFeedSeq is the stream sequence of the feed's last stored payload (0:
// none).
func (w *StatusWorker) lastFeedSeq(ctx context.Context, feed string) (uint64, error) {
	st, err := w.cfg.Topology.JetStream().Stream(ctx, topology.StreamFeeds)
	if err != nil {
		return 0, err
	}
	msg, err := st.GetLastMsgForSubject(ctx, messages.FeedSubject(feed))
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	return msg.Sequence, nil
}

// FeedView is a feed as the HTTP API shows it: its record and the state of
// each of its runs the record names.
type FeedView struct {
	Record    messages.FeedRecord         `json:"record"`
	RunStates map[string]oxytype.RunState `json:"run_states"`
}

// feedView reads one feed and its runs' states.
func (w *StatusWorker) feedView(ctx context.Context, feed string) (*FeedView, error) {
	ref, err := w.cfg.Topology.Feeds().Get(ctx, feed)
	if err != nil {
		return nil, err
	}
	v := &FeedView{Record: ref.Record, RunStates: map[string]oxytype.RunState{}}
	runs := ref.Record.Runs
	if c := ref.Record.Current; c != nil {
		runs = append(runs[:len(runs):len(runs)], *c)
	}
	for _, r := range runs {
		rr, err := w.cfg.Topology.Runs().Get(ctx, r.Run)
		if err != nil {
			continue // forgotten after its retention
		}
		v.RunStates[r.Run] = rr.Record.State
	}
	return v, nil
}

// errFeedRetry says a pump must give its message back and try again.
var errFeedRetry = errors.New("feed record changed meanwhile")

func feedConflict(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, jetstream.ErrKeyExists) || isWrongSequence(err) {
		return fmt.Errorf("%w: %w", errFeedRetry, err)
	}
	return err
}

// isWrongSequence reports a compare-and-set that lost (the key's revision
// moved).
func isWrongSequence(err error) bool {
	var apiErr *jetstream.APIError
	return errors.As(err, &apiErr) && apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence
}
