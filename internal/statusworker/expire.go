package statusworker

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/zap"

	"github.com/oxypipe/oxypipe/internal/topology"
	"github.com/oxypipe/oxypipe/pkg/messages"
	"github.com/oxypipe/oxypipe/pkg/oxytype"
	"github.com/oxypipe/oxypipe/pkg/runlog"
)

// claimReaders bounds the claims read at once when a stopped run expires.
const claimReaders = 16

// publishWindow bounds the expiry events waiting for the broker at once.
const publishWindow = 256

// unfedGrace is how long past a stop's deadline a doc that has no record at
// all yet (its payload not fed: a feeder still publishing a large run) is
// waited for before it is recorded unsubmitted without its payload. With
// its payload in the run log, `oxy recover` can resubmit it.
const unfedGrace = 5 * time.Second

// expire ends a stopping run whose stop deadline has passed
// (messages.RunRecord.Expires): every doc still in flight is recorded as a
// hard failure, through the status stream like any stage's outcome, so that
// the ledger, the run's watchers and the run log all say the same thing:
//
//   - a doc with a job id (in the ledger, or in its claim) is unfetched with
//     that id: its result can be fetched later at no cost;
//   - a doc whose claim is held (a submission that may be in flight, or
//     that died inside its request) is unsubmitted and marked
//     may-have-billed (oxytype.ErrorInfo.MayHaveBilled), never plainly
//     unsubmitted;
//   - any other doc was never sent: unsubmitted, saying why the run stopped.
//
// It reports whether every doc is resolved, so that the run can be
// completed now. While the events it published are not yet applied it
// waits (false) rather than publish them again; docs not fed yet are waited
// for until unfedGrace past the deadline at.
func (w *StatusWorker) expire(ctx context.Context, e runEntry, at time.Time) (bool, error) {
	run := e.rec.Announced.Run
	if e.expirySeq > 0 {
		applied, err := w.ackedThrough(ctx, e.expirySeq)
		if err != nil {
			return false, err
		}
		if !applied {
			w.runs.later(run, w.cfg.MinCheckInterval)
			return false, nil
		}
	}
	var open []runlog.Doc
	unfed := 0
	waitUnfed := w.cfg.Now().Before(at.Add(unfedGrace))
	_, err := runlog.Visit(ctx, runlog.Spec{Total: e.rec.Announced.Total, FinalDataType: finalDataType(e.rec)}, w.source(run),
		func(d runlog.Doc) error {
			switch {
			case d.Resolved:
			case waitUnfed && len(d.Line.Payload) == 0 && d.Line.ID == nil:
				unfed++
			default:
				open = append(open, d)
			}
			return nil
		})
	if err != nil {
		return false, err
	}
	if len(open) == 0 {
		if unfed > 0 {
			w.runs.later(run, w.cfg.MinCheckInterval)
			return false, nil
		}
		return true, nil
	}
	evs, err := w.expiryEvents(ctx, e.rec, open)
	if err != nil {
		return false, err
	}
	seq, err := w.publishEvents(ctx, evs)
	if err != nil {
		return false, fmt.Errorf("recording the docs still in flight: %w", err)
	}
	w.runs.update(run, func(e *runEntry) { e.expirySeq = seq })
	var unfetched, unsubmitted, may int
	for _, ev := range evs {
		switch {
		case ev.State == oxytype.Unfetched:
			unfetched++
		case ev.Error.MayHaveBilled:
			may++
		default:
			unsubmitted++
		}
	}
	w.met.expiredDocs.Add(float64(len(evs)))
	w.log.Warn(fmt.Sprintf("run %s: its stop deadline passed with %d docs in flight: %d recorded unfetched with their ids, %d unsubmitted, %d unsubmitted that may have billed",
		run, len(evs), unfetched, unsubmitted, may), zap.String("run", run), zap.String("reason", e.rec.Reason))
	w.runs.later(run, w.cfg.MinCheckInterval)
	return false, nil
}

// expiryEvents builds the hard failure of each doc still in flight,
// reading the claims of those without a job id in the ledger.
func (w *StatusWorker) expiryEvents(ctx context.Context, rec messages.RunRecord, open []runlog.Doc) ([]*messages.StatusEvent, error) {
	run := rec.Announced.Run
	evs := make([]*messages.StatusEvent, len(open))
	errs := make([]error, len(open))
	sem := make(chan struct{}, claimReaders)
	var wg sync.WaitGroup
	for i, d := range open {
		if d.Line.ID != nil {
			evs[i] = w.expiryEvent(rec, d, nil)
			continue
		}
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			ref, err := w.cfg.Topology.Claims().Get(ctx, run, messages.DocID(d.Pos))
			switch {
			case errors.Is(err, topology.ErrNoClaim):
				evs[i] = w.expiryEvent(rec, d, nil)
			case err != nil:
				// Without the claim nobody can tell a payload never sent
				// from one whose POST is in flight: try again later rather
				// than guess.
				errs[i] = fmt.Errorf("reading the claim of doc %d: %w", d.Pos, err)
			default:
				evs[i] = w.expiryEvent(rec, d, &ref.Claim)
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return evs, nil
}

// expiryEvent is the hard failure of one doc still in flight when its run's
// stop expired; claim is the doc's claim when it was read (and exists).
func (w *StatusWorker) expiryEvent(rec messages.RunRecord, d runlog.Doc, claim *messages.Claim) *messages.StatusEvent {
	ev := &messages.StatusEvent{
		Run: rec.Announced.Run, Doc: messages.DocID(d.Pos), Outcome: oxytype.HardFailure,
		Origin: w.actor, Consumer: w.actor, Facts: oxytype.Facts{Payload: d.Line.Payload}, Time: w.cfg.Now().UTC(),
	}
	id := ""
	if d.Line.ID != nil {
		id = *d.Line.ID
	} else if claim != nil && claim.State == messages.ClaimSubmitted {
		id = claim.APIJobID
	}
	why := stopWhy(rec)
	switch {
	case id != "":
		// Recorded where the writer would have failed it: a later success
		// at the final data type (the file written after all) still wins.
		ev.DataType, ev.State, ev.APIJobID = oxytype.DataDone, oxytype.Unfetched, id
		ev.Error = &oxytype.ErrorInfo{Message: "the run was stopped before this job's result was written; it can be fetched by id at no cost"}
		ev.Reason = fmt.Sprintf("the run's stop deadline passed before job %s was written (stopped %s)", id, why)
	case claim != nil && claim.State == messages.ClaimHeld:
		ev.DataType, ev.State = oxytype.DataPayload, oxytype.Unsubmitted
		ev.Error = &oxytype.ErrorInfo{
			Message: fmt.Sprintf("the run was stopped while this payload's submission was in flight: its outcome is unknown; %s, so it is not resubmitted automatically",
				oxytype.MayHaveBilledText),
			MayHaveBilled: true,
		}
		ev.Reason = fmt.Sprintf("the run's stop deadline passed while %s held the payload's claim (since %s) without recording the API's answer (stopped %s)",
			claim.By, claim.ClaimedAt.UTC().Format(time.RFC3339Nano), why)
	default:
		ev.DataType, ev.State = oxytype.DataPayload, oxytype.Unsubmitted
		msg := rec.NotSubmitted()
		ev.Error = &oxytype.ErrorInfo{Message: msg}
		ev.Reason = msg
	}
	return ev
}

// stopWhy says who or what stopped the run, for the reasons of its docs'
// failures: "by the user", or "because a write to the destination failed:
// …".
func stopWhy(rec messages.RunRecord) string {
	if rec.Stop != nil && rec.Stop.Cause != messages.StopByUser && rec.Reason != "" {
		return "because " + messages.Because(rec.Reason)
	}
	return "by the user"
}

// publishEvents publishes the events on the status stream and returns the
// stream sequence of the last one stored.
func (w *StatusWorker) publishEvents(ctx context.Context, evs []*messages.StatusEvent) (uint64, error) {
	js := w.cfg.Topology.JetStream()
	var last uint64
	wait := func(futs []jetstream.PubAckFuture) error {
		for _, f := range futs {
			select {
			case ack := <-f.Ok():
				last = max(last, ack.Sequence)
			case err := <-f.Err():
				return err
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		return nil
	}
	futs := make([]jetstream.PubAckFuture, 0, publishWindow)
	for _, ev := range evs {
		msg, err := messages.NewMsg(ev, w.actor)
		if err != nil {
			return 0, err
		}
		f, err := js.PublishMsgAsync(msg)
		if err != nil {
			return 0, err
		}
		if futs = append(futs, f); len(futs) == publishWindow {
			if err := wait(futs); err != nil {
				return 0, err
			}
			futs = futs[:0]
		}
	}
	if err := wait(futs); err != nil {
		return 0, err
	}
	return last, nil
}

// ackedThrough reports whether every status event up to seq has been
// applied (the durable consumer's ack floor, shared by all replicas).
func (w *StatusWorker) ackedThrough(ctx context.Context, seq uint64) (bool, error) {
	info, err := w.consumer.Info(ctx)
	if err != nil {
		return false, fmt.Errorf("status consumer: %w", err)
	}
	return info.AckFloor.Stream >= seq, nil
}
