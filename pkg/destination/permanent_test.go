package destination_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/oxypipe/oxypipe/internal/testutil"
	"github.com/oxypipe/oxypipe/pkg/destination"
)

func TestIsPermanent(t *testing.T) {
	t.Parallel()
	pathErr := func(errno syscall.Errno) error { return &fs.PathError{Op: "write", Path: "/x/.1.json.tmp", Err: errno} }
	cases := []struct {
		err  error
		want bool
	}{
		{nil, false},
		{context.DeadlineExceeded, false},
		{errors.New("connection reset by peer"), false},
		{pathErr(syscall.EIO), false},
		{pathErr(syscall.ENOSPC), true},
		{pathErr(syscall.EDQUOT), true},
		{pathErr(syscall.EACCES), true},
		{pathErr(syscall.EPERM), true},
		{pathErr(syscall.EROFS), true},
		{&destination.Error{Op: "put", Location: "s3://b/", Name: "1.json", Err: fmt.Errorf("%w: NoSuchBucket", destination.ErrLocationNotFound)}, true},
		{fmt.Errorf("writing: %w", destination.ErrAccessDenied), true},
		{destination.ErrNoSpace, true},
		{destination.ErrInvalidName, true},
		{destination.ErrInvalidLocation, true},
		{destination.ErrUnknownScheme, true},
		{destination.ErrNotFound, false}, // a missing file to read says nothing about writing
	}
	for _, tc := range cases {
		if got := destination.IsPermanent(tc.err); got != tc.want {
			t.Errorf("IsPermanent(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}

// A full disk fails the Put with ErrNoSpace, which is permanent, and leaves
// neither the file nor its temporary file behind.
func TestLocalPutOnAFullDisk(t *testing.T) {
	t.Parallel()
	dir := testutil.SmallDisk(t, 64<<10)
	d := mustOpen(t, dir)
	if err := d.Probe(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := d.Put(t.Context(), "small.json", strings.NewReader("{}")); err != nil {
		t.Fatalf("a small Put on a free disk: %v", err)
	}
	err := d.Put(t.Context(), "big.json", bytes.NewReader(bytes.Repeat([]byte("x"), 256<<10)))
	if !errors.Is(err, destination.ErrNoSpace) || !errors.Is(err, syscall.ENOSPC) || !destination.IsPermanent(err) {
		t.Fatalf("Put on a full disk = %v, want ErrNoSpace wrapping ENOSPC, permanent", err)
	}
	var de *destination.Error
	if !errors.As(err, &de) || de.Op != "put" || de.Name != "big.json" || !strings.Contains(err.Error(), "out of space") || !strings.Contains(err.Error(), "no space left on device") {
		t.Fatalf("error %q does not name the put, the file and the cause", err)
	}
	if got := dirEntries(t, dir); len(got) != 1 || got[0] != "small.json" {
		t.Fatalf("folder holds %v after the failed Put, want only small.json", got)
	}
}

// A folder replaced by a regular file mid-run fails each Put with
// ErrLocationNotFound, which is permanent; one removed is created again.
func TestLocalPutIntoAFolderThatWentAway(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "results")
	d := mustOpen(t, dir)
	if err := d.Probe(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(dir); err != nil {
		t.Fatal(err)
	}
	if err := d.Put(t.Context(), "1.json", strings.NewReader("{}")); err != nil {
		t.Fatalf("Put into a removed folder = %v, want it created again", err)
	}
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dir, []byte("not a folder"), 0o644); err != nil {
		t.Fatal(err)
	}
	err := d.Put(t.Context(), "2.json", strings.NewReader("{}"))
	if !errors.Is(err, destination.ErrLocationNotFound) || !destination.IsPermanent(err) {
		t.Fatalf("Put into a folder replaced by a file = %v, want ErrLocationNotFound, permanent", err)
	}
}

// IsInvalid holds for exactly the failures of the request itself, and each
// of them is permanent too.
func TestIsInvalid(t *testing.T) {
	t.Parallel()
	cases := []struct {
		err  error
		want bool
	}{
		{nil, false},
		{destination.ErrInvalidName, true},
		{fmt.Errorf("open: %w", destination.ErrInvalidLocation), true},
		{&destination.Error{Op: "open", Location: "ftp://x/", Err: destination.ErrUnknownScheme}, true},
		{destination.ErrNoSpace, false},
		{destination.ErrAccessDenied, false},
		{destination.ErrLocationNotFound, false},
		{syscall.ENOSPC, false},
	}
	for _, tc := range cases {
		if got := destination.IsInvalid(tc.err); got != tc.want {
			t.Errorf("IsInvalid(%v) = %v, want %v", tc.err, got, tc.want)
		}
		if destination.IsInvalid(tc.err) && !destination.IsPermanent(tc.err) {
			t.Errorf("IsInvalid(%v) but not IsPermanent", tc.err)
		}
	}
}

func TestResultFile(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ location, want string }{
		{"", "7500000000000000001.json"},
		{"results", "results/7500000000000000001.json"},
		{"results/", "results/7500000000000000001.json"},
		{"s3://bucket/prefix", "s3://bucket/prefix/7500000000000000001.json"},
	} {
		if got := destination.ResultFile(tc.location, "7500000000000000001"); got != tc.want {
			t.Errorf("ResultFile(%q) = %q, want %q", tc.location, got, tc.want)
		}
	}
}
