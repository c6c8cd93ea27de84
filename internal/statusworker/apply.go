package statusworker

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.uber.org/zap"

	"github.com/oxypipe/oxypipe/internal/redact"
	"github.com/oxypipe/oxypipe/internal/stage"
	"github.com/oxypipe/oxypipe/pkg/jobresults"
	"github.com/oxypipe/oxypipe/pkg/messages"
	"github.com/oxypipe/oxypipe/pkg/oxytype"
	"github.com/oxypipe/oxypipe/pkg/retry"
)

// handleBatch is the stage's batch handler: decode every event, write the
// good ones to the ledger in one versioned batch, and settle each.
//
//   - A malformed event returns its *messages.DecodeError: the runtime
//     terminates it and records a hard failure about it (at data type
//     "status"; never about an event that is itself about "status", so the
//     worker cannot loop on its own failures).
//   - A decoded event is acked (nil) only once the batch write succeeded.
//   - When the ledger stays unavailable beyond Config.WriteRetry, every
//     decoded event of the batch is given back for redelivery
//     (stage.RetryAfter, no event recorded): a ledger outage delays events
//     and loses none.
func (w *StatusWorker) handleBatch(ctx context.Context, batch []*stage.Msg) []error {
	errs := make([]error, len(batch))
	split := make([][][]byte, len(batch)) // each message's events
	n := 0
	for i, m := range batch {
		elems, err := messages.SplitStatusEvents(m.Subject(), m.Data())
		if err != nil {
			errs[i] = w.malformed(m, err)
			continue
		}
		split[i] = elems
		n += len(elems)
	}
	entries := make([]jobresults.Entry, 0, n)
	idx := make([]int, 0, n) // entries[j] comes from batch[idx[j]]
	at := make([]int, 0, n)  // … where it is the at[j]-th event
	for i, m := range batch {
		for k, data := range split[i] {
			ev, err := messages.DecodeStatusEvent(m.Subject(), data)
			if err != nil {
				if !messages.IsStatusBatch(m.Data()) { // a single event: the whole message
					errs[i] = w.malformed(m, err)
				} else {
					w.malformedInBatch(m, k, messages.Peek(m.Subject(), data).DataType, err)
				}
				continue
			}
			if w.cfg.Observe != nil {
				w.cfg.Observe(ev)
			}
			entries = append(entries, toEntry(ev, messages.StatusVersion(m.StreamSequence(), k)))
			idx = append(idx, i)
			at = append(at, k)
		}
	}
	if len(entries) == 0 {
		return errs
	}
	applied, err := w.write(ctx, entries)
	switch {
	case err == nil:
		w.applied(batch, idx, entries, applied)
	case errors.Is(err, jobresults.ErrTransient) || ctx.Err() != nil:
		w.giveBack(idx, errs, err)
	default:
		// A permanent error in a batch: write the events one by one, so
		// that one bad event does not hold up the others.
		w.isolate(ctx, batch, idx, at, entries, errs)
	}
	return errs
}

// write applies entries with Config.WriteRetry on transient errors.
func (w *StatusWorker) write(ctx context.Context, entries []jobresults.Entry) (int, error) {
	p := w.cfg.WriteRetry
	onRetry := p.OnRetry
	p.OnRetry = func(attempt int, err error, delay time.Duration) {
		w.met.retries.Inc()
		w.log.Warn("ledger write failed; retrying", zap.Int("attempt", attempt), zap.Int("events", len(entries)),
			zap.Duration("delay", delay), zap.String("error", redact.String(err.Error())))
		if onRetry != nil {
			onRetry(attempt, err, delay)
		}
	}
	var applied int
	err := retry.Do(ctx, p, func(ctx context.Context) error {
		start := time.Now()
		n, err := w.cfg.Ledger.Apply(ctx, entries)
		w.met.writeTime.Observe(time.Since(start).Seconds())
		applied = n
		return err
	})
	return applied, err
}

// applied accounts for a successful write and asks the runs it touched for a
// completion check.
func (w *StatusWorker) applied(batch []*stage.Msg, idx []int, entries []jobresults.Entry, applied int) {
	now := time.Now()
	for _, i := range idx {
		lag := now.Sub(batch[i].Timestamp())
		w.met.lag.Observe(lag.Seconds())
		if w.observeLag != nil {
			w.observeLag(lag)
		}
	}
	w.met.events.WithLabelValues("applied").Add(float64(applied))
	w.met.events.WithLabelValues("stale").Add(float64(len(entries) - applied))
	var last string
	for _, e := range entries {
		if e.Run != last { // batches are mostly one run's events in a row
			w.runs.touch(e.Run)
			last = e.Run
		}
	}
}

// giveBack settles the decoded events of a batch whose write failed for
// redelivery.
func (w *StatusWorker) giveBack(idx []int, errs []error, err error) {
	reason := "ledger write failed: " + redact.String(err.Error())
	w.log.Error("ledger unavailable; the batch's events will be redelivered", zap.Int("events", len(idx)), zap.String("error", redact.String(err.Error())))
	for _, i := range idx {
		errs[i] = stage.RetryAfter(0, reason)
	}
}

// isolate writes entries one at a time after a permanent batch error: an
// entry the ledger refuses as invalid is treated as a malformed event; any
// other failure gives the event's message back for redelivery (its other
// events are written again then, which changes nothing).
func (w *StatusWorker) isolate(ctx context.Context, batch []*stage.Msg, idx, at []int, entries []jobresults.Entry, errs []error) {
	retried := make(map[int]bool)
	for k, e := range entries {
		i := idx[k]
		n, err := w.write(ctx, []jobresults.Entry{e})
		switch {
		case err == nil:
			w.applied(batch, []int{i}, []jobresults.Entry{e}, n)
		case errors.Is(err, jobresults.ErrInvalidInput):
			m := batch[i]
			de := &messages.DecodeError{
				Subject: m.Subject(), Kind: messages.KindStatus, Run: e.Run, Doc: e.DocID,
				Reason: "the ledger refused the event: " + redact.String(err.Error()),
			}
			switch {
			case messages.IsStatusBatch(m.Data()):
				w.malformedInBatch(m, at[k], oxytype.DataType(e.DataType), de)
			case !retried[i]:
				errs[i] = w.malformed(m, de)
			}
		default:
			retried[i] = true
			errs[i] = stage.RetryAfter(0, "ledger write failed: "+redact.String(err.Error()))
			w.log.Error("ledger refused an event; it will be redelivered", zap.Uint64("seq", batch[i].StreamSequence()),
				zap.String("run", e.Run), zap.String("doc", e.DocID), zap.String("error", redact.String(err.Error())))
		}
	}
}

// malformed logs and counts an event that cannot be applied and returns
// the error that makes the runtime terminate it and record why.
func (w *StatusWorker) malformed(m *stage.Msg, err error) error {
	w.met.events.WithLabelValues("malformed").Inc()
	w.log.Error("malformed status event; it is terminated and recorded as a hard failure",
		zap.String("subject", m.Subject()), zap.Uint64("seq", m.StreamSequence()),
		zap.String("reason", redact.String(err.Error())))
	var de *messages.DecodeError
	if !errors.As(err, &de) {
		return &messages.DecodeError{Subject: m.Subject(), Kind: messages.KindStatus, Reason: redact.String(err.Error())}
	}
	return err
}

// malformedInBatch logs and counts the k-th event of a batch message that
// cannot be applied, and records a hard failure about it, at data type
// "status", under its doc (or an unknown-doc id of its own; see
// stage.Msg.RecordMalformedPart). The message itself is acked with the
// batch's other events: terminating it would lose them. No failure is
// recorded about an event that is itself about "status", so the worker
// cannot loop on its own failures.
func (w *StatusWorker) malformedInBatch(m *stage.Msg, k int, about oxytype.DataType, err error) {
	w.met.events.WithLabelValues("malformed").Inc()
	reason := redact.String(err.Error())
	w.log.Error("malformed event in a status batch; it is recorded as a hard failure",
		zap.String("subject", m.Subject()), zap.Uint64("seq", m.StreamSequence()), zap.Int("index", k),
		zap.String("reason", reason))
	if err := m.RecordMalformedPart(k, about, err); err != nil {
		w.log.Error("could not record the failure of a malformed event", zap.Error(err))
	}
}

// toEntry turns a status event into a versioned ledger entry: its version
// is the event's place in the stream (messages.StatusVersion), so a
// duplicate or an older event never overwrites a newer outcome (successes
// excepted: see below).
func toEntry(ev *messages.StatusEvent, version uint64) jobresults.Entry {
	e := jobresults.Entry{
		Key:        jobresults.Key{Run: ev.Run, DataType: string(ev.DataType), DocID: ev.Doc},
		Outcome:    ev.Outcome,
		Origin:     ev.Origin,
		Consumer:   ev.Consumer,
		RetryCount: max(ev.RetryCount, 0),
		Reason:     ev.Reason,
		Version:    version,
		Time:       ev.Time,
		Facts:      ev.Facts,
	}
	if ev.Outcome == oxytype.Success {
		// A success at a data type is its producer's (the feeder's "fed",
		// the submitter's "submitted", …), and everything else recorded
		// there is its consumer's failure to handle that message: causally
		// later, though not always later in the stream. The producer
		// publishes its event once its message is stored, and the consumer
		// may fail the message first (the submitter rejecting a payload or
		// stopping with the run): with its own, later sequence the success
		// would then overwrite the hard failure, leave the doc unfinished
		// and the run open for ever. A success is never news to a record
		// something else wrote, so it gets the lowest version: it applies to
		// a record nothing has written yet, and only there.
		e.Version = 1
	}
	if e.Outcome != oxytype.Success && e.Reason == "" {
		switch {
		case ev.Error != nil && ev.Error.String() != "":
			e.Reason = ev.Error.String()
		default:
			e.Reason = fmt.Sprintf("%s at %s (no reason given)", ev.Outcome, ev.DataType)
		}
	}
	return e
}
