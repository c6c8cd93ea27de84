package jobresults

import (
	"context"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/oxypipe/oxypipe/pkg/oxytype"
)

func TestSpillingKeepsOnlyAnOffsetPerCompleteDocument(t *testing.T) {
	t.Parallel()
	s := NewMemoryStore(WithSpill(filepath.Join(t.TempDir(), "ledger.spill"), "written"))
	t.Cleanup(func() { _ = s.Close() })
	ctx := context.Background()
	const docs = 10_000
	var entries []Entry
	for i := range docs {
		doc := strconv.Itoa(i)
		for _, dt := range []string{"payload", "submitted", "done", "written"} {
			entries = append(entries, Entry{Key: Key{Run: "job", DataType: dt, DocID: doc}, Outcome: oxytype.Success,
				Facts: oxytype.Facts{Payload: []byte(`{"source":"universal","url":"https://shop.example/` + doc + `"}`), APIJobID: "75000000000" + doc}})
		}
	}
	entries = append(entries, Entry{Key: Key{Run: "job", DataType: "submitted", DocID: "7"}, Outcome: oxytype.HardFailure, Reason: "refused"})
	if _, err := s.Apply(ctx, entries); err != nil {
		t.Fatal(err)
	}
	j := s.job("job")
	inMemory := 0
	for i := range j.stripes {
		inMemory += len(j.stripes[i].docs)
	}
	if inMemory != 1 || j.spilled.count != docs-1 || len(j.spilled.byPos) != docs {
		t.Fatalf("%d documents in memory, %d spilled in an index of %d, want the failed one in memory and %d spilled", inMemory, j.spilled.count, len(j.spilled.byPos), docs-1)
	}
	if n, err := s.CountResolvedDocs(ctx, "job", "written"); err != nil || n != docs {
		t.Fatalf("CountResolvedDocs = %d, %v", n, err)
	}
}
