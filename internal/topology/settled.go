package topology

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/oxypipe/oxypipe/pkg/messages"
)

// A claim per doc costs the broker about 140 bytes of memory for as long as
// the key exists: a million-payload run would hold 140 MB for claims whose
// only remaining use is to stop a late copy of a payload from being billed
// again. So a run's job ids live in its settled record, 8 bytes per doc in
// segments of SettledSegment docs: the submitter writes the ids an API
// answer gave into the record (Record: one compare-and-set per segment for
// all the docs of a request, rather than an update of every doc's key), and
// once a doc's payload message is gone from its stream (acked or
// terminated: no delivery of it can come again) its own key is removed
// (Settle). A doc whose slot holds a job id reads as a submitted claim
// (Get), with its key or without, so every reader of claims keeps deciding
// as before; a copy of the payload that creates a fresh claim after the key
// went finds the job there (SettledJobs) before any request.

// SettledSegment is the number of docs one settled-record segment holds:
// 8 KiB at most, the read a single submission request adds (SettledJobs),
// and a million-payload run in about a thousand keys.
const SettledSegment = 1024

// settledSlot is the size of a doc's slot in a segment: its job id as a
// little-endian uint64 (every WSA job id is a decimal number below 2^63); 0
// is an empty slot.
const settledSlot = 8

// maxSettleTries bounds the compare-and-set rounds of one segment update
// that other submitters keep changing.
const maxSettleTries = 20

// SettledDoc is a doc whose claim may be settled: its position in the run
// and the job id its claim holds.
type SettledDoc struct {
	Pos   int
	JobID string
}

// settledKey is the key of segment seg of a run's settled record. Doc keys
// are decimal positions, so it never collides with one.
func settledKey(run string, seg int) string {
	return messages.RunToken(run) + ".settled." + strconv.Itoa(seg)
}

// parseSettledKey returns the segment a key of the claims bucket names,
// after the run's token and a dot, or false for a doc's key.
func parseSettledKey(rest string) (int, bool) {
	const p = "settled."
	if len(rest) <= len(p) || rest[:len(p)] != p {
		return 0, false
	}
	seg, err := strconv.Atoi(rest[len(p):])
	return seg, err == nil && seg >= 0
}

// settleableJobID returns a job id as a slot value, or false for an id
// that is not a canonical decimal number in (0, 2^63): such a doc keeps its
// claim.
func settleableJobID(id string) (uint64, bool) {
	v, err := strconv.ParseUint(id, 10, 63)
	if err != nil || v == 0 || strconv.FormatUint(v, 10) != id {
		return 0, false
	}
	return v, true
}

// Settleable reports whether a doc of the given id with a claim holding
// jobID can be settled at all.
func Settleable(doc, jobID string) bool {
	if _, err := messages.ParseDocID(doc); err != nil {
		return false
	}
	_, ok := settleableJobID(jobID)
	return ok
}

// segment is a decoded settled-record segment: slot i holds the job id of
// doc seg*SettledSegment+i, or 0.
type segment []uint64

func decodeSegment(data []byte) (segment, error) {
	if len(data)%settledSlot != 0 || len(data) > SettledSegment*settledSlot {
		return nil, fmt.Errorf("a settled-record segment of %d bytes (want a multiple of %d, at most %d)",
			len(data), settledSlot, SettledSegment*settledSlot)
	}
	s := make(segment, len(data)/settledSlot)
	for i := range s {
		s[i] = binary.LittleEndian.Uint64(data[i*settledSlot:])
	}
	return s, nil
}

// encode writes the segment up to its last filled slot, so that a small
// run's segment stays small.
func (s segment) encode() []byte {
	n := len(s)
	for n > 0 && s[n-1] == 0 {
		n--
	}
	out := make([]byte, n*settledSlot)
	for i := range n {
		binary.LittleEndian.PutUint64(out[i*settledSlot:], s[i])
	}
	return out
}

func (s segment) job(slot int) string {
	if slot >= len(s) || s[slot] == 0 {
		return ""
	}
	return strconv.FormatUint(s[slot], 10)
}

// readSegment returns segment seg of a run's settled record and its
// revision (0 and an empty segment when it does not exist).
func (c *Claims) readSegment(ctx context.Context, run string, seg int) (segment, uint64, error) {
	key := settledKey(run, seg)
	e, err := c.kv.Get(ctx, key)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil, 0, nil
	}
	if err != nil {
		return nil, 0, fmt.Errorf("topology: settled record %s: %w", key, err)
	}
	s, err := decodeSegment(e.Value())
	if err != nil {
		return nil, 0, fmt.Errorf("topology: settled record %s: %w", key, err)
	}
	return s, e.Revision(), nil
}

// recordedJob returns the job id doc's slot in its run's settled record
// holds, or "" (also for a doc whose id is not a position: it has no slot).
func (c *Claims) recordedJob(ctx context.Context, run, doc string) (string, error) {
	pos, perr := messages.ParseDocID(doc)
	if perr != nil {
		return "", nil //nolint:nilerr // such a doc has no slot, which is no error
	}
	s, _, err := c.readSegment(ctx, run, pos/SettledSegment)
	if err != nil {
		return "", err
	}
	return s.job(pos % SettledSegment), nil
}

// settledClaim returns the settled claim of a doc without a key, or
// ErrNoClaim.
func (c *Claims) settledClaim(ctx context.Context, run, doc string) (*ClaimRef, error) {
	id, err := c.recordedJob(ctx, run, doc)
	if err != nil {
		return nil, err
	}
	if id == "" {
		return nil, fmt.Errorf("%w for %s", ErrNoClaim, messages.ClaimKey(run, doc))
	}
	claim := messages.Claim{V: messages.Version, Run: run, Doc: doc, State: messages.ClaimSubmitted, APIJobID: id}
	return &ClaimRef{Claim: claim, Settled: true}, nil
}

// SettledJobs returns the job ids of those of a run's docs (by position)
// that are settled, reading each segment once. A caller that has just
// created fresh claims for the docs calls it afterwards: a doc settled
// before the claim was created is found, since its key was removed only
// after its job id was written.
func (c *Claims) SettledJobs(ctx context.Context, run string, positions []int) (map[int]string, error) {
	segs := map[int]segment{}
	var out map[int]string
	for _, pos := range positions {
		seg := pos / SettledSegment
		s, ok := segs[seg]
		if !ok {
			var err error
			if s, _, err = c.readSegment(ctx, run, seg); err != nil {
				return nil, err
			}
			segs[seg] = s
		}
		if id := s.job(pos % SettledSegment); id != "" {
			if out == nil {
				out = map[int]string{}
			}
			out[pos] = id
		}
	}
	return out, nil
}

// Record writes the job ids the API gave docs of one run (under claims
// their caller holds) into the run's settled record, a compare-and-set per
// segment: from then on each doc reads as submitted with its job (Get),
// while its key still holds the claim as it was taken. It returns the docs
// whose slot already held another job id, with that id: such a doc was
// billed twice, and its slot keeps the first job. Docs whose id cannot be
// settled (Settleable) are not written, and the caller stores their ids
// under their claims (MarkSubmitted). On an error some segments may have
// been written and others not; writing the same ids again is harmless.
func (c *Claims) Record(ctx context.Context, run string, docs []SettledDoc) (map[int]string, error) {
	var others map[int]string
	for seg, docs := range bySegment(docs) {
		held, err := c.writeSegment(ctx, run, seg, docs)
		if err != nil {
			return others, err
		}
		for pos, id := range held {
			if others == nil {
				others = map[int]string{}
			}
			others[pos] = id
		}
	}
	return others, nil
}

// bySegment groups the docs that can be settled by the segment of their
// slot, in the order their segments first appear.
func bySegment(docs []SettledDoc) func(yield func(int, []SettledDoc) bool) {
	return func(yield func(int, []SettledDoc) bool) {
		bySeg := map[int][]SettledDoc{}
		var segs []int
		for _, d := range docs {
			if _, ok := settleableJobID(d.JobID); !ok || d.Pos < 0 {
				continue
			}
			seg := d.Pos / SettledSegment
			if _, ok := bySeg[seg]; !ok {
				segs = append(segs, seg)
			}
			bySeg[seg] = append(bySeg[seg], d)
		}
		for _, seg := range segs {
			if !yield(seg, bySeg[seg]) {
				return
			}
		}
	}
}

// Settle settles docs of one run whose payload messages are gone and whose
// claims hold the given job ids: it makes sure the ids are in the run's
// settled record (Record wrote them at submission; a claim that holds its
// id in its key, from an older submitter, has it written now), then removes
// the docs' keys. A doc whose key is removed is never claimed again without
// its job being found (see SettledJobs), so the caller must know that no
// delivery of the doc's payload message can come again. Docs whose id
// cannot be settled (Settleable) are left as they are. It returns how many
// keys it removed; on an error, the docs not yet settled keep their claims
// and may be settled again (every step is idempotent).
func (c *Claims) Settle(ctx context.Context, run string, docs []SettledDoc) (int, error) {
	var removed atomic.Int64
	for seg, docs := range bySegment(docs) {
		if _, err := c.writeSegment(ctx, run, seg, docs); err != nil {
			return int(removed.Load()), err
		}
		if err := c.removeKeys(ctx, run, docs, &removed); err != nil {
			return int(removed.Load()), err
		}
	}
	return int(removed.Load()), nil
}

// removeWorkers bounds the key removals of one Settle in flight at once.
const removeWorkers = 16

// removeKeys removes the keys of docs, removeWorkers at a time, counting
// them in removed; it returns the first error.
func (c *Claims) removeKeys(ctx context.Context, run string, docs []SettledDoc, removed *atomic.Int64) error {
	next := make(chan SettledDoc)
	errs := make(chan error, 1)
	var wg sync.WaitGroup
	for range min(removeWorkers, len(docs)) {
		wg.Go(func() {
			for d := range next {
				if err := c.removeKey(ctx, messages.ClaimKey(run, messages.DocID(d.Pos))); err != nil {
					select {
					case errs <- err:
					default:
					}
					continue
				}
				removed.Add(1)
			}
		})
	}
	for _, d := range docs {
		next <- d
	}
	close(next)
	wg.Wait()
	select {
	case err := <-errs:
		return err
	default:
		return nil
	}
}

// writeSegment writes the job ids of docs (all of segment seg) into the
// segment, and returns the docs whose slot already held another id, with
// that id. Such a slot keeps it: the first job recorded for a doc is the
// one a redelivery publishes, and a doc billed twice is logged where it
// happened. A segment that already holds every id is only read.
func (c *Claims) writeSegment(ctx context.Context, run string, seg int, docs []SettledDoc) (map[int]string, error) {
	key := settledKey(run, seg)
	for range maxSettleTries {
		s, rev, err := c.readSegment(ctx, run, seg)
		if err != nil {
			return nil, err
		}
		changed := false
		var others map[int]string
		for _, d := range docs {
			slot := d.Pos % SettledSegment
			v, _ := settleableJobID(d.JobID)
			if slot >= len(s) {
				s = append(s, make(segment, slot+1-len(s))...)
			}
			switch s[slot] {
			case 0:
				s[slot], changed = v, true
			case v:
			default:
				if others == nil {
					others = map[int]string{}
				}
				others[d.Pos] = s.job(slot)
			}
		}
		if !changed {
			return others, nil
		}
		if rev == 0 {
			_, err = c.kv.Create(ctx, key, s.encode())
		} else {
			_, err = c.kv.Update(ctx, key, s.encode(), rev)
		}
		switch {
		case err == nil:
			return others, nil
		case errors.Is(err, jetstream.ErrKeyExists), errors.Is(err, jetstream.ErrKeyRevisionMismatch):
			continue // another submitter wrote it first: read it again
		default:
			return nil, fmt.Errorf("topology: settled record %s: %w", key, err)
		}
	}
	return nil, fmt.Errorf("%w on settled record %s: changed by others %d times in a row", ErrConflict, key, maxSettleTries)
}

// claimMarkerTTL is how long the marker of a removed claim stays. The
// marker is what removes the claim's value; once it expires too, the key is
// gone from the broker's index, which is what settling is for. 1s is the
// least the server takes.
const claimMarkerTTL = time.Second

// newClaims returns the claims bucket, noting whether it takes markers that
// expire (a bucket made by this version on a server since 2.11).
func newClaims(ctx context.Context, js jetstream.JetStream, kv jetstream.KeyValue) (*Claims, error) {
	st, err := kv.Status(ctx)
	if err != nil {
		return nil, err
	}
	return &Claims{kv: kv, js: js, markerTTL: st.LimitMarkerTTL() > 0}, nil
}

// removeKey removes every message of a key from the claims bucket's
// stream, leaving nothing in the broker's index: a purge marker that
// expires after claimMarkerTTL (one publish), or where the bucket takes no
// such markers, the stream's purge of the key's subject (an API request,
// several times the cost).
func (c *Claims) removeKey(ctx context.Context, key string) error {
	if c.markerTTL {
		if err := c.kv.Purge(ctx, key, jetstream.PurgeTTL(claimMarkerTTL)); err != nil {
			return fmt.Errorf("topology: remove claim %s: %w", key, err)
		}
		return nil
	}
	st, err := c.stream(ctx)
	if err != nil {
		return err
	}
	if err := st.Purge(ctx, jetstream.WithPurgeSubject(kvSubject(BucketClaims, key))); err != nil {
		return fmt.Errorf("topology: remove claim %s: %w", key, err)
	}
	return nil
}

// claimStream is the stream behind the claims bucket, looked up once.
type claimStream struct {
	mu sync.Mutex
	st jetstream.Stream
}

func (c *Claims) stream(ctx context.Context) (jetstream.Stream, error) {
	c.st.mu.Lock()
	defer c.st.mu.Unlock()
	if c.st.st != nil {
		return c.st.st, nil
	}
	st, err := c.js.Stream(ctx, kvStream(BucketClaims))
	if err != nil {
		return nil, fmt.Errorf("topology: claims stream: %w", err)
	}
	c.st.st = st
	return st, nil
}

// Forget removes a fresh claim this caller created for a doc that turned
// out to be settled (SettledJobs): the settled record stands for the doc.
func (c *Claims) Forget(ctx context.Context, ref *ClaimRef) error {
	if ref.Settled {
		return nil
	}
	key := messages.ClaimKey(ref.Claim.Run, ref.Claim.Doc)
	opts := []jetstream.KVDeleteOpt{jetstream.LastRevision(ref.Revision)}
	if c.markerTTL {
		opts = append(opts, jetstream.PurgeTTL(claimMarkerTTL))
	}
	err := c.kv.Purge(ctx, key, opts...)
	if errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
		return fmt.Errorf("%w on claim %s", ErrConflict, key)
	}
	if err != nil {
		return fmt.Errorf("topology: forget claim %s: %w", key, err)
	}
	if c.markerTTL {
		return nil
	}
	return c.removeKey(ctx, key)
}

// ScanRun calls fn with the position of every doc of a run that has a
// claim, its own or in the run's settled record.
func (c *Claims) ScanRun(ctx context.Context, run string, fn func(pos int)) error {
	prefix := messages.RunToken(run) + "."
	lctx, cancel := context.WithCancel(ctx)
	defer cancel()
	keys, err := c.kv.ListKeysFiltered(lctx, prefix+">")
	if err != nil {
		return fmt.Errorf("topology: list claims of run %s: %w", run, err)
	}
	defer func() { _ = keys.Stop() }()
	var segs []int
	for key := range keys.Keys() {
		rest := strings.TrimPrefix(key, prefix)
		if seg, ok := parseSettledKey(rest); ok {
			segs = append(segs, seg)
			continue
		}
		if pos, err := messages.ParseDocID(rest); err == nil {
			fn(pos)
		}
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	for _, seg := range segs {
		s, _, err := c.readSegment(ctx, run, seg)
		if err != nil {
			return err
		}
		for slot, v := range s {
			if v != 0 {
				fn(seg*SettledSegment + slot)
			}
		}
	}
	return nil
}
