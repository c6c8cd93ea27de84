package submitter

import (
	"context"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/oxypipe/oxypipe/internal/topology"
	"github.com/oxypipe/oxypipe/pkg/messages"
)

// Recording job ids. One API answer gives the job ids of many docs at once,
// and until each id is stored the doc's claim looks like a request in
// flight. Storing each id under its doc's own claim was a bucket write per
// doc; instead the ids go into their run's settled record
// (topology.Claims.Record), one compare-and-set per segment of
// topology.SettledSegment docs, and a redelivery reads such a doc as
// submitted from there. Writes for one segment are joined: while one is in
// flight, the ids that arrive for the same segment wait and go together in
// the next, so that the requests answered at once share a write. A doc
// without a slot (an id that is not a position, a job id that is not a
// number), or whose write failed, keeps its id under its claim
// (markSubmitted).

// recordWriter joins the settled-record writes of one submitter, one write
// in flight per segment.
type recordWriter struct {
	claims *topology.Claims
	// timeout bounds one write (Config.KVTimeout).
	timeout time.Duration
	mu      sync.Mutex
	segs    map[segmentKey]*segmentWrites
}

type segmentKey struct {
	run string
	seg int
}

// docKey names a doc of a run by its position.
type docKey struct {
	run string
	pos int
}

// segmentWrites is a segment with a write in flight, and the ids waiting
// for the next one.
type segmentWrites struct {
	next *recordWrite
}

// recordWrite is one write of a segment: the ids it carries, and once done
// is closed, what became of them.
type recordWrite struct {
	docs   []topology.SettledDoc
	done   chan struct{}
	others map[int]string
	err    error
}

// write stores the ids of docs of run (all of which can be settled) in the
// run's settled record and returns when every segment they fall in was
// written or failed: the docs whose slot held another job, with that job,
// and the first error. After an error, writing the same docs again is
// harmless.
func (w *recordWriter) write(run string, docs []topology.SettledDoc) (map[int]string, error) {
	var writes []*recordWrite
	w.mu.Lock()
	for _, d := range docs {
		k := segmentKey{run: run, seg: d.Pos / topology.SettledSegment}
		sw, busy := w.segs[k]
		if !busy {
			sw = &segmentWrites{}
			w.segs[k] = sw
		}
		if sw.next == nil {
			sw.next = &recordWrite{done: make(chan struct{})}
			if !busy {
				go w.flush(k, sw)
			}
		}
		if n := len(writes); n == 0 || writes[n-1] != sw.next {
			writes = append(writes, sw.next)
		}
		sw.next.docs = append(sw.next.docs, d)
	}
	w.mu.Unlock()
	var others map[int]string
	var err error
	for _, rw := range writes {
		<-rw.done
		if rw.err != nil && err == nil {
			err = rw.err
		}
		for _, d := range docs {
			if id, ok := rw.others[d.Pos]; ok {
				if others == nil {
					others = map[int]string{}
				}
				others[d.Pos] = id
			}
		}
	}
	return others, err
}

// flush writes a segment's waiting ids, one write after the other, until
// none wait.
func (w *recordWriter) flush(k segmentKey, sw *segmentWrites) {
	for {
		w.mu.Lock()
		rw := sw.next
		sw.next = nil
		if rw == nil {
			delete(w.segs, k)
			w.mu.Unlock()
			return
		}
		w.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), w.timeout)
		rw.others, rw.err = w.claims.Record(ctx, k.run, rw.docs)
		cancel()
		close(rw.done)
	}
}

// recordJobs stores the job ids the API gave items (ids[i] for items[i],
// under claims they hold) and marks each item whose id is now its doc's
// job. The ids go into their runs' settled records; a doc that has no slot
// there, and every doc of a write that failed (the broker away, or other
// replicas winning the segment's compare-and-set too often), has its id
// stored under its own claim instead (markSubmitted, which does not give up
// while the process lives). A slot holding another job means the doc was
// billed twice, which is logged, and the job is published all the same.
func (s *Submitter) recordJobs(ctx context.Context, items []*item, ids []string, at time.Time) {
	byRun := map[string][]topology.SettledDoc{}
	owner := map[docKey]int{}
	var alone []int
	for i, it := range items {
		pos, err := messages.ParseDocID(it.env.Doc)
		if it.claim == nil || err != nil || !topology.Settleable(it.env.Doc, ids[i]) {
			alone = append(alone, i)
			continue
		}
		byRun[it.env.Run] = append(byRun[it.env.Run], topology.SettledDoc{Pos: pos, JobID: ids[i]})
		owner[docKey{run: it.env.Run, pos: pos}] = i
	}
	for run, docs := range byRun {
		others, err := s.rec.write(run, docs)
		if err != nil {
			s.log.Warn("could not write job ids into the run's settled record; storing them under their claims",
				zap.String("run", run), zap.Int("docs", len(docs)), zap.Error(err))
		}
		for _, d := range docs {
			i := owner[docKey{run: run, pos: d.Pos}]
			it := items[i]
			if err != nil {
				s.met.recordFailed.Inc()
				alone = append(alone, i)
				continue
			}
			if other, billedTwice := others[d.Pos]; billedTwice {
				s.met.billedTwice.Inc()
				s.log.Error("a job was created but the run's record holds another one for the doc: the doc was billed twice; publishing this job too",
					zap.String("run", run), zap.String("doc", it.env.Doc), zap.String("api_job_id", d.JobID), zap.String("recorded_job_id", other))
				continue
			}
			c := &it.claim.Claim
			c.State, c.APIJobID, c.SubmittedAt, c.Reason = messages.ClaimSubmitted, d.JobID, at, ""
			it.claim.Recorded, it.jobID = true, d.JobID
			s.met.inRecord.Inc()
		}
	}
	forEach(len(alone), s.cfg.Concurrency, func(k int) {
		it, id := items[alone[k]], ids[alone[k]]
		s.markSubmitted(ctx, it, id, at)
		if c := it.claim; c != nil && c.Claim.State == messages.ClaimSubmitted && c.Claim.APIJobID == id {
			it.jobID = id
			s.met.inClaim.Inc()
		}
	})
}
