package runlog_test

import (
	"context"
	"errors"
	"io"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"

	"github.com/oxypipe/oxypipe/pkg/destination"
	"github.com/oxypipe/oxypipe/pkg/destination/s3dest"
	"github.com/oxypipe/oxypipe/pkg/runlog"
)

const run = "20260929T170412.345Z"

func seedFill(ctx context.Context) func(io.Writer) error {
	return func(w io.Writer) error {
		_, err := runlog.Build(ctx, w, runlog.Spec{Total: 3, FinalDataType: "written"}, sliceSource(seedRecords()))
		return err
	}
}

// save opens location as the statusworker does and writes the run log of run
// there with runlog.Put: runlog opens no destination itself.
func save(ctx context.Context, location, run string, fill func(io.Writer) error, opts ...destination.Option) (string, error) {
	dst, err := destination.Open(ctx, location, opts...)
	if err != nil {
		return "", err
	}
	defer func() { _ = dst.Close() }()
	if err := runlog.Put(ctx, dst, run, fill); err != nil {
		return "", err
	}
	return runlog.Location(dst.String(), run), nil
}

func TestPutIntoADestination(t *testing.T) {
	t.Parallel()
	local := destination.WithLocal(destination.LocalConfig{NoSync: true})

	t.Run("a folder gets <run id>.jsonl, empty first and then final", func(t *testing.T) {
		t.Parallel()
		dir := filepath.Join(t.TempDir(), "logs")
		where, err := save(t.Context(), dir, run, nil, local)
		if err != nil {
			t.Fatal(err)
		}
		if where != filepath.Join(dir, "20260929T170412.345Z.jsonl") {
			t.Fatalf("location %q", where)
		}
		if got, err := os.ReadFile(where); err != nil || len(got) != 0 {
			t.Fatalf("empty log: %q, %v", got, err)
		}
		if _, err := save(t.Context(), dir, run, seedFill(t.Context()), local); err != nil {
			t.Fatal(err)
		}
		if got, err := os.ReadFile(where); err != nil || string(got) != seedLog {
			t.Fatalf("final log: %q, %v", got, err)
		}
	})

	t.Run("a failing fill leaves the previous file as it was", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		if _, err := save(t.Context(), dir, run, nil, local); err != nil {
			t.Fatal(err)
		}
		boom := errors.New("ledger unreachable")
		_, err := save(t.Context(), dir, run, func(w io.Writer) error {
			if _, err := io.WriteString(w, strings.Repeat("x", 200<<10)); err != nil {
				return err
			}
			return boom
		}, local)
		if !errors.Is(err, boom) {
			t.Fatalf("err = %v", err)
		}
		if got, err := os.ReadFile(filepath.Join(dir, runlog.FileName(run))); err != nil || len(got) != 0 {
			t.Fatalf("file after a failed save: %d bytes, %v", len(got), err)
		}
	})

	t.Run("an unwritable location fails with the destination's error", func(t *testing.T) {
		t.Parallel()
		file := filepath.Join(t.TempDir(), "plain-file")
		if err := os.WriteFile(file, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := save(t.Context(), filepath.Join(file, "logs"), run, seedFill(t.Context()), local)
		if !errors.Is(err, destination.ErrLocationNotFound) {
			t.Fatalf("err = %v", err)
		}
	})

	t.Run("the log is streamed: the store reads before the log is finished", func(t *testing.T) {
		t.Parallel()
		got := make(chan struct{})
		dst := putterFunc(func(ctx context.Context, name string, body io.Reader) error {
			buf := make([]byte, 1)
			if _, err := io.ReadFull(body, buf); err != nil {
				return err
			}
			close(got)
			_, err := io.Copy(io.Discard, body)
			return err
		})
		err := runlog.Put(t.Context(), dst, run, func(w io.Writer) error {
			if _, err := io.WriteString(w, "{}\n"); err != nil {
				return err
			}
			select { // finishing requires the store to have read already
			case <-got:
				return nil
			case <-time.After(10 * time.Second):
				return errors.New("the store read nothing while the log was being written")
			}
		})
		if err != nil {
			t.Fatal(err)
		}
	})

	t.Run("a store that stops reading early does not leave the writer blocked", func(t *testing.T) {
		t.Parallel()
		denied := errors.New("access denied")
		dst := putterFunc(func(context.Context, string, io.Reader) error { return denied })
		err := runlog.Put(t.Context(), dst, run, func(w io.Writer) error {
			for {
				if _, err := io.WriteString(w, "line\n"); err != nil {
					return err
				}
			}
		})
		if !errors.Is(err, denied) {
			t.Fatalf("err = %v", err)
		}
	})

	t.Run("an S3 location gets the same file", func(t *testing.T) {
		t.Parallel()
		backend := s3mem.New()
		if err := backend.CreateBucket("logs"); err != nil {
			t.Fatal(err)
		}
		srv := httptest.NewServer(gofakes3.New(backend).Server())
		t.Cleanup(srv.Close)
		s3 := destination.WithS3(s3dest.Config{
			Region: "us-east-1", Endpoint: srv.URL, UsePathStyle: true,
			Credentials: credentials.NewStaticCredentialsProvider("AKIATEST", "secret-test-key", ""),
		})
		where, err := save(t.Context(), "s3://logs/runs", run, seedFill(t.Context()), s3)
		if err != nil {
			t.Fatal(err)
		}
		if where != "s3://logs/runs/20260929T170412.345Z.jsonl" {
			t.Fatalf("location %q", where)
		}
		dst, err := destination.Open(t.Context(), "s3://logs/runs", s3)
		if err != nil {
			t.Fatal(err)
		}
		rc, err := dst.Get(t.Context(), runlog.FileName(run))
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = rc.Close() }()
		body, err := io.ReadAll(rc)
		if err != nil || string(body) != seedLog {
			t.Fatalf("%q, %v", body, err)
		}
	})
}

type putterFunc func(ctx context.Context, name string, body io.Reader) error

func (f putterFunc) Put(ctx context.Context, name string, body io.Reader) error {
	return f(ctx, name, body)
}
