package submitter_test

import (
	"context"
	"testing"
	"time"

	"github.com/oxypipe/oxypipe/internal/submitter"
	"github.com/oxypipe/oxypipe/internal/topology"
	"github.com/oxypipe/oxypipe/pkg/emulator"
	"github.com/oxypipe/oxypipe/pkg/messages"
	"github.com/oxypipe/oxypipe/pkg/oxytype"
)

func TestABatchsJobIDsAreRecordedInOneWritePerSegment(t *testing.T) {
	t.Parallel()
	e := setup(t, options{configure: func(c *submitter.Config) { c.SettleInterval = -1 }})
	const docs = 10
	e.feedUniversal(0, docs)
	e.start()
	if evs := e.settled(); len(evs) != docs {
		t.Fatalf("%d events, want %d", len(evs), docs)
	}
	if n := e.requests(emulator.EndpointBatch); n != 1 {
		t.Fatalf("%d batch requests, want 1", n)
	}
	for _, s := range e.submitted() {
		ref, err := e.topo.Claims().Get(context.Background(), run, s.Doc)
		if err != nil {
			t.Fatal(err)
		}
		if !ref.Recorded || ref.Claim.State != messages.ClaimSubmitted || ref.Claim.APIJobID != s.APIJobID {
			t.Errorf("doc %s: claim %+v, want recorded as job %s", s.Doc, ref, s.APIJobID)
		}
	}
	// A create per doc, and one write of the run's settled record for the
	// whole request: no update per doc.
	st, err := e.js.Stream(context.Background(), "KV_"+topology.BucketClaims)
	if err != nil {
		t.Fatal(err)
	}
	info, err := st.Info(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if info.State.LastSeq != docs+1 {
		t.Fatalf("%d writes to the claims bucket, want %d: a claim per doc and one record write", info.State.LastSeq, docs+1)
	}
}

func TestAJobIDRecordedBeforeACrashIsPublishedFromTheRecord(t *testing.T) {
	t.Parallel()
	e := setup(t, options{})
	ctx := context.Background()
	// A submitter recorded the job id and died before publishing
	// Submitted; its claim, an hour old, still says "claimed", which
	// without the record would be an unknown outcome.
	at := time.Now().Add(-time.Hour).UTC()
	if _, err := e.topo.Claims().Acquire(ctx, run, "0", 0, "dead-pod", at); err != nil {
		t.Fatal(err)
	}
	if _, err := e.topo.Claims().Record(ctx, run, []topology.SettledDoc{{Pos: 0, JobID: "7500000000000000042"}}); err != nil {
		t.Fatal(err)
	}
	e.feedUniversal(0, 1)
	e.start()
	evs := e.settled()

	if len(evs) != 1 || evs[0].Outcome != oxytype.Success || evs[0].APIJobID != "7500000000000000042" {
		t.Fatalf("events = %+v, want one success with the recorded job", evs)
	}
	if subs := e.submitted(); len(subs) != 1 || subs[0].APIJobID != "7500000000000000042" {
		t.Fatalf("Submitted = %+v", subs)
	}
	if n := e.requests(emulator.EndpointSubmit) + e.requests(emulator.EndpointBatch); n != 0 {
		t.Fatalf("%d requests, want none", n)
	}
}
