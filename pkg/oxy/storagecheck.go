package oxy

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/oxypipe/oxypipe/internal/feeder"
	"github.com/oxypipe/oxypipe/internal/progress"
	"github.com/oxypipe/oxypipe/internal/redact"
	"github.com/oxypipe/oxypipe/pkg/oxytype"
	"github.com/oxypipe/oxypipe/pkg/wsa"
)

// storageCheck feeds a run of uploads so that a wrong storage location
// costs one job, not all of them: of the payloads that share a storage_url,
// the first is fed alone and the rest wait for its upload. A successful
// upload (code 13000, of a done or a faulted job), or a job whose object
// reports no uploads at all, releases them; a
// rejected first payload passes the check on to the next one (no job, no
// upload to judge by); any other end (a failed or unreported upload, an
// unfetched or unsubmitted job) holds them back: they end unsubmitted,
// never sent. Payloads alone at their location are fed at once.
type storageCheck struct {
	mu       sync.Mutex
	watching map[int]bool
	finished map[int]progress.Job
	notify   chan struct{}
}

func newStorageCheck() *storageCheck {
	return &storageCheck{watching: map[int]bool{}, finished: map[int]progress.Job{}, notify: make(chan struct{}, 1)}
}

// observe is the watcher's OnFinish: it keeps the end of each first
// payload.
func (c *storageCheck) observe(j progress.Job) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.watching[j.Doc] {
		return
	}
	c.finished[j.Doc] = j
	select {
	case c.notify <- struct{}{}:
	default:
	}
}

func (c *storageCheck) watch(doc int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.watching[doc] = true
}

func (c *storageCheck) outcome(doc int) (progress.Job, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	j, ok := c.finished[doc]
	return j, ok
}

// location is the payloads of one storage_url, in input order, and the
// position of the one being checked.
type location struct {
	url   string
	docs  []int
	probe int
}

// checkPoll is how often a waiting check looks whether the run was stopped.
const checkPoll = 200 * time.Millisecond

// feed feeds src into run with the check. When the run is stopped while a
// check waits, everything not fed yet is fed, so that the submitter records
// it unsubmitted and the run completes.
func (c *storageCheck) feed(ctx context.Context, f *feeder.Feeder, run string, src Source, r *Run) error {
	var (
		locs  []*location
		byURL = map[string]*location{}
		doc   = 0
	)
	for p, err := range src.All() {
		if err != nil {
			return err
		}
		url, _ := p.StorageURL()
		l := byURL[url]
		if l == nil {
			l = &location{url: url}
			byURL[url] = l
			locs = append(locs, l)
		}
		l.docs = append(l.docs, doc)
		doc++
	}
	feedSet := func(keep map[int]bool) error {
		if len(keep) == 0 {
			return nil
		}
		_, err := f.FeedDocs(ctx, run, src, func(d int) bool { return keep[d] })
		return err
	}

	first := map[int]bool{}
	var open []*location
	for _, l := range locs {
		if len(l.docs) == 1 {
			first[l.docs[0]] = true
			continue
		}
		c.watch(l.docs[0])
		first[l.docs[0]] = true
		open = append(open, l)
	}
	if err := feedSet(first); err != nil {
		return err
	}
	tick := time.NewTicker(checkPoll)
	defer tick.Stop()
	for len(open) > 0 {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-r.Done():
			return nil
		case <-c.notify:
		case <-tick.C:
		}
		if r.Stopped() != nil {
			rest := map[int]bool{}
			for _, l := range open {
				for _, d := range l.docs[l.probe+1:] {
					rest[d] = true
				}
			}
			return feedSet(rest)
		}
		release, next := map[int]bool{}, map[int]bool{}
		var still []*location
		for _, l := range open {
			j, ok := c.outcome(l.docs[l.probe])
			if !ok {
				still = append(still, l)
				continue
			}
			rest := l.docs[l.probe+1:]
			switch {
			case j.Upload != nil && j.Upload.Code == wsa.UploadOK,
				// A job object without "statuses" reports no upload: there
				// is nothing to judge by, so the check cannot hold back.
				j.Upload == nil && (j.Status == oxytype.Done || j.Status == oxytype.Faulted):
				for _, d := range rest {
					release[d] = true
				}
			case j.Status == oxytype.Rejected && len(rest) > 0:
				l.probe++
				c.watch(l.docs[l.probe])
				next[l.docs[l.probe]] = true
				if len(rest) > 1 {
					still = append(still, l)
				}
			case j.Status == oxytype.Rejected:
			default:
				reason := fmt.Sprintf("Held back %s for %s, because the first upload failed", plural(len(rest), "payload", "payloads"), redact.String(l.url))
				_, err := f.HoldBack(ctx, run, src, func(d int) bool { return d > l.docs[l.probe] && inDocs(rest, d) }, reason)
				if err != nil {
					return err
				}
			}
		}
		open = still
		for d := range next {
			release[d] = true
		}
		if err := feedSet(release); err != nil {
			return err
		}
	}
	return nil
}

// inDocs reports whether d is one of docs (sorted ascending).
func inDocs(docs []int, d int) bool {
	lo, hi := 0, len(docs)
	for lo < hi {
		m := (lo + hi) / 2
		switch {
		case docs[m] == d:
			return true
		case docs[m] < d:
			lo = m + 1
		default:
			hi = m
		}
	}
	return false
}
