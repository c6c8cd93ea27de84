package wsa_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/oxypipe/oxypipe/pkg/payload"
	"github.com/oxypipe/oxypipe/pkg/wsa"
)

// fakeClock is a manual clock: At channels fire when Advance reaches them.
type fakeClock struct {
	mu     sync.Mutex
	now    time.Time
	timers []fakeTimer
}

type fakeTimer struct {
	at time.Time
	ch chan time.Time
}

func newFakeClock() *fakeClock {
	return &fakeClock{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) At(at time.Time) <-chan time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	ch := make(chan time.Time, 1)
	if !at.After(c.now) {
		ch <- c.now
		return ch
	}
	c.timers = append(c.timers, fakeTimer{at: at, ch: ch})
	return ch
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	kept := c.timers[:0]
	for _, t := range c.timers {
		if !t.at.After(c.now) {
			t.ch <- c.now
		} else {
			kept = append(kept, t)
		}
	}
	c.timers = kept
}

func (c *fakeClock) pending() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.timers)
}

// waitAsync starts a Wait and returns a channel with its outcome.
type waitResult struct {
	t   wsa.Ticket
	err error
}

func waitAsync(ctx context.Context, p *wsa.Pacer, cost wsa.Cost) <-chan waitResult {
	ch := make(chan waitResult, 1)
	go func() {
		t, err := p.Wait(ctx, cost)
		ch <- waitResult{t, err}
	}()
	return ch
}

func newPacer(t *testing.T, cfg wsa.PacerConfig) (*wsa.Pacer, *fakeClock) {
	t.Helper()
	clock := newFakeClock()
	cfg.Clock = clock
	p, err := wsa.NewPacer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return p, clock
}

func mustWait(t *testing.T, p *wsa.Pacer, cost wsa.Cost) wsa.Ticket {
	t.Helper()
	select {
	case r := <-waitAsync(context.Background(), p, cost):
		if r.err != nil {
			t.Fatal(r.err)
		}
		return r.t
	case <-time.After(5 * time.Second):
		t.Fatal("Wait blocked with budget left")
	}
	return wsa.Ticket{}
}

// blocked asserts that a pending Wait is waiting on the clock.
func blocked(t *testing.T, clock *fakeClock, ch <-chan waitResult, timers int) {
	t.Helper()
	waitFor(t, "the waiter to block on the clock", func() bool { return clock.pending() >= timers })
	select {
	case r := <-ch:
		t.Fatalf("Wait returned early: %+v", r)
	default:
	}
}

func released(t *testing.T, ch <-chan waitResult) wsa.Ticket {
	t.Helper()
	select {
	case r := <-ch:
		if r.err != nil {
			t.Fatal(r.err)
		}
		return r.t
	case <-time.After(5 * time.Second):
		t.Fatal("Wait was not released")
	}
	return wsa.Ticket{}
}

var one = wsa.Cost{Total: 1}

func TestPacerFollowsTheWindow(t *testing.T) {
	t.Parallel()
	p, clock := newPacer(t, wsa.PacerConfig{Limit: 3})
	t1 := mustWait(t, p, one)
	mustWait(t, p, one)
	mustWait(t, p, one)
	clock.Advance(200 * time.Millisecond)
	p.Done(t1, wsa.RateLimit{Total: 3, TotalRemaining: 0, Known: true}, nil) // opens the window
	fourth := waitAsync(context.Background(), p, one)
	blocked(t, clock, fourth, 1)
	clock.Advance(999 * time.Millisecond)
	blocked(t, clock, fourth, 1)
	clock.Advance(time.Millisecond)
	released(t, fourth)
	if got := p.Remaining(); got.Total != 2 {
		t.Fatalf("remaining = %+v, want 2 of a fresh window of 3", got)
	}
}

func TestPacerTakesTheLowerOfItsCountAndTheHeaders(t *testing.T) {
	t.Parallel()
	p, clock := newPacer(t, wsa.PacerConfig{})
	tk := mustWait(t, p, one)
	p.Done(tk, wsa.RateLimit{Total: 100, TotalRemaining: 0, Known: true}, nil)
	if got := p.Limits(); got.Total != 100 {
		t.Fatalf("limits = %+v, want the header's 100", got)
	}
	next := waitAsync(context.Background(), p, one)
	blocked(t, clock, next, 1)
	clock.Advance(time.Second)
	released(t, next)
	if got := p.Remaining(); got.Total != 99 {
		t.Fatalf("remaining = %+v, want 99 of the new limit", got)
	}
}

func TestPacerClampsAnOversizedCostToAFreshWindow(t *testing.T) {
	t.Parallel()
	p, clock := newPacer(t, wsa.PacerConfig{Limit: 10})
	first := mustWait(t, p, one)
	big := waitAsync(context.Background(), p, wsa.Cost{Total: 25})
	blocked(t, clock, big, 1)
	p.Done(first, wsa.RateLimit{}, nil) // the first answer opens the window
	clock.Advance(999 * time.Millisecond)
	blocked(t, clock, big, 1)
	clock.Advance(time.Millisecond)
	if tk := released(t, big); tk.Cost() != (wsa.Cost{Total: 10}) {
		t.Fatalf("ticket cost = %+v, want clamped to 10", tk.Cost())
	}
}

func TestPacerBacksOffOn429(t *testing.T) {
	t.Parallel()
	p, clock := newPacer(t, wsa.PacerConfig{Limit: 50, MaxBackoff: 3 * time.Second})
	tooMany := &wsa.APIError{StatusCode: 429, Message: "Too many requests. (Total Dynamic)."}
	pauses := []time.Duration{time.Second, 2 * time.Second, 3 * time.Second, 3 * time.Second}
	for i, pause := range pauses {
		tk := mustWait(t, p, one)
		p.Done(tk, wsa.RateLimit{}, tooMany)
		next := waitAsync(context.Background(), p, one)
		blocked(t, clock, next, 1)
		clock.Advance(pause - time.Millisecond)
		blocked(t, clock, next, 1)
		clock.Advance(time.Millisecond)
		tk = released(t, next)
		if i == len(pauses)-1 {
			p.Done(tk, wsa.RateLimit{}, nil) // success ends the backoff
		} else {
			p.Done(tk, wsa.RateLimit{}, errors.New("local")) // refunded, no effect
		}
	}
	tk := mustWait(t, p, one)
	p.Done(tk, wsa.RateLimit{}, tooMany)
	next := waitAsync(context.Background(), p, one)
	blocked(t, clock, next, 1)
	clock.Advance(time.Second)
	released(t, next)
}

func TestPacerRefundsWhatDidNotCount(t *testing.T) {
	t.Parallel()
	refunded := []error{
		&wsa.APIError{StatusCode: 400, Message: "Unsupported source."},
		&wsa.APIError{StatusCode: 429, Message: "Access to a.io has been limited to 1 req/s due to a low success rate."},
		&wsa.APIError{Message: "ConnectError: refused"},
		&payload.ValidationError{Message: "x"},
	}
	for _, err := range refunded {
		p, _ := newPacer(t, wsa.PacerConfig{Limit: 1})
		tk := mustWait(t, p, one)
		p.Done(tk, wsa.RateLimit{}, err)
		if got := p.Remaining(); got.Total != 1 {
			t.Fatalf("after %v: remaining %+v, want the unit back", err, got)
		}
	}
	kept := []error{
		&wsa.APIError{StatusCode: 500},
		&wsa.APIError{Message: "ReadError: EOF", RequestSent: true},
	}
	for _, err := range kept {
		p, _ := newPacer(t, wsa.PacerConfig{Limit: 1})
		tk := mustWait(t, p, one)
		p.Done(tk, wsa.RateLimit{}, err)
		if got := p.Remaining(); got.Total != 0 {
			t.Fatalf("after %v: remaining %+v, want the unit spent", err, got)
		}
	}
}

func TestPacerServesInOrderAndLetsWaitersLeave(t *testing.T) {
	t.Parallel()
	p, clock := newPacer(t, wsa.PacerConfig{Limit: 1})
	first := mustWait(t, p, one)
	second := waitAsync(context.Background(), p, one)
	blocked(t, clock, second, 1)
	ctx, cancel := context.WithCancel(context.Background())
	third := waitAsync(ctx, p, one)
	fourth := waitAsync(context.Background(), p, one)
	waitFor(t, "three waiters", func() bool { return p.Waiters() == 3 })
	p.Done(first, wsa.RateLimit{}, nil)
	clock.Advance(time.Second)
	tk := released(t, second)
	cancel()
	if r := <-third; !errors.Is(r.err, context.Canceled) {
		t.Fatalf("canceled Wait = %v", r.err)
	}
	waitFor(t, "the canceled waiter to leave", func() bool { return p.Waiters() == 1 })
	p.Done(tk, wsa.RateLimit{}, nil)
	clock.Advance(999 * time.Millisecond)
	blocked(t, clock, fourth, 1)
	clock.Advance(time.Millisecond)
	released(t, fourth)
}

func TestPacerWaitsForTheFirstAnswerToOpenAWindow(t *testing.T) {
	t.Parallel()
	p, clock := newPacer(t, wsa.PacerConfig{Limit: 1, MaxBackoff: 10 * time.Second})
	lost := mustWait(t, p, one) // a ticket whose answer never comes
	next := waitAsync(context.Background(), p, one)
	blocked(t, clock, next, 1)
	clock.Advance(5 * time.Second) // no answer, no window: keep waiting
	blocked(t, clock, next, 1)
	clock.Advance(5 * time.Second) // MaxBackoff: give up on the answer, open a window
	blocked(t, clock, next, 1)
	clock.Advance(time.Second)
	released(t, next)
	_ = lost
}

// A late answer to a submission of the previous window must not open the
// next one: the API counted it in its previous window and opens the next at
// the first submission of the next window it receives, which may be later.
// A window opened by the late answer would end before the API's and send the
// following window's submissions into the API's.
func TestPacerALateAnswerFromTheLastWindowDoesNotOpenTheNext(t *testing.T) {
	t.Parallel()
	p, clock := newPacer(t, wsa.PacerConfig{Limit: 2})
	first := mustWait(t, p, one)
	late := mustWait(t, p, one)
	p.Done(first, wsa.RateLimit{}, nil) // opens the first window
	clock.Advance(time.Second)          // it ends; late's answer has not come
	next := mustWait(t, p, one)         // the first submission of the second window
	clock.Advance(100 * time.Millisecond)
	p.Done(late, wsa.RateLimit{}, nil) // must not open the second window
	clock.Advance(200 * time.Millisecond)
	p.Done(next, wsa.RateLimit{}, nil) // opens it, 300ms into the refill
	mustWait(t, p, one)                // spends what is left
	third := waitAsync(context.Background(), p, one)
	blocked(t, clock, third, 1)
	clock.Advance(800 * time.Millisecond) // a window opened by the late answer would end here
	blocked(t, clock, third, 1)
	clock.Advance(200*time.Millisecond - time.Millisecond)
	blocked(t, clock, third, 1)
	clock.Advance(time.Millisecond) // one Window after the answer that opened it
	released(t, third)
}

func TestPacerOpensAWindowAtOnceWithNothingInFlight(t *testing.T) {
	t.Parallel()
	p, clock := newPacer(t, wsa.PacerConfig{Limit: 1})
	tk := mustWait(t, p, one)
	p.Done(tk, wsa.RateLimit{}, &wsa.APIError{StatusCode: 503}) // may have counted; no headers
	next := waitAsync(context.Background(), p, one)
	blocked(t, clock, next, 1)
	clock.Advance(time.Second)
	released(t, next)
}

func TestPacerRenderBudget(t *testing.T) {
	t.Parallel()
	p, clock := newPacer(t, wsa.PacerConfig{Limit: 50, RenderLimit: 2})
	rendered := wsa.CostOf(mustParse(t, `{"source":"universal","url":"https://a.io","render":"html"}`))
	if rendered != (wsa.Cost{Total: 1, Render: 1}) {
		t.Fatalf("CostOf = %+v", rendered)
	}
	a := mustWait(t, p, rendered)
	b := mustWait(t, p, rendered)
	third := waitAsync(context.Background(), p, rendered)
	blocked(t, clock, third, 1)
	p.Done(a, wsa.RateLimit{}, nil)
	p.Done(b, wsa.RateLimit{}, nil)
	clock.Advance(time.Second)
	released(t, third)
	if got := wsa.CostOf(mustParse(t, `{"source":"google_search","query":"q","pages":3}`), mustParse(t, `{"source":"google_search","query":"r","pages":3}`)); got != (wsa.Cost{Total: 6}) {
		t.Fatalf("CostOf(batch) = %+v", got)
	}
}

func TestPacerUnlimitedUntilTheHeadersSpeak(t *testing.T) {
	t.Parallel()
	p, clock := newPacer(t, wsa.PacerConfig{Limit: -1, RenderLimit: -1})
	for range 1000 {
		mustWait(t, p, wsa.Cost{Total: 5, Render: 5})
	}
	tk := mustWait(t, p, one)
	p.Done(tk, wsa.RateLimit{Total: 10, TotalRemaining: 0, Known: true}, nil)
	next := waitAsync(context.Background(), p, one)
	blocked(t, clock, next, 1)
	clock.Advance(time.Second)
	released(t, next)
}

func TestPacerWaitHonoursADoneContext(t *testing.T) {
	t.Parallel()
	p, _ := newPacer(t, wsa.PacerConfig{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := p.Wait(ctx, one); !errors.Is(err, context.Canceled) {
		t.Fatalf("Wait = %v", err)
	}
}

func TestPacerAppliesAChangedLimitWithinTheWindow(t *testing.T) {
	t.Parallel()
	t.Run("a raised limit adds to what is left of this window", func(t *testing.T) {
		t.Parallel()
		p, _ := newPacer(t, wsa.PacerConfig{})
		tk := mustWait(t, p, wsa.Cost{Total: 50})
		p.Done(tk, wsa.RateLimit{Total: 1000, TotalRemaining: 950, Known: true}, nil)
		if got := p.Remaining(); got.Total != 950 {
			t.Fatalf("remaining = %+v, want the 950 the raised limit leaves", got)
		}
		for range 950 {
			mustWait(t, p, one) // the clock never moves: all within the first window
		}
	})
	t.Run("a lowered limit takes from what is left of this window", func(t *testing.T) {
		t.Parallel()
		p, clock := newPacer(t, wsa.PacerConfig{Limit: 100})
		first := mustWait(t, p, wsa.Cost{Total: 10})
		mustWait(t, p, wsa.Cost{Total: 50}) // in flight, unknown to the answer below
		p.Done(first, wsa.RateLimit{Total: 80, TotalRemaining: 70, Known: true}, nil)
		if got := p.Remaining(); got.Total != 20 {
			t.Fatalf("remaining = %+v, want 80 - 60 used = 20", got)
		}
		mustWait(t, p, wsa.Cost{Total: 20})
		next := waitAsync(context.Background(), p, one)
		blocked(t, clock, next, 1)
	})
}
