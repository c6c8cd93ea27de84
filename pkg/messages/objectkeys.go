package messages

import (
	"encoding/json"

	"github.com/oxypipe/oxypipe/internal/jsonscan"
)

// unknownFields returns the members of the JSON object data whose names are
// not in known, last one winning for a repeated name, or nil when there are
// none. It is what decoding data into a map[string]json.RawMessage and
// dropping the known names returns, in one pass over the bytes and without
// an allocation for an object of known names only.
//
// data must be valid JSON (it has already been decoded into the envelope's
// struct); anything but an object yields nil.
func unknownFields(data []byte, known map[string]struct{}) Extra {
	var extra Extra
	jsonscan.Object(data, func(name, value []byte) {
		if _, ok := known[string(name)]; ok { // no allocation for the lookup
			return
		}
		if extra == nil {
			extra = make(Extra)
		}
		extra[string(name)] = append(json.RawMessage(nil), value...)
	})
	return extra
}
