package wsa

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/oxypipe/oxypipe/pkg/payload"
)

// Defaults of PacerConfig: a Starter plan's budgets (50 jobs and 13 rendered
// jobs a second), so that a plan not yet known is not over-driven before
// the API's x-ratelimit-* headers say what it allows.
const (
	DefaultPacerLimit       = 50
	DefaultPacerRenderLimit = 13
	DefaultPacerWindow      = time.Second
	DefaultPacerMaxBackoff  = 30 * time.Second
)

// Clock is the time source of a Pacer; tests inject a fake one. Waits are
// given as deadlines rather than durations, so that a fake clock moved
// between a waiter's reading of Now and its call to At cannot push the
// deadline later.
type Clock interface {
	// Now returns the current time.
	Now() time.Time
	// At returns a channel that receives once the clock reaches t (at once
	// when t is not in the future).
	At(t time.Time) <-chan time.Time
}

// SystemClock returns the real clock.
func SystemClock() Clock { return systemClock{} }

type systemClock struct{}

func (systemClock) Now() time.Time                  { return time.Now() }
func (systemClock) At(t time.Time) <-chan time.Time { return time.After(time.Until(t)) }

// Cost is what a submission charges against the rate limits: one unit per
// page of every value, on the total budget and, for rendered jobs, on the
// render budget too.
type Cost struct {
	Total, Render int
}

// CostOf returns the cost of submitting the payloads (one, or a batch).
func CostOf(ps ...payload.Payload) Cost {
	var c Cost
	for _, p := range ps {
		pages := p.Pages()
		c.Total += pages
		if p.Rendered() {
			c.Render += pages
		}
	}
	return c
}

// PacerConfig configures a Pacer.
type PacerConfig struct {
	// Limit is the total budget per window until an answer's headers say
	// otherwise. Default DefaultPacerLimit; negative means unlimited until
	// the headers say otherwise.
	Limit int
	// RenderLimit is the same for rendered jobs. Default
	// DefaultPacerRenderLimit; negative means unlimited.
	RenderLimit int
	// Window is how long a budget lasts from the first answer that opens it.
	// Default DefaultPacerWindow.
	Window time.Duration
	// MaxBackoff caps the pause after consecutive 429s, which doubles from
	// one Window. Default DefaultPacerMaxBackoff.
	MaxBackoff time.Duration
	// Clock is the time source. Default SystemClock().
	Clock Clock
}

// WithDefaults returns the configuration with every unset field filled in.
func (c PacerConfig) WithDefaults() PacerConfig {
	if c.Limit == 0 {
		c.Limit = DefaultPacerLimit
	}
	if c.RenderLimit == 0 {
		c.RenderLimit = DefaultPacerRenderLimit
	}
	if c.Window == 0 {
		c.Window = DefaultPacerWindow
	}
	if c.MaxBackoff == 0 {
		c.MaxBackoff = DefaultPacerMaxBackoff
	}
	if c.Clock == nil {
		c.Clock = SystemClock()
	}
	return c
}

func (c PacerConfig) validate() error {
	if c.Window < 0 || c.MaxBackoff < 0 {
		return errors.New("wsa: PacerConfig.Window and MaxBackoff must not be negative")
	}
	return nil
}

// Pacer spaces submissions so that they stay within the account's rate
// limits. The API sends no Retry-After; it counts jobs in a window of about
// one second and reports the budget in headers, so a Pacer:
//
//   - opens a window at the first answer to a submission charged in it,
//     lasting Window, and refills the budget when it ends; the API's window
//     opened earlier, when it received that submission, so this one ends no
//     sooner than the API's. A late answer to a submission of an earlier
//     window does not open one: the API counted that submission in its
//     earlier window, and the submissions of this one may not have reached
//     it yet, so a window opened then could end before the API's and send
//     the next window's submissions into it;
//   - charges each submission's Cost before it is sent (Wait), clamping a
//     cost above the limit to the limit, so that it goes alone in a fresh
//     window;
//   - follows the limit and remaining budget of every answer's headers
//     (Done), applying a changed limit within the current window and
//     keeping the lower of its own count and the API's;
//   - after a 429 of the rate limit, empties the budget and pauses for one
//     Window, doubling on each further 429 up to MaxBackoff; an accepted
//     submission ends the backoff;
//   - gives the cost back when the submission did not count (a 4xx, a
//     domain throttle, a connect error), in the same window.
//
// Every Ticket must be handed back to Done, with the error when the
// submission was not even attempted: a Pacer waits for the answers of
// submissions in flight before it opens a window. Waiters are served in the
// order they arrived. A Pacer is safe for concurrent use; share one per
// account.
type Pacer struct {
	cfg PacerConfig

	mu              sync.Mutex
	limit           int // <= 0: unlimited
	renderLimit     int
	remaining       int
	renderRemaining int
	open            bool
	windowStart     time.Time
	window          uint64 // generation, advanced when a window ends
	pausedUntil     time.Time
	strikes         int
	inFlight        int       // tickets handed out and not yet Done
	stalledSince    time.Time // when a waiter began waiting for a first answer
	queue           []*waiter
	wake            chan struct{}
}

type waiter struct{ _ byte }

// Ticket is a reservation made by Wait, handed back to Done.
type Ticket struct {
	cost   Cost
	window uint64
}

// Cost returns what the ticket charged (the clamped cost).
func (t Ticket) Cost() Cost { return t.cost }

// NewPacer returns a Pacer for cfg.
func NewPacer(cfg PacerConfig) (*Pacer, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	p := &Pacer{cfg: cfg, limit: cfg.Limit, renderLimit: cfg.RenderLimit, wake: make(chan struct{})}
	p.remaining, p.renderRemaining = p.limit, p.renderLimit
	return p, nil
}

// Wait blocks until the budget allows a submission of cost, reserves it and
// returns a Ticket to pass to Done with the submission's outcome. It returns
// ctx.Err() when the context ends first.
func (p *Pacer) Wait(ctx context.Context, cost Cost) (Ticket, error) {
	if err := ctx.Err(); err != nil {
		return Ticket{}, err
	}
	w := &waiter{}
	p.mu.Lock()
	p.queue = append(p.queue, w)
	for {
		now := p.cfg.Clock.Now()
		p.roll(now)
		var deadline time.Time // zero: until woken
		if p.queue[0] == w {
			c := p.clamp(cost)
			switch {
			case now.Before(p.pausedUntil):
				deadline = p.pausedUntil
			case p.fits(c):
				p.charge(c)
				p.inFlight++
				p.queue = p.queue[1:]
				t := Ticket{cost: c, window: p.window}
				p.broadcast()
				p.mu.Unlock()
				return t, nil
			case p.open:
				deadline = p.windowStart.Add(p.cfg.Window)
			case p.inFlight > 0:
				// The API opened its window when it received the first of
				// the submissions in flight; the first answer to one charged
				// in this window opens ours.
				// Should none come (a caller that never calls Done), the
				// window opens after MaxBackoff.
				if p.stalledSince.IsZero() {
					p.stalledSince = now
				}
				if deadline = p.stalledSince.Add(p.cfg.MaxBackoff); !now.Before(deadline) {
					p.open, p.windowStart = true, now
					continue
				}
			default:
				// Nothing in flight can open a window, and the budget is
				// spent by submissions already answered (ones that may have
				// counted, or late answers whose headers lowered it): open
				// one now. The API received those submissions before their
				// answers, so its window ends no later than this one.
				p.open, p.windowStart = true, now
				continue
			}
		}
		wake := p.wake
		p.mu.Unlock()
		var timer <-chan time.Time
		if !deadline.IsZero() {
			timer = p.cfg.Clock.At(deadline)
		}
		select {
		case <-ctx.Done():
			p.mu.Lock()
			p.remove(w)
			p.broadcast()
			p.mu.Unlock()
			return Ticket{}, ctx.Err()
		case <-wake:
		case <-timer:
		}
		p.mu.Lock()
	}
}

// Done records the outcome of the submission made with t: the RateLimit and
// error Submit or SubmitBatch returned.
func (p *Pacer) Done(t Ticket, rl RateLimit, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.cfg.Clock.Now()
	p.roll(now)
	if p.inFlight > 0 {
		p.inFlight--
	}
	var ae *APIError
	switch {
	case err == nil:
		p.strikes = 0
		p.observe(now, rl, t.window == p.window)
	case errors.As(err, &ae) && ae.StatusCode == http.StatusTooManyRequests && !ae.IsDomainThrottle():
		p.tooMany(now, rl, ae)
	case !counted(err):
		if t.window == p.window {
			p.refund(t.cost)
		}
		if rl.Known || rl.RenderKnown {
			p.observe(now, rl, t.window == p.window)
		}
	default: // it may have counted (5xx, read errors): keep the charge
		if rl.Known || rl.RenderKnown {
			p.observe(now, rl, t.window == p.window)
		}
	}
	p.broadcast()
}

// Limits returns the current limits per window (0 when unlimited), for
// sizing batches with payload.BatchSize.
func (p *Pacer) Limits() Cost {
	p.mu.Lock()
	defer p.mu.Unlock()
	return Cost{Total: max(p.limit, 0), Render: max(p.renderLimit, 0)}
}

// Remaining returns what is left of the current window's budget.
func (p *Pacer) Remaining() Cost {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.roll(p.cfg.Clock.Now())
	return Cost{Total: p.remaining, Render: p.renderRemaining}
}

// Waiters returns how many callers are blocked in Wait.
func (p *Pacer) Waiters() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.queue)
}

// counted reports whether a failed submission may have used budget: not
// when the API refused it with a 4xx (the API counts neither 400s nor
// 429s), nor when it never reached the API.
func counted(err error) bool {
	var ae *APIError
	if !errors.As(err, &ae) {
		return false // a local error: nothing was sent
	}
	if ae.StatusCode == 0 {
		return ae.RequestSent
	}
	return ae.StatusCode < 400 || ae.StatusCode >= 500
}

func (p *Pacer) roll(now time.Time) {
	if p.open && !now.Before(p.windowStart.Add(p.cfg.Window)) {
		p.open, p.stalledSince = false, time.Time{}
		p.window++
		p.remaining, p.renderRemaining = p.limit, p.renderLimit
	}
}

func (p *Pacer) clamp(c Cost) Cost {
	c.Total, c.Render = max(c.Total, 0), max(c.Render, 0)
	if p.limit > 0 {
		c.Total = min(c.Total, p.limit)
	}
	if p.renderLimit > 0 {
		c.Render = min(c.Render, p.renderLimit)
	}
	return c
}

func (p *Pacer) fits(c Cost) bool {
	return (p.limit <= 0 || p.remaining >= c.Total) && (p.renderLimit <= 0 || p.renderRemaining >= c.Render)
}

func (p *Pacer) charge(c Cost) {
	p.remaining -= c.Total
	p.renderRemaining -= c.Render
}

func (p *Pacer) refund(c Cost) {
	p.remaining += c.Total
	p.renderRemaining += c.Render
	if p.limit > 0 {
		p.remaining = min(p.remaining, p.limit)
	}
	if p.renderLimit > 0 {
		p.renderRemaining = min(p.renderRemaining, p.renderLimit)
	}
}

// observe follows an answer's rate-limit headers. opens says whether the
// answer may open the window: only an answer to a submission charged in the
// current window (or a 429, which pauses for a whole Window anyway).
func (p *Pacer) observe(now time.Time, rl RateLimit, opens bool) {
	if opens && !p.open {
		p.open, p.windowStart, p.stalledSince = true, now, time.Time{}
	}
	if rl.Known {
		p.limit, p.remaining = follow(p.limit, p.remaining, rl.Total, rl.TotalRemaining)
	}
	if rl.RenderKnown {
		p.renderLimit, p.renderRemaining = follow(p.renderLimit, p.renderRemaining, rl.Render, rl.RenderRemaining)
	}
}

// follow merges an answer's limit and remaining budget with the local
// count and returns the new limit and remaining budget. A limit that
// changes applies at once, within the current window: what this window has
// used stays used, so the local remaining budget moves by the change (a
// first window charged against the default budget would otherwise run at
// that budget until it ends, however high the account's real limit). Then
// the lower of the local count and the API's wins, since each side may not
// yet know of requests the other counted. An answer without a limit (0)
// keeps the one known.
func follow(limit, local, apiLimit, apiRemaining int) (newLimit, remaining int) {
	if limit <= 0 {
		// The local count was unlimited: the API's is the only one.
		if apiLimit > 0 {
			limit = apiLimit
		}
		return limit, apiRemaining
	}
	if apiLimit > 0 && apiLimit != limit {
		local = max(local+apiLimit-limit, 0)
		limit = apiLimit
	}
	return limit, min(local, apiRemaining)
}

func (p *Pacer) tooMany(now time.Time, rl RateLimit, ae *APIError) {
	p.observe(now, rl, true)
	if strings.Contains(ae.Message, "Render") {
		p.renderRemaining = 0
	} else {
		p.remaining = 0
	}
	p.strikes++
	pause := p.cfg.Window
	for i := 1; i < p.strikes && pause < p.cfg.MaxBackoff; i++ {
		pause *= 2
	}
	p.pausedUntil = now.Add(min(pause, p.cfg.MaxBackoff))
}

func (p *Pacer) remove(w *waiter) {
	for i, q := range p.queue {
		if q == w {
			p.queue = append(p.queue[:i:i], p.queue[i+1:]...)
			return
		}
	}
}

// broadcast wakes every waiter to look at the state again.
func (p *Pacer) broadcast() {
	close(p.wake)
	p.wake = make(chan struct{})
}
