package submitter

import (
	"sync"
	"time"
)

// unconfirmedClaims holds the claims this process left "claimed" although
// it sent no request under them: a create whose answer was lost and could
// not be read back, a release that did not land. A claim is known by its
// doc's key and the ClaimedAt this process wrote. A key may gather several
// such times: each lost create writes (or fails to write) a claim with a
// new time, and only the bucket knows which one landed, so every one is
// kept until the doc's claim is taken back (take) — forgetting the one that
// landed would leave it to look like a submission in flight and end, once
// stale, as a false "outcome unknown".
type unconfirmedClaims struct {
	mu    sync.Mutex
	times map[string][]time.Time
}

// remember adds a claim this process may have left behind.
func (u *unconfirmedClaims) remember(key string, at time.Time) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.times == nil {
		u.times = map[string][]time.Time{}
	}
	for _, t := range u.times[key] {
		if t.Equal(at) {
			return
		}
	}
	u.times[key] = append(u.times[key], at)
}

// has reports whether the claim of key written at at is one of them.
func (u *unconfirmedClaims) has(key string, at time.Time) bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.hasLocked(key, at)
}

func (u *unconfirmedClaims) hasLocked(key string, at time.Time) bool {
	for _, t := range u.times[key] {
		if t.Equal(at) {
			return true
		}
	}
	return false
}

// take reports whether the claim of key written at at is one of them, and
// forgets the key: the caller now holds the doc's claim. Of two callers
// that try at once, one gets true.
func (u *unconfirmedClaims) take(key string, at time.Time) bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	if !u.hasLocked(key, at) {
		return false
	}
	delete(u.times, key)
	return true
}

// forget drops the key: the doc's claim was created anew, so no earlier
// write of this process can land any more (a create only lands on no
// claim).
func (u *unconfirmedClaims) forget(key string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	delete(u.times, key)
}
