package stage

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime/debug"
	"time"
	"unicode/utf8"

	"go.uber.org/zap"

	"github.com/oxypipe/oxypipe/internal/redact"
	"github.com/oxypipe/oxypipe/pkg/messages"
	"github.com/oxypipe/oxypipe/pkg/oxytype"
)

// action is how a message is settled once its publishes are stored.
type action int

const (
	actAck action = iota
	actNak
	actTerm
)

// plan is the decided settlement of one message.
type plan struct {
	act     action
	delay   time.Duration
	event   *messages.StatusEvent
	outcome string
	reason  string
}

// runUnit runs the handler on a group of messages and settles each.
func (w *Worker) runUnit(workCtx context.Context, group []*Msg) {
	start := time.Now()
	w.mu.Lock()
	for _, m := range group {
		m.handling = start
	}
	w.mu.Unlock()

	ctx, cancel := context.WithTimeout(workCtx, w.cfg.Consumer.HandlerTimeout)
	errs := w.call(ctx, group)
	cancel()
	w.met.handle.Observe(time.Since(start).Seconds())

	w.mu.Lock()
	for _, m := range group {
		m.handling = time.Time{}
	}
	w.mu.Unlock()

	for i, m := range group {
		var err error
		if i < len(errs) {
			err = errs[i]
		}
		w.settle(m, w.decide(workCtx, m, err))
	}
}

// call runs the handler, turning a panic into an error (a bug in one
// message's handling must not take the worker down) and checking the
// batch handler's answer.
func (w *Worker) call(ctx context.Context, group []*Msg) (errs []error) {
	defer func() {
		if r := recover(); r != nil {
			w.log.Error("handler panicked", zap.String("panic", redact.String(fmt.Sprint(r))), zap.ByteString("stack", debug.Stack()))
			err := fmt.Errorf("handler panicked: %v", r)
			errs = make([]error, len(group))
			for i := range errs {
				errs[i] = err
			}
		}
	}()
	errs = w.handle(ctx, group)
	if errs != nil && len(errs) != len(group) {
		err := fmt.Errorf("batch handler returned %d results for %d messages", len(errs), len(group))
		w.log.Error("handler bug", zap.Error(err))
		errs = make([]error, len(group))
		for i := range errs {
			errs[i] = err
		}
	}
	return errs
}

// decide turns a handler's error into a plan.
func (w *Worker) decide(workCtx context.Context, m *Msg, err error) plan {
	var (
		decodeErr *messages.DecodeError
		hardErr   *HardError
		waitErr   *WaitError
		retryErr  *RetryError
	)
	switch {
	case err == nil:
		return plan{act: actAck, outcome: outcomeAck}
	case errors.As(err, &decodeErr):
		reason := decodeErr.Error()
		ev := w.failureEvent(m, oxytype.HardFailure, reason, nil, "", "")
		return plan{act: actTerm, event: ev, outcome: outcomeMalformed, reason: reason}
	case errors.As(err, &hardErr):
		ev := w.failureEvent(m, oxytype.HardFailure, hardErr.Reason, hardErr.Info, hardErr.State, hardErr.APIJobID)
		ev.Upload = hardErr.Upload
		return plan{act: actTerm, event: ev, outcome: outcomeHardFailure, reason: hardErr.Reason}
	case errors.As(err, &waitErr):
		return plan{act: actNak, delay: waitErr.Delay, outcome: outcomeWait}
	case workCtx.Err() != nil:
		// The drain ran out of time and cancelled the handler: not a failure
		// of the message, give it back.
		return plan{act: actNak, outcome: outcomeReleased, reason: "drain timeout"}
	}
	var reason string
	var info *oxytype.ErrorInfo
	var delay time.Duration
	if errors.As(err, &retryErr) {
		reason, info, delay = retryErr.Reason, retryErr.Info, retryErr.Delay
	} else {
		reason = err.Error()
		if errors.Is(err, context.DeadlineExceeded) {
			reason = fmt.Sprintf("handler timed out after %v: %s", w.cfg.Consumer.HandlerTimeout, reason)
		}
	}
	n := m.NumDelivered()
	if limit := w.cfg.Consumer.MaxDeliver; limit > 0 && n >= limit {
		return w.deadLetterPlan(workCtx, m, reason, info)
	}
	if delay <= 0 {
		delay = w.backoff(n)
	}
	var ev *messages.StatusEvent
	if !w.ownStream() {
		ev = w.failureEvent(m, oxytype.SoftFailure, reason, info, "", "")
	}
	return plan{act: actNak, delay: delay, event: ev, outcome: outcomeRetry, reason: reason}
}

// deadLetterPlan records a poison message as a hard failure.
func (w *Worker) deadLetterPlan(ctx context.Context, m *Msg, lastReason string, info *oxytype.ErrorInfo) plan {
	reason := fmt.Sprintf("poison message: delivered %d times", m.NumDelivered())
	if info == nil {
		msg := reason
		if lastReason != "" {
			msg += "; last error: " + lastReason
		}
		info = &oxytype.ErrorInfo{Message: msg}
	}
	ev := w.failureEvent(m, oxytype.HardFailure, reason, info, "", "")
	if w.dead != nil {
		var waitErr *WaitError
		err := w.dead.DeadLetter(ctx, m, ev)
		if errors.As(err, &waitErr) {
			return plan{act: actNak, delay: waitErr.Delay, outcome: outcomeWait}
		}
		if err != nil {
			w.log.Warn("dead-letter hook failed; recording the dead letter as it stands", w.msgFields(m, zap.Error(err))...)
		}
	}
	return plan{act: actTerm, event: ev, outcome: outcomeDeadLetter, reason: reason}
}

// deadLetterUnhandled settles a message delivered more than MaxDeliver
// times (its worker kept dying on it) without calling the handler.
func (w *Worker) deadLetterUnhandled(workCtx context.Context, m *Msg) {
	w.settle(m, w.deadLetterPlan(workCtx, m, "", nil))
}

// backoff is the jittered RetryBackoff delay for the n-th delivery.
func (w *Worker) backoff(n int) time.Duration {
	steps := w.cfg.Consumer.RetryBackoff
	d := steps[min(max(n-1, 0), len(steps)-1)]
	return time.Duration(float64(d) * (0.8 + 0.4*rand.Float64()))
}

// failureEvent builds the status event of a failed message.
func (w *Worker) failureEvent(m *Msg, outcome oxytype.Outcome, reason string, info *oxytype.ErrorInfo, state oxytype.State, apiJobID string) *messages.StatusEvent {
	return w.partFailureEvent(m, m.Key(), -1, outcome, reason, info, state, apiJobID)
}

// partFailureEvent builds the status event of a failed message, or of its
// part-th part (from 0; -1 for the whole message), whose key is k. A key
// that names no run or doc is recorded under messages.UnknownRun and the
// message's (or part's) messages.UnknownDocID, so the failure is never lost.
func (w *Worker) partFailureEvent(m *Msg, k messages.Key, part int, outcome oxytype.Outcome, reason string, info *oxytype.ErrorInfo, state oxytype.State, apiJobID string) *messages.StatusEvent {
	run := k.Run
	if run == "" {
		run = messages.UnknownRun
	}
	doc := k.Doc
	switch {
	case doc != "":
	case part >= 0:
		doc = messages.UnknownBatchDocID(m.Stream(), m.StreamSequence(), part)
	default:
		doc = messages.UnknownDocID(m.Stream(), m.StreamSequence())
	}
	if apiJobID == "" {
		apiJobID = k.APIJobID
	}
	origin := m.Origin()
	if origin == (oxytype.Party{}) {
		origin = oxytype.Party{Type: "unknown"}
	}
	ev := &messages.StatusEvent{
		Run: run, Doc: doc, Attempt: k.Attempt,
		DataType: w.cfg.Consumer.InputDataType, Outcome: outcome,
		Origin: origin, Consumer: w.actor, RetryCount: m.NumDelivered(),
		Reason: reason, Facts: oxytype.Facts{Error: info, APIJobID: apiJobID, Payload: k.Payload},
		Time: time.Now().UTC(),
	}
	if outcome == oxytype.HardFailure {
		ev.State = state
		if ev.State == "" {
			ev.State = messages.FailureState(apiJobID)
		}
	}
	return ev
}

// RecordMalformedPart records the hard failure of the i-th part (from 0) of
// m, one event of a status batch message, that does not decode (err), as the
// stage records a whole message that does not decode: under the run and doc
// err names when it is a *messages.DecodeError that names them, else under
// m's run and the part's messages.UnknownBatchDocID. about is the data type
// the part's event was about: a stage that consumes the status stream
// records nothing for a part about a status event, which could loop (it
// returns nil, as for a whole message the failure is logged only).
func (m *Msg) RecordMalformedPart(i int, about oxytype.DataType, err error) error {
	w := m.w
	if w.ownStream() && about == oxytype.DataStatus {
		return nil
	}
	k := messages.Key{Run: m.Key().Run}
	var de *messages.DecodeError
	if errors.As(err, &de) {
		if de.Run != "" {
			k.Run = de.Run
		}
		k.Doc = de.Doc
	}
	ev := w.partFailureEvent(m, k, i, oxytype.HardFailure, err.Error(), nil, "", "")
	w.fit(ev)
	return m.Record(ev)
}

// ownStream reports whether this stage consumes the status stream that its
// failure events go to (the statusworker). Such a stage records no soft
// failures (a ledger outage would turn every failing event into another
// failing event) and no failure about a failure of a status event (which
// could loop); those are logged and counted only.
func (w *Worker) ownStream() bool {
	return w.cfg.Consumer.InputDataType == oxytype.DataStatus
}

// settle publishes the plan's event, waits for every publish of the
// message, and then acks, naks or terms it — exactly once.
func (w *Worker) settle(m *Msg, p plan) {
	if p.event != nil && w.ownStream() && m.Key().DataType == oxytype.DataStatus {
		w.log.Error("not recording a failure of a status-event failure (it could loop)",
			w.msgFields(m, zap.String("outcome", p.outcome), zap.String("reason", redact.String(p.reason)))...)
		p.event = nil
	}
	if p.event != nil {
		w.fit(p.event)
		if err := m.Publish(p.event); err != nil {
			w.log.Debug("status event not sent", zap.Error(err))
		}
	}
	if err := m.flush(time.Now().Add(w.cfg.PublishTimeout)); err != nil {
		w.log.Error("outputs not stored; the message will be redelivered",
			w.msgFields(m, zap.Error(err), zap.Duration("retry_in", w.cfg.PublishRetryDelay))...)
		p = plan{act: actNak, delay: w.cfg.PublishRetryDelay, outcome: outcomePublishError}
	}
	if !m.settled.CompareAndSwap(false, true) {
		return // released by the drain meanwhile
	}
	var err error
	switch p.act {
	case actAck:
		err = m.raw.Ack()
	case actNak:
		if p.delay > 0 {
			err = m.raw.NakWithDelay(p.delay)
		} else {
			err = m.raw.Nak()
		}
	case actTerm:
		err = m.raw.TermWithReason(truncate(redact.String(p.reason), 200))
	}
	if err != nil {
		w.log.Warn("settling failed; the message comes back after AckWait", w.msgFields(m, zap.String("outcome", p.outcome), zap.Error(err))...)
	}
	switch p.outcome {
	case outcomeAck, outcomeWait:
		if w.log.Core().Enabled(zap.DebugLevel) { // msgFields peeks into the body
			w.log.Debug("settled", w.msgFields(m, zap.String("outcome", p.outcome), zap.Duration("delay", p.delay))...)
		}
	case outcomeRetry, outcomeReleased:
		w.log.Info("will retry", w.msgFields(m, zap.String("outcome", p.outcome), zap.Duration("delay", p.delay), zap.String("reason", redact.String(p.reason)))...)
	case outcomePublishError:
	default:
		w.log.Warn("hard failure", w.msgFields(m, zap.String("outcome", p.outcome), zap.String("reason", redact.String(p.reason)))...)
	}
	w.finish(m, p.outcome)
}

// eventHeadroom is what a status event's headers may take, when fit checks
// it against the broker's message size.
const eventHeadroom = 8 << 10

// maxEventText bounds a reason or error message of an event fit shrinks.
const maxEventText = 4 << 10

// fit makes a failure event fit the broker's message size. A payload near
// the limit echoed in a reason (a rejection names the payload's input)
// would make the event unpublishable: its message would be redelivered
// until dead-lettered as something it is not. Such an event goes without
// its copy of the payload (the feeder's event recorded the doc's payload,
// and the ledger keeps it) and with its texts cut short.
func (w *Worker) fit(ev *messages.StatusEvent) {
	limit := int(w.cfg.Conn.MaxPayload()) - eventHeadroom
	size := len(ev.Payload) + len(ev.Reason)
	if ev.Error != nil {
		size += len(ev.Error.Message)
	}
	if limit <= 0 || size <= limit/8 {
		return // the common event: far below the limit however it is escaped
	}
	if data, err := ev.MarshalJSON(); err == nil && len(data) <= limit {
		return
	}
	ev.Payload = nil
	ev.Reason = shorten(ev.Reason, maxEventText)
	if ev.Error != nil {
		e := *ev.Error
		e.Message = shorten(e.Message, maxEventText)
		ev.Error = &e
	}
}

// shorten cuts s to at most n bytes on a rune boundary, marking the cut.
func shorten(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n - len("…")
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// heartbeats sends InProgress for every held message that has not had one
// (or its delivery) for Config.Heartbeat, until ctx is done. One goroutine
// serves all messages: a message is worst-case 1.5 Heartbeat between beats,
// half its AckWait with the defaults.
func (w *Worker) heartbeats(ctx context.Context) {
	t := time.NewTicker(w.cfg.Heartbeat / 2)
	defer t.Stop()
	var due []*Msg
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			due = due[:0]
			w.mu.Lock()
			for m := range w.held {
				if now.Sub(m.lastBeat) >= w.cfg.Heartbeat {
					m.lastBeat = now
					due = append(due, m)
				}
			}
			w.mu.Unlock()
			for _, m := range due {
				if m.settled.Load() {
					continue
				}
				if err := m.raw.InProgress(); err != nil {
					w.log.Debug("heartbeat failed", w.msgFields(m, zap.Error(err))...)
				}
			}
		}
	}
}

func (w *Worker) msgFields(m *Msg, extra ...zap.Field) []zap.Field {
	k := m.Key()
	return append([]zap.Field{
		zap.String("subject", m.Subject()), zap.String("run", k.Run), zap.String("doc", k.Doc),
		zap.Uint64("seq", m.StreamSequence()), zap.Int("delivered", m.NumDelivered()),
	}, extra...)
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}
