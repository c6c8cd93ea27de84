package e2e

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/oxypipe/oxypipe/pkg/oxytype"
	"github.com/oxypipe/oxypipe/pkg/runlog"
)

// unknownRules make the API create the jobs of products 100–105 and then
// answer 500 to each one's first submission, however they are batched, as a
// user scripts it in a rules file.
const unknownRules = `{"rules": [
	{"pattern": "products/10[0-5]$", "outcome": {"submit_failure": {"status": 500, "after_create": true, "times": 1}}}
], "job_time": "200ms"}`

// unknownPayloads is 34 plain payloads and 6 (products 100–105) that share
// a geo_location, so that they go to the API as a batch of their own.
func unknownPayloads() string {
	var b strings.Builder
	b.WriteString(products(1, 34))
	for i := 100; i < 106; i++ {
		fmt.Fprintf(&b, `{"source": "universal", "url": "https://sandbox.oxylabs.io/products/%d", "geo_location": "Germany"}`+"\n", i)
	}
	return b.String()
}

// isUnknown reports whether a product's number is one of the six whose
// answer the rules turn into a 500.
func isUnknown(l runlog.Line) bool {
	for i := 100; i < 106; i++ {
		if strings.Contains(string(l.Payload), fmt.Sprintf(`products/%d"`, i)) {
			return true
		}
	}
	return false
}

// TestFaultAnUnknownOutcomeIsBilledOnceAndHeldBack runs 40 payloads of which
// 6 get a 500 after the API created their jobs: each is billed once, ends
// unsubmitted with the structured mark, and the run exits 1. oxy recover
// holds them back; with --resubmit-unknown it submits them again, as asked.
func TestFaultAnUnknownOutcomeIsBilledOnceAndHeldBack(t *testing.T) {
	t.Parallel()
	sb := startSandbox(t, unknownRules)
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "payloads.jsonl"), unknownPayloads())
	res := oxy(t, dir, sb.env(), nil, "run", "payloads.jsonl", "-d", "results", "--run-log", "logs")
	if res.code != 1 {
		t.Fatalf("run: exit %d, want 1; stderr:\n%s", res.code, res.stderr)
	}
	for _, want := range []string{
		"Not submitted again, because the API returned 500 Internal Server Error; the API may have created (and billed) a job; 6 payloads stay unsubmitted\n",
		"hint: 6 unsubmitted payloads may have billed already (\"may_have_billed\": true in the run log): oxy recover holds them back unless given --resubmit-unknown\n",
	} {
		if !strings.Contains(res.stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, res.stderr)
		}
	}
	path, lines := readRunLog(t, filepath.Join(dir, "logs"))
	if got := states(lines); got[oxytype.Done] != 34 || got[oxytype.Unsubmitted] != 6 || len(lines) != 40 {
		t.Fatalf("run log states %v, want 34 done and 6 unsubmitted", got)
	}
	for i, l := range lines {
		marked := l.Error != nil && l.Error.MayHaveBilled
		if marked != (l.State == oxytype.Unsubmitted) || (l.State == oxytype.Unsubmitted) != isUnknown(l) {
			t.Errorf("line %d: %s, error %+v", i+1, l.State, l.Error)
		}
	}
	if n := len(files(t, filepath.Join(dir, "results"))); n != 34 {
		t.Errorf("%d result files, want 34", n)
	}
	st := sb.stats(t)
	for _, l := range lines {
		var p struct{ URL string }
		if err := json.Unmarshal(l.Payload, &p); err != nil {
			t.Fatal(err)
		}
		if n := st.CreatedByInput[p.URL]; n != 1 {
			t.Errorf("%s billed %d times, want 1", p.URL, n)
		}
	}
	if st.JobsCreated != 40 {
		t.Fatalf("%d jobs created, want 40", st.JobsCreated)
	}

	held := oxy(t, dir, sb.env(), nil, "recover", path, "-d", "results")
	if held.code != 1 {
		t.Fatalf("recover: exit %d, want 1; stderr:\n%s", held.code, held.stderr)
	}
	plan := "Recovering " + path + " (40 payloads): 34 done; holding back 6 unsubmitted payloads that may have billed " +
		"(their outcome is unknown; --resubmit-unknown resubmits them).\n"
	if !strings.HasPrefix(held.stderr, plan) || !strings.Contains(held.stderr, "Nothing to fetch or resubmit.") {
		t.Fatalf("stderr does not start with the plan %q:\n%s", plan, held.stderr)
	}
	if got := sb.stats(t).JobsCreated; got != 40 {
		t.Fatalf("%d jobs after recover, want still 40", got)
	}

	again := oxy(t, dir, sb.env(), nil, "recover", path, "-d", "results", "--resubmit-unknown", "--run-log", "recovered")
	if again.code != 0 {
		t.Fatalf("recover --resubmit-unknown: exit %d; stderr:\n%s", again.code, again.stderr)
	}
	for _, want := range []string{
		"Recovering " + path + " (40 payloads): 34 done; submitting 6 unsubmitted payloads.\n",
		"warning: --resubmit-unknown: 6 resubmitted payloads may have billed already and may bill twice\n",
	} {
		if !strings.Contains(again.stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, again.stderr)
		}
	}
	_, recovered := readRunLog(t, filepath.Join(dir, "recovered"))
	if got := states(recovered); got[oxytype.Done] != 40 {
		t.Fatalf("recovered run log states %v, want 40 done", got)
	}
	st = sb.stats(t)
	if st.JobsCreated != 46 {
		t.Fatalf("%d jobs, want 46: the 6 unknown payloads twice, as the user asked", st.JobsCreated)
	}
}

// TestFaultRetryUnknownOnceFinishesARunAtTwiceTheCost runs the same input
// with --retry-unknown-once: the 6 payloads are sent once more, billed
// twice, and the run ends done.
func TestFaultRetryUnknownOnceFinishesARunAtTwiceTheCost(t *testing.T) {
	t.Parallel()
	sb := startSandbox(t, unknownRules)
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "payloads.jsonl"), unknownPayloads())
	res := oxy(t, dir, sb.env(), nil, "run", "payloads.jsonl", "-d", "results", "--run-log", "logs", "--retry-unknown-once")
	if res.code != 0 {
		t.Fatalf("run: exit %d, want 0; stderr:\n%s", res.code, res.stderr)
	}
	_, lines := readRunLog(t, filepath.Join(dir, "logs"))
	if got := states(lines); got[oxytype.Done] != 40 {
		t.Fatalf("run log states %v, want 40 done", got)
	}
	st := sb.stats(t)
	for i := 100; i < 106; i++ {
		if n := st.CreatedByInput[fmt.Sprintf("https://sandbox.oxylabs.io/products/%d", i)]; n != 2 {
			t.Errorf("product %d billed %d times, want 2", i, n)
		}
	}
	if st.JobsCreated != 46 {
		t.Fatalf("%d jobs, want 46", st.JobsCreated)
	}

	refused := oxy(t, dir, sb.env(), nil, "run", "payloads.jsonl", "-d", "results", "--nats", "nats://127.0.0.1:1", "--retry-unknown-once")
	if refused.code != 2 || !strings.Contains(refused.stderr, "set OXY_RETRY_UNKNOWN_ONCE on the deployed submitters") {
		t.Fatalf("with --nats: exit %d, stderr:\n%s", refused.code, refused.stderr)
	}
}
