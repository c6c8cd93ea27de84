package jobresults

import (
	"fmt"
	"math"
	"time"

	"github.com/oxypipe/oxypipe/internal/jsonvalid"
	"github.com/oxypipe/oxypipe/internal/redact"
	"github.com/oxypipe/oxypipe/pkg/oxytype"
)

// Entry is one write of a batch (see BatchWriter). The [Store] methods
// (RecordSuccess, RecordSoftFailure, RecordHardFailure) are entries with
// Version 0 and no run-log fields.
type Entry struct {
	Key
	// Outcome is the outcome to record.
	Outcome oxytype.Outcome
	// Origin is the producer of the message.
	Origin oxytype.Party
	// Consumer is the consumer that failed it; ignored for a success.
	Consumer oxytype.Party
	// RetryCount replaces the stored retry count (soft failures only; must
	// not be negative).
	RetryCount int
	// Reason is the soft-failure reason (appended to SoftFailures) or the
	// hard-failure error (must not be empty); ignored for a success. URL
	// credentials in it are redacted before it is stored.
	Reason string
	// Version is the record version this entry writes, e.g. the status
	// event's stream sequence: the entry applies only if it is greater than
	// the stored record's version, so a duplicated or older event changes
	// nothing. 0 means unversioned: the entry always applies and leaves the
	// stored version as it is. At most math.MaxInt64.
	Version uint64
	// Time is the event time stored as the record's Time; zero means the
	// store's clock. It is stored in UTC with millisecond precision.
	Time time.Time
	// Scope overrides the scope carried by the context for this entry
	// (stores with scoping enabled only).
	Scope string

	// Facts are the run-log facts. State and Error describe this outcome:
	// each entry replaces them (an empty one clears them; a success's Error
	// is ignored). APIJobID, Payload and Upload describe the document: they
	// are stored when non-empty and kept otherwise. Payload must be valid
	// JSON; URL credentials in it and in Error's message are redacted before
	// they are stored.
	oxytype.Facts
}

// prepared is a validated entry ready for a store: times normalised, texts
// redacted, derived fields computed.
type prepared struct {
	Entry
	scope string
}

// prepare validates e and normalises it for storage. now supplies the time
// when e has none.
func prepare(e Entry, scope string, now time.Time) (prepared, error) {
	if err := e.validate(); err != nil {
		return prepared{}, err
	}
	switch e.Outcome {
	case oxytype.Success:
		e.Consumer, e.RetryCount, e.Reason, e.Error = oxytype.Party{}, 0, "", nil
	case oxytype.SoftFailure:
		if e.RetryCount < 0 {
			return prepared{}, fmt.Errorf("%w: negative retry count %d (key %s)", ErrInvalidInput, e.RetryCount, e.Key)
		}
	case oxytype.HardFailure:
		if e.Reason == "" {
			return prepared{}, fmt.Errorf("%w: hard failure without an error (key %s)", ErrInvalidInput, e.Key)
		}
		e.RetryCount = 0
	default:
		return prepared{}, fmt.Errorf("%w: unknown outcome %q (key %s)", ErrInvalidInput, e.Outcome, e.Key)
	}
	if e.Version > math.MaxInt64 {
		return prepared{}, fmt.Errorf("%w: version %d exceeds MaxInt64 (key %s)", ErrInvalidInput, e.Version, e.Key)
	}
	if e.State != "" && !e.State.Valid() {
		return prepared{}, fmt.Errorf("%w: unknown run-log state %q (key %s)", ErrInvalidInput, e.State, e.Key)
	}
	if len(e.Payload) > 0 {
		if !jsonvalid.Valid(e.Payload) {
			return prepared{}, fmt.Errorf("%w: payload is not valid JSON (key %s)", ErrInvalidInput, e.Key)
		}
		e.Payload = redact.Bytes(e.Payload)
	} else {
		e.Payload = nil
	}
	e.Reason = redact.String(e.Reason)
	if e.Error != nil {
		ei := *e.Error
		if ei.StatusCode != nil {
			code := *ei.StatusCode
			ei.StatusCode = &code
		}
		ei.Message = redact.String(ei.Message)
		e.Error = &ei
	}
	if e.Upload != nil {
		u := *e.Upload
		e.Upload = &u
	}
	if e.Time.IsZero() {
		e.Time = now
	}
	e.Time = e.Time.UTC().Truncate(time.Millisecond)
	return prepared{Entry: e, scope: scope}, nil
}
