package jobresults

import (
	"bufio"
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"iter"
	"os"
	"slices"
	"strconv"
	"sync"

	"github.com/oxypipe/oxypipe/pkg/oxytype"
)

// WithSpill makes the store keep the records of complete documents in a
// scratch file at path instead of in memory. A document is complete once it
// has a success at finalDataType and nothing but successes; almost every
// document of a healthy run ends so, and none of them is read again until
// the run log is written. A spilled document costs 8 bytes of memory when
// its id is its position in the input (a decimal integer without leading
// zeros below 2^24), about 50 otherwise; failures and documents in flight
// stay in memory, where the failure queries read them. A write to a spilled
// document reads it back first, so every read and write answers exactly as
// without the option. The counts never leave memory.
//
// The file is created (or truncated: what a killed process left there is of
// no use) by NewMemoryStore, and removed by Close. A store whose file cannot
// be created or written keeps everything in memory from then on, and says
// why in SpillError.
func WithSpill(path, finalDataType string) MemoryOption {
	return func(s *MemoryStore) { s.spillPath, s.spillFinal = path, finalDataType }
}

// spillMaxPos bounds the positions kept in a job's position index: a
// document whose id is a larger number is indexed by name, so that one odd
// id cannot make the index huge.
const spillMaxPos = 1 << 24

// spillFile is the scratch file of a spilling store: an append-only sequence
// of encoded documents, each found again by its offset.
type spillFile struct {
	mu      sync.Mutex
	f       *os.File
	w       *bufio.Writer
	size    int64 // bytes written, buffered ones included
	flushed int64 // bytes the file holds
	err     error // the first write error: spilling stops after it
}

func openSpill(path string) (*spillFile, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return nil, err
	}
	return &spillFile{f: f, w: bufio.NewWriterSize(f, 64<<10)}, nil
}

// append writes one encoded document and returns its offset; ok is false
// once a write failed, and the document then stays in memory.
func (sf *spillFile) append(b []byte) (off int64, ok bool) {
	sf.mu.Lock()
	defer sf.mu.Unlock()
	if sf.err != nil {
		return 0, false
	}
	var n [binary.MaxVarintLen64]byte
	l := binary.PutUvarint(n[:], uint64(len(b)))
	if _, err := sf.w.Write(n[:l]); err != nil {
		sf.err = err
		return 0, false
	}
	if _, err := sf.w.Write(b); err != nil {
		sf.err = err
		return 0, false
	}
	off, sf.size = sf.size, sf.size+int64(l+len(b))
	return off, true
}

// read returns the encoded document at off.
func (sf *spillFile) read(off int64) ([]byte, error) {
	sf.mu.Lock()
	if off+1 > sf.flushed {
		if err := sf.w.Flush(); err != nil {
			if sf.err == nil {
				sf.err = err
			}
			sf.mu.Unlock()
			return nil, err
		}
		sf.flushed = sf.size
	}
	sf.mu.Unlock()
	var head [binary.MaxVarintLen64]byte
	n, err := sf.f.ReadAt(head[:], off)
	if n == 0 {
		return nil, fmt.Errorf("jobresults: spill file at %d: %w", off, cmp.Or(err, io.ErrUnexpectedEOF))
	}
	size, l := binary.Uvarint(head[:n])
	if l <= 0 {
		return nil, fmt.Errorf("jobresults: spill file at %d: bad length", off)
	}
	b := make([]byte, size)
	if _, err := sf.f.ReadAt(b, off+int64(l)); err != nil {
		return nil, fmt.Errorf("jobresults: spill file at %d: %w", off, err)
	}
	return b, nil
}

func (sf *spillFile) close() error {
	sf.mu.Lock()
	defer sf.mu.Unlock()
	err := sf.f.Close()
	return errors.Join(err, os.Remove(sf.f.Name()))
}

// spillIndex finds a job's spilled documents: by position for ids that are
// canonical positions, by name for the others. Guarded by memJob.spillMu.
type spillIndex struct {
	byPos  []int64 // offset + 1; 0: not spilled
	byName map[string]int64
	count  int
	// finishes are the job's FinishJob calls, in order, each with the size
	// of the spill file when it had stamped the records in memory.
	finishes []spillFinish
}

type spillFinish struct{ ms, size int64 }

// spillPos returns the index position of a document id, or -1 when it is
// indexed by name.
func spillPos(id string) int64 {
	pos, ok := docPosition(id)
	if !ok || pos >= spillMaxPos || strconv.FormatInt(pos, 10) != id {
		return -1
	}
	return pos
}

func (ix *spillIndex) put(id string, off int64) {
	if p := spillPos(id); p >= 0 {
		if int(p) >= len(ix.byPos) {
			ix.byPos = slices.Grow(ix.byPos, int(p)+1-len(ix.byPos))[:int(p)+1]
		}
		ix.byPos[p] = off + 1
	} else {
		if ix.byName == nil {
			ix.byName = map[string]int64{}
		}
		ix.byName[id] = off
	}
	ix.count++
}

// get returns the offset of a spilled document, and removes it from the
// index when remove is set.
func (ix *spillIndex) get(id string, remove bool) (off int64, ok bool) {
	if p := spillPos(id); p >= 0 {
		if int(p) >= len(ix.byPos) || ix.byPos[p] == 0 {
			return 0, false
		}
		off = ix.byPos[p] - 1
		if remove {
			ix.byPos[p] = 0
		}
	} else {
		if off, ok = ix.byName[id]; !ok {
			return 0, false
		}
		if remove {
			delete(ix.byName, id)
		}
	}
	if remove {
		ix.count--
	}
	return off, true
}

// stamp returns the finish stamp that the unstamped records of the document
// spilled at off read back with: that of the first FinishJob that did not
// see the document in memory, else 0. The file only grows, so a document
// spilled before a FinishJob ended lies below the size it recorded.
func (ix *spillIndex) stamp(off int64) int64 {
	for _, f := range ix.finishes {
		if off < f.size {
			return f.ms
		}
	}
	return 0
}

// spillable reports whether d is complete: a success at the final data
// type, and nothing but successes.
func (s *MemoryStore) spillable(d *memDoc) bool {
	final := false
	for _, r := range d.recs {
		if !r.success {
			return false
		}
		final = final || r.stage.dataType == s.spillFinal
	}
	return final
}

// spillDoc moves a complete document of stripe st to the spill file. The
// caller holds st.mu.
func (s *MemoryStore) spillDoc(j *memJob, st *memStripe, d *memDoc) {
	off, ok := s.spill.append(encodeDoc(d))
	if !ok {
		return
	}
	delete(st.docs, d.id)
	j.spillMu.Lock()
	j.spilled.put(d.id, off)
	j.spillMu.Unlock()
}

// unspill reads a spilled document back into stripe st, if it is spilled.
// The caller holds st.mu.
func (s *MemoryStore) unspill(j *memJob, st *memStripe, id string) (*memDoc, error) {
	j.spillMu.Lock()
	off, ok := j.spilled.get(id, false)
	stamp := j.spilled.stamp(off)
	j.spillMu.Unlock()
	if !ok {
		return nil, nil
	}
	d, err := s.readDoc(st, id, off, stamp)
	if err != nil {
		return nil, err
	}
	j.spillMu.Lock()
	j.spilled.get(id, true)
	j.spillMu.Unlock()
	st.docs[id] = d
	return d, nil
}

// spilledDoc returns a copy of a spilled document, or nil when it is not
// spilled; it stays spilled. The caller holds st.mu.
func (s *MemoryStore) spilledDoc(j *memJob, st *memStripe, id string) (*memDoc, error) {
	j.spillMu.Lock()
	off, ok := j.spilled.get(id, false)
	stamp := j.spilled.stamp(off)
	j.spillMu.Unlock()
	if !ok {
		return nil, nil
	}
	return s.readDoc(st, id, off, stamp)
}

// readDoc decodes the document spilled at off, giving its unstamped records
// the finish stamp (0: none).
func (s *MemoryStore) readDoc(st *memStripe, id string, off, stamp int64) (*memDoc, error) {
	b, err := s.spill.read(off)
	if err != nil {
		return nil, &StoreError{Op: "read spilled document", Transient: true, Err: err}
	}
	d, err := decodeDoc(st, id, b, stamp)
	if err != nil {
		return nil, &StoreError{Op: "read spilled document", Err: err}
	}
	return d, nil
}

// SpillError returns why a store made WithSpill keeps everything in memory:
// its file could not be created, or a write to it failed. nil otherwise.
func (s *MemoryStore) SpillError() error {
	if s.spillPath == "" {
		return nil
	}
	if s.spillOpenErr != nil {
		return s.spillOpenErr
	}
	s.spill.mu.Lock()
	defer s.spill.mu.Unlock()
	return s.spill.err
}

// Close removes the spill file of a store made WithSpill; the store must
// not be used afterwards. Without the option it does nothing.
func (s *MemoryStore) Close() error {
	if s.spill == nil {
		return nil
	}
	return s.spill.close()
}

// The encoding of a spilled document: the number of records, then each
// record's fields in a fixed order, strings as a uvarint length and bytes.
// Only successes are spilled, so the failure fields are not encoded.

func encodeDoc(d *memDoc) (b []byte) {
	b = binary.AppendUvarint(b, uint64(len(d.recs)))
	for _, r := range d.recs {
		b = appendString(b, r.stage.dataType)
		b = binary.AppendUvarint(b, r.version)
		b = binary.AppendVarint(b, r.timeMS)
		b = appendString(b, r.origin.Type)
		b = appendString(b, r.origin.Name)
		b = appendString(b, r.scope)
		x := r.ext
		if x == nil {
			b = append(b, 0)
			continue
		}
		b = append(b, 1)
		b = appendString(b, string(x.state))
		if e := x.errInfo; e != nil {
			flags := byte(1)
			if e.StatusCode != nil {
				flags |= 2
			}
			if e.MayHaveBilled {
				flags |= 4
			}
			b = append(b, flags)
			if e.StatusCode != nil {
				b = binary.AppendVarint(b, int64(*e.StatusCode))
			}
			b = appendString(b, e.Message)
			b = appendString(b, e.TraceID)
		} else {
			b = append(b, 0)
		}
		b = appendString(b, x.apiJobID)
		b = binary.AppendUvarint(b, uint64(len(x.payload)))
		b = append(b, x.payload...)
		if u := x.upload; u != nil {
			b = append(b, 1)
			b = binary.AppendVarint(b, int64(u.Code))
			b = appendString(b, u.Message)
		} else {
			b = append(b, 0)
		}
		b = binary.AppendVarint(b, x.finishedMS)
	}
	return b
}

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// decoder reads the fields encodeDoc wrote; the first malformed field sets
// err and every later read returns zero.
type decoder struct {
	b   []byte
	err error
}

var errBadSpill = errors.New("jobresults: malformed spilled document")

func (d *decoder) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.err = errBadSpill
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) varint() int64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.err = errBadSpill
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) bytes() []byte {
	n := d.uvarint()
	if d.err != nil {
		return nil
	}
	if n > uint64(len(d.b)) {
		d.err = errBadSpill
		return nil
	}
	v := d.b[:n:n]
	d.b = d.b[n:]
	return v
}

func (d *decoder) string() string { return string(d.bytes()) }

func (d *decoder) byte() byte {
	if d.err != nil {
		return 0
	}
	if len(d.b) == 0 {
		d.err = errBadSpill
		return 0
	}
	v := d.b[0]
	d.b = d.b[1:]
	return v
}

// decodeDoc rebuilds a spilled document of stripe st; its records are
// already counted in the stripe's tallies.
func decodeDoc(st *memStripe, id string, b []byte, stamp int64) (*memDoc, error) {
	dec := &decoder{b: b}
	n := dec.uvarint()
	if dec.err != nil || n == 0 || n > uint64(len(b)) {
		return nil, errBadSpill
	}
	d := &memDoc{id: id}
	d.pos, d.hasPos = docPosition(id)
	for i := uint64(0); i < n; i++ {
		var r *memRecord
		if i == 0 {
			r = &d.first
			d.recs = append(d.firstSlot[:0], r)
		} else {
			r = &memRecord{}
			d.recs = append(d.recs, r)
		}
		r.doc, r.success = d, true
		r.stage = st.stage(dec.string())
		r.version = dec.uvarint()
		r.timeMS = dec.varint()
		r.origin = oxytype.Party{Type: dec.string(), Name: dec.string()}
		r.scope = dec.string()
		if dec.byte() == 0 {
			if stamp != 0 {
				r.ext = &memRecordExt{finishedMS: stamp}
			}
			continue
		}
		x := &memRecordExt{state: oxytype.State(dec.string())}
		if flags := dec.byte(); flags&1 != 0 {
			e := &oxytype.ErrorInfo{MayHaveBilled: flags&4 != 0}
			if flags&2 != 0 {
				code := int(dec.varint())
				e.StatusCode = &code
			}
			e.Message, e.TraceID = dec.string(), dec.string()
			x.errInfo = e
		}
		x.apiJobID = d.sharedJobID(dec.string())
		if p := dec.bytes(); len(p) > 0 {
			x.payload = d.sharedPayload(p)
		}
		if dec.byte() != 0 {
			x.upload = &oxytype.Upload{Code: int(dec.varint()), Message: dec.string()}
		}
		if x.finishedMS = dec.varint(); x.finishedMS == 0 {
			x.finishedMS = stamp
		}
		r.ext = x
	}
	if dec.err != nil || len(dec.b) != 0 {
		return nil, errBadSpill
	}
	return d, nil
}

// docRef is a document as ForEachRecord finds it: in memory (mem), or
// spilled at off and read back with stamp.
type docRef struct {
	mem        *memDoc
	id         string
	pos        int64
	hasPos     bool
	off, stamp int64
}

// compareRefs is the document order: ids that are not decimal integers
// first (by id), then decimal ids by value, then by id.
func compareRefs(a, b docRef) int {
	if a.hasPos != b.hasPos {
		if a.hasPos {
			return 1
		}
		return -1
	}
	return cmp.Or(cmp.Compare(a.pos, b.pos), cmp.Compare(a.id, b.id))
}

// inOrder returns the job's documents in document order (compareDocs), as
// they are at the call: every stripe is locked while the documents in
// memory and the spill index are read, so each document is in exactly one
// of them. The spilled documents indexed by position are already in order
// and are merged in as the sequence goes; the others are sorted.
func (s *MemoryStore) inOrder(j *memJob) iter.Seq[docRef] {
	var refs []docRef
	for i := range j.stripes {
		j.stripes[i].mu.Lock()
	}
	for i := range j.stripes {
		for _, d := range j.stripes[i].docs {
			refs = append(refs, docRef{mem: d, id: d.id, pos: d.pos, hasPos: d.hasPos})
		}
	}
	j.spillMu.Lock()
	ix := &j.spilled
	for id, off := range ix.byName {
		pos, hasPos := docPosition(id)
		refs = append(refs, docRef{id: id, pos: pos, hasPos: hasPos, off: off, stamp: ix.stamp(off)})
	}
	byPos := slices.Clone(ix.byPos)
	finishes := slices.Clone(ix.finishes)
	j.spillMu.Unlock()
	for i := range j.stripes {
		j.stripes[i].mu.Unlock()
	}
	slices.SortFunc(refs, compareRefs)
	snap := spillIndex{finishes: finishes}
	return func(yield func(docRef) bool) {
		next := 0 // the next position of byPos to look at
		spilledUpTo := func(limit docRef, all bool) bool {
			for ; next < len(byPos); next++ {
				if byPos[next] == 0 {
					continue
				}
				r := docRef{id: strconv.Itoa(next), pos: int64(next), hasPos: true, off: byPos[next] - 1}
				if !all && compareRefs(r, limit) > 0 {
					return true
				}
				r.stamp = snap.stamp(r.off)
				if !yield(r) {
					return false
				}
			}
			return true
		}
		for _, r := range refs {
			if r.hasPos && !spilledUpTo(r, false) {
				return
			}
			if !yield(r) {
				return
			}
		}
		spilledUpTo(docRef{}, true)
	}
}
