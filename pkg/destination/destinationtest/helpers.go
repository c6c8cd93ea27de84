package destinationtest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/oxypipe/oxypipe/pkg/destination/internal/core"
)

func mustPut(ctx context.Context, t *testing.T, d Destination, name string, body []byte) {
	t.Helper()
	if err := d.Put(ctx, name, bytes.NewReader(body)); err != nil {
		t.Fatalf("Put(%q): %v", name, err)
	}
}

func mustGet(ctx context.Context, t *testing.T, d Destination, name string) []byte {
	t.Helper()
	rc, err := d.Get(ctx, name)
	if err != nil {
		t.Fatalf("Get(%q): %v", name, err)
	}
	defer closeReader(t, rc)
	b, err := io.ReadAll(rc)
	if err != nil {
		t.Fatalf("reading %q: %v", name, err)
	}
	return b
}

func closeReader(t *testing.T, rc io.Closer) {
	t.Helper()
	if err := rc.Close(); err != nil {
		t.Errorf("closing a reader: %v", err)
	}
}

func assertMissing(ctx context.Context, t *testing.T, d Destination, name string) {
	t.Helper()
	rc, err := d.Get(ctx, name)
	if err == nil {
		b, _ := io.ReadAll(rc) // only for the message
		_ = rc.Close()
		t.Fatalf("Get(%q) found %d bytes, want no file", name, len(b))
	}
	if !errors.Is(err, core.ErrNotFound) {
		t.Fatalf("Get(%q) = %v, want ErrNotFound", name, err)
	}
}

func assertNames(ctx context.Context, t *testing.T, d Destination, prefix string, want []string) {
	t.Helper()
	got, err := d.List(ctx, prefix)
	if err != nil {
		t.Fatalf("List(%q): %v", prefix, err)
	}
	want = slices.Sorted(slices.Values(want))
	if !slices.Equal(got, want) {
		t.Fatalf("List(%q) = %q, want %q", prefix, got, want)
	}
}

// assertOpError checks that err is an *Error for op, naming location and,
// when given, name.
func assertOpError(t *testing.T, err error, op, location, name string) {
	t.Helper()
	var de *core.Error
	if !errors.As(err, &de) {
		t.Fatalf("error %v (%T) is not a *destination.Error", err, err)
	}
	if de.Op != op || de.Location != location {
		t.Fatalf("error has Op %q Location %q, want %q %q", de.Op, de.Location, op, location)
	}
	if name != "" && de.Name != name {
		t.Fatalf("error has Name %q, want %q", de.Name, name)
	}
	if msg := err.Error(); !strings.Contains(msg, location) || !strings.Contains(msg, op) {
		t.Fatalf("error text %q does not name the location %q and operation %q", msg, location, op)
	}
}

func assertNoSecrets(t *testing.T, secrets []string, text string) {
	t.Helper()
	for _, s := range secrets {
		if s != "" && strings.Contains(text, s) {
			t.Fatalf("%q contains a credential", text)
		}
	}
}

type digest struct {
	size int64
	sum  [sha256.Size]byte
}

func hashOf(t *testing.T, d Destination, name string) digest {
	t.Helper()
	ctx := testContext(t)
	rc, err := d.Get(ctx, name)
	if err != nil {
		t.Fatalf("Get(%q): %v", name, err)
	}
	defer closeReader(t, rc)
	h := sha256.New()
	n, err := io.Copy(h, rc)
	if err != nil {
		t.Fatalf("reading %q: %v", name, err)
	}
	var out digest
	out.size = n
	copy(out.sum[:], h.Sum(nil))
	return out
}

// putStream puts size pseudo-random bytes through an io.Pipe, so Put sees a
// reader that cannot seek and whose length it cannot know. It returns the
// body's hash and the bytes the process allocated during the Put.
func putStream(ctx context.Context, t *testing.T, d Destination, name string, size int64, seedValue uint64) ([sha256.Size]byte, uint64) {
	t.Helper()
	pr, pw := io.Pipe()
	h := sha256.New()
	produced := make(chan error, 1)
	// Allocate before measuring: the generator and its buffer are the test's.
	rng := rand.NewChaCha8(seed(seedValue))
	buf := make([]byte, 64<<10)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	go func() {
		for left := size; left > 0; {
			chunk := buf[:min(int64(len(buf)), left)]
			_, _ = rng.Read(chunk) // ChaCha8.Read never fails
			h.Write(chunk)
			if _, err := pw.Write(chunk); err != nil {
				produced <- err
				return
			}
			left -= int64(len(chunk))
		}
		produced <- pw.Close()
	}()
	err := d.Put(ctx, name, pr)
	runtime.ReadMemStats(&after)
	_ = pr.CloseWithError(errors.New("put returned")) // unblocks the producer if Put stopped early
	if err != nil {
		t.Fatalf("Put(%q) of a %d-byte stream: %v", name, size, err)
	}
	if err := <-produced; err != nil {
		t.Fatalf("producing the stream: %v", err)
	}
	var sum [sha256.Size]byte
	copy(sum[:], h.Sum(nil))
	return sum, after.TotalAlloc - before.TotalAlloc
}

// endlessReader yields pseudo-random bytes forever. After at bytes it calls
// do (once) and, if fail is set, fails every later Read with it.
type endlessReader struct {
	rng  *rand.ChaCha8
	at   int64
	read int64
	do   func()
	fail error
}

func (r *endlessReader) Read(p []byte) (int, error) {
	if r.read >= r.at {
		if r.do != nil {
			r.do()
			r.do = nil
		}
		if r.fail != nil {
			return 0, r.fail
		}
	}
	if r.read < r.at && int64(len(p)) > r.at-r.read {
		p = p[:r.at-r.read]
	}
	n, _ := r.rng.Read(p) // ChaCha8.Read never fails
	r.read += int64(n)
	return n, nil
}

func randomBytes(s uint64, n int) []byte {
	b := make([]byte, n)
	_, _ = rand.NewChaCha8(seed(s)).Read(b) // never fails
	return b
}

func seed(v uint64) [32]byte {
	var s [32]byte
	for i := range 8 {
		s[i] = byte(v >> (8 * i))
	}
	return s
}

func size(n int64) string {
	if n >= 1<<20 {
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%d KiB", n>>10)
}
