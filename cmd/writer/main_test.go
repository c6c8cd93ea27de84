package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/oxypipe/oxypipe/internal/worker"
	"github.com/oxypipe/oxypipe/internal/workerspec/writerspec"
)

func env(vars map[string]string) func(string) string {
	return func(k string) string { return vars[k] }
}

// spec is the binary's spec reading getenv.
func spec(getenv func(string) string) worker.Spec {
	s := writerspec.Spec(nil)
	s.Getenv = getenv
	return s
}

func TestHelpDocumentsEverySetting(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	if code := worker.Run(t.Context(), []string{"--help"}, spec(env(map[string]string{"OXY_API_URL": "http://127.0.0.1:1"})), &out); code != 0 {
		t.Fatalf("exit %d, want 0", code)
	}
	for _, want := range []string{"--api-url", "OXY_API_URL", "http://127.0.0.1:1", "OXY_WSA_USERNAME", "OXY_WSA_PASSWORD",
		"AWS_ACCESS_KEY_ID", "GOOGLE_APPLICATION_CREDENTIALS", "AZURE_STORAGE_ACCOUNT", "--nats-url", "OXY_HTTP_ADDR"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("--help does not mention %s:\n%s", want, out.String())
		}
	}
}

func TestMissingCredentialsExitTwoBeforeConnecting(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	// Nothing listens on port 1: the check must come before the connection.
	args := []string{"--nats-url", "nats://127.0.0.1:1", "--http-addr", "127.0.0.1:0"}
	if code := worker.Run(t.Context(), args, spec(env(map[string]string{"OXY_WSA_PASSWORD": "p"})), &out); code != 2 {
		t.Fatalf("exit %d, want 2; stderr:\n%s", code, out.String())
	}
	if want := "writer: the API credentials are missing: set OXY_WSA_USERNAME and OXY_WSA_PASSWORD\n"; out.String() != want {
		t.Fatalf("stderr = %q, want %q", out.String(), want)
	}
}
