package stage_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/oxypipe/oxypipe/internal/stage"
	"github.com/oxypipe/oxypipe/internal/testutil"
)

// batchSizes records the size of every batch a handler got.
type batchSizes struct {
	mu    sync.Mutex
	sizes []int
}

func (b *batchSizes) handler() stage.BatchHandlerFunc {
	return func(ctx context.Context, batch []*stage.Msg) []error {
		b.mu.Lock()
		b.sizes = append(b.sizes, len(batch))
		b.mu.Unlock()
		errs := make([]error, len(batch))
		for i, m := range batch {
			errs[i] = submit(ctx, m)
		}
		return errs
	}
}

func (b *batchSizes) snapshot() []int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]int(nil), b.sizes...)
}

// A batch handler under load gets full batches, even though slots free up a
// few at a time as the previous batch settles, and a lone message still goes
// out after BatchLinger.
func TestABatchHandlerUnderLoadGetsFullBatchesAndALoneMessageIsNotHeldBack(t *testing.T) {
	t.Parallel()
	const queued, batchSize = 1000, 100
	s := fastSubmitter()
	e := setup(t, s)
	e.feed(0, queued)
	cfg := e.config(s)
	cfg.BatchSize = batchSize
	// A linger well above a batch's settling time, so a slow shared machine
	// does not send groups off half full; the old runtime (one group per
	// fetch) got a mean of about 50 here whatever the linger. Under the race
	// detector on a loaded machine 200 ms split a batch (a mean of 83 was
	// seen), so the linger widens with the test's patience.
	cfg.BatchLinger = testutil.Patient(200 * time.Millisecond)
	var rec batchSizes
	w, err := stage.NewBatch(cfg, rec.handler())
	if err != nil {
		t.Fatal(err)
	}
	e.start(w)
	testutil.Eventually(t, 20*time.Second, "every queued message acked", func() bool {
		return e.counter("submitter", "ack") == queued
	})
	sizes := rec.snapshot()
	total := 0
	for _, n := range sizes {
		if n < 1 || n > batchSize {
			t.Fatalf("a batch of %d messages (BatchSize %d): %v", n, batchSize, sizes)
		}
		total += n
	}
	if total != queued {
		t.Fatalf("batches %v hold %d messages, want %d", sizes, total, queued)
	}
	if mean := float64(total) / float64(len(sizes)); mean < 0.9*batchSize {
		t.Fatalf("mean batch size %.1f is below %v: %v", mean, 0.9*batchSize, sizes)
	}

	// One more message, alone: it goes out on its own after the linger.
	sent := time.Now()
	e.feed(queued, queued+1)
	testutil.Eventually(t, 5*time.Second, "the lone message acked", func() bool {
		return e.counter("submitter", "ack") == queued+1
	})
	if took := time.Since(sent); took > cfg.BatchLinger+testutil.Patient(2*time.Second) {
		t.Fatalf("the lone message took %v to be handled (BatchLinger %v)", took, cfg.BatchLinger)
	}
	if got := rec.snapshot(); len(got) != len(sizes)+1 || got[len(got)-1] != 1 {
		t.Fatalf("batches after the lone message: %v", got[len(sizes):])
	}
}
