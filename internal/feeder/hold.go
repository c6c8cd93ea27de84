package feeder

import (
	"context"
	"fmt"

	"github.com/oxypipe/oxypipe/pkg/messages"
	"github.com/oxypipe/oxypipe/pkg/oxytype"
)

// FeedDocs is Feed for the docs keep selects: the others are left for a
// later FeedDocs or HoldBack of the same run, which must follow, or the run
// never completes. (A storage check feeds the first payload per location,
// waits for its upload, then feeds or holds back the rest.)
func (f *Feeder) FeedDocs(ctx context.Context, run string, src Source, keep func(doc int) bool) (FeedResult, error) {
	return f.feed(ctx, run, src, selected(src.Len(), keep))
}

// HoldBack records the docs hold selects unsubmitted without feeding them:
// each gets its success at "payload" (so that the run log has its payload)
// and a hard failure at "payload" with state unsubmitted and reason. Nothing
// is submitted, so nothing bills.
func (f *Feeder) HoldBack(ctx context.Context, run string, src Source, hold func(doc int) bool, reason string) (FeedResult, error) {
	if err := messages.ValidateRunID(run); err != nil {
		return FeedResult{}, fmt.Errorf("feeder: %w", err)
	}
	pub := f.newPublisher(run)
	var res FeedResult
	doc := 0
	for p, err := range src.All() {
		if err != nil {
			return res, err
		}
		i := doc
		doc++
		if !hold(i) {
			continue
		}
		now := f.cfg.Now().UTC()
		fed := &messages.StatusEvent{
			Run: run, Doc: messages.DocID(i), DataType: oxytype.DataPayload, Outcome: oxytype.Success,
			Origin: f.origin, Facts: oxytype.Facts{Payload: p.Redacted()}, Time: now,
		}
		held := &messages.StatusEvent{
			Run: run, Doc: messages.DocID(i), DataType: oxytype.DataPayload, Outcome: oxytype.HardFailure,
			Origin: f.origin, Consumer: f.origin, RetryCount: 1, Reason: reason, Time: now,
			Facts: oxytype.Facts{Error: &oxytype.ErrorInfo{Message: reason}, State: oxytype.Unsubmitted, Payload: p.Redacted()},
		}
		for _, ev := range []*messages.StatusEvent{fed, held} {
			data, err := ev.MarshalJSON()
			if err != nil {
				return res, fmt.Errorf("feeder: doc %d: %w", i, err)
			}
			if err := pub.event(ctx, data); err != nil {
				return res, err
			}
			res.Events++
		}
	}
	return res, pub.flush(ctx)
}

// selected is the plan that feeds only the docs keep selects.
func selected(n int, keep func(doc int) bool) plan {
	pl := plan{skipPayload: make([]bool, n), skipEvent: make([]bool, n)}
	for i := range n {
		skip := !keep(i)
		pl.skipPayload[i], pl.skipEvent[i] = skip, skip
	}
	return pl
}
