package oxytype

import "strings"

// Outcome is what happened to a doc at a stage: what a status event says
// and what a ledger record holds.
type Outcome string

// The three outcomes.
const (
	// Success: the doc reached the data type.
	Success Outcome = "success"
	// SoftFailure: the stage failed this time and will retry (the message is
	// redelivered later). Not final.
	SoftFailure Outcome = "soft_failure"
	// HardFailure: the stage gave up on the doc; the State hint says what the
	// run log will call it. Final unless the doc is deliberately re-driven.
	HardFailure Outcome = "hard_failure"
)

// Valid reports whether o is one of the three outcomes.
func (o Outcome) Valid() bool {
	return o == Success || o == SoftFailure || o == HardFailure
}

// Party is a participant that produced (the origin) or failed to consume
// (the consumer) a message: a kind ("feeder", "submitter", "poller",
// "writer", "statusworker") and an instance name (a host or pod name).
type Party struct {
	Type string `json:"type"`
	Name string `json:"name"`
}

// String renders the party as "type/name", or "type" without a name (the
// form of the Oxy-Origin header).
func (p Party) String() string {
	if p.Name == "" {
		return p.Type
	}
	return p.Type + "/" + p.Name
}

// ParseParty parses the "type/name" form written by [Party.String].
func ParseParty(s string) Party {
	typ, name, _ := strings.Cut(s, "/")
	return Party{Type: typ, Name: name}
}
