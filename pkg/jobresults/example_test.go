package jobresults_test

import (
	"context"
	"fmt"
	"time"

	"github.com/oxypipe/oxypipe/pkg/jobresults"
	"github.com/oxypipe/oxypipe/pkg/oxytype"
)

func Example() {
	ctx := context.Background()
	ledger := jobresults.NewMemoryStore()
	if err := ledger.Setup(ctx); err != nil {
		panic(err)
	}
	submitter := oxytype.Party{Type: "submitter", Name: "submitter-0"}
	poller := oxytype.Party{Type: "poller", Name: "poller-0"}
	key := func(stage, doc string) jobresults.Key {
		return jobresults.Key{Run: "run-1", DataType: stage, DocID: doc}
	}

	for _, doc := range []string{"0", "1", "2"} {
		_ = ledger.RecordSuccess(ctx, key("submitted", doc), submitter)
	}
	_ = ledger.RecordSuccess(ctx, key("done", "0"), poller)
	_ = ledger.RecordSoftFailure(ctx, key("done", "1"), poller, poller, 1, "job still pending")
	_ = ledger.RecordHardFailure(ctx, key("done", "2"), poller, poller, "job faulted")

	counts, _ := ledger.GetStageCounts(ctx, "run-1")
	for _, c := range counts {
		fmt.Printf("%-9s total %d  ok %d  soft %d  hard %d\n", c.DataType, c.Total, c.Succeeded, c.SoftFailed, c.HardFailed)
	}
	completed, _ := ledger.CountCompletedDocs(ctx, "run-1", "done")
	failed, _ := ledger.CountHardFailedDocs(ctx, "run-1")
	fmt.Println("completed:", completed, "hard-failed:", failed)
	// Output:
	// done      total 3  ok 1  soft 1  hard 1
	// submitted total 3  ok 3  soft 0  hard 0
	// completed: 1 hard-failed: 1
}

func ExampleMemoryStore_Apply() {
	ctx := context.Background()
	ledger := jobresults.NewMemoryStore()
	k := jobresults.Key{Run: "run-1", DataType: "done", DocID: "7"}
	poller := oxytype.Party{Type: "poller", Name: "poller-0"}

	// Status events arrive out of order: the success (stream sequence 12)
	// before the soft failure it superseded (sequence 10), and twice.
	n, _ := ledger.Apply(ctx, []jobresults.Entry{
		{Key: k, Outcome: oxytype.Success, Origin: poller, Version: 12},
		{Key: k, Outcome: oxytype.SoftFailure, Origin: poller, Consumer: poller, Reason: "pending", Version: 10},
		{Key: k, Outcome: oxytype.Success, Origin: poller, Version: 12},
	})
	recs, _ := ledger.GetDocStatus(ctx, "run-1", "7")
	fmt.Println("applied:", n)
	fmt.Println("outcome:", recs[0].Outcome(), "version:", recs[0].Version)
	// Output:
	// applied: 1
	// outcome: success version: 12
}

func ExampleMemoryStore_GetUniqueErrors() {
	ctx := context.Background()
	at := time.Date(2026, 9, 29, 17, 0, 0, 0, time.UTC)
	ledger := jobresults.NewMemoryStore(jobresults.WithClock(func() time.Time { return at }))
	writer := oxytype.Party{Type: "writer", Name: "writer-0"}
	for i, reason := range []string{"403 Forbidden", "403 Forbidden", "timeout"} {
		k := jobresults.Key{Run: "run-1", DataType: "written", DocID: fmt.Sprint(i)}
		_ = ledger.RecordSoftFailure(ctx, k, writer, writer, 1, reason)
	}
	errs, _ := ledger.GetUniqueErrors(ctx, "run-1", "")
	for _, e := range errs {
		fmt.Printf("%d × %q at %s (last %s)\n", e.Count, e.Error, e.DataType, e.LastSeen.Format(time.RFC3339))
	}
	// Output:
	// 2 × "403 Forbidden" at written (last 2026-09-29T17:00:00Z)
	// 1 × "timeout" at written (last 2026-09-29T17:00:00Z)
}
