package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/oxypipe/oxypipe/internal/testutil"
	"github.com/oxypipe/oxypipe/pkg/emulator"
	"github.com/oxypipe/oxypipe/pkg/oxytype"
)

// apiRequests is how many requests the sandbox answered, its own stats
// reads left out.
func apiRequests(st emulator.Stats) int64 {
	var n int64
	for ep, c := range st.Requests {
		if ep != emulator.EndpointStats {
			n += c
		}
	}
	return n
}

// bodyLine is what a results body printed on stdout holds.
type bodyLine struct {
	Results []struct {
		Content string `json:"content"`
	} `json:"results"`
	Job struct {
		ID     string `json:"id"`
		URL    string `json:"url"`
		Query  string `json:"query"`
		Source string `json:"source"`
		Render string `json:"render"`
	} `json:"job"`
}

func parseBodies(t *testing.T, stdout string) []bodyLine {
	t.Helper()
	var out []bodyLine
	for _, l := range nonEmptyLines(stdout) {
		var b bodyLine
		if err := json.Unmarshal([]byte(l), &b); err != nil {
			t.Fatalf("stdout line is not a results body: %v: %.200s", err, l)
		}
		if len(b.Results) == 0 || b.Job.ID == "" {
			t.Fatalf("stdout line has no results or no job: %.200s", l)
		}
		out = append(out, b)
	}
	return out
}

// TestRunSourceInputsPrintsBodies: `oxy run SOURCE INPUT…` without -d
// prints each done job's results body as one JSON line, and a typed option
// reaches every payload.
func TestRunSourceInputsPrintsBodies(t *testing.T) {
	t.Parallel()
	sb := startSandbox(t, "")
	dir := t.TempDir()
	res := oxy(t, dir, sb.env(), nil, "run", "universal",
		"https://sandbox.oxylabs.io/products/1", "https://sandbox.oxylabs.io/products/2", "--render", "html", "--run-log", "logs")
	if res.code != 0 {
		t.Fatalf("exit %d, stderr:\n%s", res.code, res.stderr)
	}
	bodies := parseBodies(t, res.stdout)
	got := map[string]bool{}
	for _, b := range bodies {
		got[b.Job.URL] = true
		if b.Job.Source != "universal" || b.Job.Render != "html" {
			t.Errorf("job %+v, want source universal and render html", b.Job)
		}
		if !strings.Contains(b.Results[0].Content, "<html") {
			t.Errorf("job %s: content is not the page", b.Job.ID)
		}
	}
	if len(bodies) != 2 || !got["https://sandbox.oxylabs.io/products/1"] || !got["https://sandbox.oxylabs.io/products/2"] {
		t.Errorf("stdout has %d bodies for %v, want the two products", len(bodies), got)
	}
	_, lines := readRunLog(t, filepath.Join(dir, "logs"))
	for i, l := range lines {
		want := fmt.Sprintf(`{"source":"universal","url":"https://sandbox.oxylabs.io/products/%d","render":"html"}`, i+1)
		if l.State != oxytype.Done || string(l.Payload) != want {
			t.Errorf("run log line %d: %s %s, want done %s", i+1, l.State, l.Payload, want)
		}
	}
	if st := sb.stats(t); st.JobsCreated != 2 || st.Requests[emulator.EndpointResults] != 2 {
		t.Errorf("the sandbox created %d jobs and answered %d results GETs, want 2 and 2", st.JobsCreated, st.Requests[emulator.EndpointResults])
	}
}

// TestRunSourceReadsStdinInputs: SOURCE without INPUT reads one input per
// stdin line (url for "://", query otherwise; -k overrides), and an empty
// stdin ends with exit 0 and no request.
func TestRunSourceReadsStdinInputs(t *testing.T) {
	t.Parallel()
	sb := startSandbox(t, "")
	t.Run("each line is one input", func(t *testing.T) {
		dir := t.TempDir()
		stdin := "https://sandbox.oxylabs.io/products/1\n\n  https://sandbox.oxylabs.io/products/2  \n"
		res := oxy(t, dir, sb.env(), strings.NewReader(stdin), "run", "universal", "-d", "results", "--run-log", "logs", "--geo-location", "Germany")
		if res.code != 0 {
			t.Fatalf("exit %d, stderr:\n%s", res.code, res.stderr)
		}
		if n := len(res.lines()); n != 2 {
			t.Errorf("stdout has %d job lines, want 2 (with -d, one summary per job):\n%s", n, res.stdout)
		}
		_, lines := readRunLog(t, filepath.Join(dir, "logs"))
		want := []string{
			`{"source":"universal","url":"https://sandbox.oxylabs.io/products/1","geo_location":"Germany"}`,
			`{"source":"universal","url":"https://sandbox.oxylabs.io/products/2","geo_location":"Germany"}`,
		}
		if len(lines) != len(want) {
			t.Fatalf("run log has %d lines, want %d", len(lines), len(want))
		}
		for i, l := range lines {
			if string(l.Payload) != want[i] {
				t.Errorf("run log line %d payload %s, want %s", i+1, l.Payload, want[i])
			}
		}
	})
	t.Run("an input without :// is a query", func(t *testing.T) {
		res := oxy(t, t.TempDir(), sb.env(), strings.NewReader("laptop\n"), "run", "google_search", "--dry-run")
		if res.code != 0 || strings.TrimSpace(res.stdout) != `{"source":"google_search","query":"laptop"}` {
			t.Errorf("exit %d, stdout %q; stderr:\n%s", res.code, res.stdout, res.stderr)
		}
	})
	t.Run("-k puts every input into its key", func(t *testing.T) {
		res := oxy(t, t.TempDir(), sb.env(), strings.NewReader("B07FZ8S74R\n"), "run", "amazon_product", "-k", "product_id", "--dry-run")
		if res.code != 0 || strings.TrimSpace(res.stdout) != `{"source":"amazon_product","product_id":"B07FZ8S74R"}` {
			t.Errorf("exit %d, stdout %q; stderr:\n%s", res.code, res.stdout, res.stderr)
		}
	})
	before := apiRequests(sb.stats(t))
	t.Run("an empty stdin exits 0", func(t *testing.T) {
		for _, args := range [][]string{{"run", "universal"}, {"run"}, {"run", "-"}} {
			res := oxy(t, t.TempDir(), sb.env(), strings.NewReader(""), args...)
			if res.code != 0 || res.stdout != "" {
				t.Errorf("oxy %v: exit %d, stdout %q, want 0 and nothing; stderr:\n%s", args, res.code, res.stdout, res.stderr)
			}
		}
	})
	if n := apiRequests(sb.stats(t)) - before; n != 0 {
		t.Errorf("the empty runs sent %d requests, want 0", n)
	}
}

// TestDryRunSendsNothing: --dry-run prints the payloads as they would be
// sent, credentials redacted, and the bill on stderr; not one request.
func TestDryRunSendsNothing(t *testing.T) {
	t.Parallel()
	sb := startSandbox(t, "")
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "payloads.jsonl"), products(1, 2)+`{"source": "universal", "url": "https://sandbox.oxylabs.io/products/3", "pages": 4}`+"\n")
	res := oxy(t, dir, sb.env(), nil, "run", "--dry-run", "payloads.jsonl", "-p", "storage_type=s3", "-p", "storage_url=s3://AKIAKEY:topsecret@bucket/out", "-p", "context:=[{\"key\": \"k\", \"value\": 1}]")
	if res.code != 0 {
		t.Fatalf("exit %d, stderr:\n%s", res.code, res.stderr)
	}
	want := []string{
		`{"source":"universal","url":"https://sandbox.oxylabs.io/products/1","storage_type":"s3","storage_url":"s3://redacted:redacted@bucket/out","context":[{"key":"k","value":1}]}`,
		`{"source":"universal","url":"https://sandbox.oxylabs.io/products/2","storage_type":"s3","storage_url":"s3://redacted:redacted@bucket/out","context":[{"key":"k","value":1}]}`,
		`{"source":"universal","url":"https://sandbox.oxylabs.io/products/3","pages":4,"storage_type":"s3","storage_url":"s3://redacted:redacted@bucket/out","context":[{"key":"k","value":1}]}`,
	}
	if got := res.lines(); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("stdout:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if got := res.lastLine(); got != "Would submit 3 jobs, which bill at most 6 results" {
		t.Errorf("stderr's last line %q", got)
	}
	if strings.Contains(res.stdout+res.stderr, "topsecret") || strings.Contains(res.stdout+res.stderr, "AKIAKEY") {
		t.Errorf("the storage credentials were echoed")
	}
	if n := apiRequests(sb.stats(t)); n != 0 {
		t.Errorf("the dry run sent %d requests, want 0", n)
	}
}

// TestPayloadErrorsNeverQuoteValues: a bad option or a clash is invalid
// input (exit 2) before any request, and its message names the option and
// the line, never a value.
func TestPayloadErrorsNeverQuoteValues(t *testing.T) {
	t.Parallel()
	sb := startSandbox(t, "")
	const secret = "hunter2secret"
	cases := []struct {
		name    string
		stdin   string
		args    []string
		wantErr string
	}{
		{"a line that sets what an option sets", products(1, 1) + `{"source": "universal", "url": "https://sandbox.oxylabs.io/products/2", "render": "` + secret + `"}` + "\n",
			[]string{"run", "--render", secret}, "error: line 2 sets render, and so does an option (--render)"},
		{"a number option given a word", "", []string{"run", "universal", "x", "--pages", secret}, "error: invalid value for --pages"},
		{"-p with no =", "", []string{"run", "universal", "x", "-p", secret}, "error: -p number 1: want KEY=VALUE or KEY:=JSON"},
		{"-p := with no JSON", "", []string{"run", "universal", "x", "-p", "storage_url:=s3://k:" + secret + "@b/x"}, "error: -p number 1: the value of storage_url after := is not valid JSON"},
		{"an option set twice", "", []string{"run", "universal", "x", "--storage-url", "s3://k:" + secret + "@b/x", "-p", "storage_url=s3://k:" + secret + "@b/y"}, "error: --storage-url and -p storage_url both set storage_url"},
		{"an option that sets the input", "", []string{"run", "universal", "x", "-p", "url=" + secret}, "error: -p url sets url, which holds each INPUT"},
		{"a FILE with inputs after it", "", []string{"run", "payloads.jsonl", secret}, "error: a FILE of JSON payloads takes no INPUT after it"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			writeFile(t, filepath.Join(dir, "payloads.jsonl"), products(1, 1))
			res := oxy(t, dir, sb.env(), strings.NewReader(c.stdin), c.args...)
			if res.code != 2 || !strings.Contains(res.stderr, c.wantErr) {
				t.Errorf("exit %d, want 2 with %q; stderr:\n%s", res.code, c.wantErr, res.stderr)
			}
			if strings.Contains(res.stdout+res.stderr, secret) {
				t.Errorf("the value was echoed:\n%s%s", res.stdout, res.stderr)
			}
		})
	}
	if n := apiRequests(sb.stats(t)); n != 0 {
		t.Errorf("invalid input sent %d requests, want 0", n)
	}
}

// TestRunArgumentsNameAFileOrASource: the first argument is a file when it
// exists or looks like a path, else a source name.
func TestRunArgumentsNameAFileOrASource(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "universal"), products(5, 1))
	res := oxy(t, dir, env(), nil, "run", "--dry-run", "universal")
	if res.code != 0 || strings.TrimSpace(res.stdout) != `{"source":"universal","url":"https://sandbox.oxylabs.io/products/5"}` {
		t.Errorf("an existing file: exit %d, stdout %q; stderr:\n%s", res.code, res.stdout, res.stderr)
	}
	res = oxy(t, dir, env(), nil, "run", "--dry-run", "missing.jsonl")
	if res.code != 2 || !strings.Contains(res.stderr, "missing.jsonl") {
		t.Errorf("a missing file: exit %d; stderr:\n%s", res.code, res.stderr)
	}
	res = oxy(t, dir, env(), nil, "run", "--dry-run", "google_search", "laptop")
	if res.code != 0 || strings.TrimSpace(res.stdout) != `{"source":"google_search","query":"laptop"}` {
		t.Errorf("a source: exit %d, stdout %q; stderr:\n%s", res.code, res.stdout, res.stderr)
	}
}

// storagePayloads returns n sandbox payloads for products first … that the
// API uploads to the bucket location url.
func storagePayloads(first, n int, url string) string {
	var b strings.Builder
	for i := first; i < first+n; i++ {
		fmt.Fprintf(&b, `{"source": "universal", "url": "https://sandbox.oxylabs.io/products/%d", "storage_type": "gcs", "storage_url": %q}`+"\n", i, url)
	}
	return b.String()
}

// TestUploadsAreWatchedNeverFetched: payloads with a storage_url are watched
// through their job status until the upload entry comes; no result is
// fetched, a failed upload is reported and counted, and the run exits 1.
func TestUploadsAreWatchedNeverFetched(t *testing.T) {
	t.Parallel()
	sb := startSandbox(t, `{"rules": [{"pattern": "products/2$", "outcome": {"upload_code": 13102}}], "job_time": "200ms"}`)
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "payloads.jsonl"), storagePayloads(1, 3, "bucket/run"))
	res := oxy(t, dir, sb.env(), nil, "run", "payloads.jsonl", "--run-log", "logs")
	if res.code != 1 {
		t.Fatalf("exit %d, want 1 (one upload failed); stderr:\n%s", res.code, res.stderr)
	}
	if got := progressCounts(t, res.lastLine()); got != "3/3 done, 2 uploaded, 1 unuploaded" {
		t.Errorf("final line %q", res.lastLine())
	}
	_, lines := readRunLog(t, filepath.Join(dir, "logs"))
	if len(lines) != 3 {
		t.Fatalf("run log has %d lines, want 3", len(lines))
	}
	for i, l := range lines {
		wantCode := 13000
		if i == 1 {
			wantCode = 13102
		}
		if l.State != oxytype.Done || l.Upload == nil || l.Upload.Code != wantCode {
			t.Errorf("run log line %d: %s upload %+v, want done with code %d", i+1, l.State, l.Upload, wantCode)
		}
	}
	if id := lines[1].ID; id == nil || !strings.Contains(res.stderr, "warning: The upload of job "+*id+" failed with 13102 ") {
		t.Errorf("stderr does not report the failed upload:\n%s", res.stderr)
	}
	// The report counts the failed upload; recover has nothing to do for
	// done jobs, so no hint points at it.
	if !strings.Contains(res.stderr, "\n1 unuploaded\n") || strings.Contains(res.stderr, "oxy recover") {
		t.Errorf("stderr should end its report with 1 unuploaded and not hint at oxy recover:\n%s", res.stderr)
	}
	st := sb.stats(t)
	if st.Requests[emulator.EndpointResults] != 0 || st.JobsCreated != 3 || st.Requests[emulator.EndpointStatus] < 3 {
		t.Errorf("the sandbox answered %d results GETs and %d status GETs and created %d jobs, want 0, at least 3 and 3",
			st.Requests[emulator.EndpointResults], st.Requests[emulator.EndpointStatus], st.JobsCreated)
	}
	if n := len(res.lines()); n != 3 {
		t.Errorf("stdout has %d job lines, want 3:\n%s", n, res.stdout)
	}
}

// TestUploadsRefuseADestination: a destination would fetch what the API
// uploads, and a mix of storage and non-storage payloads has no one place
// for its results: both are refused before any request.
func TestUploadsRefuseADestination(t *testing.T) {
	t.Parallel()
	sb := startSandbox(t, "")
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "storage.jsonl"), storagePayloads(1, 2, "bucket/run"))
	writeFile(t, filepath.Join(dir, "mixed.jsonl"), storagePayloads(1, 1, "bucket/run")+products(2, 1))
	res := oxy(t, dir, sb.env(), nil, "run", "storage.jsonl", "-d", "results")
	if res.code != 2 || !strings.Contains(res.stderr, "error: the payloads have a storage_url, so the API uploads their results; -d would fetch every result a second time") {
		t.Errorf("with -d: exit %d; stderr:\n%s", res.code, res.stderr)
	}
	res = oxy(t, dir, sb.env(), nil, "run", "mixed.jsonl", "-d", "results")
	if res.code != 2 || !strings.Contains(res.stderr, "some payloads have a storage_url and others do not") {
		t.Errorf("mixed: exit %d; stderr:\n%s", res.code, res.stderr)
	}
	if n := apiRequests(sb.stats(t)); n != 0 {
		t.Errorf("refused runs sent %d requests, want 0", n)
	}
}

// TestUploadCheckHoldsBackAFailedLocation: with --check-storage (the
// default), the first payload per storage location goes alone; a failed
// upload holds the rest of its location back, never sent, and a rejected
// first payload passes the check on to the next one.
func TestUploadCheckHoldsBackAFailedLocation(t *testing.T) {
	t.Parallel()
	sb := startSandbox(t, `{"rules": [
		{"pattern": "products/11$", "outcome": {"upload_code": 13102}},
		{"pattern": "products/21$", "outcome": {"reject": {"status": 400, "message": "Bad request."}}}
	], "job_time": "200ms"}`)
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "payloads.jsonl"),
		storagePayloads(1, 3, "bucket/good")+storagePayloads(11, 3, "bucket/bad")+storagePayloads(21, 3, "bucket/third"))
	res := oxy(t, dir, sb.env(), nil, "run", "payloads.jsonl", "--run-log", "logs")
	if res.code != 1 {
		t.Fatalf("exit %d, want 1; stderr:\n%s", res.code, res.stderr)
	}
	_, lines := readRunLog(t, filepath.Join(dir, "logs"))
	want := []oxytype.State{oxytype.Done, oxytype.Done, oxytype.Done, oxytype.Done, oxytype.Unsubmitted, oxytype.Unsubmitted, oxytype.Rejected, oxytype.Done, oxytype.Done}
	if len(lines) != len(want) {
		t.Fatalf("run log has %d lines, want %d", len(lines), len(want))
	}
	for i, l := range lines {
		if l.State != want[i] {
			t.Errorf("run log line %d: %s, want %s", i+1, l.State, want[i])
		}
	}
	const held = "Held back 2 payloads for bucket/bad, because the first upload failed"
	if e := lines[4].Error; e == nil || e.Message != held {
		t.Errorf("held-back line's error %+v, want %q", e, held)
	}
	if !strings.Contains(res.stderr, held) {
		t.Errorf("stderr does not say what was held back:\n%s", res.stderr)
	}
	st := sb.stats(t)
	for _, n := range []int{12, 13} {
		if c := st.CreatedByInput[fmt.Sprintf("https://sandbox.oxylabs.io/products/%d", n)]; c != 0 {
			t.Errorf("held-back product %d was created %d times", n, c)
		}
	}
	if st.JobsCreated != 6 || st.Requests[emulator.EndpointResults] != 0 {
		t.Errorf("the sandbox created %d jobs and answered %d results GETs, want 6 and 0", st.JobsCreated, st.Requests[emulator.EndpointResults])
	}
}

// TestUploadsWithoutCheck: --no-check-storage sends every payload at once;
// a failed location then fails for each of them.
func TestUploadsWithoutCheck(t *testing.T) {
	t.Parallel()
	sb := startSandbox(t, `{"rules": [{"pattern": "products/1[123]$", "outcome": {"upload_code": 13102}}], "job_time": "200ms"}`)
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "payloads.jsonl"), storagePayloads(11, 3, "bucket/bad"))
	res := oxy(t, dir, sb.env(), nil, "run", "payloads.jsonl", "--no-check-storage")
	if res.code != 1 || progressCounts(t, res.lastLine()) != "3/3 done, 3 unuploaded" {
		t.Errorf("exit %d, final line %q; stderr:\n%s", res.code, res.lastLine(), res.stderr)
	}
	if st := sb.stats(t); st.JobsCreated != 3 || st.Requests[emulator.EndpointResults] != 0 {
		t.Errorf("the sandbox created %d jobs and answered %d results GETs, want 3 and 0", st.JobsCreated, st.Requests[emulator.EndpointResults])
	}
}

// realtimeEnv is the environment of an oxy process whose Realtime calls go
// to the sandbox.
func (s *sandbox) realtimeEnv() []string {
	return s.env("OXY_REALTIME_URL=" + s.URL + emulator.RealtimePath)
}

// TestRealtimePrintsBodies: `oxy run --realtime` makes one Realtime call per
// payload and prints each body; it never asks for a status or results.
func TestRealtimePrintsBodies(t *testing.T) {
	t.Parallel()
	sb := startSandbox(t, "", "--time-scale", "0.01")
	dir := t.TempDir()
	res := oxy(t, dir, sb.realtimeEnv(), nil, "run", "--realtime", "universal",
		"https://sandbox.oxylabs.io/products/1", "https://sandbox.oxylabs.io/products/2", "--run-log", "logs")
	if res.code != 0 {
		t.Fatalf("exit %d, stderr:\n%s", res.code, res.stderr)
	}
	if n := len(parseBodies(t, res.stdout)); n != 2 {
		t.Errorf("stdout has %d bodies, want 2", n)
	}
	_, lines := readRunLog(t, filepath.Join(dir, "logs"))
	if got := states(lines); got[oxytype.Done] != 2 || len(lines) != 2 {
		t.Errorf("run log states %v, want 2 done", got)
	}
	st := sb.stats(t)
	if st.Requests[emulator.EndpointRealtime] != 2 || st.Requests[emulator.EndpointStatus] != 0 || st.Requests[emulator.EndpointResults] != 0 || submissions(st) != 0 {
		t.Errorf("requests %v, want 2 Realtime calls and nothing else", st.Requests)
	}
}

// TestFaultRealtimeOutcomes: a rejection, a 408, an answer that leaves the
// outcome unknown and a 429 each end as the money rules say: only the 429
// is sent again, the unknown outcome is never re-sent and is marked
// may_have_billed.
func TestFaultRealtimeOutcomes(t *testing.T) {
	t.Parallel()
	sb := startSandbox(t, `{"rules": [
		{"pattern": "products/2$", "outcome": {"reject": {"status": 400, "message": "Bad request."}}},
		{"pattern": "products/3$", "outcome": {"submit_failure": {"status": 500, "after_create": true}}},
		{"pattern": "products/4$", "outcome": {"job_time": "200s"}},
		{"pattern": "products/5$", "outcome": {"submit_failure": {"status": 429, "times": 1}}}
	]}`, "--time-scale", "0.01")
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "payloads.jsonl"), products(1, 5))
	res := oxy(t, dir, sb.realtimeEnv(), nil, "run", "--realtime", "payloads.jsonl", "-d", "results", "--run-log", "logs")
	if res.code != 1 {
		t.Fatalf("exit %d, want 1; stderr:\n%s", res.code, res.stderr)
	}
	_, lines := readRunLog(t, filepath.Join(dir, "logs"))
	want := []oxytype.State{oxytype.Done, oxytype.Rejected, oxytype.Unsubmitted, oxytype.Rejected, oxytype.Done}
	if len(lines) != len(want) {
		t.Fatalf("run log has %d lines, want %d", len(lines), len(want))
	}
	for i, l := range lines {
		if l.State != want[i] {
			t.Errorf("run log line %d: %s, want %s", i+1, l.State, want[i])
		}
	}
	if e := lines[2].Error; e == nil || !e.MayHaveBilled {
		t.Errorf("the unknown outcome's error %+v, want may_have_billed", e)
	}
	const timedOut = "Timed out. Realtime returns 408 for a job that runs 150 seconds or longer, so run this payload with Push-Pull"
	if e := lines[3].Error; e == nil || e.Message != timedOut || e.StatusCode == nil || *e.StatusCode != 408 {
		t.Errorf("the 408's error %+v, want %q", e, timedOut)
	}
	if got := files(t, filepath.Join(dir, "results")); len(got) != 2 {
		t.Errorf("results %v, want the 2 done jobs", got)
	}
	st := sb.stats(t)
	if st.Requests[emulator.EndpointRealtime] != 6 || st.Requests[emulator.EndpointStatus] != 0 || st.Requests[emulator.EndpointResults] != 0 || submissions(st) != 0 {
		t.Errorf("requests %v, want 6 Realtime calls (the 429 twice) and nothing else", st.Requests)
	}
	if c := st.CreatedByInput["https://sandbox.oxylabs.io/products/3"]; c != 1 {
		t.Errorf("the unknown outcome's payload was created %d times, want exactly 1", c)
	}
}

// TestRealtimeRefusedInTheDeployedShape: the deployed pipeline has no
// Realtime stage, and Realtime refuses storage_url: both are refused before
// any request.
func TestRealtimeRefusedInTheDeployedShape(t *testing.T) {
	t.Parallel()
	sb := startSandbox(t, "")
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "storage.jsonl"), storagePayloads(1, 1, "bucket/x"))
	res := oxy(t, dir, sb.realtimeEnv(), nil, "run", "--realtime", "--nats", "nats://127.0.0.1:1", "-d", "/srv/results", "universal", "https://sandbox.oxylabs.io/products/1")
	if res.code != 2 || !strings.Contains(res.stderr, "error: --realtime runs in this process: the deployed pipeline has no Realtime stage") {
		t.Errorf("--nats: exit %d; stderr:\n%s", res.code, res.stderr)
	}
	res = oxy(t, dir, sb.realtimeEnv(), nil, "run", "--realtime", "storage.jsonl")
	if res.code != 2 || !strings.Contains(res.stderr, "error: Realtime does not upload to cloud storage") {
		t.Errorf("storage_url: exit %d; stderr:\n%s", res.code, res.stderr)
	}
	if n := apiRequests(sb.stats(t)); n != 0 {
		t.Errorf("refused runs sent %d requests, want 0", n)
	}
}

// TestFaultRealtimeStopNowMayHaveBilled: the first Ctrl+C sends nothing
// more; the second cuts the calls in flight, and each ends unsubmitted and
// marked may_have_billed (its job exists at the API).
func TestFaultRealtimeStopNowMayHaveBilled(t *testing.T) {
	t.Parallel()
	sb := startSandbox(t, `{"job_time": "100s"}`)
	dir := t.TempDir()
	const total = 20
	writeFile(t, filepath.Join(dir, "payloads.jsonl"), products(1, total))
	p := start(t, dir, nil, sb.realtimeEnv(), "run", "--realtime", "payloads.jsonl", "-d", "results", "--run-log", "logs")
	testutil.Eventually(t, 30*time.Second, "8 Realtime calls in flight", func() bool { return sb.stats(t).Requests[emulator.EndpointRealtime] == 8 })
	p.signal(t, os.Interrupt)
	testutil.Eventually(t, 10*time.Second, "the stopping hint", func() bool { return strings.Contains(p.stderrSoFar(), "hint: stopping: nothing more is sent") })
	p.signal(t, os.Interrupt)
	res := p.wait(t, 30*time.Second)
	if res.code != 130 {
		t.Fatalf("exit %d, want 130; stderr:\n%s", res.code, res.stderr)
	}
	_, lines := readRunLog(t, filepath.Join(dir, "logs"))
	marked := 0
	for _, l := range lines {
		if l.State != oxytype.Unsubmitted {
			t.Errorf("run log line %+v, want unsubmitted", l)
		}
		if l.Error != nil && l.Error.MayHaveBilled {
			marked++
		}
	}
	if len(lines) != total || marked != 8 {
		t.Errorf("run log: %d lines, %d marked may_have_billed; want %d and the 8 in flight", len(lines), marked, total)
	}
	if st := sb.stats(t); st.Requests[emulator.EndpointRealtime] != 8 || st.JobsCreated != 8 {
		t.Errorf("the sandbox saw %d Realtime calls and created %d jobs, want 8 and 8", st.Requests[emulator.EndpointRealtime], st.JobsCreated)
	}
}
