package destination

import (
	"errors"
	"io/fs"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/oxypipe/oxypipe/internal/testutil"
)

// Callers that arrive while a folder fsync runs share the next one, and
// none returns before an fsync that started after its call has finished.
func TestGroupSyncSharesTheNextFsync(t *testing.T) {
	t.Parallel()
	g := newGroupSync(t.TempDir())
	release := make(chan error)
	var calls atomic.Int32
	g.syncFn = func(string) error {
		calls.Add(1)
		return <-release
	}
	returned := make(chan string, 3)
	call := func(name string) {
		go func() {
			if err := g.sync(); err != nil {
				returned <- name + ": " + err.Error()
				return
			}
			returned <- name
		}()
	}

	call("a")
	testutil.Eventually(t, 5*time.Second, "a's fsync starts", func() bool { return calls.Load() == 1 })
	call("b")
	call("c")
	testutil.Eventually(t, 5*time.Second, "b and c wait", func() bool {
		g.mu.Lock()
		defer g.mu.Unlock()
		return g.waiting == 2 // b and c found a's running and wait for the next
	})
	release <- nil // a's fsync ends: a returns; b or c starts the second
	if got := <-returned; got != "a" {
		t.Fatalf("first to return: %s, want a", got)
	}
	testutil.Eventually(t, 5*time.Second, "the shared fsync starts", func() bool { return calls.Load() == 2 })
	select {
	case got := <-returned:
		t.Fatalf("%s returned before the fsync it needs finished", got)
	default:
	}
	release <- errors.New("disk gone") // both share its error
	for range 2 {
		if got := <-returned; got != "b: disk gone" && got != "c: disk gone" {
			t.Fatalf("returned %q", got)
		}
	}
	if n := calls.Load(); n != 2 {
		t.Fatalf("%d fsyncs for three callers, want 2", n)
	}
}

func TestGroupSyncReportsAMissingFolder(t *testing.T) {
	t.Parallel()
	g := newGroupSync(filepath.Join(t.TempDir(), "gone"))
	if err := g.sync(); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("err = %v, want not exist", err)
	}
}
