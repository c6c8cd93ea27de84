package jobresults

import (
	"bytes"
	"encoding/json"
	"slices"
	"sync"
	"time"

	"github.com/oxypipe/oxypipe/pkg/oxytype"
)

// memStripes is the number of independently locked parts of a job. A
// document and all its records live in one stripe (chosen by a hash of the
// doc id), so per-document facts such as "has a hard failure somewhere" are
// exact within a stripe and counts are sums over stripes.
const memStripes = 16

// memJob is the state of one job in a MemoryStore.
type memJob struct {
	id      string
	stripes [memStripes]memStripe
	// spilled finds the documents WithSpill moved to the spill file.
	spillMu sync.Mutex
	spilled spillIndex
}

func newMemJob(id string) *memJob {
	j := &memJob{id: id}
	for i := range j.stripes {
		j.stripes[i].docs = map[string]*memDoc{}
		j.stripes[i].failed = map[*memRecord]struct{}{}
	}
	return j
}

// memStripe is a part of a job's documents with their counts, guarded by mu.
type memStripe struct {
	mu   sync.Mutex
	docs map[string]*memDoc
	// stages holds the counts of every stage seen in this stripe; a job has
	// few stages, so a slice beats a map.
	stages []*stageTally
	// hardDocs counts the documents with a hard failure at some stage.
	hardDocs int
	// failed holds the records whose outcome is a failure.
	failed map[*memRecord]struct{}
	_      [64]byte // keep stripes on separate cache lines
}

func (st *memStripe) stage(dataType string) *stageTally {
	for _, t := range st.stages {
		if t.dataType == dataType {
			return t
		}
	}
	t := &stageTally{dataType: dataType}
	st.stages = append(st.stages, t)
	return t
}

// stageTally holds the counts of one stage in one stripe, updated on every
// write.
type stageTally struct {
	dataType                                 string
	total, succeeded, softFailed, hardFailed int
	// succeededOfHardDocs counts the successes at this stage of documents
	// that also have a hard failure somewhere, so that CountResolvedDocs
	// does not count them twice.
	succeededOfHardDocs int
}

// memDoc is one document of a job and its records (one per stage).
type memDoc struct {
	id        string
	pos       int64
	hasPos    bool
	hardCount int // records of this document holding a hard failure
	recs      []*memRecord
	// first and firstSlot hold the document's first record and slice slot,
	// allocated with the document.
	first     memRecord
	firstSlot [1]*memRecord
}

// memRecord is a record in compact form: the key lives in its job, document
// and stage, the time is in Unix milliseconds, and the fields of failures
// and of the run log are held aside, allocated only when present, so that
// the common record (a success) stays small.
type memRecord struct {
	stage   *stageTally
	doc     *memDoc
	version uint64
	timeMS  int64
	origin  oxytype.Party
	success bool
	scope   string
	fail    *memFailure   // nil for a success
	ext     *memRecordExt // nil until a write carries run-log fields
}

// memFailure holds the fields of a failed record.
type memFailure struct {
	consumer     oxytype.Party
	retryCount   int
	softFailures []string
	hardFailure  string
}

// memRecordExt holds the run-log fields of a record.
type memRecordExt struct {
	// state and errInfo describe the last outcome: each write replaces them.
	state   oxytype.State
	errInfo *oxytype.ErrorInfo
	// apiJobID, payload and upload describe the document: kept once set.
	apiJobID string
	payload  json.RawMessage
	upload   *oxytype.Upload
	// finishedMS is the job's finish stamp (FinishJob) in Unix
	// milliseconds; 0 while the job is open.
	finishedMS int64
}

// sharedPayload returns a copy of payload, or the copy another record of the
// document already holds when the bytes are the same. Every stage's events
// carry the document's payload, and keeping one copy instead of one per
// stage saves about a quarter of the store's memory. Record hands out
// clones, so a shared copy is never changed in place.
func (d *memDoc) sharedPayload(payload []byte) json.RawMessage {
	for _, r := range d.recs {
		if r.ext != nil && bytes.Equal(r.ext.payload, payload) {
			return r.ext.payload
		}
	}
	return slices.Clone(payload)
}

// sharedJobID is sharedPayload for the API job id.
func (d *memDoc) sharedJobID(id string) string {
	for _, r := range d.recs {
		if r.ext != nil && r.ext.apiJobID == id {
			return r.ext.apiJobID
		}
	}
	return id
}

func (r *memRecord) outcome() oxytype.Outcome {
	switch {
	case r.success:
		return oxytype.Success
	case r.fail != nil && r.fail.hardFailure != "":
		return oxytype.HardFailure
	default:
		return oxytype.SoftFailure
	}
}

// currentError returns the hard failure, else the last soft-failure reason;
// ok is false for a record without either.
func (r *memRecord) currentError() (msg string, ok bool) {
	if r.fail == nil {
		return "", false
	}
	if r.fail.hardFailure != "" {
		return r.fail.hardFailure, true
	}
	if n := len(r.fail.softFailures); n > 0 {
		return r.fail.softFailures[n-1], true
	}
	return "", false
}

// toRecord returns a copy of r that shares no memory with the store.
func (r *memRecord) toRecord(jobID string) Record {
	rec := Record{
		Key:     Key{Run: jobID, DataType: r.stage.dataType, DocID: r.doc.id},
		Success: r.success,
		Origin:  r.origin,
		Time:    time.UnixMilli(r.timeMS).UTC(),
		Scope:   r.scope,
		Version: r.version,
	}
	if f := r.fail; f != nil {
		rec.Consumer = f.consumer
		rec.RetryCount = f.retryCount
		rec.SoftFailures = slices.Clone(f.softFailures)
		rec.HardFailure = f.hardFailure
	}
	if x := r.ext; x != nil {
		rec.State = x.state
		rec.Error = cloneErrorInfo(x.errInfo)
		rec.APIJobID = x.apiJobID
		rec.Payload = slices.Clone(x.payload)
		if x.upload != nil {
			u := *x.upload
			rec.Upload = &u
		}
		if x.finishedMS != 0 {
			rec.FinishedAt = time.UnixMilli(x.finishedMS).UTC()
		}
	}
	return rec
}

// finish stamps r with the job's finish time unless it has one.
func (r *memRecord) finish(ms int64) {
	if r.ext == nil {
		r.ext = &memRecordExt{}
	}
	if r.ext.finishedMS == 0 {
		r.ext.finishedMS = ms
	}
}

func cloneErrorInfo(e *oxytype.ErrorInfo) *oxytype.ErrorInfo {
	if e == nil {
		return nil
	}
	c := *e
	if e.StatusCode != nil {
		code := *e.StatusCode
		c.StatusCode = &code
	}
	return &c
}

// apply writes one prepared entry and reports whether it applied (false for
// a stale version). The caller holds st.mu.
func (st *memStripe) apply(p *prepared) bool {
	d := st.docs[p.DocID]
	var r *memRecord
	if d == nil {
		d = &memDoc{id: p.DocID}
		d.pos, d.hasPos = docPosition(p.DocID)
		st.docs[p.DocID] = d
		r = &d.first
		d.recs = append(d.firstSlot[:0], r)
	} else {
		for _, x := range d.recs {
			if x.stage.dataType == p.DataType {
				r = x
				break
			}
		}
		if r == nil {
			r = &memRecord{}
			d.recs = append(d.recs, r)
		}
	}
	if r.stage == nil { // a new record
		r.stage, r.doc = st.stage(p.DataType), d
		r.stage.total++
	} else {
		if p.Version != 0 && p.Version <= r.version {
			return false
		}
		st.untally(r)
	}

	r.timeMS = p.Time.UnixMilli()
	r.origin = p.Origin
	r.success = p.Outcome == oxytype.Success
	switch p.Outcome {
	case oxytype.Success:
		r.fail = nil
	case oxytype.SoftFailure:
		if r.fail == nil {
			r.fail = &memFailure{}
		}
		f := r.fail
		f.consumer, f.retryCount, f.hardFailure = p.Consumer, p.RetryCount, ""
		f.softFailures = append(f.softFailures, p.Reason)
	case oxytype.HardFailure:
		r.fail = &memFailure{consumer: p.Consumer, hardFailure: p.Reason}
	}
	if p.Version != 0 {
		r.version = p.Version
	}
	if p.scope != "" {
		r.scope = p.scope
	}
	if r.ext != nil || p.State != "" || p.Error != nil || p.APIJobID != "" || len(p.Payload) > 0 || p.Upload != nil {
		if r.ext == nil {
			r.ext = &memRecordExt{}
		}
		x := r.ext
		x.state, x.errInfo = p.State, p.Error // prepare made a private copy of Error
		if p.APIJobID != "" {
			x.apiJobID = r.doc.sharedJobID(p.APIJobID)
		}
		if len(p.Payload) > 0 {
			x.payload = r.doc.sharedPayload(p.Payload)
		}
		if p.Upload != nil {
			x.upload = p.Upload
		}
	}

	st.tally(r)
	return true
}

// untally removes r's current outcome from the counts. Called before r
// changes; tally adds the new outcome back after.
func (st *memStripe) untally(r *memRecord) {
	t, d := r.stage, r.doc
	switch r.outcome() {
	case oxytype.Success:
		t.succeeded--
		if d.hardCount > 0 {
			t.succeededOfHardDocs--
		}
	case oxytype.SoftFailure:
		t.softFailed--
		delete(st.failed, r)
	case oxytype.HardFailure:
		t.hardFailed--
		delete(st.failed, r)
		d.hardCount--
		if d.hardCount == 0 {
			st.hardDocs--
			for _, x := range d.recs {
				if x.success {
					x.stage.succeededOfHardDocs--
				}
			}
		}
	}
}

// tally adds r's current outcome to the counts.
func (st *memStripe) tally(r *memRecord) {
	t, d := r.stage, r.doc
	switch r.outcome() {
	case oxytype.Success:
		t.succeeded++
		if d.hardCount > 0 {
			t.succeededOfHardDocs++
		}
	case oxytype.SoftFailure:
		t.softFailed++
		st.failed[r] = struct{}{}
	case oxytype.HardFailure:
		t.hardFailed++
		st.failed[r] = struct{}{}
		d.hardCount++
		if d.hardCount == 1 {
			st.hardDocs++
			for _, x := range d.recs {
				if x.success {
					x.stage.succeededOfHardDocs++
				}
			}
		}
	}
}
