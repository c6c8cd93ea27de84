package storetest

import (
	"fmt"
	"slices"
	"strconv"
	"sync"

	"github.com/oxypipe/oxypipe/pkg/jobresults"
	"github.com/oxypipe/oxypipe/pkg/oxytype"
)

// concurrencyCases check that concurrent writers lose nothing.
var concurrencyCases = []testCase{
	{name: "concurrent writers lose no update", run: func(h *harness) {
		const writers, docsPerWriter, sharedPerWriter, raceKeys = 8, 25, 10, 10
		var wg sync.WaitGroup
		errs := make(chan error, writers*4)
		for w := range writers {
			wg.Go(func() {
				for i := range docsPerWriter {
					doc := strconv.Itoa(w*docsPerWriter + i)
					if err := h.store.RecordSuccess(h.ctx, h.key(stagePayload, doc), publisher); err != nil {
						errs <- err
						return
					}
					var err error
					switch i % 5 {
					case 0:
						err = h.store.RecordHardFailure(h.ctx, h.key(stageSubmitted, doc), submitter, poller, "rejected")
					case 1:
						err = h.store.RecordSoftFailure(h.ctx, h.key(stageSubmitted, doc), submitter, poller, 1, "429")
					default:
						err = h.store.RecordSuccess(h.ctx, h.key(stageSubmitted, doc), submitter)
					}
					if err != nil {
						errs <- err
						return
					}
				}
				// Every writer appends to the same record.
				for i := range sharedPerWriter {
					if err := h.store.RecordSoftFailure(h.ctx, h.key(stageDone, "shared"), poller, writer, i, fmt.Sprintf("w%d-%d", w, i)); err != nil {
						errs <- err
						return
					}
				}
				// Every writer creates the same new records at once: the
				// insert race on the unique key must stay inside the store.
				for i := range raceKeys {
					if err := h.store.RecordSuccess(h.ctx, h.key(stageWritten, "race-"+strconv.Itoa(i)), writer); err != nil {
						errs <- err
						return
					}
				}
				// Versioned writes of one record from every writer: the
				// highest version wins, whatever the interleaving.
				for v := range 5 {
					en := withReason(h.entry(stageWritten, "versioned", oxytype.SoftFailure, uint64(v*writers+w+1)), v, fmt.Sprintf("v%d", v*writers+w+1))
					if _, err := h.store.Apply(h.ctx, []jobresults.Entry{en}); err != nil {
						errs <- err
						return
					}
				}
			})
		}
		// Readers run alongside the writers.
		wg.Go(func() {
			for range 20 {
				if _, err := h.store.GetStageCounts(h.ctx, h.job); err != nil {
					errs <- err
					return
				}
			}
		})
		wg.Wait()
		close(errs)
		for err := range errs {
			h.Fatalf("concurrent call failed: %v", err)
		}

		n := writers * docsPerWriter
		equal(h, "stage counts", h.stageCounts(), []jobresults.StageCount{
			{DataType: stageDone, Total: 1, SoftFailed: 1},
			{DataType: stagePayload, Total: n, Succeeded: n},
			{DataType: stageSubmitted, Total: n, Succeeded: n * 3 / 5, SoftFailed: n / 5, HardFailed: n / 5},
			{DataType: stageWritten, Total: raceKeys + 1, Succeeded: raceKeys, SoftFailed: 1},
		})
		equal(h, "hard-failed docs", h.hardFailedDocs(), n/5)
		shared := h.record(stageDone, "shared").SoftFailures
		slices.Sort(shared)
		var want []string
		for w := range writers {
			for i := range sharedPerWriter {
				want = append(want, fmt.Sprintf("w%d-%d", w, i))
			}
		}
		slices.Sort(want)
		equal(h, "reasons appended by all writers", shared, want)
		top := uint64(5 * writers)
		v := h.record(stageWritten, "versioned")
		equal(h, "highest version", v.Version, top)
		equal(h, "reasons of applied versions end with the highest", v.SoftFailures[len(v.SoftFailures)-1], "v"+strconv.FormatUint(top, 10))
	}},
}
