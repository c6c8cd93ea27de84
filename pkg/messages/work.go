package messages

import (
	"encoding/json"
	"reflect"
	"time"
)

// Payload is one doc of a run as fed: a WSA request body. Published by the
// feeder on [PayloadSubject]; consumed by the submitter.
type Payload struct {
	V   int    `json:"v"`
	Run string `json:"run"`
	// Doc is the payload's position in the input ([DocID]).
	Doc string `json:"doc"`
	// Attempt is 0 for the first pass of a doc through the pipeline and is
	// raised only by a deliberate re-drive (see the package documentation).
	Attempt int `json:"attempt,omitempty"`
	// Payload is the WSA body, unchanged. It may hold credentials (in a
	// storage_url, say): never log it without redacting it.
	Payload json.RawMessage `json:"payload"`
	Extra   Extra           `json:"-"`
}

// Submitted says the API accepted a payload as a job. Published by the
// submitter on [SubmittedSubject] after the job id is stored under the doc's
// claim; consumed by the poller.
type Submitted struct {
	V       int    `json:"v"`
	Run     string `json:"run"`
	Doc     string `json:"doc"`
	Attempt int    `json:"attempt,omitempty"`
	// APIJobID is the job id the WSA returned (19 digits).
	APIJobID string `json:"api_job_id"`
	// Payload is the WSA body that was submitted (unredacted; the writer and
	// the run log need the original).
	Payload     json.RawMessage `json:"payload"`
	SubmittedAt time.Time       `json:"submitted_at"`
	Extra       Extra           `json:"-"`
}

// JobStatusDone is the only Status a [Done] message carries.
const JobStatusDone = "done"

// Done says a job finished at the API and its results can be fetched.
// Published by the poller on [DoneSubject]; consumed by the writer.
type Done struct {
	V        int             `json:"v"`
	Run      string          `json:"run"`
	Doc      string          `json:"doc"`
	Attempt  int             `json:"attempt,omitempty"`
	APIJobID string          `json:"api_job_id"`
	Payload  json.RawMessage `json:"payload"`
	// Status is always [JobStatusDone].
	Status string `json:"status"`
	// FinishedAt is when the job finished at the API (its updated_at), or
	// when the poller saw it done if the API did not say. Zero when unknown.
	FinishedAt time.Time `json:"finished_at,omitzero"`
	Extra      Extra     `json:"-"`
}

var (
	payloadKeys   = jsonKeys(reflect.TypeFor[Payload]())
	submittedKeys = jsonKeys(reflect.TypeFor[Submitted]())
	doneKeys      = jsonKeys(reflect.TypeFor[Done]())
)

// Subject implements [Envelope].
func (p *Payload) Subject() string { return PayloadSubject(p.Run) }

// MsgID implements [Envelope]: one id per (run, doc, attempt).
func (p *Payload) MsgID() string { return MsgID(p.Run, p.Doc, KindPayload, p.Attempt) }

// MarshalJSON writes the known fields (with "v" set) and then Extra.
func (p Payload) MarshalJSON() ([]byte, error) {
	type plain Payload
	q := plain(p)
	if q.V == 0 {
		q.V = Version
	}
	if b, ok := payloadCodec.encode((*Payload)(&q)); ok {
		return appendExtra(b, p.Extra, payloadKeys)
	}
	return marshalWithExtra(q, p.Extra, payloadKeys)
}

// UnmarshalJSON reads the known fields and keeps the others in Extra.
func (p *Payload) UnmarshalJSON(data []byte) error {
	if extra, ok := payloadCodec.decode(p, data); ok {
		p.Extra = extra
		return nil
	}
	return p.unmarshalGeneric(data)
}

// unmarshalGeneric is UnmarshalJSON through encoding/json, for what the
// fast path leaves to it.
func (p *Payload) unmarshalGeneric(data []byte) error {
	type plain Payload
	var q plain
	extra, err := unmarshalWithExtra(data, &q, payloadKeys)
	if err != nil {
		return err
	}
	*p = Payload(q)
	p.Extra = extra
	return nil
}

// Subject implements [Envelope].
func (s *Submitted) Subject() string { return SubmittedSubject(s.Run) }

// MsgID implements [Envelope]: one id per (run, doc, attempt).
func (s *Submitted) MsgID() string { return MsgID(s.Run, s.Doc, KindSubmitted, s.Attempt) }

// MarshalJSON writes the known fields (with "v" set) and then Extra.
func (s Submitted) MarshalJSON() ([]byte, error) {
	type plain Submitted
	q := plain(s)
	if q.V == 0 {
		q.V = Version
	}
	if b, ok := submittedCodec.encode((*Submitted)(&q)); ok {
		return appendExtra(b, s.Extra, submittedKeys)
	}
	return marshalWithExtra(q, s.Extra, submittedKeys)
}

// UnmarshalJSON reads the known fields and keeps the others in Extra.
func (s *Submitted) UnmarshalJSON(data []byte) error {
	if extra, ok := submittedCodec.decode(s, data); ok {
		s.Extra = extra
		return nil
	}
	return s.unmarshalGeneric(data)
}

// unmarshalGeneric is UnmarshalJSON through encoding/json, for what the
// fast path leaves to it.
func (s *Submitted) unmarshalGeneric(data []byte) error {
	type plain Submitted
	var q plain
	extra, err := unmarshalWithExtra(data, &q, submittedKeys)
	if err != nil {
		return err
	}
	*s = Submitted(q)
	s.Extra = extra
	return nil
}

// Subject implements [Envelope].
func (d *Done) Subject() string { return DoneSubject(d.Run) }

// MsgID implements [Envelope]: one id per (run, doc, attempt).
func (d *Done) MsgID() string { return MsgID(d.Run, d.Doc, KindDone, d.Attempt) }

// MarshalJSON writes the known fields (with "v" and "status" set) and then
// Extra.
func (d Done) MarshalJSON() ([]byte, error) {
	type plain Done
	q := plain(d)
	if q.V == 0 {
		q.V = Version
	}
	if q.Status == "" {
		q.Status = JobStatusDone
	}
	if b, ok := doneCodec.encode((*Done)(&q)); ok {
		return appendExtra(b, d.Extra, doneKeys)
	}
	return marshalWithExtra(q, d.Extra, doneKeys)
}

// UnmarshalJSON reads the known fields and keeps the others in Extra.
func (d *Done) UnmarshalJSON(data []byte) error {
	if extra, ok := doneCodec.decode(d, data); ok {
		d.Extra = extra
		return nil
	}
	return d.unmarshalGeneric(data)
}

// unmarshalGeneric is UnmarshalJSON through encoding/json, for what the
// fast path leaves to it.
func (d *Done) unmarshalGeneric(data []byte) error {
	type plain Done
	var q plain
	extra, err := unmarshalWithExtra(data, &q, doneKeys)
	if err != nil {
		return err
	}
	*d = Done(q)
	d.Extra = extra
	return nil
}

// payloadCodec is the fast codec of Payload, in struct order.
var payloadCodec = newFastCodec(payloadKeys,
	intCodec("v", false, func(v *Payload) *int { return &v.V }),
	stringCodec("run", false, func(v *Payload) *string { return &v.Run }),
	stringCodec("doc", false, func(v *Payload) *string { return &v.Doc }),
	intCodec("attempt", true, func(v *Payload) *int { return &v.Attempt }),
	rawCodec("payload", false, func(v *Payload) *json.RawMessage { return &v.Payload }),
)

// submittedCodec is the fast codec of Submitted, in struct order.
var submittedCodec = newFastCodec(submittedKeys,
	intCodec("v", false, func(v *Submitted) *int { return &v.V }),
	stringCodec("run", false, func(v *Submitted) *string { return &v.Run }),
	stringCodec("doc", false, func(v *Submitted) *string { return &v.Doc }),
	intCodec("attempt", true, func(v *Submitted) *int { return &v.Attempt }),
	stringCodec("api_job_id", false, func(v *Submitted) *string { return &v.APIJobID }),
	rawCodec("payload", false, func(v *Submitted) *json.RawMessage { return &v.Payload }),
	timeCodec("submitted_at", false, func(v *Submitted) *time.Time { return &v.SubmittedAt }),
)

// doneCodec is the fast codec of Done, in struct order.
var doneCodec = newFastCodec(doneKeys,
	intCodec("v", false, func(v *Done) *int { return &v.V }),
	stringCodec("run", false, func(v *Done) *string { return &v.Run }),
	stringCodec("doc", false, func(v *Done) *string { return &v.Doc }),
	intCodec("attempt", true, func(v *Done) *int { return &v.Attempt }),
	stringCodec("api_job_id", false, func(v *Done) *string { return &v.APIJobID }),
	rawCodec("payload", false, func(v *Done) *json.RawMessage { return &v.Payload }),
	stringCodec("status", false, func(v *Done) *string { return &v.Status }),
	timeCodec("finished_at", true, func(v *Done) *time.Time { return &v.FinishedAt }),
)
