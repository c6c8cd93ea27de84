package stage

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/oxypipe/oxypipe/pkg/messages"
	"github.com/oxypipe/oxypipe/pkg/oxytype"
)

// Msg is one delivered message as a handler sees it. A Msg belongs to the
// handler call it was given to; do not keep it after the call returns.
type Msg struct {
	w    *Worker
	raw  jetstream.Msg
	meta *jetstream.MsgMetadata

	keyOnce sync.Once
	key     messages.Key

	mu      sync.Mutex
	futures []jetstream.PubAckFuture
	records []*recordBatch // the batches holding this message's events
	pubErr  error

	// settled is set by whoever settles the message (the handler's path or
	// the drain's release), so it is acked, termed or released exactly once.
	settled atomic.Bool
	// pins counts the handler's Pin calls not yet undone.
	pins atomic.Int32
	// handling is when the handler started, zero when it is not running
	// (guarded by w.mu; read by Live).
	handling time.Time
	// lastBeat is when the message was received or last sent InProgress
	// (guarded by w.mu).
	lastBeat time.Time
}

// Subject is the subject the message was published on.
func (m *Msg) Subject() string { return m.raw.Subject() }

// Data is the message body.
func (m *Msg) Data() []byte { return m.raw.Data() }

// Header is the message's headers (may be nil).
func (m *Msg) Header() nats.Header { return m.raw.Headers() }

// NumDelivered is how many times this message has been delivered, this
// delivery included (1 the first time).
func (m *Msg) NumDelivered() int {
	if m.meta == nil {
		return 1
	}
	return int(m.meta.NumDelivered)
}

// StreamSequence is the message's sequence in its stream (the version a
// ledger write is ordered by).
func (m *Msg) StreamSequence() uint64 {
	if m.meta == nil {
		return 0
	}
	return m.meta.Sequence.Stream
}

// Stream is the name of the message's stream.
func (m *Msg) Stream() string {
	if m.meta == nil {
		return ""
	}
	return m.meta.Stream
}

// Timestamp is when the message was stored in its stream.
func (m *Msg) Timestamp() time.Time {
	if m.meta == nil {
		return time.Time{}
	}
	return m.meta.Timestamp
}

// Origin is the message's producer, from its Oxy-Origin header.
func (m *Msg) Origin() oxytype.Party { return messages.OriginOf(m.raw.Headers()) }

// Key is what can be read of the message's identity (run, doc, attempt,
// API job id, payload) without decoding it; see messages.Peek.
func (m *Msg) Key() messages.Key {
	m.keyOnce.Do(func() { m.key = messages.Peek(m.raw.Subject(), m.raw.Data()) })
	return m.key
}

// Pin tells the runtime that the handler holds, for this message,
// something that exists nowhere else yet — the submitter's job id, returned
// by the API and not yet stored under its claim — and is working to store
// it. Until the returned function is called (it may be called more than
// once), a drain that runs out of time does not release the message but
// waits for its handler however long it takes, and Live does not call the
// worker stuck: a restart would lose what only this process holds.
func (m *Msg) Pin() (unpin func()) {
	m.pins.Add(1)
	m.w.pinned.Add(1)
	var once sync.Once
	return func() {
		once.Do(func() {
			m.pins.Add(-1)
			m.w.pinned.Add(-1)
		})
	}
}

// Publish sends an output envelope (a Submitted, a Done, a RunCompleted, …)
// with this stage as its origin. It returns at once; the runtime waits for
// the broker to store it before the input message is settled, and
// redelivers the input if it was not stored. The error is for a message that
// could not even be sent (encoding, a closed connection).
func (m *Msg) Publish(e messages.Envelope) error {
	nm, err := messages.NewMsg(e, m.w.actor)
	if err != nil {
		return fmt.Errorf("stage: encode %T: %w", e, err)
	}
	return m.publish(nm)
}

// Record publishes a status event about this message's doc, in a batch
// with the other events the worker records within Config.RecordLinger (see
// recorder); like Publish, it returns at once and the message is settled
// only once the batch is stored. Unset fields are filled in: Run, and Doc
// with Attempt, from the message (Key; set them
// yourself when you decoded the message, it saves a parse), Origin as this
// stage, Time as now. The event's Outcome and DataType must be set.
func (m *Msg) Record(ev *messages.StatusEvent) error {
	if ev.Outcome == "" || ev.DataType == "" {
		return fmt.Errorf("stage: Record needs an Outcome and a DataType")
	}
	if ev.Run == "" || ev.Doc == "" {
		k := m.Key()
		if ev.Run == "" {
			ev.Run = k.Run
		}
		if ev.Doc == "" {
			ev.Doc, ev.Attempt = k.Doc, k.Attempt
		}
	}
	if ev.Origin == (oxytype.Party{}) {
		ev.Origin = m.w.actor
	}
	if ev.Time.IsZero() {
		ev.Time = time.Now().UTC()
	}
	if ev.Run == "" || ev.Doc == "" {
		return errNoRun
	}
	data, err := ev.MarshalJSON()
	if err != nil {
		return fmt.Errorf("stage: encode a status event: %w", err)
	}
	b := m.w.rec.add(ev.Run, data)
	m.mu.Lock()
	m.records = append(m.records, b)
	m.mu.Unlock()
	return nil
}

func (m *Msg) publish(nm *nats.Msg) error {
	f, err := m.w.js.PublishMsgAsync(nm)
	m.mu.Lock()
	defer m.mu.Unlock()
	if err != nil {
		err = fmt.Errorf("stage: publish to %s: %w", nm.Subject, err)
		if m.pubErr == nil {
			m.pubErr = err
		}
		return err
	}
	m.futures = append(m.futures, f)
	return nil
}

// flush waits until every publish of this message is stored, or fails, or
// the deadline passes.
func (m *Msg) flush(deadline time.Time) error {
	timeout := time.NewTimer(time.Until(deadline))
	defer timeout.Stop()
	m.mu.Lock()
	futures, records, pubErr := m.futures, m.records, m.pubErr
	m.futures, m.records = nil, nil
	m.mu.Unlock()
	if pubErr != nil {
		return pubErr
	}
	for _, b := range records {
		if err := b.wait(timeout.C, m.w.cfg.PublishTimeout); err != nil {
			return err
		}
	}
	for _, f := range futures {
		select {
		case <-f.Ok():
		case err := <-f.Err():
			return fmt.Errorf("stage: publish to %s: %w", f.Msg().Subject, err)
		case <-timeout.C:
			return fmt.Errorf("stage: publish to %s: not stored within %v", f.Msg().Subject, m.w.cfg.PublishTimeout)
		}
	}
	return nil
}
