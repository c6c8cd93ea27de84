package storetest

import (
	"cmp"
	"math/rand/v2"
	"slices"
	"strconv"
	"time"

	"github.com/oxypipe/oxypipe/pkg/jobresults"
	"github.com/oxypipe/oxypipe/pkg/oxytype"
)

// modelCases compare a store with a plain reference model after random
// writes.
var modelCases = []testCase{
	{name: "random writes read back exactly as the reference model says", run: func(h *harness) {
		seed := uint64(time.Now().UnixNano())
		h.Logf("random seed %d", seed)
		rng := rand.New(rand.NewPCG(seed, 42))
		m := &model{recs: map[jobresults.Key]*jobresults.Record{}}
		docs := []string{"1", "2", "3", "10", "x", "y"}
		stages := []string{stagePayload, stageSubmitted, stageDone}
		outcomes := []oxytype.Outcome{oxytype.Success, oxytype.SoftFailure, oxytype.HardFailure}
		reasons := []string{"429", "503", "timeout", "faulted"}
		randomEntry := func() jobresults.Entry {
			en := jobresults.Entry{
				Key:     h.key(stages[rng.IntN(len(stages))], docs[rng.IntN(len(docs))]),
				Outcome: outcomes[rng.IntN(len(outcomes))],
				Origin:  oxytype.Party{Type: "stage", Name: strconv.Itoa(rng.IntN(3))},
			}
			if en.Outcome != oxytype.Success {
				en.Consumer = oxytype.Party{Type: "worker", Name: strconv.Itoa(rng.IntN(3))}
				en.Reason = reasons[rng.IntN(len(reasons))]
			}
			if en.Outcome == oxytype.SoftFailure {
				en.RetryCount = rng.IntN(5)
			}
			if rng.IntN(3) > 0 {
				en.Version = uint64(1 + rng.IntN(30))
			}
			return en
		}
		for step := 1; step <= 150; step++ {
			h.clock.Advance(time.Duration(rng.IntN(3)) * time.Second)
			now := h.clock.Now()
			switch en := randomEntry(); {
			case en.Version == 0 && rng.IntN(2) == 0:
				// Through the Store methods.
				var err error
				switch en.Outcome {
				case oxytype.Success:
					err = h.store.RecordSuccess(h.ctx, en.Key, en.Origin)
				case oxytype.SoftFailure:
					err = h.store.RecordSoftFailure(h.ctx, en.Key, en.Origin, en.Consumer, en.RetryCount, en.Reason)
				case oxytype.HardFailure:
					err = h.store.RecordHardFailure(h.ctx, en.Key, en.Origin, en.Consumer, en.Reason)
				}
				if err != nil {
					h.Fatalf("step %d: %v", step, err)
				}
				m.apply(en, now)
			default:
				batch := []jobresults.Entry{en}
				for range rng.IntN(3) {
					batch = append(batch, randomEntry())
				}
				want := 0
				for _, b := range batch {
					if m.apply(b, now) {
						want++
					}
				}
				got, err := h.store.Apply(h.ctx, batch)
				if err != nil || got != want {
					h.Fatalf("step %d: Apply = %d, %v; the model applied %d", step, got, err, want)
				}
			}
			if step%50 == 0 {
				m.check(h, stages)
			}
		}
	}},
}

// model is the reference ledger: the Store API's rules written as plainly as
// possible, every query a scan.
type model struct {
	recs map[jobresults.Key]*jobresults.Record
}

func (m *model) apply(en jobresults.Entry, now time.Time) bool {
	r := m.recs[en.Key]
	if r == nil {
		r = &jobresults.Record{Key: en.Key}
		m.recs[en.Key] = r
	} else if en.Version != 0 && en.Version <= r.Version {
		return false
	}
	r.Time, r.Origin = now, en.Origin
	switch en.Outcome {
	case oxytype.Success:
		r.Success, r.Consumer, r.RetryCount, r.SoftFailures, r.HardFailure = true, oxytype.Party{}, 0, nil, ""
	case oxytype.SoftFailure:
		r.Success, r.Consumer, r.RetryCount, r.HardFailure = false, en.Consumer, en.RetryCount, ""
		r.SoftFailures = append(slices.Clone(r.SoftFailures), en.Reason)
	case oxytype.HardFailure:
		r.Success, r.Consumer, r.RetryCount, r.SoftFailures, r.HardFailure = false, en.Consumer, 0, nil, en.Reason
	}
	if en.Version != 0 {
		r.Version = en.Version
	}
	return true
}

// sorted returns the records matching keep in document order.
func (m *model) sorted(keep func(*jobresults.Record) bool) []jobresults.Record {
	out := []jobresults.Record{}
	for _, r := range m.recs {
		if keep(r) {
			out = append(out, *r)
		}
	}
	slices.SortFunc(out, func(a, b jobresults.Record) int {
		pa, errA := strconv.ParseInt(a.DocID, 10, 64)
		pb, errB := strconv.ParseInt(b.DocID, 10, 64)
		switch {
		case (errA == nil) != (errB == nil):
			if errA == nil {
				return 1
			}
			return -1
		case errA == nil:
			if c := cmp.Compare(pa, pb); c != 0 {
				return c
			}
		}
		return cmp.Or(cmp.Compare(a.DocID, b.DocID), cmp.Compare(a.DataType, b.DataType))
	})
	return out
}

func (m *model) check(h *harness, stages []string) {
	h.Helper()
	equal(h, "all records", h.allRecords(), m.sorted(func(*jobresults.Record) bool { return true }))
	counts := map[string]*jobresults.StageCount{}
	hardDocs := map[string]bool{}
	for _, r := range m.recs {
		c := counts[r.DataType]
		if c == nil {
			c = &jobresults.StageCount{DataType: r.DataType}
			counts[r.DataType] = c
		}
		c.Total++
		switch r.Outcome() {
		case oxytype.Success:
			c.Succeeded++
		case oxytype.SoftFailure:
			c.SoftFailed++
		case oxytype.HardFailure:
			c.HardFailed++
			hardDocs[r.DocID] = true
		}
	}
	wantCounts := []jobresults.StageCount{}
	for _, c := range counts {
		wantCounts = append(wantCounts, *c)
	}
	slices.SortFunc(wantCounts, func(a, b jobresults.StageCount) int { return cmp.Compare(a.DataType, b.DataType) })
	equal(h, "stage counts", h.stageCounts(), wantCounts)
	equal(h, "hard-failed docs", h.hardFailedDocs(), len(hardDocs))
	for _, st := range append([]string{""}, stages...) {
		failed := func(r *jobresults.Record) bool { return !r.Success && (st == "" || r.DataType == st) }
		equal(h, "failures at "+st, h.failures(st), m.sorted(failed))
		equal(h, "unique errors at "+st, h.uniqueErrors(st), uniqueErrors(m.sorted(failed)))
		if st == "" {
			continue
		}
		completed, resolved := 0, map[string]bool{}
		for doc := range hardDocs {
			resolved[doc] = true
		}
		for _, r := range m.recs {
			if r.DataType == st && r.Success {
				completed++
				resolved[r.DocID] = true
			}
		}
		equal(h, "completed at "+st, h.completed(st), completed)
		equal(h, "resolved at "+st, h.resolved(st), len(resolved))
	}
}

func uniqueErrors(failed []jobresults.Record) []jobresults.UniqueError {
	type group struct{ err, dataType string }
	groups := map[group]*jobresults.UniqueError{}
	for _, r := range failed {
		g := group{r.CurrentError(), r.DataType}
		u := groups[g]
		if u == nil {
			u = &jobresults.UniqueError{Error: g.err, DataType: g.dataType, FirstSeen: r.Time, LastSeen: r.Time}
			groups[g] = u
		}
		u.Count++
		if r.Time.Before(u.FirstSeen) {
			u.FirstSeen = r.Time
		}
		if r.Time.After(u.LastSeen) {
			u.LastSeen = r.Time
		}
	}
	out := []jobresults.UniqueError{}
	for _, u := range groups {
		out = append(out, *u)
	}
	slices.SortFunc(out, func(a, b jobresults.UniqueError) int {
		return cmp.Or(cmp.Compare(b.Count, a.Count), cmp.Compare(a.Error, b.Error), cmp.Compare(a.DataType, b.DataType))
	})
	return out
}
