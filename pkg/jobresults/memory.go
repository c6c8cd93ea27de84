package jobresults

import (
	"cmp"
	"context"
	"fmt"
	"hash/maphash"
	"slices"
	"sync"
	"time"

	"github.com/oxypipe/oxypipe/pkg/oxytype"
)

// MemoryStore is the in-memory ledger: safe for concurrent use, with counts
// kept incrementally so that GetStageCounts, CountCompletedDocs,
// CountHardFailedDocs and CountResolvedDocs cost O(stages) whatever the
// number of records, and failure queries cost O(failures).
//
// A job's documents are split over independently locked stripes, so
// concurrent writers of one job rarely wait for each other. Reads combine
// the stripes one at a time: a read concurrent with writes sees each
// stripe consistent, not the whole job at one instant (as with MongoDB).
type MemoryStore struct {
	name    string
	scoping bool
	now     func() time.Time
	seed    maphash.Seed
	jobs    sync.Map  // job id → *memJob
	batches sync.Pool // *[]prepared buffers for Apply

	// spillPath and spillFinal are WithSpill's; spill is its file, nil
	// without the option or when it could not be created (spillOpenErr).
	spillPath, spillFinal string
	spill                 *spillFile
	spillOpenErr          error
}

// MemoryOption configures a MemoryStore.
type MemoryOption func(*MemoryStore)

// WithName names the store (see Name). Default "memory".
func WithName(name string) MemoryOption { return func(s *MemoryStore) { s.name = name } }

// WithScoping turns scoping on: the scope carried by the context (see
// WithScope) or by an entry is stored on the record. Default off.
func WithScoping(enabled bool) MemoryOption { return func(s *MemoryStore) { s.scoping = enabled } }

// WithClock sets the clock that times writes without an event time. Default
// time.Now.
func WithClock(now func() time.Time) MemoryOption { return func(s *MemoryStore) { s.now = now } }

// NewMemoryStore returns an empty in-memory ledger.
func NewMemoryStore(opts ...MemoryOption) *MemoryStore {
	s := &MemoryStore{name: "memory", now: time.Now, seed: maphash.MakeSeed()}
	for _, o := range opts {
		o(s)
	}
	if s.now == nil {
		s.now = time.Now
	}
	if s.spillPath != "" {
		s.spill, s.spillOpenErr = openSpill(s.spillPath)
	}
	return s
}

var _ Ledger = (*MemoryStore)(nil)

// Name returns the store's name.
func (s *MemoryStore) Name() string { return s.name }

// Setup does nothing: there is nothing to create. It exists because Store
// requires it.
func (s *MemoryStore) Setup(ctx context.Context) error { return ctx.Err() }

// RecordSuccess implements Store.
func (s *MemoryStore) RecordSuccess(ctx context.Context, k Key, origin oxytype.Party) error {
	return s.writeOne(ctx, Entry{Key: k, Outcome: oxytype.Success, Origin: origin})
}

// RecordSoftFailure implements Store.
func (s *MemoryStore) RecordSoftFailure(ctx context.Context, k Key, origin, consumer oxytype.Party, retryCount int, reason string) error {
	return s.writeOne(ctx, Entry{Key: k, Outcome: oxytype.SoftFailure, Origin: origin, Consumer: consumer, RetryCount: retryCount, Reason: reason})
}

// RecordHardFailure implements Store.
func (s *MemoryStore) RecordHardFailure(ctx context.Context, k Key, origin, consumer oxytype.Party, err string) error {
	return s.writeOne(ctx, Entry{Key: k, Outcome: oxytype.HardFailure, Origin: origin, Consumer: consumer, Reason: err})
}

func (s *MemoryStore) writeOne(ctx context.Context, e Entry) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	var now time.Time
	p, err := s.prepare(ctx, e, &now)
	if err != nil {
		return err
	}
	j := s.jobFor(p.Run)
	st := s.stripe(j, p.DocID)
	st.mu.Lock()
	defer st.mu.Unlock()
	_, err = s.applyTo(j, st, &p)
	return err
}

// applyTo applies p to stripe st of job j, whose lock the caller holds: a
// spilled document is read back first, and a document p completes is
// spilled.
func (s *MemoryStore) applyTo(j *memJob, st *memStripe, p *prepared) (bool, error) {
	if s.spill == nil {
		return st.apply(p), nil
	}
	if st.docs[p.DocID] == nil {
		if _, err := s.unspill(j, st, p.DocID); err != nil {
			return false, err
		}
	}
	applied := st.apply(p)
	if d := st.docs[p.DocID]; applied && s.spillable(d) {
		s.spillDoc(j, st, d)
	}
	return applied, nil
}

// prepare validates and normalises one entry; now is the write time for an
// entry without an event time, read from the clock when zero.
func (s *MemoryStore) prepare(ctx context.Context, e Entry, now *time.Time) (prepared, error) {
	scope := ""
	if s.scoping {
		var err error
		if scope, err = writeScope(ctx, e.Scope); err != nil {
			return prepared{}, err
		}
	}
	if e.Time.IsZero() && now.IsZero() {
		*now = s.now()
	}
	return prepare(e, scope, *now)
}

// stripe returns the stripe of j that holds the document docID.
func (s *MemoryStore) stripe(j *memJob, docID string) *memStripe {
	return &j.stripes[maphash.String(s.seed, docID)%memStripes]
}

// Apply implements BatchWriter.
func (s *MemoryStore) Apply(ctx context.Context, entries []Entry) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	// Every entry is validated before any is applied. The prepared entries
	// live in a pooled buffer: batches are the status worker's steady path.
	buf, _ := s.batches.Get().(*[]prepared)
	if buf == nil {
		buf = new([]prepared)
	}
	ps := slices.Grow((*buf)[:0], len(entries))[:len(entries)]
	defer func() {
		clear(ps) // drop references to payloads and reasons
		*buf = ps[:0]
		s.batches.Put(buf)
	}()
	var now time.Time // one clock reading for the batch
	for i, e := range entries {
		p, err := s.prepare(ctx, e, &now)
		if err != nil {
			return 0, err
		}
		ps[i] = p
	}
	applied := 0
	var j *memJob
	var locked *memStripe
	for i := range ps {
		if j == nil || j.id != ps[i].Run {
			j = s.jobFor(ps[i].Run)
		}
		// Consecutive entries of one stripe share a lock.
		if st := s.stripe(j, ps[i].DocID); st != locked {
			if locked != nil {
				locked.mu.Unlock()
			}
			locked = st
			locked.mu.Lock()
		}
		ok, err := s.applyTo(j, locked, &ps[i])
		if err != nil {
			locked.mu.Unlock()
			return applied, err
		}
		if ok {
			applied++
		}
	}
	if locked != nil {
		locked.mu.Unlock()
	}
	return applied, nil
}

// jobFor returns the job's state, creating it on first use.
func (s *MemoryStore) jobFor(jobID string) *memJob {
	if j, ok := s.jobs.Load(jobID); ok {
		return j.(*memJob)
	}
	j, _ := s.jobs.LoadOrStore(jobID, newMemJob(jobID))
	return j.(*memJob)
}

// job returns the job's state, or nil for a job without records.
func (s *MemoryStore) job(jobID string) *memJob {
	if j, ok := s.jobs.Load(jobID); ok {
		return j.(*memJob)
	}
	return nil
}

// eachStripe calls fn with every stripe of a job, locked. It does nothing
// for a job without records.
func (s *MemoryStore) eachStripe(jobID string, fn func(st *memStripe)) {
	j := s.job(jobID)
	if j == nil {
		return
	}
	for i := range j.stripes {
		st := &j.stripes[i]
		st.mu.Lock()
		fn(st)
		st.mu.Unlock()
	}
}

// CountCompletedDocs implements Store. It costs O(stages).
func (s *MemoryStore) CountCompletedDocs(ctx context.Context, jobID, finalDataType string) (int, error) {
	if err := readArgs(ctx, jobID, finalDataType, true); err != nil {
		return 0, err
	}
	n := 0
	s.eachStripe(jobID, func(st *memStripe) {
		for _, t := range st.stages {
			if t.dataType == finalDataType {
				n += t.succeeded
			}
		}
	})
	return n, nil
}

// CountHardFailedDocs implements Store. It costs O(1).
func (s *MemoryStore) CountHardFailedDocs(ctx context.Context, jobID string) (int, error) {
	if err := readArgs(ctx, jobID, "", false); err != nil {
		return 0, err
	}
	n := 0
	s.eachStripe(jobID, func(st *memStripe) { n += st.hardDocs })
	return n, nil
}

// CountResolvedDocs implements RecordReader. It costs O(stages).
func (s *MemoryStore) CountResolvedDocs(ctx context.Context, jobID, finalDataType string) (int, error) {
	if err := readArgs(ctx, jobID, finalDataType, true); err != nil {
		return 0, err
	}
	n := 0
	s.eachStripe(jobID, func(st *memStripe) {
		n += st.hardDocs
		for _, t := range st.stages {
			if t.dataType == finalDataType {
				n += t.succeeded - t.succeededOfHardDocs
			}
		}
	})
	return n, nil
}

// GetStageCounts implements Store. It costs O(stages).
func (s *MemoryStore) GetStageCounts(ctx context.Context, jobID string) ([]StageCount, error) {
	if err := readArgs(ctx, jobID, "", false); err != nil {
		return nil, err
	}
	out := []StageCount{}
	s.eachStripe(jobID, func(st *memStripe) {
	stages:
		for _, t := range st.stages {
			for i := range out {
				if c := &out[i]; c.DataType == t.dataType {
					c.Total += t.total
					c.Succeeded += t.succeeded
					c.SoftFailed += t.softFailed
					c.HardFailed += t.hardFailed
					continue stages
				}
			}
			out = append(out, StageCount{
				DataType: t.dataType, Total: t.total, Succeeded: t.succeeded,
				SoftFailed: t.softFailed, HardFailed: t.hardFailed,
			})
		}
	})
	slices.SortFunc(out, func(a, b StageCount) int { return cmp.Compare(a.DataType, b.DataType) })
	return out, nil
}

// FinishJob implements Finisher. The memory store removes nothing by age
// (its records live as long as the process, and a one-process run rebuilds
// them from the status stream); it keeps the stamp so that it reads back
// exactly as from MongoDB.
func (s *MemoryStore) FinishJob(ctx context.Context, jobID string, at time.Time) error {
	if err := finishArgs(ctx, jobID, at); err != nil {
		return err
	}
	ms := at.UnixMilli()
	s.eachStripe(jobID, func(st *memStripe) {
		for _, d := range st.docs {
			for _, r := range d.recs {
				r.finish(ms)
			}
		}
	})
	if j := s.job(jobID); j != nil && s.spill != nil {
		// The spilled documents are stamped as they are read back.
		s.spill.mu.Lock()
		size := s.spill.size
		s.spill.mu.Unlock()
		j.spillMu.Lock()
		j.spilled.finishes = append(j.spilled.finishes, spillFinish{ms: ms, size: size})
		j.spillMu.Unlock()
	}
	return nil
}

// GetDocStatus implements Store.
func (s *MemoryStore) GetDocStatus(ctx context.Context, jobID, docID string) ([]Record, error) {
	if err := readArgs(ctx, jobID, "", false); err != nil {
		return nil, err
	}
	if err := validateDocID(docID); err != nil {
		return nil, err
	}
	out := []Record{}
	if j := s.job(jobID); j != nil {
		st := s.stripe(j, docID)
		st.mu.Lock()
		d := st.docs[docID]
		if d == nil && s.spill != nil {
			var err error
			if d, err = s.spilledDoc(j, st, docID); err != nil {
				st.mu.Unlock()
				return nil, err
			}
		}
		if d != nil {
			for _, r := range d.recs {
				out = append(out, r.toRecord(jobID))
			}
		}
		st.mu.Unlock()
	}
	slices.SortFunc(out, func(a, b Record) int { return cmp.Compare(a.DataType, b.DataType) })
	return out, nil
}

// GetFailures implements Store. It costs O(failures of the job).
func (s *MemoryStore) GetFailures(ctx context.Context, jobID, dataType string) ([]Record, error) {
	if err := readArgs(ctx, jobID, dataType, false); err != nil {
		return nil, err
	}
	type failed struct {
		d *memDoc
		r Record
	}
	var fs []failed
	s.eachStripe(jobID, func(st *memStripe) {
		for r := range st.failed {
			if dataType == "" || r.stage.dataType == dataType {
				fs = append(fs, failed{d: r.doc, r: r.toRecord(jobID)})
			}
		}
	})
	slices.SortFunc(fs, func(a, b failed) int {
		return cmp.Or(compareDocs(a.d, b.d), cmp.Compare(a.r.DataType, b.r.DataType))
	})
	out := make([]Record, len(fs))
	for i, f := range fs {
		out[i] = f.r
	}
	return out, nil
}

// GetUniqueErrors implements Store. It costs O(failures of the job).
func (s *MemoryStore) GetUniqueErrors(ctx context.Context, jobID, dataType string) ([]UniqueError, error) {
	if err := readArgs(ctx, jobID, dataType, false); err != nil {
		return nil, err
	}
	type group struct{ err, dataType string }
	groups := map[group]*UniqueError{}
	s.eachStripe(jobID, func(st *memStripe) {
		for r := range st.failed {
			msg, ok := r.currentError()
			if !ok || (dataType != "" && r.stage.dataType != dataType) {
				continue
			}
			g := group{err: msg, dataType: r.stage.dataType}
			t := time.UnixMilli(r.timeMS).UTC()
			if u := groups[g]; u != nil {
				u.Count++
				if t.Before(u.FirstSeen) {
					u.FirstSeen = t
				}
				if t.After(u.LastSeen) {
					u.LastSeen = t
				}
				continue
			}
			groups[g] = &UniqueError{Error: g.err, DataType: g.dataType, Count: 1, FirstSeen: t, LastSeen: t}
		}
	})
	out := make([]UniqueError, 0, len(groups))
	for _, u := range groups {
		out = append(out, *u)
	}
	slices.SortFunc(out, compareUniqueErrors)
	return out, nil
}

// compareUniqueErrors orders by count descending, then error, then data type.
func compareUniqueErrors(a, b UniqueError) int {
	return cmp.Or(cmp.Compare(b.Count, a.Count), cmp.Compare(a.Error, b.Error), cmp.Compare(a.DataType, b.DataType))
}

// ForEachRecord implements RecordReader. The documents are taken once at
// the start, with every stripe locked, so that each is seen exactly once;
// each document's records are copied under its stripe's lock just before fn
// sees them, so fn may call the store. Spilled documents are read back from
// the spill file one at a time, in order.
func (s *MemoryStore) ForEachRecord(ctx context.Context, jobID string, fn func(Record) error) error {
	if err := readArgs(ctx, jobID, "", false); err != nil {
		return err
	}
	j := s.job(jobID)
	if j == nil {
		return nil
	}
	var recs []Record
	emit := func(st *memStripe, d *memDoc) error {
		recs = recs[:0]
		for _, r := range d.recs {
			recs = append(recs, r.toRecord(jobID))
		}
		st.mu.Unlock()
		slices.SortFunc(recs, func(a, b Record) int { return cmp.Compare(a.DataType, b.DataType) })
		for _, r := range recs {
			if err := fn(r); err != nil {
				return err
			}
		}
		return nil
	}
	n := 0
	for ref := range s.inOrder(j) {
		if n++; n%1024 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		st := s.stripe(j, ref.id)
		d := ref.mem
		if d == nil {
			b, err := s.spill.read(ref.off)
			if err != nil {
				return &StoreError{Op: "ForEachRecord", Transient: true, Err: err}
			}
			st.mu.Lock()
			if d, err = decodeDoc(st, ref.id, b, ref.stamp); err != nil {
				st.mu.Unlock()
				return &StoreError{Op: "ForEachRecord", Err: err}
			}
		} else {
			st.mu.Lock()
		}
		if err := emit(st, d); err != nil {
			return err
		}
	}
	return nil
}

// compareDocs is the document order of compareRefs.
func compareDocs(a, b *memDoc) int {
	return compareRefs(docRef{id: a.id, pos: a.pos, hasPos: a.hasPos}, docRef{id: b.id, pos: b.pos, hasPos: b.hasPos})
}

// readArgs checks the context and the arguments of a read.
// finishArgs checks the arguments of FinishJob.
func finishArgs(ctx context.Context, jobID string, at time.Time) error {
	if err := readArgs(ctx, jobID, "", false); err != nil {
		return err
	}
	if at.IsZero() {
		return fmt.Errorf("%w: FinishJob needs the time the job finished", ErrInvalidInput)
	}
	return nil
}

func readArgs(ctx context.Context, jobID, dataType string, dataTypeRequired bool) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := validateJobID(jobID); err != nil {
		return err
	}
	if dataTypeRequired {
		return validateDataType(dataType)
	}
	return nil
}
