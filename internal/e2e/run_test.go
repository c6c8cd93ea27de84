package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/oxypipe/oxypipe/pkg/oxytype"
)

// TestQuickStart runs the README's first command: the example payloads, in
// one process, on the built-in sandbox.
func TestQuickStart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	res := oxy(t, dir, env(), nil, "run", "--sandbox", filepath.Join(repoRoot, "examples", "payloads.jsonl"), "-d", "results", "--run-log", "logs")
	if res.code != 0 {
		t.Fatalf("exit %d, stderr:\n%s", res.code, res.stderr)
	}
	if got := progressCounts(t, res.lastLine()); got != "6/6 done, 6 written" {
		t.Errorf("final line %q, want 6/6 done, 6 written, <elapsed>", res.lastLine())
	}
	var ids []string
	for _, l := range res.lines() {
		var job struct {
			Doc    int     `json:"doc"`
			ID     string  `json:"id"`
			Status string  `json:"status"`
			Input  string  `json:"input"`
			File   string  `json:"file"`
			Error  *string `json:"error"`
		}
		if err := json.Unmarshal([]byte(l), &job); err != nil {
			t.Fatalf("stdout line %q: %v", l, err)
		}
		if job.Status != "done" || job.File != filepath.Join("results", job.ID+".json") || !strings.HasPrefix(job.Input, "https://sandbox.oxylabs.io/products/") {
			t.Errorf("stdout line %q", l)
		}
		body, err := os.ReadFile(filepath.Join(dir, job.File))
		if err != nil {
			t.Fatal(err)
		}
		if !json.Valid(body) || strings.Count(strings.TrimSpace(string(body)), "\n") != 0 || !strings.Contains(string(body), job.Input) {
			t.Errorf("%s is not the API's one-line body for %s", job.File, job.Input)
		}
		ids = append(ids, job.ID+".json")
	}
	slices.Sort(ids)
	if got := files(t, filepath.Join(dir, "results")); !reflect.DeepEqual(got, ids) || len(ids) != 6 {
		t.Errorf("results %v, want the 6 files of stdout %v", got, ids)
	}
	_, lines := readRunLog(t, filepath.Join(dir, "logs"))
	if len(lines) != 6 {
		t.Fatalf("run log has %d lines, want 6", len(lines))
	}
	for i, l := range lines {
		if l.State != oxytype.Done || l.ID == nil || l.Error != nil || !strings.Contains(string(l.Payload), `"url":"https://sandbox.oxylabs.io/products/`+string(rune('1'+i))+`"`) {
			t.Errorf("run log line %d: %+v %s", i+1, l, l.Payload)
		}
	}
}

// TestSeedExample runs the three-payload example of examples/sandbox-rules.json: one job whose status
// check gets a 404, one that faults, one done.
func TestSeedExample(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "payloads.jsonl"), products(1, 3))
	writeFile(t, filepath.Join(dir, "rules.json"), `{"rules": [
		{"pattern": "products/1$", "outcome": {"status_failure": {"status": 404, "message": "Not Found"}}},
		{"pattern": "products/2$", "outcome": {"fault": true}}
	], "job_time": "200ms"}`)
	res := oxy(t, dir, env(), nil, "run", "--sandbox", "--sandbox-rules", "rules.json", "payloads.jsonl", "-d", "results", "--run-log", "logs")
	if res.code != 1 {
		t.Fatalf("exit %d, want 1 (unfetched); stderr:\n%s", res.code, res.stderr)
	}
	wantReport := "Stopped checking job 7500000000000000001, because the API returned 404 Not Found: universal https://sandbox.oxylabs.io/products/1\n" +
		"Job 7500000000000000002 faulted: universal https://sandbox.oxylabs.io/products/2\n" +
		"\n" +
		"1 unfetched\n"
	if !strings.Contains(res.stderr, wantReport) {
		t.Errorf("stderr lacks the example's report:\n%s\nstderr:\n%s", wantReport, res.stderr)
	}
	if got := progressCounts(t, nonEmptyLines(res.stderr)[len(nonEmptyLines(res.stderr))-2]); got != "1/3 done, 1 faulted, 1 unfetched, 1 written" {
		t.Errorf("progress line %q", got)
	}
	if !strings.HasPrefix(res.lastLine(), "hint: recover what is left without paying twice: oxy recover ") {
		t.Errorf("last line %q, want the recover hint", res.lastLine())
	}
	if got := files(t, filepath.Join(dir, "results")); !reflect.DeepEqual(got, []string{"7500000000000000003.json"}) {
		t.Errorf("results %v, want only the done job's file", got)
	}

	path, _ := readRunLog(t, filepath.Join(dir, "logs"))
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var got []any
	for _, l := range nonEmptyLines(string(data)) {
		var v any
		if err := json.Unmarshal([]byte(l), &v); err != nil {
			t.Fatal(err)
		}
		got = append(got, v)
	}
	var want []any
	if err := json.Unmarshal([]byte(`[
		{"state": "unfetched", "id": "7500000000000000001",
		 "payload": {"source": "universal", "url": "https://sandbox.oxylabs.io/products/1"},
		 "error": {"status_code": 404, "message": "Not Found", "trace_id": "00000001-000000000000000000000000"},
		 "upload": null},
		{"state": "faulted", "id": "7500000000000000002",
		 "payload": {"source": "universal", "url": "https://sandbox.oxylabs.io/products/2"},
		 "error": null, "upload": null},
		{"state": "done", "id": "7500000000000000003",
		 "payload": {"source": "universal", "url": "https://sandbox.oxylabs.io/products/3"},
		 "error": null, "upload": null}]`), &want); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("run log:\n%s\nwant the example's three lines", data)
	}
	if !strings.HasPrefix(filepath.Base(path), "20") || !strings.HasSuffix(path, "Z.jsonl") {
		t.Errorf("run log name %s, want <UTC start>.jsonl", filepath.Base(path))
	}
}

// TestInvalidInputSendsNothing checks every failure that must happen before
// the first request: exit 2, an error line, nothing billed, no request.
func TestInvalidInputSendsNothing(t *testing.T) {
	t.Parallel()
	sb := startSandbox(t, "")
	cases := []struct {
		name    string
		input   string
		args    []string
		env     []string
		wantErr string
	}{
		{
			name:    "a line that is not JSON",
			input:   products(1, 1) + "{\"source\": \"universal\", \"url\": \n" + products(3, 1),
			wantErr: "error: line 2: ",
		},
		{
			name:    "a line without a source",
			input:   products(1, 2) + `{"url": "https://sandbox.oxylabs.io/products/3"}` + "\n",
			wantErr: `error: line 3: the payload has no "source"`,
		},
		{
			name:    "a destination that cannot be created",
			input:   products(1, 2),
			args:    []string{"-d", "blocker/results"},
			wantErr: "error: the destination cannot be written, so nothing was sent",
		},
		{
			name:    "a run log that cannot be written",
			input:   products(1, 2),
			args:    []string{"--run-log", "blocker/logs"},
			wantErr: "error: the run log cannot be written, so nothing was sent",
		},
		{
			name:    "no credentials",
			input:   products(1, 2),
			env:     env("OXY_API_URL=" + sb.URL),
			wantErr: "error: OXY_WSA_USERNAME and OXY_WSA_PASSWORD must be set",
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			writeFile(t, filepath.Join(dir, "payloads.jsonl"), c.input)
			writeFile(t, filepath.Join(dir, "blocker"), "a file, so nothing can be created under it")
			args := append([]string{"run", "payloads.jsonl"}, c.args...)
			if !slices.Contains(args, "-d") {
				args = append(args, "-d", "results")
			}
			environ := c.env
			if environ == nil {
				environ = sb.env()
			}
			res := oxy(t, dir, environ, nil, args...)
			if res.code != 2 {
				t.Errorf("exit %d, want 2; stderr:\n%s", res.code, res.stderr)
			}
			if !strings.Contains(res.stderr, c.wantErr) {
				t.Errorf("stderr lacks %q:\n%s", c.wantErr, res.stderr)
			}
			if res.stdout != "" {
				t.Errorf("stdout %q, want nothing", res.stdout)
			}
			if strings.Contains(res.stderr, "pass") {
				t.Errorf("stderr echoes the password:\n%s", res.stderr)
			}
		})
	}
	// Subtests share the sandbox; they ran before this line (no
	// t.Parallel in them), so its counts cover all of them.
	if st := sb.stats(t); st.JobsCreated != 0 || submissions(st) != 0 {
		t.Errorf("the sandbox saw %d submissions and created %d jobs, want none", submissions(st), st.JobsCreated)
	}
}
