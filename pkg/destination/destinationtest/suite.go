package destinationtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/oxypipe/oxypipe/internal/testutil"
	"github.com/oxypipe/oxypipe/pkg/destination/internal/core"
)

// Destination is the method set the suite exercises. destination.Destination
// and every implementation satisfy it.
type Destination interface {
	Probe(ctx context.Context) error
	Put(ctx context.Context, name string, body io.Reader) error
	Get(ctx context.Context, name string) (io.ReadCloser, error)
	List(ctx context.Context, prefix string) ([]string, error)
	String() string
	Close() error
}

// Setup describes the implementation under test.
type Setup struct {
	// Open returns a destination at a fresh location that exists and is
	// empty, distinct from every other location Open returned. Required.
	// The suite closes it.
	Open func(t *testing.T) Destination

	// OpenMissing returns a destination whose location does not exist and
	// cannot be created by Probe: a bucket that is not there, a folder below
	// a regular file. Required.
	OpenMissing func(t *testing.T) Destination

	// Secrets are credential strings that must appear neither in String()
	// nor in any error text.
	Secrets []string

	// MaxStreamAlloc, when non-zero, bounds the bytes the whole process may
	// allocate while a 20 MB body is put through a pipe, proving that Put
	// streams. Leave it zero when an in-process server that keeps objects in
	// memory shares the process. Under the race detector the figure is only
	// logged.
	MaxStreamAlloc uint64
}

// StreamSize is the size of the body the suite streams through a pipe.
const StreamSize = 20 << 20

// Timeout bounds each case of the suite.
const Timeout = 2 * time.Minute

// Run runs the conformance suite. Every case opens its own location, so
// cases run in parallel, except the allocation check, which runs first and
// alone.
func Run(t *testing.T, s Setup) {
	t.Helper()
	if s.Open == nil || s.OpenMissing == nil {
		t.Fatal("destinationtest.Setup needs Open and OpenMissing")
	}
	open := func(t *testing.T) Destination {
		t.Helper()
		d := s.Open(t)
		t.Cleanup(func() {
			if err := d.Close(); err != nil {
				t.Errorf("Close: %v", err)
			}
		})
		return d
	}

	t.Run("a 20 MB body streamed through a pipe round-trips byte for byte", func(t *testing.T) {
		if s.MaxStreamAlloc == 0 {
			t.Parallel()
		}
		ctx := testContext(t)
		d := open(t)
		sum, allocated := putStream(ctx, t, d, "big.json", StreamSize, 7)
		got := hashOf(t, d, "big.json")
		if got.size != StreamSize || got.sum != sum {
			t.Fatalf("read back %d bytes with hash %x, want %d bytes with hash %x", got.size, got.sum, StreamSize, sum)
		}
		if s.MaxStreamAlloc != 0 && !testutil.RaceEnabled && allocated > s.MaxStreamAlloc {
			t.Fatalf("putting %d bytes allocated %d bytes, want at most %d: the body is buffered", StreamSize, allocated, s.MaxStreamAlloc)
		}
		t.Logf("putting %d MB allocated %.1f MB", StreamSize>>20, float64(allocated)/(1<<20))
	})

	t.Run("probe of an existing location succeeds and leaves nothing behind", func(t *testing.T) {
		t.Parallel()
		ctx := testContext(t)
		d := open(t)
		for range 2 {
			if err := d.Probe(ctx); err != nil {
				t.Fatalf("Probe: %v", err)
			}
		}
		assertNames(ctx, t, d, "", nil)
	})

	t.Run("probe of a missing location fails with ErrLocationNotFound naming the location", func(t *testing.T) {
		t.Parallel()
		ctx := testContext(t)
		d := s.OpenMissing(t)
		defer closeQuietly(d)
		err := d.Probe(ctx)
		if !errors.Is(err, core.ErrLocationNotFound) {
			t.Fatalf("Probe = %v, want ErrLocationNotFound", err)
		}
		assertOpError(t, err, "probe", d.String(), "")
		assertNoSecrets(t, s.Secrets, err.Error())
	})

	t.Run("put then get returns the same bytes", func(t *testing.T) {
		t.Parallel()
		ctx := testContext(t)
		d := open(t)
		body := []byte(`{"results":[{"content":"<html>ü</html>","status_code":200}],"job":{"id":"7500000000000000001"}}` + "\n")
		mustPut(ctx, t, d, "7500000000000000001.json", body)
		if got := mustGet(ctx, t, d, "7500000000000000001.json"); !bytes.Equal(got, body) {
			t.Fatalf("Get = %q, want %q", got, body)
		}
		assertNames(ctx, t, d, "", []string{"7500000000000000001.json"})
	})

	t.Run("put replaces a file of the same name", func(t *testing.T) {
		t.Parallel()
		ctx := testContext(t)
		d := open(t)
		mustPut(ctx, t, d, "job.json", []byte("first, and longer than the second"))
		mustPut(ctx, t, d, "job.json", []byte("second"))
		if got := mustGet(ctx, t, d, "job.json"); string(got) != "second" {
			t.Fatalf("Get = %q, want %q", got, "second")
		}
		assertNames(ctx, t, d, "", []string{"job.json"})
	})

	t.Run("an empty body makes an empty file", func(t *testing.T) {
		t.Parallel()
		ctx := testContext(t)
		d := open(t)
		mustPut(ctx, t, d, "20260929T170412.345Z.jsonl", nil)
		if got := mustGet(ctx, t, d, "20260929T170412.345Z.jsonl"); len(got) != 0 {
			t.Fatalf("Get = %q, want empty", got)
		}
	})

	t.Run("get of a missing name fails with ErrNotFound", func(t *testing.T) {
		t.Parallel()
		ctx := testContext(t)
		d := open(t)
		rc, err := d.Get(ctx, "missing.json")
		if err == nil {
			_ = rc.Close()
		}
		if !errors.Is(err, core.ErrNotFound) {
			t.Fatalf("Get = %v, want ErrNotFound", err)
		}
		assertOpError(t, err, "get", d.String(), "missing.json")
	})

	t.Run("names with spaces, unicode and punctuation round-trip", func(t *testing.T) {
		t.Parallel()
		ctx := testContext(t)
		d := open(t)
		names := []string{"a b.json", "x+y=z&w.json", "ünï cødé.json", "per%cent.json", "star*q.json", "col:on.json", "~tilde.json"}
		for i, name := range names {
			mustPut(ctx, t, d, name, fmt.Appendf(nil, "body %d", i))
		}
		for i, name := range names {
			if got, want := string(mustGet(ctx, t, d, name)), fmt.Sprintf("body %d", i); got != want {
				t.Fatalf("Get(%q) = %q, want %q", name, got, want)
			}
		}
		assertNames(ctx, t, d, "", names)
	})

	t.Run("list returns the sorted names that start with a prefix", func(t *testing.T) {
		t.Parallel()
		ctx := testContext(t)
		d := open(t)
		for _, name := range []string{"b.json", "20260102T000000.000Z.jsonl", "a2.json", "20260101T000000.000Z.jsonl", "a1.json"} {
			mustPut(ctx, t, d, name, []byte(name))
		}
		assertNames(ctx, t, d, "a", []string{"a1.json", "a2.json"})
		assertNames(ctx, t, d, "2026", []string{"20260101T000000.000Z.jsonl", "20260102T000000.000Z.jsonl"})
		assertNames(ctx, t, d, "zzz", nil)
		assertNames(ctx, t, d, "", []string{"20260101T000000.000Z.jsonl", "20260102T000000.000Z.jsonl", "a1.json", "a2.json", "b.json"})
	})

	t.Run("two locations do not see each other's files", func(t *testing.T) {
		t.Parallel()
		ctx := testContext(t)
		d1, d2 := open(t), open(t)
		if d1.String() == d2.String() {
			t.Fatalf("Open returned the same location twice: %s", d1)
		}
		mustPut(ctx, t, d1, "only-here.json", []byte("1"))
		assertNames(ctx, t, d2, "", nil)
		if _, err := d2.Get(ctx, "only-here.json"); !errors.Is(err, core.ErrNotFound) {
			t.Fatalf("Get from the other location = %v, want ErrNotFound", err)
		}
	})

	t.Run("invalid names are refused by put and get and write nothing", func(t *testing.T) {
		t.Parallel()
		ctx := testContext(t)
		d := open(t)
		if err := d.Probe(ctx); err != nil {
			t.Fatalf("Probe: %v", err)
		}
		bad := []string{"", ".", "..", "../escape.json", "a/b.json", "/abs.json", `a\b.json`, ".hidden.json",
			"nul\x00.json", "tab\t.json", "new\nline.json", strings.Repeat("n", core.MaxNameLen+1), "bad\xffutf8.json"}
		for _, name := range bad {
			err := d.Put(ctx, name, strings.NewReader("x"))
			if !errors.Is(err, core.ErrInvalidName) {
				t.Fatalf("Put(%q) = %v, want ErrInvalidName", name, err)
			}
			assertOpError(t, err, "put", d.String(), "")
			assertNoSecrets(t, s.Secrets, err.Error())
			rc, err := d.Get(ctx, name)
			if err == nil {
				_ = rc.Close()
			}
			if !errors.Is(err, core.ErrInvalidName) {
				t.Fatalf("Get(%q) = %v, want ErrInvalidName", name, err)
			}
		}
		assertNames(ctx, t, d, "", nil)
	})

	t.Run("concurrent puts of distinct names all land", func(t *testing.T) {
		t.Parallel()
		ctx := testContext(t)
		d := open(t)
		const n = 16
		bodies := make([][]byte, n)
		names := make([]string, n)
		for i := range n {
			names[i] = fmt.Sprintf("75000000000000000%02d.json", i)
			bodies[i] = randomBytes(uint64(i), 64<<10)
		}
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() { errs[i] = d.Put(ctx, names[i], bytes.NewReader(bodies[i])) })
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			t.Fatalf("concurrent Put: %v", err)
		}
		for i := range n {
			if got := mustGet(ctx, t, d, names[i]); !bytes.Equal(got, bodies[i]) {
				t.Fatalf("Get(%q) returned %d bytes that differ from the %d put", names[i], len(got), len(bodies[i]))
			}
		}
		assertNames(ctx, t, d, "", names)
	})

	t.Run("concurrent puts of one name leave exactly one whole body", func(t *testing.T) {
		t.Parallel()
		ctx := testContext(t)
		d := open(t)
		const n = 8
		bodies := make([][]byte, n)
		for i := range n {
			bodies[i] = randomBytes(100+uint64(i), 256<<10)
		}
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() { errs[i] = d.Put(ctx, "same.json", bytes.NewReader(bodies[i])) })
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			t.Fatalf("concurrent Put: %v", err)
		}
		got := mustGet(ctx, t, d, "same.json")
		if !slices.ContainsFunc(bodies, func(b []byte) bool { return bytes.Equal(b, got) }) {
			t.Fatalf("Get returned %d bytes that match none of the bodies put: a mix of writes", len(got))
		}
		assertNames(ctx, t, d, "", []string{"same.json"})
	})

	t.Run("a put with a cancelled context writes nothing", func(t *testing.T) {
		t.Parallel()
		ctx := testContext(t)
		d := open(t)
		cancelled, cancel := context.WithCancel(ctx)
		cancel()
		err := d.Put(cancelled, "never.json", strings.NewReader("x"))
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("Put = %v, want context.Canceled", err)
		}
		assertOpError(t, err, "put", d.String(), "never.json")
		assertMissing(ctx, t, d, "never.json")
	})

	for _, after := range []int64{1 << 10, 12 << 20} {
		t.Run(fmt.Sprintf("cancelling after %s of the body fails the put and leaves no file", size(after)), func(t *testing.T) {
			t.Parallel()
			ctx := testContext(t)
			d := open(t)
			putCtx, cancel := context.WithCancel(ctx)
			defer cancel()
			body := &endlessReader{rng: rand.NewChaCha8(seed(3)), at: after, do: cancel}
			err := d.Put(putCtx, "cancelled.json", body)
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("Put = %v, want context.Canceled", err)
			}
			assertMissing(ctx, t, d, "cancelled.json")
		})

		t.Run(fmt.Sprintf("a body failing after %s leaves the previous file as it was", size(after)), func(t *testing.T) {
			t.Parallel()
			ctx := testContext(t)
			d := open(t)
			previous := []byte(`{"previous":true}`)
			mustPut(ctx, t, d, "kept.json", previous)
			errBody := errors.New("upstream connection reset")
			body := &endlessReader{rng: rand.NewChaCha8(seed(4)), at: after, fail: errBody}
			err := d.Put(ctx, "kept.json", body)
			if !errors.Is(err, errBody) {
				t.Fatalf("Put = %v, want the body's error", err)
			}
			assertOpError(t, err, "put", d.String(), "kept.json")
			if got := mustGet(ctx, t, d, "kept.json"); !bytes.Equal(got, previous) {
				t.Fatalf("after a failed Put, Get = %d bytes %.40q, want the previous %q", len(got), got, previous)
			}
			body = &endlessReader{rng: rand.NewChaCha8(seed(5)), at: after, fail: errBody}
			if err := d.Put(ctx, "new.json", body); !errors.Is(err, errBody) {
				t.Fatalf("Put = %v, want the body's error", err)
			}
			assertMissing(ctx, t, d, "new.json")
			assertNames(ctx, t, d, "", []string{"kept.json"})
		})
	}

	t.Run("string names the location and carries no credentials", func(t *testing.T) {
		t.Parallel()
		d := open(t)
		loc := d.String()
		if loc == "" || loc != d.String() {
			t.Fatalf("String() = %q, want a stable, non-empty location", loc)
		}
		assertNoSecrets(t, s.Secrets, loc)
		if strings.Contains(loc, "@") && !strings.Contains(loc, "redacted:redacted@") {
			t.Fatalf("String() = %q holds userinfo", loc)
		}
	})
}

func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), Timeout)
	t.Cleanup(cancel)
	return ctx
}

func closeQuietly(d Destination) { _ = d.Close() }
