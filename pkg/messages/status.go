package messages

import (
	"encoding/json"
	"reflect"
	"time"

	"github.com/oxypipe/oxypipe/internal/redact"
	"github.com/oxypipe/oxypipe/pkg/oxytype"
)

// StatusEvent says what happened to one doc at one data type. Every stage
// publishes them on [StatusSubject]; the statusworker applies them to the
// ledger in stream order (a later event for the same record wins).
//
// The event is redacted when it is encoded: credentials in URLs inside
// Payload, Reason and Error.Message never leave the process that built it.
type StatusEvent struct {
	V       int    `json:"v"`
	Run     string `json:"run"`
	Doc     string `json:"doc"`
	Attempt int    `json:"attempt,omitempty"`
	// DataType is the stage recorded: for a success the data type reached,
	// for a failure the data type of the message that failed.
	DataType oxytype.DataType `json:"data_type"`
	Outcome  oxytype.Outcome  `json:"outcome"`
	// Origin is the producer of the record at DataType: the stage that
	// succeeded, or for a failure the producer of the failed message.
	Origin oxytype.Party `json:"origin"`
	// Consumer is the worker that failed the message; zero for a success.
	Consumer oxytype.Party `json:"consumer,omitzero"`
	// RetryCount is, for a failure, how many times the failed message had
	// been delivered (1 on its first delivery).
	RetryCount int `json:"retry_count,omitempty"`
	// Reason is a one-line human explanation of a failure.
	Reason string `json:"reason,omitempty"`
	// Facts are the run-log facts of the outcome (error, state, job id,
	// payload, upload), written as top-level keys of the event. The feeder's
	// success at payload always carries the payload; it and the error's
	// message are redacted on encode.
	oxytype.Facts
	Time  time.Time `json:"time"`
	Extra Extra     `json:"-"`
}

var statusEventKeys = jsonKeys(reflect.TypeFor[StatusEvent]())

// Subject implements [Envelope].
func (e *StatusEvent) Subject() string { return StatusSubject(e.Run) }

// MsgID implements [Envelope]: status events are never deduplicated by the
// broker (see the package documentation), so it is always "".
func (e *StatusEvent) MsgID() string { return "" }

// MarshalJSON writes the known fields (with "v" set, credentials redacted)
// and then Extra.
func (e StatusEvent) MarshalJSON() ([]byte, error) {
	type plain StatusEvent
	q := plain(e)
	if q.V == 0 {
		q.V = Version
	}
	q.Reason = redact.String(q.Reason)
	q.Payload = redact.Bytes(q.Payload)
	if q.Error != nil {
		info := *q.Error
		info.Message = redact.String(info.Message)
		q.Error = &info
	}
	if b, ok := statusEventCodec.encode((*StatusEvent)(&q)); ok {
		return appendExtra(b, e.Extra, statusEventKeys)
	}
	return marshalWithExtra(q, e.Extra, statusEventKeys)
}

// statusEventCodec is the fast codec of StatusEvent, in struct order.
var statusEventCodec = newFastCodec(statusEventKeys,
	intCodec("v", false, func(e *StatusEvent) *int { return &e.V }),
	stringCodec("run", false, func(e *StatusEvent) *string { return &e.Run }),
	stringCodec("doc", false, func(e *StatusEvent) *string { return &e.Doc }),
	intCodec("attempt", true, func(e *StatusEvent) *int { return &e.Attempt }),
	stringCodec("data_type", false, func(e *StatusEvent) *oxytype.DataType { return &e.DataType }),
	stringCodec("outcome", false, func(e *StatusEvent) *oxytype.Outcome { return &e.Outcome }),
	partyCodec("origin", false, func(e *StatusEvent) *oxytype.Party { return &e.Origin }),
	partyCodec("consumer", true, func(e *StatusEvent) *oxytype.Party { return &e.Consumer }),
	intCodec("retry_count", true, func(e *StatusEvent) *int { return &e.RetryCount }),
	stringCodec("reason", true, func(e *StatusEvent) *string { return &e.Reason }),
	objectCodec("error", func(e *StatusEvent) **oxytype.ErrorInfo { return &e.Error }),
	stringCodec("state", true, func(e *StatusEvent) *oxytype.State { return &e.State }),
	stringCodec("api_job_id", true, func(e *StatusEvent) *string { return &e.APIJobID }),
	rawCodec("payload", true, func(e *StatusEvent) *json.RawMessage { return &e.Payload }),
	objectCodec("upload", func(e *StatusEvent) **oxytype.Upload { return &e.Upload }),
	timeCodec("time", false, func(e *StatusEvent) *time.Time { return &e.Time }),
)

// UnmarshalJSON reads the known fields and keeps the others in Extra.
func (e *StatusEvent) UnmarshalJSON(data []byte) error {
	if extra, ok := statusEventCodec.decode(e, data); ok {
		e.Extra = extra
		return nil
	}
	return e.unmarshalGeneric(data)
}

// unmarshalGeneric is UnmarshalJSON through encoding/json, for what the
// fast path leaves to it.
func (e *StatusEvent) unmarshalGeneric(data []byte) error {
	type plain StatusEvent
	var q plain
	extra, err := unmarshalWithExtra(data, &q, statusEventKeys)
	if err != nil {
		return err
	}
	*e = StatusEvent(q)
	e.Extra = extra
	return nil
}
