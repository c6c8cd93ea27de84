package messages

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"time"
)

// A standing feed is a named stream of payloads without a total: producers
// publish [FeedPayload]s at any time, each with an id of their choosing, and
// the statusworker assigns each to the feed's current run, which it cuts
// (gives its total) by size and/or age. Each run is then an ordinary run,
// with its own run log, completion and recovery. [FeedControl] messages
// open, pause, resume and close a feed; the feed's state is a [FeedRecord]
// in the feeds bucket.
//
//	FeedControl  oxy.feedctl.<feed>  a producer or operator  → statusworker
//	FeedPayload  oxy.feed.<feed>     any producer            → statusworker → Payload

// The kinds of feed messages.
const (
	KindFeedPayload Kind = "feed"
	KindFeedControl Kind = "feedctl"
)

// Wildcard subjects of the feed messages.
const (
	AllFeedPayloads = "oxy.feed.*"
	AllFeedControls = "oxy.feedctl.*"
)

// FeedSubject is where a feed's payloads are published: "oxy.feed.<feed>".
func FeedSubject(feed string) string { return "oxy.feed." + feed }

// FeedControlSubject is where a feed's control messages are published:
// "oxy.feedctl.<feed>".
func FeedControlSubject(feed string) string { return "oxy.feedctl." + feed }

// FeedFromSubject returns the feed a feed payload or control subject names,
// or "" when subject is neither.
func FeedFromSubject(subject string) string {
	for _, prefix := range []string{"oxy.feed.", "oxy.feedctl."} {
		if rest, ok := strings.CutPrefix(subject, prefix); ok && ValidateFeedName(rest) == nil {
			return rest
		}
	}
	return ""
}

// ErrInvalidFeedName is returned (wrapped) for a feed name that does not
// match the allowed form.
var ErrInvalidFeedName = errors.New("invalid feed name")

// ValidateFeedName checks that name can name a feed: 1–48 letters, digits
// and '-', starting with a letter or digit. No '.': the name is one subject
// token, and its runs' ids are "<feed>.<number>" ([FeedRunID]).
func ValidateFeedName(name string) error {
	ok := name != "" && len(name) <= 48
	for i := 0; ok && i < len(name); i++ {
		c := name[i]
		alnum := c >= '0' && c <= '9' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z'
		ok = alnum || (i > 0 && c == '-')
	}
	if !ok {
		return fmt.Errorf("%w %q: want 1-48 letters, digits or '-', starting with a letter or digit", ErrInvalidFeedName, name)
	}
	return nil
}

// FeedRunID is the id of a feed's n-th run (from 1): "<feed>.<n>".
func FeedRunID(feed string, n int) string { return feed + "." + strconv.Itoa(n) }

// MaxFeedIDLen bounds a producer's payload id.
const MaxFeedIDLen = 512

// FeedIDKey is the key of a producer's payload id in the feed-ids bucket:
// "<feed>.<first 32 hex digits of the id's SHA-256>", so any id fits the
// bucket's key alphabet.
func FeedIDKey(feed, id string) string {
	sum := sha256.Sum256([]byte(id))
	return feed + "." + hex.EncodeToString(sum[:16])
}

// FeedPayload is one payload of a standing feed, published by a producer on
// [FeedSubject] with the Nats-Msg-Id [FeedPayload.MsgID].
type FeedPayload struct {
	V    int    `json:"v"`
	Feed string `json:"feed"`
	// ID is the producer's id of the payload (1–512 bytes): a retry with the
	// same id is the same payload and bills once, however much later it
	// comes.
	ID string `json:"id"`
	// Payload is the WSA request body, unchanged.
	Payload json.RawMessage `json:"payload"`
	Extra   Extra           `json:"-"`
}

// FeedCut says when the statusworker cuts a feed's current run: once it
// holds MaxPayloads payloads, or once it is MaxAge old (and holds at least
// one). Zero fields do not cut; at least one must be set.
type FeedCut struct {
	MaxPayloads int `json:"max_payloads,omitempty"`
	// MaxAge is in nanoseconds.
	MaxAge time.Duration `json:"max_age,omitempty"`
}

// FeedOp is what a [FeedControl] asks.
type FeedOp string

// The operations on a feed.
const (
	// FeedOpen creates the feed (or reopens a closed one) with the
	// control's cut, destination and run log; on an open feed it changes
	// them for the runs it opens from then on.
	FeedOpen FeedOp = "open"
	// FeedPause stops assigning payloads: they wait in the stream, nothing
	// is lost, until FeedResume.
	FeedPause  FeedOp = "pause"
	FeedResume FeedOp = "resume"
	// FeedClose assigns the payloads stored before it, cuts the current run
	// and closes the feed. Payloads published later wait in the stream and
	// are assigned once the feed is opened again.
	FeedClose FeedOp = "close"
)

// FeedControl opens, pauses, resumes or closes a feed, on
// [FeedControlSubject].
type FeedControl struct {
	V    int    `json:"v"`
	Feed string `json:"feed"`
	Op   FeedOp `json:"op"`
	// Cut, Destination and RunLog are read by FeedOpen only.
	Cut         FeedCut `json:"cut,omitzero"`
	Destination string  `json:"destination,omitempty"`
	RunLog      string  `json:"run_log,omitempty"`
	Extra       Extra   `json:"-"`
}

// FeedState is the state of a feed in the feeds bucket.
type FeedState string

// The states of a feed.
const (
	FeedStateOpen    FeedState = "open"
	FeedStatePaused  FeedState = "paused"
	FeedStateClosing FeedState = "closing"
	FeedStateClosed  FeedState = "closed"
)

// FeedRun is one run of a feed as the feed record knows it.
type FeedRun struct {
	Run string `json:"run"`
	// Docs is how many payloads were assigned to the run.
	Docs     int       `json:"docs"`
	OpenedAt time.Time `json:"opened_at"`
	// Cutting is set once the run takes no more payloads, before its total
	// is written to its run record.
	Cutting bool `json:"cutting,omitempty"`
}

// FeedRunsKept bounds FeedRecord.Runs: the newest cut runs.
const FeedRunsKept = 100

// FeedRecord is the value of a feed in the feeds bucket.
type FeedRecord struct {
	V           int       `json:"v"`
	Feed        string    `json:"feed"`
	State       FeedState `json:"state"`
	Cut         FeedCut   `json:"cut"`
	Destination string    `json:"destination"`
	RunLog      string    `json:"run_log"`
	// Current is the run taking payloads; nil until the next payload opens
	// one.
	Current *FeedRun `json:"current,omitempty"`
	// Runs are the cut runs, oldest first (at most FeedRunsKept).
	Runs []FeedRun `json:"runs,omitempty"`
	// Opened counts the runs opened so far; the next is FeedRunID(feed,
	// Opened+1).
	Opened int `json:"opened"`
	// CloseAfter is, for a closing or closed feed, the stream sequence of
	// the last payload stored before the close: later ones wait for the
	// feed's next opening.
	CloseAfter uint64 `json:"close_after,omitempty"`
	// Assigned and Duplicates count payloads: assigned to a run, and
	// dropped as a retry of an id already assigned.
	Assigned   int64     `json:"assigned"`
	Duplicates int64     `json:"duplicates"`
	UpdatedAt  time.Time `json:"updated_at"`
	Extra      Extra     `json:"-"`
}

// FeedAssignment is the value of a producer's payload id in the feed-ids
// bucket: the run and doc it was given. It is written before the payload is
// published, so a retry of the id, whenever it comes, finds it.
type FeedAssignment struct {
	V   int    `json:"v"`
	Run string `json:"run"`
	Doc string `json:"doc"`
	// Published is set once the payload (or its rejection) was published
	// into the run: a retry after that is dropped.
	Published bool `json:"published,omitempty"`
}

// RunFeed marks the run record of a feed's run.
type RunFeed struct {
	Name string `json:"name"`
	// Open is true until the run is cut: its total is not known yet, so it
	// cannot complete.
	Open bool `json:"open,omitempty"`
}

var (
	feedPayloadKeys = jsonKeys(reflect.TypeFor[FeedPayload]())
	feedControlKeys = jsonKeys(reflect.TypeFor[FeedControl]())
	feedRecordKeys  = jsonKeys(reflect.TypeFor[FeedRecord]())
)

// Subject implements [Envelope].
func (p *FeedPayload) Subject() string { return FeedSubject(p.Feed) }

// MsgID implements [Envelope]: "<feed>/<id>", so the broker drops a copy
// within its window; the feed-ids bucket catches later ones.
func (p *FeedPayload) MsgID() string { return p.Feed + "/" + p.ID }

// MarshalJSON writes the known fields (with "v" set) and then Extra.
func (p FeedPayload) MarshalJSON() ([]byte, error) {
	type plain FeedPayload
	q := plain(p)
	if q.V == 0 {
		q.V = Version
	}
	return marshalWithExtra(q, p.Extra, feedPayloadKeys)
}

// UnmarshalJSON reads the known fields and keeps the others in Extra.
func (p *FeedPayload) UnmarshalJSON(data []byte) error {
	type plain FeedPayload
	var q plain
	extra, err := unmarshalWithExtra(data, &q, feedPayloadKeys)
	if err != nil {
		return err
	}
	*p = FeedPayload(q)
	p.Extra = extra
	return nil
}

// Subject implements [Envelope].
func (c *FeedControl) Subject() string { return FeedControlSubject(c.Feed) }

// MsgID implements [Envelope]: control messages are not deduplicated (each
// is idempotent).
func (c *FeedControl) MsgID() string { return "" }

// MarshalJSON writes the known fields (with "v" set) and then Extra.
func (c FeedControl) MarshalJSON() ([]byte, error) {
	type plain FeedControl
	q := plain(c)
	if q.V == 0 {
		q.V = Version
	}
	return marshalWithExtra(q, c.Extra, feedControlKeys)
}

// UnmarshalJSON reads the known fields and keeps the others in Extra.
func (c *FeedControl) UnmarshalJSON(data []byte) error {
	type plain FeedControl
	var q plain
	extra, err := unmarshalWithExtra(data, &q, feedControlKeys)
	if err != nil {
		return err
	}
	*c = FeedControl(q)
	c.Extra = extra
	return nil
}

// MarshalJSON writes the known fields (with "v" set) and then Extra.
func (r FeedRecord) MarshalJSON() ([]byte, error) {
	type plain FeedRecord
	q := plain(r)
	if q.V == 0 {
		q.V = Version
	}
	return marshalWithExtra(q, r.Extra, feedRecordKeys)
}

// UnmarshalJSON reads the known fields and keeps the others in Extra.
func (r *FeedRecord) UnmarshalJSON(data []byte) error {
	type plain FeedRecord
	var q plain
	extra, err := unmarshalWithExtra(data, &q, feedRecordKeys)
	if err != nil {
		return err
	}
	*r = FeedRecord(q)
	r.Extra = extra
	return nil
}

// MaxFeedPayloadBytes is the largest feed message the statusworker forwards:
// the payload travels on in a [Payload] envelope and in status events, which
// add their own fields, and the broker refuses a message over its limit
// (1 MiB by default).
const MaxFeedPayloadBytes = 1<<20 - 8<<10

// DecodeFeedPayload decodes and checks a [FeedPayload] that arrived on
// subject. A message that cannot be used returns a *[DecodeError] whose
// Reason is what the feed's run log says of it: the statusworker records it
// as a rejected payload.
func DecodeFeedPayload(subject string, data []byte) (*FeedPayload, error) {
	feed := FeedFromSubject(subject)
	fail := func(reason string) error {
		return &DecodeError{Subject: subject, Kind: KindFeedPayload, Reason: reason}
	}
	if feed == "" || !strings.HasPrefix(subject, "oxy.feed.") {
		return nil, fail("subject is not a feed payload subject")
	}
	if len(data) > MaxFeedPayloadBytes {
		return nil, fail(fmt.Sprintf("the message is %d bytes, over the limit of %d", len(data), MaxFeedPayloadBytes))
	}
	var p FeedPayload
	if err := p.UnmarshalJSON(data); err != nil {
		return nil, fail(jsonReason(err))
	}
	switch {
	case p.V == 0:
		return nil, fail(`missing "v" (envelope version)`)
	case p.V < 0 || p.V > Version:
		return nil, fail(fmt.Sprintf("unsupported envelope version %d (this build reads up to %d)", p.V, Version))
	case p.Feed != feed:
		return nil, fail(fmt.Sprintf("feed %q does not match the subject's feed %q", p.Feed, feed))
	case p.ID == "":
		return nil, fail(`missing "id" (the producer's id of the payload)`)
	case len(p.ID) > MaxFeedIDLen:
		return nil, fail(fmt.Sprintf(`"id" is %d bytes, over the limit of %d`, len(p.ID), MaxFeedIDLen))
	case !isObject(p.Payload):
		return nil, fail(`"payload" must be a JSON object (a WSA request body)`)
	}
	return &p, nil
}

// DecodeFeedControl decodes and checks a [FeedControl] that arrived on
// subject.
func DecodeFeedControl(subject string, data []byte) (*FeedControl, error) {
	feed := FeedFromSubject(subject)
	fail := func(reason string) error {
		return &DecodeError{Subject: subject, Kind: KindFeedControl, Reason: reason}
	}
	if feed == "" || !strings.HasPrefix(subject, "oxy.feedctl.") {
		return nil, fail("subject is not a feed control subject")
	}
	var c FeedControl
	if err := c.UnmarshalJSON(data); err != nil {
		return nil, fail(jsonReason(err))
	}
	switch {
	case c.V == 0:
		return nil, fail(`missing "v" (envelope version)`)
	case c.V < 0 || c.V > Version:
		return nil, fail(fmt.Sprintf("unsupported envelope version %d (this build reads up to %d)", c.V, Version))
	case c.Feed != feed:
		return nil, fail(fmt.Sprintf("feed %q does not match the subject's feed %q", c.Feed, feed))
	}
	switch c.Op {
	case FeedOpen:
		if c.Cut.MaxPayloads < 0 || c.Cut.MaxAge < 0 {
			return nil, fail("a cut limit is negative")
		}
		if c.Cut.MaxPayloads == 0 && c.Cut.MaxAge == 0 {
			return nil, fail(`"cut" needs max_payloads or max_age: a feed's runs must end`)
		}
		if c.Cut.MaxAge > 0 && c.Cut.MaxAge < time.Second {
			return nil, fail(fmt.Sprintf("cut max_age %v is below one second", c.Cut.MaxAge))
		}
	case FeedPause, FeedResume, FeedClose:
	default:
		return nil, fail(fmt.Sprintf("op %q is not open, pause, resume or close", c.Op))
	}
	return &c, nil
}

// DecodeFeedRecord decodes a value of the feeds bucket.
func DecodeFeedRecord(data []byte) (*FeedRecord, error) {
	var r FeedRecord
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("messages: feed record: %w", err)
	}
	if r.V == 0 || r.V > Version {
		return nil, fmt.Errorf("messages: feed record: unsupported version %d", r.V)
	}
	if err := ValidateFeedName(r.Feed); err != nil {
		return nil, fmt.Errorf("messages: feed record: %w", err)
	}
	return &r, nil
}
