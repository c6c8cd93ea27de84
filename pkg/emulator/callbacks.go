package emulator

import (
	"bytes"
	"container/heap"
	"context"
	"io"
	"net/http"
	"sync"
	"time"
)

// callbacker posts the job object to callback_url once a job reaches its
// final status. One goroutine waits on the clock for the next due job (so a
// FakeClock drives it); each callback is sent from its own goroutine, at most
// maxCallbacksInFlight at a time. Close cancels everything in flight.
type callbacker struct {
	e      *Emulator
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	sem    chan struct{}
	wake   chan struct{}

	mu      sync.Mutex
	due     dueHeap
	started bool
	closed  bool
}

const maxCallbacksInFlight = 64

type dueJob struct {
	j    *job
	base string
}

type dueHeap []dueJob

func (h dueHeap) Len() int           { return len(h) }
func (h dueHeap) Less(i, k int) bool { return h[i].j.finish < h[k].j.finish }
func (h dueHeap) Swap(i, k int)      { h[i], h[k] = h[k], h[i] }
func (h *dueHeap) Push(x any)        { *h = append(*h, x.(dueJob)) }
func (h *dueHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	old[len(old)-1] = dueJob{}
	*h = old[:len(old)-1]
	return x
}

func newCallbacker(e *Emulator) *callbacker {
	ctx, cancel := context.WithCancel(context.Background())
	return &callbacker{
		e: e, ctx: ctx, cancel: cancel,
		sem:  make(chan struct{}, maxCallbacksInFlight),
		wake: make(chan struct{}, 1),
	}
}

// schedule arranges j's callback at its finish time.
func (c *callbacker) schedule(j *job, base string) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return
	}
	heap.Push(&c.due, dueJob{j: j, base: base})
	if !c.started {
		// Started under mu, so that Add never races close's Wait.
		c.started = true
		c.wg.Add(1)
		go c.loop()
	}
	c.mu.Unlock()
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

func (c *callbacker) loop() {
	defer c.wg.Done()
	for {
		now := c.e.now()
		c.mu.Lock()
		var ready []dueJob
		for c.due.Len() > 0 && c.due[0].j.finish <= now {
			ready = append(ready, heap.Pop(&c.due).(dueJob))
		}
		next := int64(never)
		if c.due.Len() > 0 {
			next = c.due[0].j.finish
		}
		c.mu.Unlock()
		for _, d := range ready {
			select {
			case c.sem <- struct{}{}:
			case <-c.ctx.Done():
				return
			}
			c.wg.Add(1)
			go func() {
				defer func() { <-c.sem; c.wg.Done() }()
				c.send(d)
			}()
		}
		if len(ready) > 0 {
			continue
		}
		var timer Timer
		var timerC <-chan time.Time
		if next != never {
			timer = c.e.clock.NewTimer(time.Duration(next - now))
			timerC = timer.C()
		}
		select {
		case <-c.ctx.Done():
		case <-c.wake:
		case <-timerC:
		}
		if timer != nil {
			timer.Stop()
		}
		if c.ctx.Err() != nil {
			return
		}
	}
}

// send posts one callback, retrying with a doubling backoff.
func (c *callbacker) send(d dueJob) {
	e := c.e
	body := e.appendJob(nil, d.j, e.now(), d.base)
	backoff := e.cfg.CallbackBackoff
	for attempt := 1; ; attempt++ {
		if c.post(d.j.spec.callbackURL, body) {
			e.stats.callbacksSent.Add(1)
			return
		}
		if attempt >= e.cfg.CallbackAttempts {
			e.stats.callbacksFailed.Add(1)
			return
		}
		t := e.clock.NewTimer(time.Duration(e.scaled(backoff)))
		select {
		case <-c.ctx.Done():
			t.Stop()
			return
		case <-t.C():
		}
		backoff *= 2
	}
}

func (c *callbacker) post(url string, body []byte) bool {
	req, err := http.NewRequestWithContext(c.ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return false
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.e.cfg.CallbackClient.Do(req)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20)) // lets the connection be reused
	return resp.StatusCode >= 200 && resp.StatusCode < 300
}

func (c *callbacker) close() {
	c.mu.Lock()
	c.closed = true
	c.due = nil
	c.mu.Unlock()
	c.cancel()
	c.wg.Wait()
}
