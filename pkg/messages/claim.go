package messages

import (
	"reflect"
	"time"
)

// ClaimState is the state of a doc's claim in the claims bucket.
type ClaimState string

// The states of a claim. The submitter moves a claim only by
// compare-and-set on its revision:
//
//	(none) ──Create──▶ claimed ──────────▶ submitted   the API returned a job id
//	                    │   │  ▲
//	                    │   ▼  │ the one opt-in retry
//	                    │  unknown                     the answer proves nothing
//	                    ▼
//	                 released ──▶ claimed (again, by a retry)
//
// A claim found "claimed" by a redelivered payload means a submitter took
// the doc and never recorded the API's answer: the outcome is unknown and the
// job may have billed, so the doc is a hard failure and is never resubmitted
// automatically (unless ClaimedAt is so recent that the holder may still be
// working; then retry later). A claim "unknown" says the same of an answer
// that was recorded: a 5xx, a connection lost after the request was sent, an
// unreadable 2xx without a job id.
//
// A submitted claim whose payload message is gone from its stream is
// settled: only its job id is kept, in its run's settled record, and it
// still reads as submitted (internal/topology's Claims).
//
// MayHaveBilled is sticky: once an answer left the outcome unknown, every
// later state of the claim keeps it, so a doc that got a 500 and then 429s
// on its one opt-in retry still ends marked.
const (
	// ClaimHeld: a submitter is about to POST (or is posting) the doc.
	ClaimHeld ClaimState = "claimed"
	// ClaimSubmitted: the API accepted the doc; APIJobID is set. A
	// redelivered payload is not resubmitted; its Submitted is published
	// again from the claim.
	ClaimSubmitted ClaimState = "submitted"
	// ClaimReleased: the submitter knows the API created no job (the request
	// was refused or never sent) and gave the doc back; a retry may claim it
	// again.
	ClaimReleased ClaimState = "released"
	// ClaimUnknown: the API's answer did not prove whether it created a job
	// (a 5xx, a timeout or dropped connection after the request was sent,
	// an unreadable 2xx without a job id). The doc is not submitted again,
	// except once when the submitter is configured to retry an unknown
	// outcome (Retries counts that retry).
	ClaimUnknown ClaimState = "unknown"
)

// Claim is the value stored in the claims bucket under
// [ClaimKey](run, doc).
type Claim struct {
	V       int        `json:"v"`
	Run     string     `json:"run"`
	Doc     string     `json:"doc"`
	Attempt int        `json:"attempt,omitempty"`
	State   ClaimState `json:"state"`
	// By is the submitter instance that holds or last held the claim.
	By        string    `json:"by"`
	ClaimedAt time.Time `json:"claimed_at"`
	// APIJobID and SubmittedAt are set with ClaimSubmitted.
	APIJobID    string    `json:"api_job_id,omitempty"`
	SubmittedAt time.Time `json:"submitted_at,omitzero"`
	// Reason says why a claim was released, or what answer left its
	// outcome unknown.
	Reason string `json:"reason,omitempty"`
	// MayHaveBilled is set once a request for the doc got an answer that
	// does not prove the API created no job, and kept by every later state:
	// the doc may have been billed although no job id is known.
	MayHaveBilled bool `json:"may_have_billed,omitempty"`
	// Retries counts the requests sent again after an unknown outcome (at
	// most one, and only when the submitter is configured for it).
	Retries int   `json:"retries,omitempty"`
	Extra   Extra `json:"-"`
}

// OutcomeUnknown reports whether a request for the doc may have created a
// job whose id nobody knows: the claim is held (a submitter may be inside
// its request, or died there), unknown, or carries the sticky mark. A doc
// whose claim says so is never recorded as plainly unsubmitted.
func (c Claim) OutcomeUnknown() bool {
	return c.MayHaveBilled || c.State == ClaimHeld || c.State == ClaimUnknown
}

var claimKeys = jsonKeys(reflect.TypeFor[Claim]())

// ClaimKey is the key of a doc's claim: "<run token>.<doc>", so the claims
// of one run can be watched or purged with "<run token>.>".
func ClaimKey(run, doc string) string {
	return RunToken(run) + "." + doc
}

// RunKey is the key of a run's record in the runs bucket: its token.
func RunKey(run string) string {
	return RunToken(run)
}

// MarshalJSON writes the known fields (with "v" set) and then Extra.
func (c Claim) MarshalJSON() ([]byte, error) {
	type plain Claim
	q := plain(c)
	if q.V == 0 {
		q.V = Version
	}
	if b, ok := claimCodec.encode((*Claim)(&q)); ok {
		return appendExtra(b, c.Extra, claimKeys)
	}
	return marshalWithExtra(q, c.Extra, claimKeys)
}

// claimCodec is the fast codec of Claim, in struct order.
var claimCodec = newFastCodec(claimKeys,
	intCodec("v", false, func(c *Claim) *int { return &c.V }),
	stringCodec("run", false, func(c *Claim) *string { return &c.Run }),
	stringCodec("doc", false, func(c *Claim) *string { return &c.Doc }),
	intCodec("attempt", true, func(c *Claim) *int { return &c.Attempt }),
	stringCodec("state", false, func(c *Claim) *ClaimState { return &c.State }),
	stringCodec("by", false, func(c *Claim) *string { return &c.By }),
	timeCodec("claimed_at", false, func(c *Claim) *time.Time { return &c.ClaimedAt }),
	stringCodec("api_job_id", true, func(c *Claim) *string { return &c.APIJobID }),
	timeCodec("submitted_at", true, func(c *Claim) *time.Time { return &c.SubmittedAt }),
	stringCodec("reason", true, func(c *Claim) *string { return &c.Reason }),
	boolCodec("may_have_billed", true, func(c *Claim) *bool { return &c.MayHaveBilled }),
	intCodec("retries", true, func(c *Claim) *int { return &c.Retries }),
)

// UnmarshalJSON reads the known fields and keeps the others in Extra.
func (c *Claim) UnmarshalJSON(data []byte) error {
	if extra, ok := claimCodec.decode(c, data); ok {
		c.Extra = extra
		return nil
	}
	return c.unmarshalGeneric(data)
}

// unmarshalGeneric is UnmarshalJSON through encoding/json, for what the
// fast path leaves to it.
func (c *Claim) unmarshalGeneric(data []byte) error {
	type plain Claim
	var q plain
	extra, err := unmarshalWithExtra(data, &q, claimKeys)
	if err != nil {
		return err
	}
	*c = Claim(q)
	c.Extra = extra
	return nil
}
