package messages

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"time"

	"github.com/oxypipe/oxypipe/internal/redact"
	"github.com/oxypipe/oxypipe/pkg/oxytype"
)

// ErrMalformed matches every *[DecodeError] with errors.Is.
var ErrMalformed = errors.New("malformed message")

// DecodeError says a message could not be used. A stage records it as a
// hard failure with Reason and terminates the message.
type DecodeError struct {
	// Subject is the subject the message arrived on.
	Subject string
	// Kind is the kind of message that was expected.
	Kind Kind
	// Run and Doc are what could be read of the message's identity ("" when
	// unknown; the stage then records it under an [UnknownDocID]).
	Run string
	Doc string
	// Reason says what is wrong, in one line without credentials.
	Reason string
}

// Error implements error.
func (e *DecodeError) Error() string {
	return fmt.Sprintf("malformed %s message on %s: %s", e.Kind, e.Subject, e.Reason)
}

// Is makes errors.Is(err, ErrMalformed) true.
func (e *DecodeError) Is(target error) bool { return target == ErrMalformed }

// Key is what can be read of a message's identity without decoding it fully.
// Fields that cannot be read are zero.
type Key struct {
	Run      string
	Doc      string
	Attempt  int
	APIJobID string
	// DataType is the body's "data_type" (status events only).
	DataType oxytype.DataType
	// Payload is the message's "payload" field when it is valid JSON (not
	// redacted).
	Payload json.RawMessage
}

// Peek reads what it can of a message's identity, for recording a failure
// of a message that may not decode. The run comes from the subject when the
// subject is an oxypipe subject, else from the body. Doc is returned only
// when it is a valid doc id.
func Peek(subject string, data []byte) Key {
	var k Key
	if _, run, err := ParseSubject(subject); err == nil && ValidateRunID(run) == nil {
		k.Run = run
	}
	var loose struct {
		Run      json.RawMessage `json:"run"`
		Doc      json.RawMessage `json:"doc"`
		Attempt  json.RawMessage `json:"attempt"`
		APIJobID json.RawMessage `json:"api_job_id"`
		DataType json.RawMessage `json:"data_type"`
		Payload  json.RawMessage `json:"payload"`
	}
	if json.Unmarshal(data, &loose) != nil {
		return k
	}
	var s string
	if k.Run == "" && json.Unmarshal(loose.Run, &s) == nil && ValidateRunID(s) == nil {
		k.Run = s
	}
	s = ""
	if json.Unmarshal(loose.Doc, &s) == nil && validDoc(s) {
		k.Doc = s
	}
	var n int
	if json.Unmarshal(loose.Attempt, &n) == nil && n > 0 {
		k.Attempt = n
	}
	s = ""
	if json.Unmarshal(loose.APIJobID, &s) == nil {
		k.APIJobID = s
	}
	s = ""
	if json.Unmarshal(loose.DataType, &s) == nil {
		k.DataType = oxytype.DataType(s)
	}
	if len(loose.Payload) > 0 && !bytes.Equal(loose.Payload, []byte("null")) && json.Valid(loose.Payload) {
		k.Payload = loose.Payload
	}
	return k
}

// validDoc accepts positions and unknown-doc ids.
func validDoc(doc string) bool {
	if IsUnknownDocID(doc) {
		return len(doc) > 1
	}
	_, err := ParseDocID(doc)
	return err == nil
}

// versioned is implemented by every decoded envelope for the shared checks.
type versioned interface {
	version() int
	identity() (run, doc string)
}

func (p *Payload) version() int                    { return p.V }
func (p *Payload) identity() (string, string)      { return p.Run, p.Doc }
func (s *Submitted) version() int                  { return s.V }
func (s *Submitted) identity() (string, string)    { return s.Run, s.Doc }
func (d *Done) version() int                       { return d.V }
func (d *Done) identity() (string, string)         { return d.Run, d.Doc }
func (e *StatusEvent) version() int                { return e.V }
func (e *StatusEvent) identity() (string, string)  { return e.Run, e.Doc }
func (r *RunAnnounced) version() int               { return r.V }
func (r *RunAnnounced) identity() (string, string) { return r.Run, "" }
func (r *RunCompleted) version() int               { return r.V }
func (r *RunCompleted) identity() (string, string) { return r.Run, "" }

// decode runs the checks every envelope shares, then check (which returns a
// reason, or "" when the envelope is usable).
func decode[T any, PT interface {
	*T
	versioned
	json.Unmarshaler
}](kind Kind, subject string, data []byte, needDoc bool, check func(*T) string) (*T, error) {
	fail := func(reason string) error {
		k := Peek(subject, data)
		return &DecodeError{Subject: subject, Kind: kind, Run: k.Run, Doc: k.Doc, Reason: redact.String(reason)}
	}
	subjectRun := ""
	if subject != "" {
		k, run, err := ParseSubject(subject)
		if err != nil || k != kind {
			return nil, fail(fmt.Sprintf("subject is not a %s subject", kind))
		}
		if err := ValidateRunID(run); err != nil {
			return nil, fail("the subject's run: " + err.Error())
		}
		subjectRun = run
	}
	var v T
	p := PT(&v)
	// The envelope's own UnmarshalJSON, called directly: json.Unmarshal
	// would only validate and scan the bytes once more before calling it
	// with the same bytes, and it returns the same errors.
	if err := p.UnmarshalJSON(data); err != nil {
		return nil, fail(jsonReason(err))
	}
	switch ver := p.version(); {
	case ver == 0:
		return nil, fail(`missing "v" (envelope version)`)
	case ver < 0 || ver > Version:
		return nil, fail(fmt.Sprintf("unsupported envelope version %d (this build reads up to %d)", ver, Version))
	}
	run, doc := p.identity()
	if err := ValidateRunID(run); err != nil {
		return nil, fail(err.Error())
	}
	if subjectRun != "" && run != subjectRun {
		return nil, fail(fmt.Sprintf("run %q does not match the subject's run %q", run, subjectRun))
	}
	if needDoc {
		if _, err := ParseDocID(doc); err != nil {
			return nil, fail(err.Error())
		}
	}
	if reason := check(&v); reason != "" {
		return nil, fail(reason)
	}
	return &v, nil
}

// jsonReason turns a decoding error into a reason that names the field and
// not this package's internal types.
func jsonReason(err error) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		if te.Field == "" {
			return fmt.Sprintf("the message is a JSON %s, want an object", te.Value)
		}
		return fmt.Sprintf("field %q is a JSON %s, want %s", te.Field, te.Value, jsonKindOf(te.Type))
	}
	return "invalid JSON: " + err.Error()
}

func jsonKindOf(t reflect.Type) string {
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Int, reflect.Int64, reflect.Uint64, reflect.Float64:
		return "a number"
	case reflect.Struct, reflect.Map:
		if t == reflect.TypeFor[time.Time]() {
			return "an RFC 3339 time string"
		}
		return "an object"
	case reflect.Slice:
		return "an array"
	}
	return t.String()
}

func isObject(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) > 0 && raw[0] == '{'
}

func checkAttempt(n int) string {
	if n < 0 {
		return fmt.Sprintf("attempt %d is negative", n)
	}
	return ""
}

// DecodePayload decodes and checks a [Payload]. subject is the subject it
// arrived on ("" to skip the subject checks). The error is a *[DecodeError].
func DecodePayload(subject string, data []byte) (*Payload, error) {
	return decode(KindPayload, subject, data, true, func(p *Payload) string {
		if !isObject(p.Payload) {
			return `"payload" must be a JSON object (a WSA request body)`
		}
		return checkAttempt(p.Attempt)
	})
}

// DecodeSubmitted decodes and checks a [Submitted].
func DecodeSubmitted(subject string, data []byte) (*Submitted, error) {
	return decode(KindSubmitted, subject, data, true, func(s *Submitted) string {
		if s.APIJobID == "" {
			return `missing "api_job_id"`
		}
		if !isObject(s.Payload) {
			return `"payload" must be a JSON object (a WSA request body)`
		}
		return checkAttempt(s.Attempt)
	})
}

// DecodeDone decodes and checks a [Done].
func DecodeDone(subject string, data []byte) (*Done, error) {
	return decode(KindDone, subject, data, true, func(d *Done) string {
		if d.APIJobID == "" {
			return `missing "api_job_id"`
		}
		if d.Status != JobStatusDone {
			return fmt.Sprintf(`"status" is %q, want %q`, d.Status, JobStatusDone)
		}
		return checkAttempt(d.Attempt)
	})
}

// DecodeStatusEvent decodes and checks a [StatusEvent]. Its doc may be a
// position or an [UnknownDocID].
func DecodeStatusEvent(subject string, data []byte) (*StatusEvent, error) {
	return decode(KindStatus, subject, data, false, func(e *StatusEvent) string {
		switch {
		case !validDoc(e.Doc):
			return fmt.Sprintf("doc %q is neither a position nor an unknown-doc id", e.Doc)
		case e.DataType == "":
			return `missing "data_type"`
		case !e.Outcome.Valid():
			return fmt.Sprintf("outcome %q is not success, soft_failure or hard_failure", e.Outcome)
		case e.State != "" && !e.State.Valid():
			return fmt.Sprintf("state %q is not a run-log state", e.State)
		case e.Outcome == oxytype.HardFailure && e.State == "":
			return `a hard failure needs a "state"`
		case e.Time.IsZero():
			return `missing "time"`
		}
		return checkAttempt(e.Attempt)
	})
}

// DecodeRunAnnounced decodes and checks a [RunAnnounced].
func DecodeRunAnnounced(subject string, data []byte) (*RunAnnounced, error) {
	return decode(KindRunAnnounced, subject, data, false, checkRunAnnounced)
}

func checkRunAnnounced(r *RunAnnounced) string {
	switch {
	case r.Total < 0:
		return fmt.Sprintf("total %d is negative", r.Total)
	case r.FinalDataType == "":
		return `missing "final_data_type"`
	case r.StartedAt.IsZero():
		return `missing "started_at"`
	case r.StopTimeout < 0:
		return fmt.Sprintf("stop timeout %v is negative", r.StopTimeout)
	}
	return ""
}

// DecodeRunCompleted decodes and checks a [RunCompleted].
func DecodeRunCompleted(subject string, data []byte) (*RunCompleted, error) {
	return decode(KindRunCompleted, subject, data, false, func(r *RunCompleted) string {
		if sum := r.Done + r.Faulted + r.Rejected + r.Unsubmitted + r.Unfetched; sum != r.Total {
			return fmt.Sprintf("outcomes add up to %d, total is %d", sum, r.Total)
		}
		return ""
	})
}

// DecodeClaim decodes a value of the claims bucket.
func DecodeClaim(data []byte) (*Claim, error) {
	var c Claim
	if err := json.Unmarshal(data, &c); err != nil {
		return nil, fmt.Errorf("messages: claim: %w", err)
	}
	switch c.State {
	case ClaimHeld, ClaimReleased, ClaimUnknown:
	case ClaimSubmitted:
		if c.APIJobID == "" {
			return nil, errors.New("messages: claim: submitted without an api_job_id")
		}
	default:
		return nil, fmt.Errorf("messages: claim: unknown state %q", c.State)
	}
	if c.V == 0 || c.V > Version {
		return nil, fmt.Errorf("messages: claim: unsupported version %d", c.V)
	}
	return &c, nil
}

// DecodeRunRecord decodes a value of the runs bucket.
func DecodeRunRecord(data []byte) (*RunRecord, error) {
	var r RunRecord
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("messages: run record: %w", err)
	}
	if r.V == 0 || r.V > Version {
		return nil, fmt.Errorf("messages: run record: unsupported version %d", r.V)
	}
	if err := ValidateRunID(r.Announced.Run); err != nil {
		return nil, fmt.Errorf("messages: run record: %w", err)
	}
	if reason := checkRunAnnounced(&r.Announced); reason != "" {
		return nil, errors.New("messages: run record: " + reason)
	}
	if !r.State.Valid() {
		return nil, fmt.Errorf("messages: run record: unknown state %q", r.State)
	}
	return &r, nil
}

// FailureState is the run-log state of a doc whose message failed for a
// reason the stage could not classify (undecodable, poison): unfetched when
// a job id is known (the result can still be fetched by id), else
// unsubmitted.
func FailureState(apiJobID string) oxytype.State {
	if apiJobID != "" {
		return oxytype.Unfetched
	}
	return oxytype.Unsubmitted
}
