package s3dest_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"

	"github.com/oxypipe/oxypipe/pkg/destination/destinationtest"
	"github.com/oxypipe/oxypipe/pkg/destination/internal/core"
	"github.com/oxypipe/oxypipe/pkg/destination/s3dest"
)

const (
	bucket    = "oxypipe"
	accessKey = "AKIAOXYPIPETEST"
	secretKey = "s3cr3t-oxypipe-test-key"
)

// fakeS3 is an S3-protocol server in this process, with one bucket.
type fakeS3 struct {
	url     string
	backend *s3mem.Backend
	prefix  atomic.Int64
}

func startFakeS3(t testing.TB) *fakeS3 {
	t.Helper()
	backend := s3mem.New()
	if err := backend.CreateBucket(bucket); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(gofakes3.New(backend).Server())
	t.Cleanup(srv.Close)
	return &fakeS3{url: srv.URL, backend: backend}
}

func (f *fakeS3) config() s3dest.Config {
	return s3dest.Config{
		Region:       "us-east-1",
		Endpoint:     f.url,
		UsePathStyle: true,
		Credentials:  credentials.NewStaticCredentialsProvider(accessKey, secretKey, ""),
	}
}

func (f *fakeS3) open(t testing.TB, bucketName, prefix string) *s3dest.Store {
	t.Helper()
	s, err := s3dest.New(t.Context(), bucketName, prefix, f.config())
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return s
}

func TestConformance(t *testing.T) {
	t.Parallel()
	f := startFakeS3(t)
	destinationtest.Run(t, destinationtest.Setup{
		Open: func(t *testing.T) destinationtest.Destination {
			// Prefixes such as t1 and t10 also check that a prefix does not
			// match its siblings.
			return f.open(t, bucket, fmt.Sprintf("runs/t%d", f.prefix.Add(1)))
		},
		OpenMissing: func(t *testing.T) destinationtest.Destination {
			return f.open(t, "no-such-bucket", "results")
		},
		Secrets: []string{secretKey},
	})
}

func TestStore(t *testing.T) {
	t.Parallel()
	f := startFakeS3(t)

	t.Run("keys are the prefix and the name", func(t *testing.T) {
		t.Parallel()
		s := f.open(t, bucket, "/keys//nested/")
		if err := s.Put(t.Context(), "7500000000000000001.json", strings.NewReader("{}")); err != nil {
			t.Fatal(err)
		}
		obj, err := f.backend.HeadObject(bucket, "keys/nested/7500000000000000001.json")
		if err != nil {
			t.Fatalf("object not at the expected key: %v", err)
		}
		if got := obj.Metadata["Content-Type"]; got != "application/json" {
			t.Fatalf("Content-Type = %q, want application/json", got)
		}
	})

	t.Run("list leaves out deeper keys", func(t *testing.T) {
		t.Parallel()
		outer, inner := f.open(t, bucket, "deep"), f.open(t, bucket, "deep/inner")
		if err := inner.Put(t.Context(), "x.json", strings.NewReader("1")); err != nil {
			t.Fatal(err)
		}
		if err := outer.Put(t.Context(), "y.json", strings.NewReader("2")); err != nil {
			t.Fatal(err)
		}
		names, err := outer.List(t.Context(), "")
		if err != nil || len(names) != 1 || names[0] != "y.json" {
			t.Fatalf("List = %q, %v; want [y.json]", names, err)
		}
	})

	t.Run("a refused credential is ErrAccessDenied", func(t *testing.T) {
		t.Parallel()
		// gofakes3 checks no signatures, so a server that refuses everything
		// stands in for S3 refusing a key.
		srv := httptest.NewServer(denyAll{})
		t.Cleanup(srv.Close)
		cfg := f.config()
		cfg.Endpoint = srv.URL
		s, err := s3dest.New(t.Context(), bucket, "", cfg)
		if err != nil {
			t.Fatal(err)
		}
		err = s.Probe(t.Context())
		if !errors.Is(err, core.ErrAccessDenied) {
			t.Fatalf("Probe = %v, want ErrAccessDenied", err)
		}
		if strings.Contains(err.Error(), secretKey) {
			t.Fatalf("error %q leaks the secret key", err)
		}
	})
}

// Not parallel: t.Setenv forbids it.
func TestEnvironment(t *testing.T) {
	f := startFakeS3(t)
	isolate := func(t *testing.T) {
		t.Setenv("AWS_CONFIG_FILE", os.DevNull)
		t.Setenv("AWS_SHARED_CREDENTIALS_FILE", os.DevNull)
		for _, name := range []string{"AWS_PROFILE", "AWS_ENDPOINT_URL", "AWS_S3_FORCE_PATH_STYLE", "AWS_REQUEST_CHECKSUM_CALCULATION"} {
			t.Setenv(name, "")
		}
	}

	t.Run("AWS_ENDPOINT_URL_S3 and AWS_* credentials reach an S3-compatible store, path-style by default", func(t *testing.T) {
		isolate(t)
		t.Setenv("AWS_ENDPOINT_URL_S3", f.url)
		t.Setenv("AWS_ACCESS_KEY_ID", accessKey)
		t.Setenv("AWS_SECRET_ACCESS_KEY", secretKey)
		t.Setenv("AWS_REGION", "eu-central-1")
		t.Setenv("AWS_REQUEST_CHECKSUM_CALCULATION", "when_required")
		s, err := s3dest.New(t.Context(), bucket, "env", s3dest.Config{})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Probe(t.Context()); err != nil {
			t.Fatalf("Probe: %v", err)
		}
		if err := s.Put(t.Context(), "e.json", strings.NewReader("env")); err != nil {
			t.Fatalf("Put: %v", err)
		}
		if _, err := f.backend.HeadObject(bucket, "env/e.json"); err != nil {
			t.Fatalf("object missing: %v", err)
		}
	})

	t.Run("a malformed AWS_S3_FORCE_PATH_STYLE fails at open", func(t *testing.T) {
		isolate(t)
		t.Setenv("AWS_S3_FORCE_PATH_STYLE", "sometimes")
		_, err := s3dest.New(t.Context(), bucket, "", s3dest.Config{Region: "us-east-1", Credentials: aws.AnonymousCredentials{}})
		if err == nil || !strings.Contains(err.Error(), "AWS_S3_FORCE_PATH_STYLE") {
			t.Fatalf("New = %v, want an error about AWS_S3_FORCE_PATH_STYLE", err)
		}
	})
}

// denyAll answers every request the way S3 answers a refused key.
type denyAll struct{}

func (denyAll) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/xml")
	w.WriteHeader(http.StatusForbidden)
	_, _ = io.WriteString(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>InvalidAccessKeyId</Code><Message>The AWS Access Key Id you provided does not exist in our records.</Message></Error>`)
}

// Not parallel: it measures the process's allocations. The sink discards
// bodies, so what is allocated is the client's.
func TestPutStreamsLongBodies(t *testing.T) {
	sink := httptest.NewServer(sinkS3{})
	t.Cleanup(sink.Close)
	cfg := startFakeS3(t).config()
	cfg.Endpoint = sink.URL
	s, err := s3dest.New(t.Context(), bucket, "", cfg)
	if err != nil {
		t.Fatal(err)
	}
	const size = 100 << 20
	const limit = 64 << 20 // (Concurrency+2) parts of 5 MiB, with room for the race detector
	chunk := bytes.Repeat([]byte("0123456789abcdef"), 4<<10)
	pr, pw := io.Pipe()
	go func() {
		for left := size; left > 0; left -= len(chunk) {
			if _, err := pw.Write(chunk[:min(len(chunk), left)]); err != nil {
				return
			}
		}
		_ = pw.Close() // the reader side reports any failure
	}()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	err = s.Put(t.Context(), "big.json", pr)
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	if got := after.TotalAlloc - before.TotalAlloc; got > limit {
		t.Fatalf("a %d MiB Put allocated %d MiB, want at most %d MiB: the body is buffered", size>>20, got>>20, limit>>20)
	}
}
