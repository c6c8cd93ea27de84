package wsa_test

import (
	"strings"
	"testing"

	"github.com/oxypipe/oxypipe/pkg/wsa"
)

func TestValidJobID(t *testing.T) {
	t.Parallel()
	for id, want := range map[string]bool{
		"7500000000000000001":   true,
		"job-1_a":               true,
		"":                      false,
		"../etc/passwd":         false,
		"7500/1":                false,
		"75 00":                 false,
		strings.Repeat("9", 64): true,
		strings.Repeat("9", 65): false,
	} {
		if got := wsa.ValidJobID(id); got != want {
			t.Errorf("ValidJobID(%q) = %v, want %v", id, got, want)
		}
	}
}
