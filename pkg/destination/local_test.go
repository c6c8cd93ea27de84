package destination_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/oxypipe/oxypipe/internal/testutil"
	"github.com/oxypipe/oxypipe/pkg/destination"
	"github.com/oxypipe/oxypipe/pkg/destination/destinationtest"
)

// Not parallel: the suite's allocation check must not share the process
// with other tests' allocations.
func TestLocalConformance(t *testing.T) {
	destinationtest.Run(t, destinationtest.Setup{
		Open: func(t *testing.T) destinationtest.Destination {
			return mustOpen(t, t.TempDir())
		},
		OpenMissing: func(t *testing.T) destinationtest.Destination {
			file := filepath.Join(t.TempDir(), "a-file")
			if err := os.WriteFile(file, []byte("x"), 0o600); err != nil {
				t.Fatal(err)
			}
			return mustOpen(t, filepath.Join(file, "results"))
		},
		MaxStreamAlloc: 2 << 20,
	})
}

func mustOpen(t *testing.T, location string, opts ...destination.Option) destination.Destination {
	t.Helper()
	d, err := destination.Open(t.Context(), location, opts...)
	if err != nil {
		t.Fatalf("Open(%q): %v", location, err)
	}
	return d
}

// dirEntries lists every entry of dir, hidden ones included.
func dirEntries(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

func TestLocal(t *testing.T) {
	t.Parallel()

	t.Run("open creates nothing and probe creates the folder without litter", func(t *testing.T) {
		t.Parallel()
		dir := filepath.Join(t.TempDir(), "a", "b")
		d := mustOpen(t, dir)
		if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("Open touched the folder: stat = %v", err)
		}
		if err := d.Probe(t.Context()); err != nil {
			t.Fatalf("Probe: %v", err)
		}
		if got := dirEntries(t, dir); len(got) != 0 {
			t.Fatalf("folder after Probe holds %q, want nothing", got)
		}
	})

	t.Run("put creates a missing folder and writes the file with mode 0644", func(t *testing.T) {
		t.Parallel()
		dir := filepath.Join(t.TempDir(), "fresh")
		d := mustOpen(t, dir)
		if err := d.Put(t.Context(), "1.json", strings.NewReader("{}")); err != nil {
			t.Fatalf("Put: %v", err)
		}
		info, err := os.Stat(filepath.Join(dir, "1.json"))
		if err != nil {
			t.Fatal(err)
		}
		if info.Mode().Perm() != 0o644 {
			t.Fatalf("mode = %v, want 0644", info.Mode().Perm())
		}
	})

	t.Run("failed and cancelled puts leave no temporary file", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		d := mustOpen(t, dir)
		boom := errors.New("boom")
		if err := d.Put(t.Context(), "x.json", io.MultiReader(strings.NewReader("part"), errReader{boom})); !errors.Is(err, boom) {
			t.Fatalf("Put = %v, want boom", err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		if err := d.Put(ctx, "y.json", strings.NewReader("x")); !errors.Is(err, context.Canceled) {
			t.Fatalf("Put = %v, want context.Canceled", err)
		}
		if got := dirEntries(t, dir); len(got) != 0 {
			t.Fatalf("folder holds %q, want nothing", got)
		}
	})

	t.Run("a traversal name writes nothing outside the folder", func(t *testing.T) {
		t.Parallel()
		parent := t.TempDir()
		d := mustOpen(t, filepath.Join(parent, "inner"))
		for _, name := range []string{"../escape.json", "..", "sub/x.json"} {
			if err := d.Put(t.Context(), name, strings.NewReader("x")); !errors.Is(err, destination.ErrInvalidName) {
				t.Fatalf("Put(%q) = %v, want ErrInvalidName", name, err)
			}
		}
		if got := dirEntries(t, parent); len(got) != 0 {
			t.Fatalf("parent holds %q, want nothing", got)
		}
	})

	t.Run("list leaves out hidden files, folders and temporary files", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		for _, name := range []string{".7500.json.123.tmp", ".hidden", "real.json"} {
			if err := os.WriteFile(filepath.Join(dir, name), []byte("x"), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.Mkdir(filepath.Join(dir, "sub.json"), 0o700); err != nil {
			t.Fatal(err)
		}
		d := mustOpen(t, dir)
		got, err := d.List(t.Context(), "")
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 1 || got[0] != "real.json" {
			t.Fatalf("List = %q, want [real.json]", got)
		}
		if _, err := d.Get(t.Context(), "sub.json"); !errors.Is(err, destination.ErrNotFound) {
			t.Fatalf("Get of a folder = %v, want ErrNotFound", err)
		}
	})

	t.Run("list of a folder that does not exist fails with ErrLocationNotFound", func(t *testing.T) {
		t.Parallel()
		d := mustOpen(t, filepath.Join(t.TempDir(), "nope"))
		if _, err := d.List(t.Context(), ""); !errors.Is(err, destination.ErrLocationNotFound) {
			t.Fatalf("List = %v, want ErrLocationNotFound", err)
		}
	})

	t.Run("NoSync files are written all the same", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		d := mustOpen(t, dir, destination.WithLocal(destination.LocalConfig{NoSync: true, FileMode: 0o600}))
		if err := d.Put(t.Context(), "a.json", bytes.NewReader([]byte("abc"))); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(filepath.Join(dir, "a.json"))
		if err != nil || string(b) != "abc" {
			t.Fatalf("file = %q, %v; want abc", b, err)
		}
	})

	t.Run("string is the absolute folder path", func(t *testing.T) {
		t.Parallel()
		d := mustOpen(t, "results")
		want, err := filepath.Abs("results")
		if err != nil {
			t.Fatal(err)
		}
		if d.String() != want {
			t.Fatalf("String() = %q, want %q", d.String(), want)
		}
	})
}

type errReader struct{ err error }

func (r errReader) Read([]byte) (int, error) { return 0, r.err }

// A Put allocates a small, fixed amount per file, not a copy buffer: at
// thousands of results a second, a 32 KiB buffer per file was the largest
// source of garbage of a one-process run. Not parallel, so that the
// process's allocations are this test's.
func TestLocalPutAllocatesNoCopyBufferPerFile(t *testing.T) {
	if testutil.RaceEnabled {
		t.Skip("the race detector allocates on its own")
	}
	d := mustOpen(t, t.TempDir(), destination.WithLocal(destination.LocalConfig{NoSync: true}))
	body := bytes.Repeat([]byte("x"), 10<<10)
	put := func(i int) {
		if err := d.Put(t.Context(), strconv.Itoa(i)+".json", bytes.NewReader(body)); err != nil {
			t.Fatal(err)
		}
	}
	put(0) // the pool's first buffer is allocated once
	const puts = 200
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for i := 1; i <= puts; i++ {
		put(i)
	}
	runtime.ReadMemStats(&after)
	// 32 KiB per file before the pooled buffer; about 1 KiB after.
	if per := (after.TotalAlloc - before.TotalAlloc) / puts; per > 8<<10 {
		t.Fatalf("a Put of 10 KiB allocated %d bytes, want at most 8 KiB (no copy buffer per file)", per)
	}
}
