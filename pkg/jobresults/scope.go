package jobresults

import (
	"context"
	"fmt"
)

type scopeKey struct{}

// WithScope returns a context that carries scope, the tenant or lane of the
// handler making the call. A store with scoping enabled stores it on every
// record it writes (Entry.Scope overrides it per entry); a store without
// scoping ignores it. Scope names match ^[a-z0-9][a-z0-9-]{0,39}$.
func WithScope(ctx context.Context, scope string) context.Context {
	return context.WithValue(ctx, scopeKey{}, scope)
}

// ScopeFrom returns the scope carried by ctx, or "".
func ScopeFrom(ctx context.Context) string {
	s, _ := ctx.Value(scopeKey{}).(string)
	return s
}

// ValidScope reports whether s is a valid scope name:
// ^[a-z0-9][a-z0-9-]{0,39}$.
func ValidScope(s string) bool {
	if len(s) == 0 || len(s) > 40 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9':
		case c == '-' && i > 0:
		default:
			return false
		}
	}
	return true
}

// writeScope returns the scope to store on a write, given the entry's own
// scope and the context's. Empty means no scope.
func writeScope(ctx context.Context, entryScope string) (string, error) {
	s := entryScope
	if s == "" {
		s = ScopeFrom(ctx)
	}
	if s != "" && !ValidScope(s) {
		return "", fmt.Errorf("%w: scope %q does not match ^[a-z0-9][a-z0-9-]{0,39}$", ErrInvalidInput, s)
	}
	return s, nil
}
