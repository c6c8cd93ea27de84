package submitter

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/zap"

	"github.com/oxypipe/oxypipe/internal/topology"
	"github.com/oxypipe/oxypipe/pkg/messages"
)

// Settling claims. A doc's claim stops a second delivery of its payload
// from being billed again; once the payload's message is gone from its
// stream (acked or terminated, so that no delivery of it can come again)
// the claim's job id moves into the run's settled record and the doc's key
// goes (topology.Claims.Settle), so that the broker's memory holds the
// claims of the docs in flight rather than one per doc of every open run.
// A copy of the payload published later (a confused producer) creates a
// fresh claim and then finds the job in the settled record before any
// request (dropSettled).

// settleMaxQueue bounds the docs waiting to be settled. Past it, docs are
// not queued: their claims stay until their run is forgotten, which costs
// broker memory and nothing else.
const settleMaxQueue = 200_000

// settleCheckAfter is how long a queued doc waits for the stream's first
// sequence to pass its message (one look for all docs) before its message
// is looked up on its own: a message held back for minutes (a payload
// waiting for the rate budget) must not keep every later doc queued.
const settleCheckAfter = 5 * time.Second

// settleMaxChecks bounds the messages looked up on their own in one pass.
const settleMaxChecks = 512

// settling is a doc whose claim holds a job id and whose payload message
// this submitter settled with an ack.
type settling struct {
	seq    uint64 // the payload message's stream sequence
	run    string
	pos    int
	jobID  string
	queued time.Time
}

// settler queues the docs to settle and settles them every
// Config.SettleInterval.
type settler struct {
	s        *Submitter
	mu       sync.Mutex
	queue    []settling
	full     bool // the queue was full: logged once
	payloads jetstream.Stream
}

// add queues the docs of a handled batch whose messages are to be acked
// with a job id stored under their own claim.
func (t *settler) add(items []*item) {
	if t.s.cfg.SettleInterval < 0 {
		return
	}
	now := time.Now()
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, it := range items {
		if it.res != nil || it.jobID == "" || !topology.Settleable(it.env.Doc, it.jobID) {
			continue
		}
		if len(t.queue) >= settleMaxQueue {
			if !t.full {
				t.full = true
				t.s.log.Warn("too many claims wait to be settled; further ones stay in the claims bucket until their run is forgotten",
					zap.Int("queued", len(t.queue)))
			}
			continue
		}
		pos, _ := messages.ParseDocID(it.env.Doc)
		t.queue = append(t.queue, settling{seq: it.m.StreamSequence(), run: it.env.Run, pos: pos, jobID: it.jobID, queued: now})
	}
}

// run settles queued docs every interval until ctx is done.
func (t *settler) run(ctx context.Context) {
	if t.s.cfg.SettleInterval < 0 {
		return
	}
	tick := time.NewTicker(t.s.cfg.SettleInterval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			t.pass(ctx)
		}
	}
}

// pass settles the queued docs whose messages are gone, and queues the
// others again.
func (t *settler) pass(ctx context.Context) {
	t.mu.Lock()
	batch := t.queue
	t.queue = nil
	t.mu.Unlock()
	if len(batch) == 0 {
		return
	}
	gone, keep := t.sortOut(ctx, batch)
	byRun := map[string][]topology.SettledDoc{}
	var runs []string
	for _, d := range gone {
		if _, ok := byRun[d.run]; !ok {
			runs = append(runs, d.run)
		}
		byRun[d.run] = append(byRun[d.run], topology.SettledDoc{Pos: d.pos, JobID: d.jobID})
	}
	for _, run := range runs {
		kctx, cancel := t.s.kvContext(ctx)
		n, err := t.s.claims.Settle(kctx, run, byRun[run])
		cancel()
		t.s.met.settled.Add(float64(n))
		if err != nil {
			if ctx.Err() == nil {
				t.s.log.Warn("could not settle claims; trying again", zap.String("run", run), zap.Int("docs", len(byRun[run])), zap.Error(err))
			}
			for _, d := range gone {
				if d.run == run {
					keep = append(keep, d)
				}
			}
		}
	}
	if len(keep) == 0 {
		return
	}
	t.mu.Lock()
	t.queue = append(keep, t.queue...)
	t.mu.Unlock()
}

// sortOut splits docs into those whose payload messages are gone and the
// rest. One look at the stream's first sequence covers every message below
// it; docs queued longer than settleCheckAfter are looked up on their own.
func (t *settler) sortOut(ctx context.Context, batch []settling) (gone, keep []settling) {
	kctx, cancel := t.s.kvContext(ctx)
	defer cancel()
	st, err := t.stream(kctx)
	if err != nil {
		return nil, batch
	}
	info, err := st.Info(kctx)
	if err != nil {
		return nil, batch
	}
	first := info.State.FirstSeq
	if info.State.Msgs == 0 {
		first = info.State.LastSeq + 1
	}
	checks := 0
	for _, d := range batch {
		switch {
		case d.seq < first:
			gone = append(gone, d)
		case checks < settleMaxChecks && time.Since(d.queued) >= settleCheckAfter:
			checks++
			if _, err := st.GetMsg(kctx, d.seq); errors.Is(err, jetstream.ErrMsgNotFound) {
				gone = append(gone, d)
				continue
			}
			keep = append(keep, d)
		default:
			keep = append(keep, d)
		}
	}
	return gone, keep
}

func (t *settler) stream(ctx context.Context) (jetstream.Stream, error) {
	if t.payloads != nil {
		return t.payloads, nil
	}
	st, err := t.s.cfg.Topology.JetStream().Stream(ctx, t.s.worker.Settings().Stream)
	if err != nil {
		return nil, err
	}
	t.payloads = st
	return st, nil
}

// dropSettled looks up, once per segment, whether docs just claimed afresh
// are settled: a copy of a payload whose doc was settled finds no claim,
// creates one, and must not be sent. Such a doc's fresh claim is removed
// again and its Submitted published again from the settled record. When
// the record cannot be read, the claims are released and the payloads
// retried: nothing is sent without the look. It returns the items to send.
func (s *Submitter) dropSettled(ctx context.Context, items []*item) []*item {
	byRun := map[string][]int{}
	for _, it := range items {
		if pos, err := messages.ParseDocID(it.env.Doc); err == nil {
			byRun[it.env.Run] = append(byRun[it.env.Run], pos)
		}
	}
	jobs := map[string]map[int]string{}
	failed := map[string]error{}
	for run, positions := range byRun {
		kctx, cancel := s.kvContext(ctx)
		got, err := s.claims.SettledJobs(kctx, run, positions)
		cancel()
		if err != nil {
			failed[run] = err
			continue
		}
		jobs[run] = got
	}
	send := items[:0:0]
	for _, it := range items {
		if err, ok := failed[it.env.Run]; ok {
			s.release(ctx, it, "could not read the run's settled claims")
			it.res = s.retry(ctx, it, 0, "could not read the run's settled claims: "+err.Error(), nil, err)
			continue
		}
		pos, err := messages.ParseDocID(it.env.Doc)
		id := ""
		if err == nil {
			id = jobs[it.env.Run][pos]
		}
		if id == "" {
			send = append(send, it)
			continue
		}
		s.forgetFresh(ctx, it)
		s.met.count(outRepublished)
		it.res = s.publishSubmitted(it, id, time.Time{})
	}
	return send
}

// forgetFresh removes the fresh claim of a doc found settled. When it
// cannot, the claim is released instead: a later delivery that takes it
// finds the doc settled too.
func (s *Submitter) forgetFresh(ctx context.Context, it *item) {
	ref := it.claim
	if ref == nil {
		return
	}
	kctx, cancel := s.kvContext(ctx)
	err := s.claims.Forget(kctx, ref)
	cancel()
	if err == nil {
		it.claim = nil
		return
	}
	s.release(ctx, it, "the doc is settled")
}
