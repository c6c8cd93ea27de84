package messages

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// RunIDLayout is the time layout of run ids: the UTC start with
// milliseconds, e.g. "20260929T170412.345Z". Ids of this form sort in
// start order as plain strings.
const RunIDLayout = "20060102T150405.000Z"

// NewRunID returns the run id for a run started at t: t in UTC formatted
// with [RunIDLayout].
//
// Two runs started in the same millisecond get the same id. A feeder
// therefore reserves its id with a compare-and-set in the runs bucket
// (topology's AnnounceRun does this) and, when the id is taken, tries
// NewRunID(t.Add(time.Millisecond)) and so on: the id stays a sortable
// start time and no run ever shares another's subjects, claims or run log.
func NewRunID(t time.Time) string {
	return t.UTC().Format(RunIDLayout)
}

// ParseRunTime returns the start time encoded in a run id made by
// [NewRunID]. Other valid run ids (a ULID, say) return an error.
func ParseRunTime(run string) (time.Time, error) {
	return time.Parse(RunIDLayout, run)
}

// validRunID reports whether run looks like a run id: letters, digits, '.'
// and '-', starting with a letter or digit, at most 64 characters (the
// pattern ^[0-9A-Za-z][0-9A-Za-z.-]{0,63}$, without a regexp: it is checked
// twice for every message). '_' is excluded because [RunToken] maps '.' to
// it.
func validRunID(run string) bool {
	if run == "" || len(run) > 64 {
		return false
	}
	for i := 0; i < len(run); i++ {
		c := run[i]
		alnum := c >= '0' && c <= '9' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z'
		if !alnum && (i == 0 || c != '.' && c != '-') {
			return false
		}
	}
	return true
}

// ErrInvalidRunID is returned (wrapped) for a run id that does not match the
// allowed form.
var ErrInvalidRunID = errors.New("invalid run id")

// ValidateRunID checks that run can be used as a run id: 1–64 characters of
// letters, digits, '.' and '-', starting with a letter or digit. Every id
// from [NewRunID] and every ULID is valid.
func ValidateRunID(run string) error {
	if !validRunID(run) {
		return fmt.Errorf("%w %q: want 1-64 letters, digits, '.' or '-', starting with a letter or digit", ErrInvalidRunID, run)
	}
	return nil
}

// RunToken returns the form of a run id used in subjects and bucket keys:
// the id with every '.' replaced by '_', so that the run is a single subject
// token ("oxy.payload.20260929T170412_345Z").
func RunToken(run string) string {
	return strings.ReplaceAll(run, ".", "_")
}

// RunFromToken reverses [RunToken].
func RunFromToken(token string) string {
	return strings.ReplaceAll(token, "_", ".")
}

// UnknownRun is the run under which a failure is recorded when neither the
// subject nor the body of a message names a valid run. It is reserved:
// NewRunID never returns it, and no feeder may use it.
const UnknownRun = "unknown"

// DocID returns the doc id of the payload at position pos (0 for the first
// line of the input).
func DocID(pos int) string {
	return strconv.Itoa(pos)
}

// ErrInvalidDocID is returned (wrapped) for a doc id that is not a position.
var ErrInvalidDocID = errors.New("invalid doc id")

// ParseDocID returns the position a doc id stands for. Only canonical
// decimal forms are accepted ("7", not "07", "+7" or " 7"), so each doc has
// exactly one id.
func ParseDocID(doc string) (int, error) {
	if doc == "" || len(doc) > 18 || (len(doc) > 1 && doc[0] == '0') {
		return 0, fmt.Errorf("%w %q: want a decimal position such as \"0\" or \"17\"", ErrInvalidDocID, doc)
	}
	for i := 0; i < len(doc); i++ {
		if doc[i] < '0' || doc[i] > '9' {
			return 0, fmt.Errorf("%w %q: want a decimal position such as \"0\" or \"17\"", ErrInvalidDocID, doc)
		}
	}
	n, err := strconv.Atoi(doc)
	if err != nil {
		return 0, fmt.Errorf("%w %q: %w", ErrInvalidDocID, doc, err)
	}
	return n, nil
}

// UnknownDocID is the doc id under which a message is recorded when its own
// doc cannot be read: "?<stream>:<sequence>", for example "?OXY_PAYLOADS:42".
// It is unique per broken message (so two broken messages are two records,
// not one) and can be found in the stream by an operator.
func UnknownDocID(stream string, seq uint64) string {
	return "?" + stream + ":" + strconv.FormatUint(seq, 10)
}

// IsUnknownDocID reports whether doc was made by [UnknownDocID]. Such docs
// are failures to report, never positions of the run: they must not count
// toward the run's total.
func IsUnknownDocID(doc string) bool {
	return strings.HasPrefix(doc, "?")
}

// MsgID returns the Nats-Msg-Id of the message of the given kind for one
// doc: "<run>/<doc>/<kind>/<attempt>". See the package documentation for
// why retries never reuse an id by accident.
func MsgID(run, doc string, kind Kind, attempt int) string {
	return run + "/" + doc + "/" + string(kind) + "/" + strconv.Itoa(attempt)
}

// RunMsgID returns the Nats-Msg-Id of a run-level message (the announcement
// or the completion): "<run>/<kind>". Publishing either twice is harmless.
func RunMsgID(run string, kind Kind) string {
	return run + "/" + string(kind)
}
