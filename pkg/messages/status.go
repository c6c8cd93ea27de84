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
	if b, ok := statusEventEncoder.encode((*StatusEvent)(&q)); ok {
		return appendExtra(b, e.Extra, statusEventKeys)
	}
	return marshalWithExtra(q, e.Extra, statusEventKeys)
}

// statusEventEncoder is the fast encoder of StatusEvent, in struct order.
var statusEventEncoder = newFastEncoder(statusEventKeys,
	intEnc("v", false, func(e *StatusEvent) int { return e.V }),
	stringEnc("run", false, func(e *StatusEvent) string { return e.Run }),
	stringEnc("doc", false, func(e *StatusEvent) string { return e.Doc }),
	intEnc("attempt", true, func(e *StatusEvent) int { return e.Attempt }),
	stringEnc("data_type", false, func(e *StatusEvent) oxytype.DataType { return e.DataType }),
	stringEnc("outcome", false, func(e *StatusEvent) oxytype.Outcome { return e.Outcome }),
	partyEnc("origin", false, func(e *StatusEvent) oxytype.Party { return e.Origin }),
	partyEnc("consumer", true, func(e *StatusEvent) oxytype.Party { return e.Consumer }),
	intEnc("retry_count", true, func(e *StatusEvent) int { return e.RetryCount }),
	stringEnc("reason", true, func(e *StatusEvent) string { return e.Reason }),
	objectEnc("error", func(e *StatusEvent) *oxytype.ErrorInfo { return e.Error }),
	stringEnc("state", true, func(e *StatusEvent) oxytype.State { return e.State }),
	stringEnc("api_job_id", true, func(e *StatusEvent) string { return e.APIJobID }),
	rawEnc("payload", true, func(e *StatusEvent) json.RawMessage { return e.Payload }),
	objectEnc("upload", func(e *StatusEvent) *oxytype.Upload { return e.Upload }),
	timeEnc("time", false, func(e *StatusEvent) time.Time { return e.Time }),
)

// UnmarshalJSON reads the known fields and keeps the others in Extra.
func (e *StatusEvent) UnmarshalJSON(data []byte) error {
	if extra, ok := statusEventFields.decode(e, data); ok {
		e.Extra = extra
		return nil
	}
	return e.unmarshalGeneric(data)
}

// statusEventFields is the fast decode table of StatusEvent.
var statusEventFields = newFastFields(statusEventKeys, map[string]func(*StatusEvent, []byte) bool{
	"v":           intField(func(e *StatusEvent) *int { return &e.V }),
	"run":         stringField(func(e *StatusEvent) *string { return &e.Run }),
	"doc":         stringField(func(e *StatusEvent) *string { return &e.Doc }),
	"attempt":     intField(func(e *StatusEvent) *int { return &e.Attempt }),
	"data_type":   stringField(func(e *StatusEvent) *oxytype.DataType { return &e.DataType }),
	"outcome":     stringField(func(e *StatusEvent) *oxytype.Outcome { return &e.Outcome }),
	"origin":      partyField(func(e *StatusEvent) *oxytype.Party { return &e.Origin }),
	"consumer":    partyField(func(e *StatusEvent) *oxytype.Party { return &e.Consumer }),
	"retry_count": intField(func(e *StatusEvent) *int { return &e.RetryCount }),
	"reason":      stringField(func(e *StatusEvent) *string { return &e.Reason }),
	"error":       objectField(func(e *StatusEvent) **oxytype.ErrorInfo { return &e.Error }),
	"state":       stringField(func(e *StatusEvent) *oxytype.State { return &e.State }),
	"api_job_id":  stringField(func(e *StatusEvent) *string { return &e.APIJobID }),
	"payload":     rawField(func(e *StatusEvent) *json.RawMessage { return &e.Payload }),
	"upload":      objectField(func(e *StatusEvent) **oxytype.Upload { return &e.Upload }),
	"time":        timeField(func(e *StatusEvent) *time.Time { return &e.Time }),
})

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
