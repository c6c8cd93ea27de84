package emulator

import (
	"net/http"
	"strconv"
	"sync"
)

// The live API counts submitted jobs (values × pages) in a window of about a
// second that opens at the first submission after the previous window
// closed; rendered jobs also count against a second, smaller limit. A
// submission that does not fit takes nothing, and neither do 400s.

const (
	limitTotal = iota
	limitRender
)

type limiter struct {
	mu     sync.Mutex
	window int64 // nanoseconds
	opened int64
	open   bool
	limit  [2]int // Unlimited (-1) for none
	used   [2]int
}

func newLimiter(total, render int, window int64) *limiter {
	return &limiter{limit: [2]int{total, render}, window: window}
}

// off reports whether neither limit applies.
func (l *limiter) off() bool { return l.limit[limitTotal] < 0 && l.limit[limitRender] < 0 }

// take counts cost against the limits that apply. It returns the index of
// the limit that does not fit (-1 when the submission fits) and what remains
// of each limit afterwards.
func (l *limiter) take(now int64, cost int, rendered bool) (failed int, remaining [2]int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.open && now-l.opened >= l.window {
		l.open = false
		l.used = [2]int{}
	}
	failed = -1
	for i := range l.limit {
		if l.limit[i] < 0 || (i == limitRender && !rendered) {
			continue
		}
		if l.used[i]+cost > l.limit[i] {
			failed = i
			break
		}
	}
	if failed < 0 {
		if !l.open {
			l.open, l.opened = true, now
		}
		l.used[limitTotal] += cost
		if rendered {
			l.used[limitRender] += cost
		}
	}
	for i := range l.limit {
		remaining[i] = max(l.limit[i]-l.used[i], 0)
	}
	return failed, remaining
}

// rateHeaderNames are the rate-limit header names of one spelling.
type rateHeaderNames struct {
	limit, remaining [2]string
}

func newRateHeaderNames(style HeaderStyle, uuid string, clientID int) rateHeaderNames {
	var n rateHeaderNames
	names := [2]string{"total-requests", "total-render-requests"}
	for i, name := range names {
		var prefix string
		if style == HeaderUnderscored {
			prefix = "x-ratelimit-" + underscore(name) + "_" + uuid + "-" + strconv.Itoa(clientID)
		} else {
			prefix = "x-ratelimit-" + name + "-" + uuid
		}
		n.limit[i] = http.CanonicalHeaderKey(prefix + "-limit")
		n.remaining[i] = http.CanonicalHeaderKey(prefix + "-remaining")
	}
	return n
}

func underscore(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c == '-' {
			b[i] = '_'
		}
	}
	return string(b)
}

// setRateHeaders writes the limit headers of a submission: the total limit
// always, the rendered one for rendered submissions. An unlimited limit
// advertises UnlimitedBudget, whole, since it counts nothing.
func (e *Emulator) setRateHeaders(h http.Header, rendered bool, remaining [2]int) {
	names := &e.rateNames[0]
	switch e.cfg.HeaderStyle {
	case HeaderUnderscored:
		names = &e.rateNames[1]
	case HeaderAlternating:
		names = &e.rateNames[(e.headerFlip.Add(1)-1)%2]
	}
	for i, limit := range e.limiter.limit {
		if i == limitRender && !rendered {
			continue
		}
		left := remaining[i]
		if limit < 0 {
			limit, left = UnlimitedBudget, UnlimitedBudget
		}
		h[names.limit[i]] = []string{strconv.Itoa(limit)}
		h[names.remaining[i]] = []string{strconv.Itoa(left)}
	}
}
