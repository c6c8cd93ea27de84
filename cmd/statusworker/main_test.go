package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/oxypipe/oxypipe/internal/worker"
	"github.com/oxypipe/oxypipe/internal/workerspec/statusworkerspec"
)

func env(vars map[string]string) func(string) string {
	return func(k string) string { return vars[k] }
}

// spec is the binary's spec reading getenv.
func spec(getenv func(string) string) worker.Spec {
	s := statusworkerspec.Spec(nil)
	s.Getenv = getenv
	return s
}

func TestHelpDocumentsEverySetting(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	if code := worker.Run(t.Context(), []string{"--help"}, spec(env(map[string]string{"OXY_MONGODB_DATABASE": "ledgerdb"})), &out); code != 0 {
		t.Fatalf("exit %d, want 0", code)
	}
	for _, want := range []string{"MONGODB_URI", "--mongodb-database", "OXY_MONGODB_DATABASE", `"ledgerdb"`, "--ledger-ttl",
		"after the run finished", "--run-retention", "OXY_RUN_RETENTION", "--recheck-interval", "--batch-size", "exactly one replica", "GET /runs", "--nats-url", "OXY_HTTP_ADDR"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("--help does not mention %s:\n%s", want, out.String())
		}
	}
}

func TestBadSettingsExitTwoBeforeConnecting(t *testing.T) {
	t.Parallel()
	// Nothing listens on port 1: the checks must come before the connection.
	base := []string{"--nats-url", "nats://127.0.0.1:1", "--http-addr", "127.0.0.1:0"}
	tests := []struct {
		name string
		args []string
		env  map[string]string
		want string
	}{
		{"an unparsable duration in the environment", nil, map[string]string{"OXY_RECHECK_INTERVAL": "soon"}, `OXY_RECHECK_INTERVAL="soon" is not a duration`},
		{"a TTL that is not whole seconds", []string{"--ledger-ttl", "1500ms"}, nil, "--ledger-ttl must be a positive whole number of seconds"},
		{"a batch size of zero", []string{"--batch-size", "0"}, nil, "--batch-size must be at least 1"},
		{"a run retention of zero", []string{"--run-retention", "0s"}, nil, "--run-retention must be positive"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var out bytes.Buffer
			if code := worker.Run(t.Context(), append(base, tc.args...), spec(env(tc.env)), &out); code != 2 {
				t.Fatalf("exit %d, want 2; stderr:\n%s", code, out.String())
			}
			if !strings.Contains(out.String(), tc.want) {
				t.Fatalf("stderr = %q, want it to say %q", out.String(), tc.want)
			}
		})
	}
}
