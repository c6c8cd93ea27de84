package messages

import (
	"fmt"
	"iter"
	"strconv"

	"github.com/nats-io/nats.go"

	"github.com/oxypipe/oxypipe/internal/jsonscan"
	"github.com/oxypipe/oxypipe/pkg/oxytype"
)

// MaxStatusBatch is the most events one status message may hold. A batch's
// events take consecutive versions under its stream sequence (see
// [StatusVersion]), so the limit is what those versions have room for.
const MaxStatusBatch = 1 << statusIndexBits

const statusIndexBits = 10

// MaxStatusBatchBytes is the most bytes of events a publisher puts in one
// status batch message, well under the broker's default 1 MiB message limit.
// An event larger than this alone goes as a message of its own.
const MaxStatusBatchBytes = 256 << 10

// StatusVersion is the ledger version of the i-th event (from 0) of the
// status message stored at stream sequence seq: seq × [MaxStatusBatch] + i.
// Versions so order every event by its message's place in the stream, and
// the events of one batch message by their place in it, as if each had been
// a message of its own. A message of one event is its own batch: i is 0.
func StatusVersion(seq uint64, i int) uint64 {
	return seq<<statusIndexBits | uint64(i)&(MaxStatusBatch-1)
}

// JoinStatusEvents builds the body of a status batch message from encoded
// events (each the output of [StatusEvent.MarshalJSON], all of one run, in
// the order they happened): a JSON array of them, published on the run's
// [StatusSubject] like a single event. A stage batches the events it records
// within a few milliseconds into one such message, so the broker stores and
// delivers one message where it would have handled dozens.
func JoinStatusEvents(events [][]byte) []byte {
	n := 2
	for _, e := range events {
		n += len(e) + 1
	}
	b := make([]byte, 0, n)
	b = append(b, '[')
	for i, e := range events {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, e...)
	}
	return append(b, ']')
}

// NewStatusBatchMsg builds the status message of run holding events (each
// the output of [StatusEvent.MarshalJSON], in the order they happened; at
// most [MaxStatusBatch]): one event is sent as itself, more as
// [JoinStatusEvents] of them. The origin header names the publisher, as
// [NewMsg] sets it. Status messages carry no message id: an event stored
// twice is applied once.
func NewStatusBatchMsg(run string, events [][]byte, origin oxytype.Party) *nats.Msg {
	m := nats.NewMsg(StatusSubject(run))
	if len(events) == 1 {
		m.Data = events[0]
	} else {
		m.Data = JoinStatusEvents(events)
	}
	if origin.Type != "" {
		m.Header.Set(HeaderOrigin, origin.String())
	}
	return m
}

// IsStatusBatch reports whether a status-stream message is a batch (its
// body is a JSON array) rather than a single event (an object).
func IsStatusBatch(data []byte) bool {
	i := jsonscan.SkipSpace(data, 0)
	return i < len(data) && data[i] == '['
}

// SplitStatusEvents splits a message of the status stream into its events'
// encodings (aliasing data): a single event (a JSON object) is itself, a
// batch (a JSON array of up to [MaxStatusBatch] objects, see
// [JoinStatusEvents]) is its elements. Decode each with [DecodeStatusEvent];
// one malformed event of a batch does not spoil the others. A batch that is
// not an array of objects, or holds no event or too many, is refused whole
// with a *[DecodeError].
func SplitStatusEvents(subject string, data []byte) ([][]byte, error) {
	if !IsStatusBatch(data) {
		return [][]byte{data}, nil
	}
	elems, reason := splitStatusBatch(data)
	if reason != "" {
		return nil, &DecodeError{Subject: subject, Kind: KindStatus, Run: Peek(subject, nil).Run, Reason: reason}
	}
	return elems, nil
}

// StatusEvents decodes every event of a status-stream message in order
// (see [SplitStatusEvents]), yielding each with the error that refused it;
// a message refused whole yields its error once, with a nil event.
func StatusEvents(subject string, data []byte) iter.Seq2[*StatusEvent, error] {
	return func(yield func(*StatusEvent, error) bool) {
		elems, err := SplitStatusEvents(subject, data)
		if err != nil {
			yield(nil, err)
			return
		}
		for _, e := range elems {
			if !yield(DecodeStatusEvent(subject, e)) {
				return
			}
		}
	}
}

// UnknownBatchDocID is the [UnknownDocID] of the i-th event (from 0) of the
// status batch message at seq in stream, when that event names no doc.
func UnknownBatchDocID(stream string, seq uint64, i int) string {
	return UnknownDocID(stream, seq) + ":" + strconv.Itoa(i)
}

// splitStatusBatch splits a batch body into its elements (aliasing data),
// or says why it cannot: the body must be an array of one to
// MaxStatusBatch objects and nothing else. Each element's own JSON is
// checked when it is decoded.
func splitStatusBatch(data []byte) (elems [][]byte, reason string) {
	const notArray = "a status batch must be a JSON array of event objects"
	i := jsonscan.SkipSpace(data, 0) + 1 // past '['
	if i = jsonscan.SkipSpace(data, i); i < len(data) && data[i] == ']' {
		return nil, "a status batch holds no event"
	}
	for {
		if i >= len(data) || data[i] != '{' {
			return nil, notArray
		}
		end := jsonscan.ValueEnd(data, i)
		if len(elems) == MaxStatusBatch {
			return nil, fmt.Sprintf("a status batch holds more than %d events", MaxStatusBatch)
		}
		elems = append(elems, data[i:end])
		i = jsonscan.SkipSpace(data, end)
		if i >= len(data) {
			return nil, notArray
		}
		switch data[i] {
		case ',':
			i = jsonscan.SkipSpace(data, i+1)
		case ']':
			if jsonscan.SkipSpace(data, i+1) != len(data) {
				return nil, notArray
			}
			return elems, ""
		default:
			return nil, notArray
		}
	}
}
