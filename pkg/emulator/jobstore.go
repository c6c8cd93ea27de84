package emulator

import (
	"math"
	"sync"
	"time"
)

// jobStore keeps every job in dense records, chunkJobs to a chunk, found by
// id alone: ids are handed out in sequence, so an id names its chunk and its
// slot, and no map entry or allocation is made per job. A record holds no
// pointer (32 bytes; the input's bytes go to the chunk's arena, the spec and
// outcome to a per-chunk table of the few distinct ones, a storage upload to
// a side map), so the collector never scans the records. A job read back is
// a fresh *job.
//
// A chunk is released whole once every job in it finished at least JobTTL
// ago, so the store holds the jobs of the last JobTTL, not of the process's
// life. Release is checked each time a chunk fills.
type jobStore struct {
	mu     sync.RWMutex
	base   uint64 // chunk number of chunks[0]
	chunks []*jobChunk
}

// chunkJobs is the number of jobs per chunk.
const chunkJobs = 4096

type jobChunk struct {
	mu   sync.RWMutex
	recs [chunkJobs]jobRecord
	// refs are the distinct spec and outcome pairs of the chunk's jobs;
	// a record names one by its index.
	refs    []jobRef
	refIdx  map[jobRef]uint16
	lastRef uint16
	// inputs is the arena of the jobs' inputs.
	inputs  []byte
	uploads map[uint16]jobUpload // by slot, for jobs with a storage_url
	filled  int
	// lastFinish is the latest finish of the chunk's jobs (never if one
	// stays pending).
	lastFinish int64
}

type jobRecord struct {
	created int64
	finish  int64
	inOff   uint32
	inLen   uint32
	ref     uint16
	flags   recordFlags
}

type recordFlags uint8

const (
	recPresent recordFlags = 1 << iota
	recFaulted
	recRealtime
)

type jobRef struct {
	spec *spec
	out  *outcome
}

type jobUpload struct {
	storage string
	at      int64
	code    int16
}

// put stores j, whose id came from the emulator's sequence. It reports
// whether j filled its chunk, the moment to call release.
func (s *jobStore) put(j *job) (filled bool) {
	idx := j.id - firstJobID - 1
	c := s.chunkFor(idx/chunkJobs, true)
	if c == nil {
		return false // its chunk was released: only an id reused would get here
	}
	slot := uint16(idx % chunkJobs)
	c.mu.Lock()
	defer c.mu.Unlock()
	r := &c.recs[slot]
	if r.flags&recPresent != 0 {
		return false
	}
	if len(c.inputs)+len(j.input) > math.MaxUint32 {
		// Unreachable with the request size limit; kept so that an offset
		// can never wrap.
		return false
	}
	*r = jobRecord{
		created: j.created, finish: j.finish,
		inOff: uint32(len(c.inputs)), inLen: uint32(len(j.input)),
		ref: c.intern(jobRef{j.spec, j.out}), flags: recPresent,
	}
	c.inputs = append(c.inputs, j.input...)
	if j.faulted {
		r.flags |= recFaulted
	}
	if j.realtime {
		r.flags |= recRealtime
	}
	if j.storage != "" {
		if c.uploads == nil {
			c.uploads = make(map[uint16]jobUpload)
		}
		c.uploads[slot] = jobUpload{storage: j.storage, at: j.uploadAt, code: j.uploadCode}
	}
	c.lastFinish = max(c.lastFinish, j.finish)
	c.filled++
	if c.filled < chunkJobs {
		return false
	}
	// Full: drop the arena's spare capacity and the lookup table.
	c.inputs = append(make([]byte, 0, len(c.inputs)), c.inputs...)
	c.refIdx = nil
	return true
}

// get returns the job with id, or nil when there is none (never created, not
// stored yet, or released).
func (s *jobStore) get(id uint64) *job {
	if id <= firstJobID {
		return nil
	}
	idx := id - firstJobID - 1
	c := s.chunkFor(idx/chunkJobs, false)
	if c == nil {
		return nil
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.job(id, uint16(idx%chunkJobs))
}

// each calls fn for every stored job, chunk by chunk.
func (s *jobStore) each(fn func(*job)) {
	s.mu.RLock()
	base, chunks := s.base, append([]*jobChunk(nil), s.chunks...)
	s.mu.RUnlock()
	for i, c := range chunks {
		first := firstJobID + 1 + (base+uint64(i))*chunkJobs
		c.mu.RLock()
		for slot := range c.recs {
			if j := c.job(first+uint64(slot), uint16(slot)); j != nil {
				fn(j)
			}
		}
		c.mu.RUnlock()
	}
}

// release drops the leading chunks whose jobs all finished at least ttl
// before now, calling forget with each of their inputs.
func (s *jobStore) release(now int64, ttl time.Duration, forget func(input string)) {
	var gone []*jobChunk
	s.mu.Lock()
	for len(s.chunks) > 0 && s.chunks[0].expired(now, ttl) {
		gone = append(gone, s.chunks[0])
		s.chunks[0] = nil
		s.chunks = s.chunks[1:]
		s.base++
	}
	s.mu.Unlock()
	for _, c := range gone {
		for i := range c.recs {
			r := &c.recs[i]
			forget(string(c.inputs[r.inOff : r.inOff+r.inLen]))
		}
	}
}

// chunkFor returns chunk number n, creating it and any before it when create
// is set; nil when it was released or (without create) not made yet.
func (s *jobStore) chunkFor(n uint64, create bool) *jobChunk {
	s.mu.RLock()
	c := s.at(n)
	s.mu.RUnlock()
	if c != nil || !create {
		return c
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if n < s.base {
		return nil
	}
	for uint64(len(s.chunks)) <= n-s.base {
		s.chunks = append(s.chunks, new(jobChunk))
	}
	return s.chunks[n-s.base]
}

func (s *jobStore) at(n uint64) *jobChunk {
	if n < s.base || n-s.base >= uint64(len(s.chunks)) {
		return nil
	}
	return s.chunks[n-s.base]
}

// intern returns the index of r in the chunk's table, adding it. Called
// with c.mu held.
func (c *jobChunk) intern(r jobRef) uint16 {
	if int(c.lastRef) < len(c.refs) && c.refs[c.lastRef] == r {
		return c.lastRef
	}
	i, ok := c.refIdx[r]
	if !ok {
		if c.refIdx == nil {
			c.refIdx = make(map[jobRef]uint16)
		}
		i = uint16(len(c.refs))
		c.refs = append(c.refs, r)
		c.refIdx[r] = i
	}
	c.lastRef = i
	return i
}

// job rebuilds the job in slot, or returns nil. Called with c.mu held.
func (c *jobChunk) job(id uint64, slot uint16) *job {
	r := &c.recs[slot]
	if r.flags&recPresent == 0 {
		return nil
	}
	ref := c.refs[r.ref]
	j := &job{
		id: id, spec: ref.spec, out: ref.out,
		input:   string(c.inputs[r.inOff : r.inOff+r.inLen]),
		created: r.created, finish: r.finish,
		faulted:  r.flags&recFaulted != 0,
		realtime: r.flags&recRealtime != 0,
	}
	if u, ok := c.uploads[slot]; ok {
		j.storage, j.uploadAt, j.uploadCode = u.storage, u.at, u.code
	}
	return j
}

func (c *jobChunk) expired(now int64, ttl time.Duration) bool {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.filled == chunkJobs && c.lastFinish != never && now-c.lastFinish >= int64(ttl)
}
