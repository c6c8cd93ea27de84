package cli

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// outcome is a command run in-process.
type outcome struct {
	code           int
	stdout, stderr string
}

// run runs oxy in-process with args and the environment vars (KEY=VALUE).
func run(t *testing.T, vars []string, args ...string) outcome {
	t.Helper()
	return runCtx(t, context.Background(), "", vars, args...)
}

func runCtx(t *testing.T, ctx context.Context, stdin string, vars []string, args ...string) outcome {
	t.Helper()
	environ := map[string]string{}
	for _, kv := range vars {
		k, v, _ := strings.Cut(kv, "=")
		environ[k] = v
	}
	var stdout, stderr bytes.Buffer
	code := Run(ctx, args, Env{
		Stdin:  strings.NewReader(stdin),
		Stdout: &stdout,
		Stderr: &stderr,
		Getenv: func(k string) string { return environ[k] },
	})
	return outcome{code: code, stdout: stdout.String(), stderr: stderr.String()}
}
