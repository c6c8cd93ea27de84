package submitter_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/oxypipe/oxypipe/internal/submitter"
	"github.com/oxypipe/oxypipe/internal/testutil"
	"github.com/oxypipe/oxypipe/internal/topology"
	"github.com/oxypipe/oxypipe/pkg/messages"
	"github.com/oxypipe/oxypipe/pkg/oxytype"
)

// claimKeys lists the keys of the claims bucket: the docs' own claims and
// the runs' settled-record segments.
func (e *env) claimKeys() (docs, segments int) {
	e.t.Helper()
	kv, err := e.js.KeyValue(context.Background(), topology.BucketClaims)
	if err != nil {
		e.t.Fatal(err)
	}
	keys, err := kv.ListKeys(context.Background())
	if err != nil {
		e.t.Fatal(err)
	}
	for k := range keys.Keys() {
		if strings.Contains(k, ".settled.") {
			segments++
		} else {
			docs++
		}
	}
	return docs, segments
}

func TestAckedPayloadsClaimsAreSettledAndALaterCopyIsNotBilledAgain(t *testing.T) {
	t.Parallel()
	e := setup(t, options{configure: func(c *submitter.Config) { c.SettleInterval = 50 * time.Millisecond }})
	const n = 20
	e.feedUniversal(0, n)
	e.start()
	e.settled()
	testutil.Eventually(t, 10*time.Second, "every claim to be settled", func() bool {
		docs, segs := e.claimKeys()
		return docs == 0 && segs == 1
	})
	jobOf := map[string]string{}
	for _, ev := range e.events() {
		if ev.Outcome == oxytype.Success && ev.DataType == oxytype.DataSubmitted {
			jobOf[ev.Doc] = ev.APIJobID
		}
	}
	for i := range n {
		c := e.claim(i)
		if c == nil || c.State != messages.ClaimSubmitted || c.APIJobID == "" || c.APIJobID != jobOf[messages.DocID(i)] {
			t.Fatalf("doc %d: claim %+v, want submitted as %s", i, c, jobOf[messages.DocID(i)])
		}
	}
	if e.jobs() != n {
		t.Fatalf("%d jobs, want %d", e.jobs(), n)
	}

	// Copies of two settled payloads (new stream messages, as a confused
	// producer would publish): not billed; each is recorded as submitted
	// with the settled job (its Submitted, published again under the same
	// message id, is dropped by the broker as a duplicate).
	for _, doc := range []int{0, 5} {
		e.publish(&messages.Payload{Run: run, Doc: messages.DocID(doc), Payload: universal(doc)}, false)
	}
	e.settled()
	if e.jobs() != n {
		t.Fatalf("%d jobs after the copies, want %d: a settled doc was billed again", e.jobs(), n)
	}
	for _, doc := range []string{"0", "5"} {
		ok := e.eventsOf(doc, oxytype.Success)
		if len(ok) != 2 || ok[0].APIJobID != jobOf[doc] || ok[1].APIJobID != jobOf[doc] {
			t.Errorf("doc %s: successes %+v, want two with job %s", doc, ok, jobOf[doc])
		}
	}
	if got := len(e.submitted()); got != n {
		t.Errorf("%d Submitted, want one per doc", got)
	}
	if f := e.count(oxytype.HardFailure) + e.count(oxytype.SoftFailure); f != 0 {
		t.Fatalf("%d failures, want none", f)
	}
	testutil.Eventually(t, 10*time.Second, "the copies' fresh claims to be gone", func() bool {
		docs, _ := e.claimKeys()
		return docs == 0
	})
}
