package submitter_test

import (
	"context"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap"

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
	for _, m := range []struct {
		name, label, value string
		want               float64
	}{
		{"oxy_submitter_job_ids_total", "stored_in", "record", docs},
		{"oxy_submitter_job_ids_total", "stored_in", "claim", 0},
		{"oxy_submitter_record_failures_total", "", "", 0},
		{"oxy_submitter_billed_twice_total", "", "", 0},
	} {
		if got := e.metric(m.name, m.label, m.value); got != m.want {
			t.Errorf("%s{%s=%q} = %v, want %v", m.name, m.label, m.value, got, m.want)
		}
	}
}

func TestAJobRecordedMeanwhileForTheSameDocIsCountedAsBilledTwice(t *testing.T) {
	t.Parallel()
	// Another replica records a job for doc 0 while this submitter's batch
	// request is on its way: both jobs exist, and the doc was billed twice.
	const first = "7500000000000000042"
	var claims atomic.Pointer[topology.Claims]
	var once sync.Once
	e := setup(t, options{proxy: func(api http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodPost {
				once.Do(func() {
					if _, err := claims.Load().Record(r.Context(), run, []topology.SettledDoc{{Pos: 0, JobID: first}}); err != nil {
						t.Errorf("record: %v", err)
					}
				})
			}
			api.ServeHTTP(w, r)
		})
	}})
	claims.Store(e.topo.Claims())
	const docs = 3
	e.feedUniversal(0, docs)
	e.start()
	if evs := e.settled(); len(evs) != docs {
		t.Fatalf("%d events, want %d", len(evs), docs)
	}

	if got := e.metric("oxy_submitter_billed_twice_total", "", ""); got != 1 {
		t.Fatalf("billed twice = %v, want 1", got)
	}
	if got := e.metric("oxy_submitter_job_ids_total", "stored_in", "record"); got != docs-1 {
		t.Fatalf("ids stored in the record = %v, want %d", got, docs-1)
	}
	if n := e.logs.FilterMessageSnippet("billed twice").FilterField(zap.String("recorded_job_id", first)).Len(); n != 1 {
		t.Fatalf("%d billed-twice log lines naming the first job, want 1", n)
	}
	// The second job is published all the same; the record keeps the first.
	var second string
	for _, s := range e.submitted() {
		if s.Doc == "0" {
			second = s.APIJobID
		}
	}
	if second == "" || second == first {
		t.Fatalf("doc 0 published job %q, want the second job", second)
	}
	ref, err := e.topo.Claims().Get(context.Background(), run, "0")
	if err != nil {
		t.Fatal(err)
	}
	if ref.Claim.APIJobID != first {
		t.Fatalf("doc 0's claim holds job %s, want the first, %s", ref.Claim.APIJobID, first)
	}
}

func TestAJobIDWithoutASlotIsStoredUnderItsClaimAndCounted(t *testing.T) {
	t.Parallel()
	// A job id that is not a number has no slot in the settled record.
	e := setup(t, options{proxy: firstBatchIDAs("job-a")})
	const docs = 3
	e.feedUniversal(0, docs)
	e.start()
	if evs := e.settled(); len(evs) != docs {
		t.Fatalf("%d events, want %d", len(evs), docs)
	}
	if got := e.metric("oxy_submitter_job_ids_total", "stored_in", "claim"); got != 1 {
		t.Fatalf("ids stored under claims = %v, want 1", got)
	}
	if got := e.metric("oxy_submitter_job_ids_total", "stored_in", "record"); got != docs-1 {
		t.Fatalf("ids stored in the record = %v, want %d", got, docs-1)
	}
	var found bool
	for _, s := range e.submitted() {
		if s.APIJobID != "job-a" {
			continue
		}
		found = true
		ref, err := e.topo.Claims().Get(context.Background(), run, s.Doc)
		if err != nil {
			t.Fatal(err)
		}
		if ref.Recorded || ref.Claim.State != messages.ClaimSubmitted || ref.Claim.APIJobID != "job-a" {
			t.Fatalf("doc %s: claim %+v, want job-a under its own claim", s.Doc, ref)
		}
	}
	if !found {
		t.Fatal("no Submitted message carries job-a")
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
