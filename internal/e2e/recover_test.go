package e2e

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/oxypipe/oxypipe/pkg/oxytype"
)

// everyStateRules make a run of products 1–5 end in every state: 1
// unfetched (its first status check gets a 404), 2 faulted (the first time
// only), 3 done, 4 rejected, 5 unsubmitted (its first submission gets a 403,
// which stops submitting).
const everyStateRules = `{"rules": [
	{"pattern": "products/1$", "outcome": {"status_failure": {"status": 404, "message": "Not Found", "times": 1}}},
	{"pattern": "products/2$", "times": 1, "outcome": {"fault": true}},
	{"pattern": "products/4$", "outcome": {"reject": {"status": 400, "message": "Unsupported source."}}},
	{"pattern": "products/5$", "times": 1, "outcome": {"submit_failure": {"status": 403, "message": "Forbidden"}}}
], "job_time": "200ms"}`

// TestRecoverEveryState recovers a run log holding every state: the
// unfetched job is fetched by id, the faulted and unsubmitted payloads are
// submitted again, the done and rejected lines stay; nothing is billed twice.
func TestRecoverEveryState(t *testing.T) {
	t.Parallel()
	sb := startSandbox(t, everyStateRules)
	dir := t.TempDir()
	// Products 4 and 5 differ from 1–3 in one key, so each goes to the API
	// in its own request and the 403 affects product 5 alone.
	writeFile(t, filepath.Join(dir, "payloads.jsonl"), products(1, 3)+
		`{"source": "universal", "url": "https://sandbox.oxylabs.io/products/4", "user_agent_type": "desktop"}`+"\n"+
		`{"source": "universal", "url": "https://sandbox.oxylabs.io/products/5", "geo_location": "United States"}`+"\n")
	first := oxy(t, dir, sb.env(), nil, "run", "payloads.jsonl", "-d", "results", "--run-log", "logs")
	if first.code != 1 {
		t.Fatalf("run: exit %d; stderr:\n%s", first.code, first.stderr)
	}
	path, lines := readRunLog(t, filepath.Join(dir, "logs"))
	got := []oxytype.State{}
	for _, l := range lines {
		got = append(got, l.State)
	}
	want := []oxytype.State{oxytype.Unfetched, oxytype.Faulted, oxytype.Done, oxytype.Rejected, oxytype.Unsubmitted}
	if !slices.Equal(got, want) {
		t.Fatalf("run log states %v, want %v; stderr:\n%s", got, want, first.stderr)
	}
	unfetchedID := *lines[0].ID

	res := oxy(t, dir, sb.env(), nil, "recover", path, "-d", "results")
	if res.code != 1 {
		t.Fatalf("recover: exit %d (want 1: the rejected payload stays); stderr:\n%s", res.code, res.stderr)
	}
	plan := "Recovering " + path + " (5 payloads): 1 done; fetching 1 unfetched job by id (free); resubmitting 1 faulted payload; submitting 1 unsubmitted payload; leaving 1 rejected payload as it is.\n"
	if !strings.HasPrefix(res.stderr, plan) {
		t.Errorf("stderr does not start with the plan %q:\n%s", plan, res.stderr)
	}
	for _, want := range []string{
		"Rejected universal https://sandbox.oxylabs.io/products/4: 400 Unsupported source.\n\n1 rejected\n",
		"hint: the new run log is ",
	} {
		if !strings.Contains(res.stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, res.stderr)
		}
	}

	logs := files(t, filepath.Join(dir, "logs"))
	if len(logs) != 2 {
		t.Fatalf("logs %v, want the run's and the recovery's", logs)
	}
	recovered := readLines(t, filepath.Join(dir, "logs", logs[1]))
	got = got[:0]
	for _, l := range recovered {
		got = append(got, l.State)
	}
	want = []oxytype.State{oxytype.Done, oxytype.Done, oxytype.Done, oxytype.Rejected, oxytype.Done}
	if !slices.Equal(got, want) {
		t.Fatalf("recovered run log states %v, want %v", got, want)
	}
	if *recovered[0].ID != unfetchedID {
		t.Errorf("the unfetched job's line has id %s, want %s (fetched, not resubmitted)", *recovered[0].ID, unfetchedID)
	}
	for i, l := range recovered {
		if string(l.Payload) != string(lines[i].Payload) {
			t.Errorf("line %d payload %s, want %s", i+1, l.Payload, lines[i].Payload)
		}
	}
	var names []string
	for _, l := range recovered {
		if l.State == oxytype.Done {
			names = append(names, *l.ID+".json")
		}
	}
	slices.Sort(names)
	if got := files(t, filepath.Join(dir, "results")); !slices.Equal(got, names) {
		t.Errorf("results %v, want the done jobs' files %v", got, names)
	}

	st := sb.stats(t)
	wantBilled := map[string]int64{
		"https://sandbox.oxylabs.io/products/1": 1, // fetched by id
		"https://sandbox.oxylabs.io/products/2": 2, // faulted (free), then resubmitted
		"https://sandbox.oxylabs.io/products/3": 1,
		"https://sandbox.oxylabs.io/products/5": 1, // refused, then submitted
	}
	for input, n := range wantBilled {
		if st.CreatedByInput[input] != n {
			t.Errorf("%s: %d jobs created, want %d", input, st.CreatedByInput[input], n)
		}
	}
	if st.ResultsBilled != 4 {
		t.Errorf("%d results billed, want 4 (one per done payload)", st.ResultsBilled)
	}
}

// TestRecoverLeavesWhatMayHaveBilled recovers a hand-written run log whose
// unsubmitted payloads cannot be resubmitted safely: one whose submission's
// outcome is unknown (it may have billed), one whose credentials the log
// redacted. Nothing is sent.
func TestRecoverLeavesWhatMayHaveBilled(t *testing.T) {
	t.Parallel()
	sb := startSandbox(t, "")
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "run.jsonl"),
		`{"state":"done","id":"7500000000000000009","payload":{"source":"universal","url":"https://sandbox.oxylabs.io/products/1"},"error":null,"upload":null}`+"\n"+
			`{"state":"unsubmitted","id":null,"payload":{"source":"universal","url":"https://sandbox.oxylabs.io/products/2"},"error":{"status_code":null,"message":"the outcome of this payload's submission is unknown: the API may have created (and billed) a job, so it is not resubmitted automatically","trace_id":"","may_have_billed":true},"upload":null}`+"\n"+
			`{"state":"faulted","id":"7500000000000000010","payload":{"source":"universal","url":"https://sandbox.oxylabs.io/products/3","storage_type":"s3","storage_url":"https://redacted:redacted@bucket.example.com/out"},"error":null,"upload":null}`+"\n")
	res := oxy(t, dir, sb.env(), nil, "recover", "run.jsonl", "-d", "results")
	if res.code != 1 {
		t.Fatalf("exit %d, want 1; stderr:\n%s", res.code, res.stderr)
	}
	for _, want := range []string{
		"warning: line 2: the submission's outcome is unknown and may have billed; it is not resubmitted (--resubmit-unknown resubmits it)",
		"warning: line 3: the run log redacted the payload's credentials; put them back and run it again",
		"Nothing to fetch or resubmit.",
	} {
		if !strings.Contains(res.stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, res.stderr)
		}
	}
	if st := sb.stats(t); submissions(st) != 0 {
		t.Errorf("%d submissions, want none", submissions(st))
	}
}
