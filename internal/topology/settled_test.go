package topology_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/oxypipe/oxypipe/internal/natsserver/natstest"
	"github.com/oxypipe/oxypipe/internal/testutil"
	"github.com/oxypipe/oxypipe/internal/topology"
	"github.com/oxypipe/oxypipe/pkg/messages"
)

const settledRun = "20261205T210000.000Z"

// submittedClaim claims doc pos and stores jobID under the claim.
func submittedClaim(t *testing.T, c *topology.Claims, pos int, jobID string) {
	t.Helper()
	ctx := context.Background()
	ref, err := c.Acquire(ctx, settledRun, messages.DocID(pos), 0, "pod", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if err := c.MarkSubmitted(ctx, ref, jobID, time.Now()); err != nil {
		t.Fatal(err)
	}
}

// claimSubjects is the number of subjects the claims bucket's stream
// indexes for the run: what the broker keeps in memory per key.
func claimSubjects(t *testing.T, js jetstream.JetStream) int {
	t.Helper()
	st, err := js.Stream(context.Background(), "KV_"+topology.BucketClaims)
	if err != nil {
		t.Fatal(err)
	}
	info, err := st.Info(context.Background(), jetstream.WithSubjectFilter("$KV."+topology.BucketClaims+".>"))
	if err != nil {
		t.Fatal(err)
	}
	return len(info.State.Subjects)
}

func TestSettledClaimsLeaveTheBucketAndStillReadAsSubmitted(t *testing.T) {
	t.Parallel()
	_, js := setup(t)
	c := ensure(t, js, topology.Config{}).Claims()
	ctx := context.Background()
	// Docs in two segments, one whose id is not a number (it cannot be
	// settled), and one left claimed.
	docs := []topology.SettledDoc{{Pos: 0, JobID: "7500000000000000001"}, {Pos: 7, JobID: "7500000000000000008"},
		{Pos: topology.SettledSegment + 2, JobID: "7500000000000000003"}}
	for _, d := range docs {
		submittedClaim(t, c, d.Pos, d.JobID)
	}
	submittedClaim(t, c, 3, "job-3")
	if _, err := c.Acquire(ctx, settledRun, "5", 0, "pod", time.Now()); err != nil {
		t.Fatal(err)
	}
	if n := claimSubjects(t, js); n != 5 {
		t.Fatalf("%d subjects before settling, want 5", n)
	}

	n, err := c.Settle(ctx, settledRun, append(slices.Clone(docs), topology.SettledDoc{Pos: 3, JobID: "job-3"}))
	if err != nil || n != 3 {
		t.Fatalf("Settle = %d, %v; want 3 keys removed", n, err)
	}
	// Left, once the removed keys' markers expire: doc 3 (not
	// settleable), doc 5 (claimed), and two segments.
	testutil.Eventuallyf(t, 10*time.Second, func() bool { return claimSubjects(t, js) == 4 },
		"only two claims and two segments to be left")
	for _, d := range docs {
		ref, err := c.Get(ctx, settledRun, messages.DocID(d.Pos))
		if err != nil {
			t.Fatal(err)
		}
		if !ref.Settled || ref.Claim.State != messages.ClaimSubmitted || ref.Claim.APIJobID != d.JobID || ref.Claim.Doc != messages.DocID(d.Pos) {
			t.Errorf("doc %d reads %+v, want settled and submitted as %s", d.Pos, ref, d.JobID)
		}
		// A settled claim cannot be moved.
		if err := c.Release(ctx, ref, "no"); !errors.Is(err, topology.ErrConflict) {
			t.Errorf("Release of settled doc %d: %v, want ErrConflict", d.Pos, err)
		}
	}
	if ref, err := c.Get(ctx, settledRun, "3"); err != nil || ref.Settled || ref.Claim.APIJobID != "job-3" {
		t.Errorf("doc 3 = %+v, %v; want its own claim", ref, err)
	}
	if _, err := c.Get(ctx, settledRun, "1"); !errors.Is(err, topology.ErrNoClaim) {
		t.Errorf("doc 1: %v, want ErrNoClaim", err)
	}

	// A copy of a settled doc's payload gets a fresh claim, and the look
	// after it finds the job; forgetting the fresh claim leaves the record.
	fresh, err := c.Acquire(ctx, settledRun, "7", 0, "other-pod", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	jobs, err := c.SettledJobs(ctx, settledRun, []int{1, 7, topology.SettledSegment + 2, 5})
	if err != nil {
		t.Fatal(err)
	}
	want := map[int]string{7: "7500000000000000008", topology.SettledSegment + 2: "7500000000000000003"}
	if fmt.Sprint(jobs) != fmt.Sprint(want) {
		t.Fatalf("SettledJobs = %v, want %v", jobs, want)
	}
	if err := c.Forget(ctx, fresh); err != nil {
		t.Fatal(err)
	}
	if ref, err := c.Get(ctx, settledRun, "7"); err != nil || !ref.Settled || ref.Claim.APIJobID != "7500000000000000008" {
		t.Fatalf("doc 7 after forgetting the fresh claim = %+v, %v", ref, err)
	}

	// Settling again keeps the first job a slot holds.
	if _, err := c.Settle(ctx, settledRun, []topology.SettledDoc{{Pos: 7, JobID: "7500000000000000099"}}); err != nil {
		t.Fatal(err)
	}
	if ref, _ := c.Get(ctx, settledRun, "7"); ref == nil || ref.Claim.APIJobID != "7500000000000000008" {
		t.Fatalf("doc 7 after a second settle = %+v, want its first job", ref)
	}

	var scanned []int
	if err := c.ScanRun(ctx, settledRun, func(pos int) { scanned = append(scanned, pos) }); err != nil {
		t.Fatal(err)
	}
	slices.Sort(scanned)
	if fmt.Sprint(scanned) != fmt.Sprint([]int{0, 3, 5, 7, topology.SettledSegment + 2}) {
		t.Fatalf("ScanRun = %v", scanned)
	}
}

func TestSettlingFreesTheBrokersMemoryPerClaim(t *testing.T) {
	t.Parallel()
	_, js := setup(t)
	c := ensure(t, js, topology.Config{}).Claims()
	const n = 2000
	docs := make([]topology.SettledDoc, n)
	for i := range docs {
		docs[i] = topology.SettledDoc{Pos: i, JobID: fmt.Sprint(7500000000000000000 + i + 1)}
		submittedClaim(t, c, i, docs[i].JobID)
	}
	if got := claimSubjects(t, js); got != n {
		t.Fatalf("%d subjects, want %d", got, n)
	}
	if _, err := c.Settle(context.Background(), settledRun, docs); err != nil {
		t.Fatal(err)
	}
	segs := (n + topology.SettledSegment - 1) / topology.SettledSegment
	testutil.Eventuallyf(t, 10*time.Second, func() bool { return claimSubjects(t, js) == segs },
		"the %d settled docs' keys are gone, leaving their %d segments", n, segs)
	for _, i := range []int{0, 999, n - 1} {
		if ref, err := c.Get(context.Background(), settledRun, messages.DocID(i)); err != nil || ref.Claim.APIJobID != docs[i].JobID {
			t.Fatalf("doc %d = %+v, %v", i, ref, err)
		}
	}
}

func TestABucketMadeBeforeExpiringMarkersStillSettles(t *testing.T) {
	t.Parallel()
	_, js := setup(t)
	ctx := context.Background()
	// The claims bucket as an earlier version made it: no marker TTL.
	if _, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: topology.BucketClaims, Description: "oxypipe submission claims per doc"}); err != nil {
		t.Fatal(err)
	}
	// Used as it is (CreateOnly): keys go through the stream's purge, at once.
	c := ensure(t, js, topology.Config{CreateOnly: true}).Claims()
	submittedClaim(t, c, 1, "7500000000000000002")
	if _, err := c.Settle(ctx, settledRun, []topology.SettledDoc{{Pos: 1, JobID: "7500000000000000002"}}); err != nil {
		t.Fatal(err)
	}
	if n := claimSubjects(t, js); n != 1 {
		t.Fatalf("%d subjects right after settling, want 1 (the segment)", n)
	}
	// Ensured again (an upgrade): the bucket now takes expiring markers.
	c = ensure(t, js, topology.Config{}).Claims()
	kv, err := js.KeyValue(ctx, topology.BucketClaims)
	if err != nil {
		t.Fatal(err)
	}
	st, err := kv.Status(ctx)
	if err != nil || st.LimitMarkerTTL() != time.Second {
		t.Fatalf("marker TTL after the upgrade = %v, %v; want 1s", st.LimitMarkerTTL(), err)
	}
	submittedClaim(t, c, 2, "7500000000000000003")
	if _, err := c.Settle(ctx, settledRun, []topology.SettledDoc{{Pos: 2, JobID: "7500000000000000003"}}); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 10*time.Second, "the settled key's marker to expire", func() bool { return claimSubjects(t, js) == 1 })
	if ref, err := c.Get(ctx, settledRun, "1"); err != nil || ref.Claim.APIJobID != "7500000000000000002" {
		t.Fatalf("doc 1 = %+v, %v", ref, err)
	}
}

func TestRecordedJobsReadAsSubmittedWhileTheirKeysStay(t *testing.T) {
	t.Parallel()
	_, js := setup(t)
	c := ensure(t, js, topology.Config{}).Claims()
	ctx := context.Background()
	// Docs of one request in two segments, as the submitter records them.
	docs := []topology.SettledDoc{{Pos: 2, JobID: "7500000000000000002"}, {Pos: 9, JobID: "7500000000000000009"},
		{Pos: topology.SettledSegment + 4, JobID: "7500000000000000004"}}
	at := time.Now().Add(-time.Minute).UTC()
	held := map[int]*topology.ClaimRef{}
	for _, d := range docs {
		ref, err := c.Acquire(ctx, settledRun, messages.DocID(d.Pos), 1, "pod", at)
		if err != nil {
			t.Fatal(err)
		}
		held[d.Pos] = ref
	}
	if _, err := c.Acquire(ctx, settledRun, "3", 1, "pod", at); err != nil {
		t.Fatal(err)
	}
	others, err := c.Record(ctx, settledRun, docs)
	if err != nil || others != nil {
		t.Fatalf("Record = %v, %v; want no other jobs", others, err)
	}

	for _, d := range docs {
		ref, err := c.Get(ctx, settledRun, messages.DocID(d.Pos))
		if err != nil {
			t.Fatal(err)
		}
		c := ref.Claim
		if !ref.Recorded || ref.Settled || c.State != messages.ClaimSubmitted || c.APIJobID != d.JobID ||
			ref.Revision != held[d.Pos].Revision || c.By != "pod" || c.Attempt != 1 || !c.ClaimedAt.Equal(at) {
			t.Errorf("doc %d reads %+v, want recorded and submitted as %s, its key's revision %d and fields kept",
				d.Pos, ref, d.JobID, held[d.Pos].Revision)
		}
	}
	// The key is unchanged: an update under the revision the submitter
	// took would land, but a recorded claim refuses to move.
	ref, _ := c.Get(ctx, settledRun, "2")
	if err := c.Release(ctx, ref, "no"); !errors.Is(err, topology.ErrConflict) {
		t.Errorf("Release of recorded doc 2: %v, want ErrConflict", err)
	}
	if _, err := c.Retake(ctx, *ref, 2, "other-pod", time.Now(), false); !errors.Is(err, topology.ErrConflict) {
		t.Errorf("Retake of recorded doc 2: %v, want ErrConflict", err)
	}
	// Another delivery finds the job, not a claim in flight.
	var he *topology.ClaimHeldError
	if _, err := c.Acquire(ctx, settledRun, "9", 2, "other-pod", time.Now()); !errors.As(err, &he) ||
		he.Held.Claim.State != messages.ClaimSubmitted || he.Held.Claim.APIJobID != "7500000000000000009" {
		t.Fatalf("Acquire of recorded doc 9: %v, want held as submitted with its job", err)
	}
	if ref, err := c.Get(ctx, settledRun, "3"); err != nil || ref.Recorded || ref.Claim.State != messages.ClaimHeld {
		t.Fatalf("doc 3 = %+v, %v; want still claimed", ref, err)
	}

	// A second job for a doc is reported, and its slot keeps the first.
	others, err = c.Record(ctx, settledRun, []topology.SettledDoc{{Pos: 9, JobID: "7500000000000000099"}, {Pos: 3, JobID: "7500000000000000003"}})
	if err != nil || fmt.Sprint(others) != fmt.Sprint(map[int]string{9: "7500000000000000009"}) {
		t.Fatalf("Record of a second job = %v, %v; want doc 9's first job reported", others, err)
	}
	if ref, _ := c.Get(ctx, settledRun, "9"); ref == nil || ref.Claim.APIJobID != "7500000000000000009" {
		t.Fatalf("doc 9 after a second job = %+v, want its first job", ref)
	}
	// Ids that cannot be settled are not written.
	if others, err := c.Record(ctx, settledRun, []topology.SettledDoc{{Pos: 5, JobID: "job-5"}}); err != nil || others != nil {
		t.Fatalf("Record of an id that is not a number = %v, %v", others, err)
	}
	if _, err := c.Get(ctx, settledRun, "5"); !errors.Is(err, topology.ErrNoClaim) {
		t.Fatalf("doc 5: %v, want ErrNoClaim", err)
	}

	// Settling removes the keys; the docs then read as settled.
	n, err := c.Settle(ctx, settledRun, docs)
	if err != nil || n != len(docs) {
		t.Fatalf("Settle = %d, %v; want %d keys removed", n, err, len(docs))
	}
	for _, d := range docs {
		if ref, err := c.Get(ctx, settledRun, messages.DocID(d.Pos)); err != nil || !ref.Settled || ref.Claim.APIJobID != d.JobID {
			t.Errorf("doc %d after settling = %+v, %v; want settled as %s", d.Pos, ref, err, d.JobID)
		}
	}
}

func TestRecordsOfOneSegmentFromManyWritersAllLand(t *testing.T) {
	t.Parallel()
	srv, js := setup(t)
	ensure(t, js, topology.Config{})
	// Four submitter replicas, each on its own connection, recording docs
	// of the same segment at once: a compare-and-set that loses reads the
	// segment again, and a Record that loses too often says so
	// (ErrConflict), which its caller retries, as the submitter does.
	const writers, perWriter = 4, 40
	errs := make(chan error, writers)
	var conflicts atomic.Int64
	claims := make([]*topology.Claims, writers)
	for w := range claims {
		js2, err := jetstream.New(natstest.Connect(t, srv))
		if err != nil {
			t.Fatal(err)
		}
		claims[w] = ensure(t, js2, topology.Config{}).Claims()
	}
	start := make(chan struct{})
	for w, c := range claims {
		go func() {
			<-start
			for k := range perWriter {
				pos := k*writers + w
				doc := []topology.SettledDoc{{Pos: pos, JobID: strconv.Itoa(7_000_000 + pos)}}
				_, err := c.Record(context.Background(), settledRun, doc)
				for errors.Is(err, topology.ErrConflict) {
					conflicts.Add(1)
					_, err = c.Record(context.Background(), settledRun, doc)
				}
				if err != nil {
					errs <- fmt.Errorf("doc %d: %w", pos, err)
					return
				}
			}
			errs <- nil
		}()
	}
	close(start)
	for range writers {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	positions := make([]int, writers*perWriter)
	for i := range positions {
		positions[i] = i
	}
	jobs, err := ensure(t, js, topology.Config{}).Claims().SettledJobs(context.Background(), settledRun, positions)
	if err != nil {
		t.Fatal(err)
	}
	for _, pos := range positions {
		if jobs[pos] != strconv.Itoa(7_000_000+pos) {
			t.Errorf("doc %d records %q, want %d", pos, jobs[pos], 7_000_000+pos)
		}
	}
	t.Logf("%d records by %d writers, %d of them retried after ErrConflict", len(positions), writers, conflicts.Load())
}
