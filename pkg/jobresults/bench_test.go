package jobresults_test

import (
	"context"
	"strconv"
	"sync"
	"testing"

	"github.com/oxypipe/oxypipe/pkg/jobresults"
	"github.com/oxypipe/oxypipe/pkg/oxytype"
)

// The memory store's goals: at least 1,000,000 record writes per second
// with 4 writers, and GetStageCounts under 100 µs on a job of 1,000,000
// records. Run with
//
//	go test -run '^$' -bench . -benchmem ./pkg/jobresults/
//
// Each write benchmark reports writes/s across its 4 writer goroutines and
// the CPU time per write (cpu-ns/write, garbage collection included).

const benchWriters = 4

var benchStages = []string{"payload", "submitted", "done", "written"}

// runWriters splits b.N operations over benchWriters goroutines; op(w, i)
// performs operation i (0-based, global) in writer w.
func runWriters(b *testing.B, op func(w, i int) error) {
	b.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, benchWriters)
	b.ResetTimer()
	cpu := cpuTime()
	for w := range benchWriters {
		wg.Go(func() {
			for i := w; i < b.N; i += benchWriters {
				if err := op(w, i); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	b.StopTimer()
	cpu = cpuTime() - cpu
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "writes/s")
	if cpu > 0 {
		// CPU time per write, GC included: on a machine shared with other
		// work, wall-clock writes/s understate what the store can do.
		b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/write")
	}
}

func docIDs(n int) []string {
	ids := make([]string, n)
	for i := range ids {
		ids[i] = strconv.Itoa(i)
	}
	return ids
}

func BenchmarkMemoryStoreWrites(b *testing.B) {
	ctx := context.Background()
	origin := oxytype.Party{Type: "poller", Name: "poller-0"}
	consumer := oxytype.Party{Type: "writer", Name: "writer-0"}
	const pool = 1 << 18
	ids := docIDs(pool)
	jobs := make([]string, 8) // at most 8 × pool new documents: bounded memory
	for i := range jobs {
		jobs[i] = "run-" + strconv.Itoa(i)
	}

	b.Run("new documents/4 writers", func(b *testing.B) {
		s := jobresults.NewMemoryStore()
		b.ReportAllocs()
		runWriters(b, func(_, i int) error {
			// Every write creates a record: a new document, in a new job
			// every pool writes.
			k := jobresults.Key{Run: jobs[(i/pool)%len(jobs)], DataType: "submitted", DocID: ids[i%pool]}
			return s.RecordSuccess(ctx, k, origin)
		})
	})

	b.Run("pipeline mix/4 writers", func(b *testing.B) {
		s := jobresults.NewMemoryStore()
		b.ReportAllocs()
		runWriters(b, func(_, i int) error {
			// What a run writes per document, in 6 writes: the payload
			// (a new document), submitted and done (new records), a soft
			// failure at done (job pending) and its success, written.
			doc := ids[(i/6)%pool]
			job := jobs[(i/(6*pool))%len(jobs)]
			key := func(stage string) jobresults.Key { return jobresults.Key{Run: job, DataType: stage, DocID: doc} }
			switch i % 6 {
			case 0:
				return s.RecordSuccess(ctx, key("payload"), origin)
			case 1:
				return s.RecordSuccess(ctx, key("submitted"), origin)
			case 2:
				return s.RecordSoftFailure(ctx, key("done"), origin, consumer, 1, "job still pending")
			case 3:
				return s.RecordSuccess(ctx, key("done"), origin)
			case 4:
				return s.RecordSuccess(ctx, key("written"), origin)
			}
			return s.RecordSuccess(ctx, key("written"), consumer)
		})
	})

	b.Run("updates/4 writers", func(b *testing.B) {
		s := jobresults.NewMemoryStore()
		const docs = 100_000
		for i := range docs * len(benchStages) {
			if err := s.RecordSuccess(ctx, jobresults.Key{Run: "run", DataType: benchStages[i%len(benchStages)], DocID: ids[i/len(benchStages)]}, origin); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportAllocs()
		runWriters(b, func(_, i int) error {
			// 12 successes, 3 soft failures and 1 hard failure in 16 writes,
			// spread over 400,000 existing records.
			k := jobresults.Key{Run: "run", DataType: benchStages[i%len(benchStages)], DocID: ids[(i/len(benchStages))%docs]}
			switch i % 16 {
			case 3, 7, 11:
				return s.RecordSoftFailure(ctx, k, origin, consumer, 1, "job still pending")
			case 15:
				return s.RecordHardFailure(ctx, k, origin, consumer, "job faulted")
			}
			return s.RecordSuccess(ctx, k, origin)
		})
	})

	b.Run("Apply batches of 100/4 writers", func(b *testing.B) {
		s := jobresults.NewMemoryStore()
		const batch = 100
		batches := make([][]jobresults.Entry, benchWriters)
		for w := range batches {
			batches[w] = make([]jobresults.Entry, 0, batch)
		}
		runWriters(b, func(w, i int) error {
			// One versioned entry per operation, written in batches of 100
			// per writer (the status worker's path).
			batches[w] = append(batches[w], jobresults.Entry{
				Key:     jobresults.Key{Run: "run", DataType: benchStages[i%len(benchStages)], DocID: ids[(i/len(benchStages))%pool]},
				Outcome: oxytype.Success, Origin: origin, Version: uint64(i + 1),
			})
			if len(batches[w]) < batch && i+benchWriters < b.N {
				return nil
			}
			_, err := s.Apply(ctx, batches[w])
			batches[w] = batches[w][:0]
			return err
		})
	})
}

// BenchmarkMemoryStoreReads1M measures the progress queries on one job of
// 1,000,000 records (250,000 documents at 4 stages, 1 in 8 failed). The
// setup runs only under -bench.
func BenchmarkMemoryStoreReads1M(b *testing.B) {
	ctx := context.Background()
	s := jobresults.NewMemoryStore()
	origin := oxytype.Party{Type: "poller", Name: "poller-0"}
	const docs = 250_000
	ids := docIDs(docs)
	entries := make([]jobresults.Entry, 0, 10_000)
	for i := range docs * len(benchStages) {
		en := jobresults.Entry{
			Key:     jobresults.Key{Run: "run", DataType: benchStages[i%len(benchStages)], DocID: ids[i/len(benchStages)]},
			Outcome: oxytype.Success, Origin: origin,
		}
		switch i % 16 {
		case 5:
			en.Outcome, en.Consumer, en.Reason = oxytype.SoftFailure, origin, "job still pending"
		case 13:
			en.Outcome, en.Consumer, en.Reason = oxytype.HardFailure, origin, "job faulted"
		}
		if entries = append(entries, en); len(entries) == cap(entries) {
			if _, err := s.Apply(ctx, entries); err != nil {
				b.Fatal(err)
			}
			entries = entries[:0]
		}
	}
	counts, err := s.GetStageCounts(ctx, "run")
	total := 0
	for _, c := range counts {
		total += c.Total
	}
	if err != nil || total != 1_000_000 {
		b.Fatalf("setup wrote %d records (%v), want 1,000,000", total, err)
	}

	b.Run("GetStageCounts", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := s.GetStageCounts(ctx, "run"); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("CountCompletedDocs", func(b *testing.B) {
		for b.Loop() {
			if _, err := s.CountCompletedDocs(ctx, "run", "written"); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("CountResolvedDocs", func(b *testing.B) {
		for b.Loop() {
			if _, err := s.CountResolvedDocs(ctx, "run", "written"); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("GetUniqueErrors (125,000 failures)", func(b *testing.B) {
		if ue, err := s.GetUniqueErrors(ctx, "run", ""); err != nil || len(ue) != 2 || ue[0].Count+ue[1].Count != 125_000 {
			b.Fatalf("unique errors %+v (%v), want 2 groups of 125,000 failures", ue, err)
		}
		for b.Loop() {
			if _, err := s.GetUniqueErrors(ctx, "run", ""); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("ForEachRecord", func(b *testing.B) {
		for b.Loop() {
			n := 0
			if err := s.ForEachRecord(ctx, "run", func(jobresults.Record) error { n++; return nil }); err != nil || n != 1_000_000 {
				b.Fatalf("streamed %d records (%v)", n, err)
			}
		}
	})
	b.Run("GetStageCounts during 4 writers", func(b *testing.B) {
		// Reads while 4 goroutines keep updating the same job (last: the
		// writers turn failures into successes).
		stop := make(chan struct{})
		var wg sync.WaitGroup
		for w := range benchWriters {
			wg.Go(func() {
				for i := w; ; i += benchWriters {
					select {
					case <-stop:
						return
					default:
					}
					k := jobresults.Key{Run: "run", DataType: benchStages[i%len(benchStages)], DocID: ids[(i/len(benchStages))%docs]}
					if err := s.RecordSuccess(ctx, k, origin); err != nil {
						b.Error(err)
						return
					}
				}
			})
		}
		for b.Loop() {
			if _, err := s.GetStageCounts(ctx, "run"); err != nil {
				b.Fatal(err)
			}
		}
		close(stop)
		wg.Wait()
	})
}
