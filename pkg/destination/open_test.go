package destination_test

import (
	"errors"
	"io"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
	"google.golang.org/api/option"

	"github.com/oxypipe/oxypipe/pkg/destination"
	"github.com/oxypipe/oxypipe/pkg/destination/azuredest"
	"github.com/oxypipe/oxypipe/pkg/destination/gcsdest"
	"github.com/oxypipe/oxypipe/pkg/destination/s3dest"
)

func TestOpen(t *testing.T) {
	t.Parallel()
	static := []destination.Option{
		destination.WithS3(s3dest.Config{Region: "eu-west-1", Endpoint: "http://127.0.0.1:1"}),
		destination.WithGCS(gcsdest.Config{ClientOptions: []option.ClientOption{option.WithoutAuthentication()}}),
		destination.WithAzure(azuredest.Config{UseEmulator: true}),
	}

	t.Run("each form opens the right kind of destination", func(t *testing.T) {
		t.Parallel()
		cases := []struct{ location, want string }{
			{"s3://bucket/runs/2026", "s3://bucket/runs/2026/"},
			{"S3A://bucket//runs/", "s3://bucket/runs/"},
			{"s3://bucket", "s3://bucket/"},
			{"gs://bucket/p", "gs://bucket/p/"},
			{"gcs://bucket", "gs://bucket/"},
			{"az://container/a/b", "az://container/a/b/"},
			{"azure://container", "az://container/"},
			{"file:///srv/results", "/srv/results"},
			{"file://localhost/srv/results", "/srv/results"},
			{"/srv/results/", "/srv/results"},
		}
		for _, tc := range cases {
			d, err := destination.Open(t.Context(), tc.location, static...)
			if err != nil {
				t.Fatalf("Open(%q): %v", tc.location, err)
			}
			if got := d.String(); got != tc.want {
				t.Fatalf("Open(%q).String() = %q, want %q", tc.location, got, tc.want)
			}
			if err := d.Close(); err != nil {
				t.Fatalf("Close: %v", err)
			}
		}
	})

	t.Run("bad locations fail with a clear, redacted error", func(t *testing.T) {
		t.Parallel()
		cases := []struct {
			location string
			is       error
			says     string
		}{
			{"", destination.ErrInvalidLocation, "empty"},
			{"ftp://user:hunter2@host/x", destination.ErrUnknownScheme, `unknown scheme "ftp"`},
			{"memory://x", destination.ErrUnknownScheme, `unknown scheme "memory"`},
			{"s3://", destination.ErrInvalidLocation, "no bucket"},
			{"s3:///prefix", destination.ErrInvalidLocation, "no bucket"},
			{"s3://AKID:hunter2@bucket/p", destination.ErrInvalidLocation, "credentials in the URL"},
			{"az://container/p?sv=2024&sig=hunter2", destination.ErrInvalidLocation, "query"},
			{"s3://bucket/a/../b", destination.ErrInvalidLocation, `".."`},
			{"file://relative/path", destination.ErrInvalidLocation, "absolute"},
		}
		for _, tc := range cases {
			d, err := destination.Open(t.Context(), tc.location, static...)
			if err == nil {
				t.Fatalf("Open(%q) = %v, want an error", tc.location, d)
			}
			if d != nil {
				t.Fatalf("Open(%q) returned a non-nil destination with its error", tc.location)
			}
			if !errors.Is(err, tc.is) || !strings.Contains(err.Error(), tc.says) {
				t.Fatalf("Open(%q) = %v, want %v saying %q", tc.location, err, tc.is, tc.says)
			}
			var de *destination.Error
			if !errors.As(err, &de) || de.Op != "open" {
				t.Fatalf("Open(%q) = %#v, want a *destination.Error with Op open", tc.location, err)
			}
			if strings.Contains(err.Error(), "hunter2") {
				t.Fatalf("Open(%q) error %q leaks a credential", tc.location, err)
			}
		}
	})

	t.Run("an invalid configuration fails at open", func(t *testing.T) {
		t.Parallel()
		_, err := destination.Open(t.Context(), "s3://bucket", destination.WithS3(s3dest.Config{PartSize: 1 << 20, Region: "x"}))
		if !errors.Is(err, destination.ErrInvalidLocation) || !strings.Contains(err.Error(), "part size") {
			t.Fatalf("Open = %v, want an invalid part size error", err)
		}
	})
}

func TestSplit(t *testing.T) {
	t.Parallel()
	cases := []struct{ in, folder, name string }{
		{"logs/20260929T170412.345Z.jsonl", "logs/", "20260929T170412.345Z.jsonl"},
		{"20260929T170412.345Z.jsonl", ".", "20260929T170412.345Z.jsonl"},
		{"/var/logs/run.jsonl", "/var/logs/", "run.jsonl"},
		{"s3://bucket/logs/run.jsonl", "s3://bucket/logs", "run.jsonl"},
		{"gs://bucket/run.jsonl", "gs://bucket", "run.jsonl"},
		{"file:///run.jsonl", "file:///", "run.jsonl"},
		{"file:///var/run.jsonl", "file:///var", "run.jsonl"},
	}
	for _, tc := range cases {
		folder, name, err := destination.Split(tc.in)
		if err != nil || folder != tc.folder || name != tc.name {
			t.Fatalf("Split(%q) = %q, %q, %v; want %q, %q", tc.in, folder, name, err, tc.folder, tc.name)
		}
	}
	for _, bad := range []string{"s3://bucket", "s3://bucket/", "logs/", "s3://bucket/logs/", "ftp://x/y"} {
		if _, _, err := destination.Split(bad); err == nil {
			t.Fatalf("Split(%q) succeeded, want an error", bad)
		}
	}
}

func TestSplitThenOpenReadsTheFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	d := mustOpen(t, dir)
	if err := d.Put(t.Context(), "run.jsonl", strings.NewReader("{}\n")); err != nil {
		t.Fatal(err)
	}
	folder, name, err := destination.Split(dir + "/run.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	rc, err := mustOpen(t, folder).Get(t.Context(), name)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = rc.Close() }()
	b, err := io.ReadAll(rc)
	if err != nil || string(b) != "{}\n" {
		t.Fatalf("read %q, %v; want the file's content", b, err)
	}
}

func TestOpenS3RoundTrip(t *testing.T) {
	t.Parallel()
	backend := s3mem.New()
	if err := backend.CreateBucket("oxypipe"); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(gofakes3.New(backend).Server())
	t.Cleanup(srv.Close)
	d := mustOpen(t, "s3://oxypipe/results", destination.WithS3(s3dest.Config{
		Region:      "us-east-1",
		Endpoint:    srv.URL,
		Credentials: credentials.NewStaticCredentialsProvider("AKID", "SECRET", ""),
	}))
	if err := d.Probe(t.Context()); err != nil {
		t.Fatalf("Probe: %v", err)
	}
	if err := d.Put(t.Context(), "1.json", strings.NewReader("{}")); err != nil {
		t.Fatalf("Put: %v", err)
	}
	if _, err := backend.HeadObject("oxypipe", "results/1.json"); err != nil {
		t.Fatalf("the object is not at results/1.json: %v", err)
	}
	missing := mustOpen(t, "s3://nope/results", destination.WithS3(s3dest.Config{
		Region:      "us-east-1",
		Endpoint:    srv.URL,
		Credentials: credentials.NewStaticCredentialsProvider("AKID", "SECRET", ""),
	}))
	if err := missing.Probe(t.Context()); !errors.Is(err, destination.ErrLocationNotFound) {
		t.Fatalf("Probe of a missing bucket = %v, want ErrLocationNotFound", err)
	}
}
