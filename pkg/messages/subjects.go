package messages

import (
	"fmt"
	"strings"
)

// Kind names a kind of message. For work and status messages it is also
// the subject's second token.
type Kind string

// The kinds of messages.
const (
	KindRunAnnounced Kind = "announced"
	KindRunCompleted Kind = "completed"
	KindPayload      Kind = "payload"
	KindSubmitted    Kind = "submitted"
	KindDone         Kind = "done"
	KindStatus       Kind = "status"
)

// SubjectPrefix is the first token of every subject oxypipe publishes.
const SubjectPrefix = "oxy"

// Wildcard subjects, one per kind, for stream and consumer filters.
const (
	AllRunAnnounced = "oxy.run.*"
	AllRunCompleted = "oxy.run.*.completed"
	AllRuns         = "oxy.run.>"
	AllPayloads     = "oxy.payload.*"
	AllSubmitted    = "oxy.submitted.*"
	AllDone         = "oxy.done.*"
	AllStatus       = "oxy.status.*"
)

// RunSubject is where a run is announced: "oxy.run.<run token>".
func RunSubject(run string) string { return "oxy.run." + RunToken(run) }

// RunCompletedSubject is where a run's completion is announced:
// "oxy.run.<run token>.completed".
func RunCompletedSubject(run string) string { return "oxy.run." + RunToken(run) + ".completed" }

// PayloadSubject is where a run's payloads are fed: "oxy.payload.<run token>".
func PayloadSubject(run string) string { return "oxy.payload." + RunToken(run) }

// SubmittedSubject carries a run's submitted jobs: "oxy.submitted.<run token>".
func SubmittedSubject(run string) string { return "oxy.submitted." + RunToken(run) }

// DoneSubject carries a run's done jobs: "oxy.done.<run token>".
func DoneSubject(run string) string { return "oxy.done." + RunToken(run) }

// StatusSubject carries a run's status events: "oxy.status.<run token>".
func StatusSubject(run string) string { return "oxy.status." + RunToken(run) }

// SubjectFor returns the subject of the given kind for a run.
func SubjectFor(kind Kind, run string) (string, error) {
	switch kind {
	case KindRunAnnounced:
		return RunSubject(run), nil
	case KindRunCompleted:
		return RunCompletedSubject(run), nil
	case KindPayload:
		return PayloadSubject(run), nil
	case KindSubmitted:
		return SubmittedSubject(run), nil
	case KindDone:
		return DoneSubject(run), nil
	case KindStatus:
		return StatusSubject(run), nil
	}
	return "", fmt.Errorf("messages: unknown kind %q", kind)
}

// ParseSubject returns the kind and the run id of an oxypipe subject. The
// run id is returned in its original form (the token's '_' back to '.').
func ParseSubject(subject string) (Kind, string, error) {
	tokens := strings.Split(subject, ".")
	if len(tokens) < 3 || tokens[0] != SubjectPrefix || tokens[2] == "" {
		return "", "", fmt.Errorf("messages: %q is not an oxypipe subject", subject)
	}
	run := RunFromToken(tokens[2])
	switch {
	case len(tokens) == 3:
		switch k := Kind(tokens[1]); k {
		case "run":
			return KindRunAnnounced, run, nil
		case KindPayload, KindSubmitted, KindDone, KindStatus:
			return k, run, nil
		}
	case len(tokens) == 4 && tokens[1] == "run" && tokens[3] == "completed":
		return KindRunCompleted, run, nil
	}
	return "", "", fmt.Errorf("messages: %q is not an oxypipe subject", subject)
}
