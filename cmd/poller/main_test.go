package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/oxypipe/oxypipe/internal/worker"
	"github.com/oxypipe/oxypipe/internal/workerspec/pollerspec"
)

func env(vars map[string]string) func(string) string {
	return func(k string) string { return vars[k] }
}

// spec is the binary's spec reading getenv.
func spec(getenv func(string) string) worker.Spec {
	s := pollerspec.Spec(nil)
	s.Getenv = getenv
	return s
}

func TestHelpDocumentsEverySetting(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	if code := worker.Run(t.Context(), []string{"--help"}, spec(env(nil)), &out); code != 0 {
		t.Fatalf("exit %d, want 0", code)
	}
	for _, want := range []string{"--api-url", "OXY_API_URL", "OXY_WSA_USERNAME", "OXY_WSA_PASSWORD",
		"--pending-limit", "OXY_PENDING_LIMIT", "--nats-url", "NATS_URL", "OXY_HTTP_ADDR", "1h0m0s"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("--help does not mention %s:\n%s", want, out.String())
		}
	}
}

func TestBadSettingsExitTwoBeforeConnecting(t *testing.T) {
	t.Parallel()
	cases := map[string]struct {
		vars map[string]string
		args []string
		want string
	}{
		"no credentials": {nil, nil, "poller: the API credentials are missing: set OXY_WSA_USERNAME and OXY_WSA_PASSWORD\n"},
		"no password":    {map[string]string{"OXY_WSA_USERNAME": "user"}, nil, "poller: the API credentials are missing: set OXY_WSA_USERNAME and OXY_WSA_PASSWORD\n"},
		"bad pending limit in the environment": {
			map[string]string{"OXY_WSA_USERNAME": "u", "OXY_WSA_PASSWORD": "p", "OXY_PENDING_LIMIT": "soon"}, nil,
			"poller: OXY_PENDING_LIMIT=\"soon\" is not a duration\n"},
		"negative pending limit": {
			map[string]string{"OXY_WSA_USERNAME": "u", "OXY_WSA_PASSWORD": "p"}, []string{"--pending-limit", "-1s"},
			"poller: --pending-limit must not be negative, got -1s\n"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var out bytes.Buffer
			// Nothing listens on port 1: the checks must come before the connection.
			args := append([]string{"--nats-url", "nats://127.0.0.1:1", "--http-addr", "127.0.0.1:0"}, tc.args...)
			if code := worker.Run(t.Context(), args, spec(env(tc.vars)), &out); code != 2 {
				t.Fatalf("exit %d, want 2; stderr:\n%s", code, out.String())
			}
			if out.String() != tc.want {
				t.Fatalf("stderr = %q, want %q", out.String(), tc.want)
			}
		})
	}
}
