package messages

import (
	"bytes"
	"encoding/json"

	"github.com/oxypipe/oxypipe/internal/jsonscan"
	"github.com/oxypipe/oxypipe/pkg/oxytype"
)

// decodeStatusEvent decodes data into a StatusEvent exactly as encoding/json
// does, in one validating scan and one slicing pass, for the events the
// pipeline writes: every member a known key given once, strings, integers,
// a time, a payload, and error and upload objects. ok is false for anything
// else — a null, a repeated or differently cased key, a value of another
// type, a party with other members — and the caller then decodes with
// encoding/json, which also phrases the error.
//
// Status events are the busiest envelope: every stage writes several per
// doc, and both the statusworker and every progress watcher read all of
// them, so a generic decode (a validating scan, then reflection per member)
// costs a run a few percent of its CPU.
func decodeStatusEvent(data []byte) (e StatusEvent, ok bool) {
	if !json.Valid(data) {
		return StatusEvent{}, false
	}
	var seen uint32
	ok = true
	isObject := jsonscan.Object(data, func(name, value []byte) {
		if !ok {
			return
		}
		bit, known := statusEventBits[string(name)]
		if !known {
			ok = !foldsToKnown(name, statusEventKeys) // encoding/json matches keys case-insensitively
			return
		}
		if seen&bit != 0 || value[0] == 'n' { // a repeat, or a null
			ok = false
			return
		}
		seen |= bit
		switch string(name) {
		case "v":
			e.V, ok = scanInt(value)
		case "run":
			e.Run, ok = jsonscan.String(value)
		case "doc":
			e.Doc, ok = jsonscan.String(value)
		case "attempt":
			e.Attempt, ok = scanInt(value)
		case "data_type":
			var s string
			s, ok = jsonscan.String(value)
			e.DataType = oxytype.DataType(s)
		case "outcome":
			var s string
			s, ok = jsonscan.String(value)
			e.Outcome = oxytype.Outcome(s)
		case "origin":
			e.Origin, ok = scanParty(value)
		case "consumer":
			e.Consumer, ok = scanParty(value)
		case "retry_count":
			e.RetryCount, ok = scanInt(value)
		case "reason":
			e.Reason, ok = jsonscan.String(value)
		case "error":
			info := new(oxytype.ErrorInfo)
			ok = json.Unmarshal(value, info) == nil
			e.Error = info
		case "state":
			var s string
			s, ok = jsonscan.String(value)
			e.State = oxytype.State(s)
		case "api_job_id":
			e.APIJobID, ok = jsonscan.String(value)
		case "payload":
			e.Payload = append(json.RawMessage(nil), value...)
		case "upload":
			up := new(oxytype.Upload)
			ok = json.Unmarshal(value, up) == nil
			e.Upload = up
		case "time":
			ok = e.Time.UnmarshalJSON(value) == nil
		default: // a key of statusEventBits without a case here
			ok = false
		}
	})
	if !isObject || !ok {
		return StatusEvent{}, false
	}
	e.Extra = unknownFields(data, statusEventKeys)
	return e, true
}

// statusEventBits gives each key of a StatusEvent its own bit, to catch a
// key given twice (encoding/json merges a repeated object member into the
// first; the fast path leaves that to it).
var statusEventBits = func() map[string]uint32 {
	bits := make(map[string]uint32, len(statusEventKeys))
	for k := range statusEventKeys {
		bits[k] = 1 << len(bits)
	}
	return bits
}()

// foldsToKnown reports whether name, not itself a known key, is one under
// encoding/json's case-insensitive matching.
func foldsToKnown(name []byte, known map[string]struct{}) bool {
	for k := range known {
		if bytes.EqualFold(name, []byte(k)) {
			return true
		}
	}
	return false
}

// scanInt reads a JSON number that is a plain integer of at most 18 digits
// (so it fits an int); ok is false for any other value.
func scanInt(value []byte) (n int, ok bool) {
	digits := value
	if len(digits) > 0 && digits[0] == '-' {
		digits = digits[1:]
	}
	if len(digits) == 0 || len(digits) > 18 {
		return 0, false
	}
	for _, c := range digits {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	if value[0] == '-' {
		n = -n
	}
	return n, true
}

// scanParty reads a party object whose members are "type" and "name"
// strings, each at most once; ok is false for any other value.
func scanParty(value []byte) (p oxytype.Party, ok bool) {
	ok = true
	var seenType, seenName bool
	isObject := jsonscan.Object(value, func(name, v []byte) {
		if !ok {
			return
		}
		switch string(name) {
		case "type":
			ok = !seenType
			seenType = true
			if ok {
				p.Type, ok = jsonscan.String(v)
			}
		case "name":
			ok = !seenName
			seenName = true
			if ok {
				p.Name, ok = jsonscan.String(v)
			}
		default:
			ok = false
		}
	})
	return p, isObject && ok
}
