package e2e

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/oxypipe/oxypipe/internal/testutil"
)

// TestGetWritesDoneJobsAndWarnsOnTheRest fetches a done, a faulted, a
// pending and an unknown job by id.
func TestGetWritesDoneJobsAndWarnsOnTheRest(t *testing.T) {
	t.Parallel()
	sb := startSandbox(t, `{"rules": [
		{"pattern": "products/2$", "outcome": {"fault": true}},
		{"pattern": "products/3$", "outcome": {"stay_pending": true}}
	], "job_time": "100ms"}`)
	var ids []string
	for _, n := range []string{"1", "2", "3"} {
		ids = append(ids, submit(t, sb, "https://sandbox.oxylabs.io/products/"+n))
	}
	testutil.Eventually(t, 10*time.Second, "jobs 1 and 2 to finish", func() bool {
		st := sb.stats(t)
		return st.JobsDone == 1 && st.JobsFaulted == 1
	})

	dir := t.TempDir()
	res := oxy(t, dir, sb.env(), nil, append(append([]string{"get"}, ids...), "7500000000000000099", "-d", "out")...)
	if res.code != 1 {
		t.Fatalf("exit %d, want 1 (pending and unknown jobs); stderr:\n%s", res.code, res.stderr)
	}
	wantOut := []string{
		`{"id":"` + ids[0] + `","status":"done","source":"universal","input":"https://sandbox.oxylabs.io/products/1","file":"out/` + ids[0] + `.json"}`,
		`{"id":"` + ids[1] + `","status":"faulted","source":"universal","input":"https://sandbox.oxylabs.io/products/2"}`,
		`{"id":"` + ids[2] + `","status":"pending","source":"universal","input":"https://sandbox.oxylabs.io/products/3"}`,
	}
	if got := res.lines(); strings.Join(got, "\n") != strings.Join(wantOut, "\n") {
		t.Errorf("stdout:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(wantOut, "\n"))
	}
	wantErr := "warning: job " + ids[1] + " faulted: universal https://sandbox.oxylabs.io/products/2\n" +
		"warning: job " + ids[2] + " is pending\n" +
		"warning: job 7500000000000000099 was not found (404 Query not found.)\n"
	if res.stderr != wantErr {
		t.Errorf("stderr:\n%s\nwant:\n%s", res.stderr, wantErr)
	}
	body, err := os.ReadFile(filepath.Join(dir, "out", ids[0]+".json"))
	if err != nil {
		t.Fatal(err)
	}
	if want := results(t, sb, ids[0]); !bytes.Equal(body, want) {
		t.Errorf("%s.json differs from the API's body:\n%s\nwant:\n%s", ids[0], body, want)
	}
	if got := files(t, filepath.Join(dir, "out")); len(got) != 1 {
		t.Errorf("out holds %v, want only the done job's file", got)
	}

	bad := oxy(t, dir, sb.env(), nil, "get", "not-a-job")
	if bad.code != 2 || !strings.Contains(bad.stderr, `error: "not-a-job" is not a job id`) {
		t.Errorf("get not-a-job: exit %d, stderr %q", bad.code, bad.stderr)
	}
}

// submit creates a job on the sandbox directly and returns its id.
func submit(t *testing.T, sb *sandbox, url string) string {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, sb.URL+"/v1/queries", strings.NewReader(`{"source":"universal","url":"`+url+`"}`))
	if err != nil {
		t.Fatal(err)
	}
	req.SetBasicAuth("user", "pass")
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	var job struct {
		ID string `json:"id"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&job); err != nil || job.ID == "" {
		t.Fatalf("submit %s: %s, %v", url, resp.Status, err)
	}
	return job.ID
}

// results reads a job's results body from the sandbox.
func results(t *testing.T, sb *sandbox, id string) []byte {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, sb.URL+"/v1/queries/"+id+"/results", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.SetBasicAuth("user", "pass")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("results of %s: %s, %v", id, resp.Status, err)
	}
	return body
}
