package feeder

import (
	"context"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/zap"

	"github.com/oxypipe/oxypipe/pkg/messages"
	"github.com/oxypipe/oxypipe/pkg/oxytype"
	"github.com/oxypipe/oxypipe/pkg/retry"
)

// inflight is a publish waiting for the broker's acknowledgement, and the
// encoded status event to publish once it is stored (a payload's fed event).
type inflight struct {
	msg  *nats.Msg
	fut  jetstream.PubAckFuture
	then []byte
}

// eventBatch is how many status events the feeder puts in one status batch
// message (messages.NewStatusBatchMsg), at most: the broker then stores one
// message for that many fed docs instead of one per doc. It is small
// against the time a doc takes to be submitted, so a doc's fed event still
// reaches the ledger about when its payload reaches the submitter.
const eventBatch = 256

// publisher publishes one run's messages asynchronously with a bounded
// window, in two FIFO queues: payload messages, and status batch messages,
// whose events may only follow their payload's acknowledgement.
type publisher struct {
	js       jetstream.JetStream
	run      string
	origin   oxytype.Party
	window   int
	retryFor time.Duration
	log      *zap.Logger
	payloads []inflight
	events   []inflight
	// batch gathers encoded events, size their bytes, until they go out
	// as one status message.
	batch [][]byte
	size  int
}

func (f *Feeder) newPublisher(run string) *publisher {
	return &publisher{
		js:       f.cfg.Topology.JetStream(),
		run:      run,
		origin:   f.origin,
		window:   f.cfg.Window,
		retryFor: f.cfg.PublishRetry,
		log:      f.cfg.Logger,
	}
}

// payload publishes a payload message; its encoded status event (then, may
// be nil) is published once the payload is stored.
func (p *publisher) payload(ctx context.Context, msg *nats.Msg, then []byte) error {
	in, err := p.send(ctx, msg)
	if err != nil {
		return err
	}
	in.then = then
	p.payloads = append(p.payloads, in)
	for len(p.payloads) >= p.window {
		if err := p.settlePayload(ctx); err != nil {
			return err
		}
	}
	return nil
}

// event publishes an encoded status event of the run (the output of
// messages.StatusEvent.MarshalJSON): it joins the open batch, which goes out
// when it is full, or at flush. Events keep the order they were given in.
func (p *publisher) event(ctx context.Context, data []byte) error {
	if len(p.batch) > 0 && p.size+len(data) > messages.MaxStatusBatchBytes {
		if err := p.sendBatch(ctx); err != nil {
			return err
		}
	}
	p.batch = append(p.batch, data)
	p.size += len(data) + 1
	if len(p.batch) >= eventBatch {
		return p.sendBatch(ctx)
	}
	return nil
}

// sendBatch publishes the open batch as one status message.
func (p *publisher) sendBatch(ctx context.Context) error {
	msg := messages.NewStatusBatchMsg(p.run, p.batch, p.origin)
	p.batch, p.size = nil, 0
	in, err := p.send(ctx, msg)
	if err != nil {
		return err
	}
	p.events = append(p.events, in)
	for len(p.events) >= p.window {
		if err := p.settleEvent(ctx); err != nil {
			return err
		}
	}
	return nil
}

// flush waits until everything published was stored: the payloads first,
// then the events their acknowledgements released.
func (p *publisher) flush(ctx context.Context) error {
	for len(p.payloads) > 0 {
		if err := p.settlePayload(ctx); err != nil {
			return err
		}
	}
	if len(p.batch) > 0 {
		if err := p.sendBatch(ctx); err != nil {
			return err
		}
	}
	for len(p.events) > 0 {
		if err := p.settleEvent(ctx); err != nil {
			return err
		}
	}
	return nil
}

func (p *publisher) send(ctx context.Context, msg *nats.Msg) (inflight, error) {
	fut, err := p.js.PublishMsgAsync(msg)
	if err != nil {
		// The client refused to queue it (too many stalled publishes, a
		// closed connection): publish it synchronously with retries.
		if err := p.sync(ctx, msg); err != nil {
			return inflight{}, err
		}
		return inflight{msg: msg}, nil
	}
	return inflight{msg: msg, fut: fut}, nil
}

func (p *publisher) settlePayload(ctx context.Context) error {
	in := p.payloads[0]
	p.payloads[0] = inflight{}
	p.payloads = p.payloads[1:]
	if err := p.await(ctx, in); err != nil {
		return err
	}
	if in.then != nil {
		return p.event(ctx, in.then)
	}
	return nil
}

func (p *publisher) settleEvent(ctx context.Context) error {
	in := p.events[0]
	p.events[0] = inflight{}
	p.events = p.events[1:]
	return p.await(ctx, in)
}

// await waits for one publish to be stored. A publish the broker refused,
// or did not acknowledge within retryFor, is sent again synchronously:
// payload messages carry a message id, so a copy that was stored after all is
// dropped; status events stored twice are harmless (see package messages).
func (p *publisher) await(ctx context.Context, in inflight) error {
	if in.fut == nil {
		return nil
	}
	timer := time.NewTimer(p.retryFor)
	defer timer.Stop()
	select {
	case <-in.fut.Ok():
		return nil
	case err := <-in.fut.Err():
		p.log.Warn("publish failed; retrying", zap.String("subject", in.msg.Subject), zap.Error(err))
	case <-timer.C:
		p.log.Warn("publish not acknowledged; retrying", zap.String("subject", in.msg.Subject))
	case <-ctx.Done():
		return ctx.Err()
	}
	return p.sync(ctx, in.msg)
}

func (p *publisher) sync(ctx context.Context, msg *nats.Msg) error {
	err := retry.Do(ctx, retry.Policy{Initial: 100 * time.Millisecond, Max: 2 * time.Second, MaxElapsed: p.retryFor}, func(ctx context.Context) error {
		pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		_, err := p.js.PublishMsg(pctx, msg)
		return err
	})
	if err != nil {
		return fmt.Errorf("feeder: publish on %s: %w", msg.Subject, err)
	}
	return nil
}

// plan says, per doc, what feeding publishes.
type plan struct {
	// skipPayload and skipEvent are nil when everything is published.
	skipPayload, skipEvent []bool
}

// FeedResult says what Feed or Resume published.
type FeedResult struct {
	// Payloads is how many payload messages were published.
	Payloads int
	// Events is how many payload status events were published.
	Events int
	// Skipped is how many docs needed nothing (already fed).
	Skipped int
}

// Feed publishes every payload of src for run, in input order, each followed
// (once stored) by its success status event at "payload". It returns when
// everything was stored, or with the first publish that failed for good or
// ctx's error; feeding again (or Resume) completes a feed that was cut short.
//
// Feed publishes every payload even when the run is stopping: the submitter
// records them unsubmitted, so that the run completes with a full run log.
// With Config.Resolved it keeps pace with the run (see there).
func (f *Feeder) Feed(ctx context.Context, run string, src Source) (FeedResult, error) {
	return f.feed(ctx, run, src, plan{})
}

func (f *Feeder) feed(ctx context.Context, run string, src Source, pl plan) (FeedResult, error) {
	if err := messages.ValidateRunID(run); err != nil {
		return FeedResult{}, fmt.Errorf("feeder: %w", err)
	}
	pub := f.newPublisher(run)
	pace := f.newPacer(run)
	pace.idle = pub.flush
	var res FeedResult
	doc := 0
	for p, err := range src.All() {
		if err != nil {
			return res, err
		}
		i := doc
		doc++
		if err := pace.wait(ctx, i); err != nil {
			return res, err
		}
		skipPayload := pl.skipPayload != nil && pl.skipPayload[i]
		skipEvent := pl.skipEvent != nil && pl.skipEvent[i]
		if skipPayload && skipEvent {
			res.Skipped++
			continue
		}
		var event []byte
		if !skipEvent {
			ev := &messages.StatusEvent{
				Run:      run,
				Doc:      messages.DocID(i),
				DataType: oxytype.DataPayload,
				Outcome:  oxytype.Success,
				Origin:   f.origin,
				Facts:    oxytype.Facts{Payload: p.Redacted()},
				Time:     f.cfg.Now().UTC(),
			}
			data, err := ev.MarshalJSON()
			if err != nil {
				return res, fmt.Errorf("feeder: doc %d: %w", i, err)
			}
			event = data
			res.Events++
		}
		if skipPayload {
			if err := pub.event(ctx, event); err != nil {
				return res, err
			}
			continue
		}
		m, err := messages.NewMsg(&messages.Payload{Run: run, Doc: messages.DocID(i), Payload: p.JSON()}, f.origin)
		if err != nil {
			return res, fmt.Errorf("feeder: doc %d: %w", i, err)
		}
		if err := pub.payload(ctx, m, event); err != nil {
			return res, err
		}
		res.Payloads++
	}
	if err := pub.flush(ctx); err != nil {
		return res, err
	}
	f.cfg.Logger.Info("payloads fed", zap.String("run", run), zap.Int("payloads", res.Payloads), zap.Int("events", res.Events), zap.Int("skipped", res.Skipped))
	return res, nil
}
