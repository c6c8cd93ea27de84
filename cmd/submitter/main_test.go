package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/oxypipe/oxypipe/internal/worker"
	"github.com/oxypipe/oxypipe/internal/workerspec/submitterspec"
)

// Nothing listens on port 1: every case must be decided before connecting.
var offline = []string{"--nats-url", "nats://127.0.0.1:1", "--http-addr", "127.0.0.1:0"}

func TestBadSettingsExitTwoBeforeConnecting(t *testing.T) {
	for _, tc := range []struct {
		name, user, password string
		args                 []string
		want                 string
	}{
		{"no credentials", "", "", nil, "submitter: the API credentials are missing: set OXY_WSA_USERNAME and OXY_WSA_PASSWORD"},
		{"no password", "u", "", nil, "the API credentials are missing"},
		{"password only", "", "p", nil, "the API credentials are missing"},
		{"batch too small", "u", "p", []string{"--max-batch", "1"}, "--max-batch 1 is outside 2..5000"},
		{"zero rate", "u", "p", []string{"--rate-limit", "0"}, "must be positive, or -1 for unlimited"},
		{"unknown flag", "u", "p", []string{"--bogus"}, "unknown flag: --bogus"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("OXY_WSA_USERNAME", tc.user)
			t.Setenv("OXY_WSA_PASSWORD", tc.password)
			var out bytes.Buffer
			if code := worker.Run(context.Background(), append(offline, tc.args...), submitterspec.Spec(nil), &out); code != 2 {
				t.Fatalf("exit %d, want 2; stderr:\n%s", code, out.String())
			}
			if !strings.Contains(out.String(), tc.want) {
				t.Fatalf("stderr = %q, want it to contain %q", out.String(), tc.want)
			}
		})
	}
}

func TestValidSettingsGetPastTheChecks(t *testing.T) {
	t.Setenv("OXY_WSA_USERNAME", "u")
	t.Setenv("OXY_WSA_PASSWORD", "p")
	var out bytes.Buffer
	// --no-batch makes --max-batch irrelevant; the run then fails to connect
	// (exit 1), which proves the checks passed.
	if code := worker.Run(context.Background(), append(offline, "--no-batch", "--max-batch", "1"), submitterspec.Spec(nil), &out); code != 1 {
		t.Fatalf("exit %d, want 1 (connection refused); stderr:\n%s", code, out.String())
	}
	if !strings.Contains(out.String(), "connect") {
		t.Fatalf("stderr = %q, want the connection error", out.String())
	}
}

func TestMalformedEnvironmentValuesAreReported(t *testing.T) {
	t.Setenv("OXY_WSA_USERNAME", "u")
	t.Setenv("OXY_WSA_PASSWORD", "p")
	t.Setenv("OXY_RATE_LIMIT", "fast")
	t.Setenv("OXY_NO_BATCH", "maybe")
	var out bytes.Buffer
	if code := worker.Run(context.Background(), offline, submitterspec.Spec(nil), &out); code != 2 {
		t.Fatalf("exit %d, want 2; stderr:\n%s", code, out.String())
	}
	if !strings.Contains(out.String(), `OXY_RATE_LIMIT="fast"`) || !strings.Contains(out.String(), `OXY_NO_BATCH="maybe"`) {
		t.Fatalf("stderr = %q, want both malformed values named", out.String())
	}
}

func TestHelpDocumentsEverySetting(t *testing.T) {
	var out bytes.Buffer
	if code := worker.Run(context.Background(), []string{"--help"}, submitterspec.Spec(nil), &out); code != 0 {
		t.Fatalf("exit %d, want 0", code)
	}
	for _, want := range []string{"--api-url", "OXY_API_URL", "OXY_WSA_USERNAME", "OXY_WSA_PASSWORD", "--rate-limit",
		"OXY_RATE_LIMIT", "--render-rate-limit", "--no-batch", "--max-batch", "--retry-unknown-once", "OXY_RETRY_UNKNOWN_ONCE", "--nats-url", "OXY_HTTP_ADDR"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("--help does not mention %s", want)
		}
	}
}
