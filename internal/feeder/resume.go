package feeder

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/zap"

	"github.com/oxypipe/oxypipe/internal/topology"
	"github.com/oxypipe/oxypipe/pkg/messages"
	"github.com/oxypipe/oxypipe/pkg/oxytype"
)

// Resume feeds what a killed feeder left unfed for run: src must hold the
// run's payloads (the same input, in the same order). See the package
// documentation for how fed docs are found and why nothing bills twice.
//
// It fails with an error wrapping oxytype.ErrRunCompleted when the run already
// completed (nothing to feed), oxytype.ErrInputMismatch when src has another number
// of payloads than the run, a *oxytype.RunFailedError for a run that failed to
// start, and oxytype.ErrRunNotFound for an unknown run. A run still waiting
// for its statusworker is waited for as Announce does.
func (f *Feeder) Resume(ctx context.Context, run string, src Source) (FeedResult, error) {
	ref, err := f.cfg.Topology.Runs().Get(ctx, run)
	if err != nil {
		return FeedResult{}, fmt.Errorf("feeder: resume run %s: %w", run, err)
	}
	if err := runStateError(run, &ref.Record); err != nil {
		return FeedResult{}, err
	}
	total := ref.Record.Announced.Total
	if src.Len() != total {
		return FeedResult{}, fmt.Errorf("feeder: resume run %s: %w: %d payloads given, the run has %d", run, oxytype.ErrInputMismatch, src.Len(), total)
	}
	if ref.Record.State == oxytype.RunStateAnnounced {
		if err := f.waitReady(ctx, run); err != nil {
			return FeedResult{}, err
		}
	}
	pl, err := f.fedDocs(ctx, run, total)
	if err != nil {
		return FeedResult{}, err
	}
	res, err := f.feed(ctx, run, src, pl)
	if err == nil {
		f.cfg.Logger.Info("run resumed", zap.String("run", run), zap.Int("payloads", res.Payloads), zap.Int("events", res.Events), zap.Int("skipped", res.Skipped))
	}
	return res, err
}

// fedDocs finds which docs of a run the pipeline already has: those with a
// success event at "payload" (skip everything), and those the submitter
// already saw, by an event of a later stage or a claim (skip the payload).
func (f *Feeder) fedDocs(ctx context.Context, run string, total int) (plan, error) {
	pl := plan{skipPayload: make([]bool, total), skipEvent: make([]bool, total)}
	if total == 0 {
		return pl, nil
	}
	if err := f.scanStatus(ctx, run, func(ev *messages.StatusEvent) {
		pos, err := messages.ParseDocID(ev.Doc)
		if err != nil || pos >= total {
			return
		}
		if ev.DataType == oxytype.DataPayload && ev.Outcome == oxytype.Success {
			pl.skipEvent[pos] = true
			pl.skipPayload[pos] = true
			return
		}
		pl.skipPayload[pos] = true // a stage after the feeder saw the doc
	}); err != nil {
		return plan{}, err
	}
	if err := f.scanClaims(ctx, run, func(pos int) {
		if pos < total {
			pl.skipPayload[pos] = true
		}
	}); err != nil {
		return plan{}, err
	}
	return pl, nil
}

// scanStatus calls fn with every status event of the run stored so far.
func (f *Feeder) scanStatus(ctx context.Context, run string, fn func(*messages.StatusEvent)) error {
	js := f.cfg.Topology.JetStream()
	subject := messages.StatusSubject(run)
	stream, err := js.Stream(ctx, topology.StreamStatus)
	if err != nil {
		return fmt.Errorf("feeder: resume: %w", err)
	}
	last, err := stream.GetLastMsgForSubject(ctx, subject)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("feeder: resume: %w", err)
	}
	cons, err := js.OrderedConsumer(ctx, topology.StreamStatus, jetstream.OrderedConsumerConfig{FilterSubjects: []string{subject}})
	if err != nil {
		return fmt.Errorf("feeder: resume: %w", err)
	}
	it, err := cons.Messages()
	if err != nil {
		return fmt.Errorf("feeder: resume: %w", err)
	}
	defer it.Stop()
	for {
		msg, err := it.Next(jetstream.NextContext(ctx))
		if err != nil {
			return fmt.Errorf("feeder: resume: read status events: %w", err)
		}
		for ev, err := range messages.StatusEvents(msg.Subject(), msg.Data()) {
			if err == nil {
				fn(ev)
			}
		}
		meta, err := msg.Metadata()
		if err != nil {
			return fmt.Errorf("feeder: resume: %w", err)
		}
		if meta.Sequence.Stream >= last.Sequence {
			return nil
		}
	}
}

// scanClaims calls fn with the position of every doc of the run that has a
// claim (its own, or in the run's settled record).
func (f *Feeder) scanClaims(ctx context.Context, run string, fn func(pos int)) error {
	if err := f.cfg.Topology.Claims().ScanRun(ctx, run, fn); err != nil {
		return fmt.Errorf("feeder: resume: %w", err)
	}
	return nil
}
