package statusworker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/zap"

	"github.com/oxypipe/oxypipe/internal/redact"
	"github.com/oxypipe/oxypipe/internal/topology"
	"github.com/oxypipe/oxypipe/pkg/messages"
	"github.com/oxypipe/oxypipe/pkg/oxytype"
)

// A pump assigns a feed's payloads to its runs. Per payload, in this order:
//
//  1. the producer's id is looked up in the feed-ids bucket: an id whose
//     payload was published already is a retry, dropped (it bills once,
//     however long after the broker's duplicate window it comes);
//  2. a new id is given the next doc of the current run (opening a run
//     when there is none), written to the feed-ids bucket first;
//  3. the feed record's doc count is raised by compare-and-set: this
//     commits the assignment (an assignment at or past the count of a run
//     that was cut meanwhile is given a new doc instead: it was never
//     published);
//  4. the payload and its fed event are published into the run (a message
//     the pipeline cannot use becomes the doc's rejection instead), and the
//     id marked published;
//  5. the run is cut once it holds the feed's MaxPayloads.
//
// A pump that dies anywhere in between leaves its message unacked; the
// redelivery finds the assignment and goes on from where it was, giving it
// the same run and doc. Because the consumer lets one message be pending at
// a time, no other payload of the feed is assigned meanwhile.

// pumpFeed runs one feed's pump until ctx ends or the feed is closed.
func (w *StatusWorker) pumpFeed(ctx context.Context, feed string) {
	log := w.log.With(zap.String("feed", feed))
	var cons jetstream.Consumer
	for ctx.Err() == nil && cons == nil {
		var err error
		cons, err = w.cfg.Topology.JetStream().CreateOrUpdateConsumer(ctx, topology.StreamFeeds, jetstream.ConsumerConfig{
			Durable: topology.FeedConsumer(feed), FilterSubject: messages.FeedSubject(feed),
			AckPolicy: jetstream.AckExplicitPolicy, AckWait: feedAckWait, MaxAckPending: 1,
		})
		if err != nil {
			log.Warn("cannot create the feed's consumer; trying again", zap.Error(err))
			sleepCtx(ctx, 2*time.Second)
		}
	}
	for ctx.Err() == nil {
		closed, err := w.feedHousekeeping(ctx, feed, cons)
		if closed {
			return
		}
		if err != nil {
			if ctx.Err() == nil && !errors.Is(err, errFeedRetry) { // a conflict: another replica did it
				log.Warn("feed not looked after; trying again", zap.Error(err))
			}
			sleepCtx(ctx, feedPoll)
			continue
		}
		ref, err := w.cfg.Topology.Feeds().Get(ctx, feed)
		if err != nil {
			sleepCtx(ctx, feedPoll)
			continue
		}
		if ref.Record.State == messages.FeedStatePaused {
			sleepCtx(ctx, feedPoll) // the payloads wait in the stream
			continue
		}
		batch, err := cons.Fetch(1, jetstream.FetchMaxWait(feedPoll))
		if err != nil {
			sleepCtx(ctx, feedPoll)
			continue
		}
		for m := range batch.Messages() {
			switch err := w.assignFeedPayload(ctx, feed, m); {
			case err == nil:
			case errors.Is(err, errFeedRetry):
				_ = m.NakWithDelay(100 * time.Millisecond)
			default:
				if ctx.Err() == nil {
					log.Warn("feed payload not assigned yet; retrying", zap.Error(err))
				}
				_ = m.NakWithDelay(time.Second)
			}
		}
	}
}

// feedHousekeeping finishes a cut that was interrupted, cuts the current
// run when it is old enough, and closes a closing feed once every payload
// stored before the close is assigned. closed reports a closed feed.
func (w *StatusWorker) feedHousekeeping(ctx context.Context, feed string, cons jetstream.Consumer) (closed bool, err error) {
	ref, err := w.cfg.Topology.Feeds().Get(ctx, feed)
	if err != nil {
		return false, err
	}
	rec := ref.Record
	switch {
	case rec.State == messages.FeedStateClosed:
		return true, nil
	case rec.Current != nil && rec.Current.Cutting:
		_, err := w.cutFeedRun(ctx, ref)
		return false, err
	case rec.Current != nil && rec.Cut.MaxAge > 0 && rec.Current.Docs > 0 && w.cfg.Now().Sub(rec.Current.OpenedAt) >= rec.Cut.MaxAge:
		_, err := w.cutFeedRun(ctx, ref)
		return false, err
	case rec.State == messages.FeedStateClosing:
		info, err := cons.Info(ctx)
		if err != nil {
			return false, err
		}
		if info.AckFloor.Stream < rec.CloseAfter {
			return false, nil // payloads stored before the close are still to be assigned
		}
		if rec.Current != nil {
			_, err := w.cutFeedRun(ctx, ref)
			return false, err
		}
		rec.State = messages.FeedStateClosed
		if _, err := w.cfg.Topology.Feeds().Put(ctx, ref, rec); err != nil {
			return false, feedConflict(err)
		}
		w.log.Info("feed closed", zap.String("feed", feed), zap.Int("runs", rec.Opened))
		return true, nil
	}
	return false, nil
}

// cutFeedRun ends the current run's intake: marks it cutting (no more
// payloads), writes its total into its run record (from then on it
// completes as any run), and moves it to the feed's cut runs. Each step is
// a compare-and-set that a retry repeats safely.
func (w *StatusWorker) cutFeedRun(ctx context.Context, ref *topology.FeedRef) (*topology.FeedRef, error) {
	feeds := w.cfg.Topology.Feeds()
	rec := ref.Record
	cur := *rec.Current
	if !cur.Cutting {
		cur.Cutting = true
		rec.Current = &cur
		var err error
		if ref, err = feeds.Put(ctx, ref, rec); err != nil {
			return nil, feedConflict(err)
		}
	}
	_, _, err := w.cfg.Topology.Runs().Transition(ctx, cur.Run, func(r *messages.RunRecord) bool {
		if r.Feed == nil || !r.Feed.Open {
			return false
		}
		r.Announced.Total, r.Feed.Open = cur.Docs, false
		return true
	})
	if err != nil {
		return nil, fmt.Errorf("cut run %s: %w", cur.Run, err)
	}
	rec = ref.Record
	rec.Runs = append(rec.Runs, cur)
	if n := len(rec.Runs); n > messages.FeedRunsKept {
		rec.Runs = rec.Runs[n-messages.FeedRunsKept:]
	}
	rec.Current = nil
	next, err := feeds.Put(ctx, ref, rec)
	if err != nil {
		return nil, feedConflict(err)
	}
	w.log.Info("feed run cut", zap.String("feed", rec.Feed), zap.String("run", cur.Run), zap.Int("total", cur.Docs))
	return next, nil
}

// openFeedRun opens the feed's next run: its run record (a feed run, open,
// total not known yet) and announcement, then the feed's current run. It
// waits until the run is ready (its empty run log written), so that a run
// log that cannot be written fails the run before anything bills.
func (w *StatusWorker) openFeedRun(ctx context.Context, ref *topology.FeedRef) (*topology.FeedRef, error) {
	rec := ref.Record
	run := messages.FeedRunID(rec.Feed, rec.Opened+1)
	ann := messages.RunAnnounced{
		Run: run, FinalDataType: oxytype.FinalDataType, Destination: rec.Destination, RunLog: rec.RunLog,
		StartedAt: w.cfg.Now().UTC(),
	}
	_, err := w.cfg.Topology.Runs().Create(ctx, messages.RunRecord{
		Announced: ann, State: oxytype.RunStateAnnounced, UpdatedAt: ann.StartedAt,
		Feed: &messages.RunFeed{Name: rec.Feed, Open: true},
	})
	if err != nil && !errors.Is(err, topology.ErrRunExists) { // exists: a pump died after creating it
		return nil, err
	}
	msg, err := messages.NewMsg(&ann, w.actor)
	if err != nil {
		return nil, err
	}
	if _, err := w.cfg.Topology.JetStream().PublishMsg(ctx, msg); err != nil {
		return nil, fmt.Errorf("announce run %s: %w", run, err)
	}
	rec.Opened++
	rec.Current = &messages.FeedRun{Run: run, OpenedAt: ann.StartedAt}
	next, err := w.cfg.Topology.Feeds().Put(ctx, ref, rec)
	if err != nil {
		return nil, feedConflict(err)
	}
	wctx, cancel := context.WithTimeout(ctx, feedAckWait/2)
	defer cancel()
	if _, err := w.cfg.Topology.Runs().Wait(wctx, run, func(r *messages.RunRecord) bool {
		return r.State != oxytype.RunStateAnnounced
	}); err != nil {
		return nil, fmt.Errorf("run %s not ready: %w", run, err)
	}
	w.log.Info("feed run opened", zap.String("feed", rec.Feed), zap.String("run", run))
	return next, nil
}

// committed reports whether the assignment a is within the doc count of
// its run as the feed record says (the commit of step 3).
func committed(rec messages.FeedRecord, a messages.FeedAssignment) bool {
	pos, err := messages.ParseDocID(a.Doc)
	if err != nil {
		return false
	}
	if c := rec.Current; c != nil && c.Run == a.Run {
		return pos < c.Docs
	}
	for _, r := range rec.Runs {
		if r.Run == a.Run {
			return pos < r.Docs
		}
	}
	return false
}

// assignFeedPayload assigns one message of the feed and settles it (ack or
// term); an error means the message was not settled and must be given back.
func (w *StatusWorker) assignFeedPayload(ctx context.Context, feed string, m jetstream.Msg) error {
	meta, err := m.Metadata()
	if err != nil {
		return err
	}
	feeds := w.cfg.Topology.Feeds()
	ref, err := feeds.Get(ctx, feed)
	if err != nil {
		return err
	}
	if ref.Record.State == messages.FeedStatePaused {
		// Fetched just before the pause: it waits with the others.
		return errFeedRetry
	}
	if s := ref.Record.State; (s == messages.FeedStateClosing || s == messages.FeedStateClosed) && meta.Sequence.Stream > ref.Record.CloseAfter {
		// Published after the close: it belongs to the feed's next opening,
		// and waits in the stream until then.
		return errFeedRetry
	}
	env, decodeErr := messages.DecodeFeedPayload(m.Subject(), m.Data())
	// A message the pipeline cannot use is its own payload, identified by
	// its stream sequence: a redelivery finds the same assignment.
	id := "?" + strconv.FormatUint(meta.Sequence.Stream, 10)
	if decodeErr == nil {
		id = env.ID
	}
	a, err := feeds.Assignment(ctx, feed, id)
	if err != nil {
		return err
	}
	switch {
	case a != nil && a.Assignment.Published:
		next := ref.Record
		next.Duplicates++
		if _, err := feeds.Put(ctx, ref, next); err != nil {
			return feedConflict(err)
		}
		return m.Ack()
	case a != nil && committed(ref.Record, a.Assignment):
	default:
		if ref.Record.Current == nil || ref.Record.Current.Cutting {
			if ref.Record.Current != nil {
				if ref, err = w.cutFeedRun(ctx, ref); err != nil {
					return err
				}
			}
			_ = m.InProgress() // opening waits for the run log to be written
			if ref, err = w.openFeedRun(ctx, ref); err != nil {
				return err
			}
		}
		rec := ref.Record
		cur := *rec.Current
		if a, err = feeds.Assign(ctx, feed, id, a, messages.FeedAssignment{Run: cur.Run, Doc: messages.DocID(cur.Docs)}); err != nil {
			return feedConflict(err)
		}
		cur.Docs++
		rec.Current = &cur
		rec.Assigned++
		if ref, err = feeds.Put(ctx, ref, rec); err != nil {
			return feedConflict(err)
		}
	}
	if err := w.publishFeedDoc(ctx, m, a.Assignment, env, decodeErr); err != nil {
		return err
	}
	done := a.Assignment
	done.Published = true
	if _, err := feeds.Assign(ctx, feed, id, a, done); err != nil {
		return feedConflict(err)
	}
	if c := ref.Record.Current; c != nil && !c.Cutting && ref.Record.Cut.MaxPayloads > 0 && c.Docs >= ref.Record.Cut.MaxPayloads {
		if _, err := w.cutFeedRun(ctx, ref); err != nil {
			w.log.Warn("feed run not cut yet; the next look tries again", zap.String("feed", feed), zap.Error(err))
		}
	}
	return m.Ack()
}

// publishFeedDoc publishes an assigned payload into its run: the payload
// and, once stored, its fed event — or, for a message the pipeline cannot
// use, the doc's rejection with the reason, so the run log says what was
// wrong with it and the run can complete.
func (w *StatusWorker) publishFeedDoc(ctx context.Context, m jetstream.Msg, a messages.FeedAssignment, env *messages.FeedPayload, decodeErr error) error {
	origin := messages.OriginOf(m.Headers())
	if origin.Type == "" {
		origin = oxytype.Party{Type: "producer"}
	}
	js := w.cfg.Topology.JetStream()
	now := w.cfg.Now().UTC()
	if decodeErr != nil {
		var de *messages.DecodeError
		reason := decodeErr.Error()
		if errors.As(decodeErr, &de) {
			reason = de.Reason
		}
		var body json.RawMessage
		if k := messages.Peek("", m.Data()); len(m.Data()) <= messages.MaxFeedPayloadBytes {
			body = k.Payload // what can be read of it, for the run log; never a copy of an oversized one
		}
		meta, _ := m.Metadata()
		ev := &messages.StatusEvent{
			Run: a.Run, Doc: a.Doc, DataType: oxytype.DataPayload, Outcome: oxytype.HardFailure,
			Origin: origin, Consumer: w.actor, RetryCount: int(meta.NumDelivered), Reason: "the feed refused the message: " + reason,
			Facts: oxytype.Facts{
				Error: &oxytype.ErrorInfo{Message: "the feed refused the message: " + redact.String(reason)},
				State: oxytype.Rejected, Payload: body,
			},
			Time: now,
		}
		return w.publishEnvelope(ctx, js, ev, w.actor)
	}
	p := &messages.Payload{Run: a.Run, Doc: a.Doc, Payload: env.Payload}
	if err := w.publishEnvelope(ctx, js, p, origin); err != nil {
		return err
	}
	ev := &messages.StatusEvent{
		Run: a.Run, Doc: a.Doc, DataType: oxytype.DataPayload, Outcome: oxytype.Success,
		Origin: origin, Facts: oxytype.Facts{Payload: env.Payload}, Time: now,
	}
	return w.publishEnvelope(ctx, js, ev, origin)
}

func (w *StatusWorker) publishEnvelope(ctx context.Context, js jetstream.JetStream, e messages.Envelope, origin oxytype.Party) error {
	msg, err := messages.NewMsg(e, origin)
	if err != nil {
		return err
	}
	if _, err := js.PublishMsg(ctx, msg); err != nil {
		return fmt.Errorf("publish on %s: %w", msg.Subject, err)
	}
	return nil
}
