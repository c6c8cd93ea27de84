package statusworker

import (
	"encoding/json"
	"maps"
	"time"

	"github.com/oxypipe/oxypipe/pkg/messages"
)

// claimField is the field of a run record (kept in RunRecord.Extra, which
// every reader preserves) under which a statusworker replica holds its claim
// to complete the run while it writes the run log.
const claimField = "completing"

// completionClaim is a replica's claim to complete a run. It lapses at
// Until, so a replica that died while completing does not strand the run:
// another (or the same, restarted) takes it over.
type completionClaim struct {
	By    string    `json:"by"`
	Until time.Time `json:"until"`
}

func readClaim(rec *messages.RunRecord) (completionClaim, bool) {
	raw, ok := rec.Extra[claimField]
	if !ok {
		return completionClaim{}, false
	}
	var c completionClaim
	if err := json.Unmarshal(raw, &c); err != nil || c.By == "" {
		return completionClaim{}, false
	}
	return c, true
}

// setClaim stores c in rec. rec.Extra is copied first: the record being
// changed shares its map with the record that was read.
func setClaim(rec *messages.RunRecord, c completionClaim) {
	raw, _ := json.Marshal(c)
	ex := maps.Clone(rec.Extra)
	if ex == nil {
		ex = messages.Extra{}
	}
	ex[claimField] = raw
	rec.Extra = ex
}

func clearClaim(rec *messages.RunRecord) {
	if _, ok := rec.Extra[claimField]; !ok {
		return
	}
	ex := maps.Clone(rec.Extra)
	delete(ex, claimField)
	if len(ex) == 0 {
		ex = nil
	}
	rec.Extra = ex
}
