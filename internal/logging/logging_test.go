package logging_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"go.uber.org/zap"

	"github.com/oxypipe/oxypipe/internal/logging"
)

func TestCredentialsNeverReachTheLog(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	log, err := logging.New(logging.Config{Level: "debug", Output: &out})
	if err != nil {
		t.Fatal(err)
	}
	secretURL := "https://AKIA:s3cr3t@minio.local/bucket"
	log = log.With(zap.String("nats", "nats://user:pw1@broker:4222"))
	log.Info("uploading to "+secretURL,
		zap.String("url", secretURL),
		zap.ByteString("payload", []byte(`{"storage_url":"s3://K:V@h/b"}`)),
		zap.Error(fmt.Errorf("put: %w", errors.New("dial https://a:b@c failed"))),
		zap.Any("obj", map[string]string{"u": "ftp://x:y@z"}),
	)
	_ = log.Sync()
	line := out.String()
	for _, secret := range []string{"s3cr3t", "AKIA", "pw1", "K:V", "a:b@", "x:y@"} {
		if strings.Contains(line, secret) {
			t.Fatalf("%q leaked into %s", secret, line)
		}
	}
	var rec map[string]any
	if err := json.Unmarshal(out.Bytes(), &rec); err != nil {
		t.Fatalf("not one JSON line: %v: %s", err, line)
	}
	if rec["msg"] != "uploading to https://redacted:redacted@minio.local/bucket" ||
		rec["url"] != "https://redacted:redacted@minio.local/bucket" ||
		rec["nats"] != "nats://redacted:redacted@broker:4222" ||
		rec["level"] != "info" || rec["time"] == nil {
		t.Fatalf("unexpected line: %s", line)
	}
}

func TestPlainLinesAreUntouched(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	log, err := logging.New(logging.Config{Format: logging.Console, Output: &out})
	if err != nil {
		t.Fatal(err)
	}
	log.Debug("hidden")
	log.Warn("queue is slow", zap.Int("pending", 3))
	_ = log.Sync()
	got := out.String()
	if strings.Contains(got, "hidden") || !strings.Contains(got, "WARN\tqueue is slow\t{\"pending\": 3}") {
		t.Fatalf("console line = %q", got)
	}
}

func TestBadConfigIsRejected(t *testing.T) {
	t.Parallel()
	if _, err := logging.New(logging.Config{Level: "loud"}); err == nil || err.Error() != `logging: level "loud": want debug, info, warn or error` {
		t.Fatalf("level: %v", err)
	}
	if _, err := logging.New(logging.Config{Format: "xml"}); err == nil || err.Error() != `logging: format "xml": want "json" or "console"` {
		t.Fatalf("format: %v", err)
	}
}
