package oxy_test

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/oxypipe/oxypipe/pkg/emulator"
	"github.com/oxypipe/oxypipe/pkg/oxy"
	"github.com/oxypipe/oxypipe/pkg/oxytype"
)

// The seed example (the three-payload example of examples/sandbox-rules.json): three payloads, one whose
// status check answers 404, one that faults, one done.
func TestSeedRunInOneProcess(t *testing.T) {
	t.Parallel()
	ctx := testContext(t, 60*time.Second)
	c := sandboxClient(t, emulator.Config{Rules: seedRules()})
	dir := t.TempDir()
	results, logs := filepath.Join(dir, "results"), filepath.Join(dir, "logs")

	run, err := c.Execute(ctx, products(1, 3), oxy.Options{Destination: results, RunLog: logs})
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`^\d{8}T\d{6}\.\d{3}Z$`).MatchString(run.ID()) {
		t.Errorf("run id %q", run.ID())
	}
	var got []oxy.Job
	for job, err := range run.Jobs() {
		if err != nil {
			t.Fatal(err)
		}
		if job.Status == oxytype.Done {
			if _, err := os.Stat(job.File); err != nil {
				t.Errorf("a done job was yielded before its file exists: %v", err)
			}
		}
		got = append(got, job)
	}
	if len(got) != 3 {
		t.Fatalf("got %d jobs, want 3", len(got))
	}

	t.Run("progress", func(t *testing.T) {
		p := run.Progress()
		line := p.String()
		if !strings.HasPrefix(line, "1/3 done, 1 faulted, 1 unfetched, 1 written, ") {
			t.Errorf("progress = %q", line)
		}
		if p.Elapsed <= 0 || p.Elapsed > time.Minute {
			t.Errorf("elapsed = %v", p.Elapsed)
		}
	})

	var incomplete *oxy.IncompleteRunError
	if err := run.Err(); !errors.As(err, &incomplete) || err.Error() != "1 unfetched" {
		t.Fatalf("Err() = %v, want an IncompleteRunError \"1 unfetched\"", err)
	}

	t.Run("report", func(t *testing.T) {
		var b strings.Builder
		if err := run.WriteReport(&b); err != nil {
			t.Fatal(err)
		}
		want := "Stopped checking job 7500000000000000001, because the API returned 404 Not Found: universal https://sandbox.oxylabs.io/products/1\n" +
			"Job 7500000000000000002 faulted: universal https://sandbox.oxylabs.io/products/2\n" +
			"\n" +
			"1 unfetched\n"
		if b.String() != want {
			t.Errorf("report:\n%s\nwant:\n%s", b.String(), want)
		}
		if ids := incomplete.UnfetchedIDs(); len(ids) != 1 || ids[0] != "7500000000000000001" {
			t.Errorf("unfetched ids = %v", ids)
		}
	})

	t.Run("run log", func(t *testing.T) {
		path := runLogPath(t, logs)
		if filepath.Base(path) != run.ID()+".jsonl" {
			t.Errorf("run log %s, want %s.jsonl", path, run.ID())
		}
		want := []string{
			`{"state":"unfetched","id":"7500000000000000001","payload":{"source":"universal","url":"https://sandbox.oxylabs.io/products/1"},"error":{"status_code":404,"message":"Not Found","trace_id":"00000001-000000000000000000000000"},"upload":null}`,
			`{"state":"faulted","id":"7500000000000000002","payload":{"source":"universal","url":"https://sandbox.oxylabs.io/products/2"},"error":null,"upload":null}`,
			`{"state":"done","id":"7500000000000000003","payload":{"source":"universal","url":"https://sandbox.oxylabs.io/products/3"},"error":null,"upload":null}`,
		}
		lines := readLines(t, path)
		if strings.Join(lines, "\n") != strings.Join(want, "\n") {
			t.Errorf("run log:\n%s\nwant:\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
		}
		if run.RunLog() != path {
			abs, _ := filepath.Abs(path)
			if run.RunLog() != abs {
				t.Errorf("RunLog() = %q, want %q", run.RunLog(), path)
			}
		}
	})

	t.Run("destination", func(t *testing.T) {
		if names := files(t, results); strings.Join(names, ",") != "7500000000000000003.json" {
			t.Fatalf("destination holds %v, want only the done job's file", names)
		}
		got, err := os.ReadFile(filepath.Join(results, "7500000000000000003.json"))
		if err != nil {
			t.Fatal(err)
		}
		cl, err := c.Cluster(ctx)
		if err != nil {
			t.Fatal(err)
		}
		em := cl.Emulator()
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, em.URL+"/v1/queries/7500000000000000003/results", nil)
		req.SetBasicAuth(em.Username, em.Password)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = resp.Body.Close() }()
		want, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != string(want) {
			t.Errorf("the file is not the API's body:\n%s\nwant:\n%s", got, want)
		}
		if !json.Valid(got) || strings.Count(string(got), "\n") > 1 {
			t.Errorf("the file is not one line of JSON")
		}
	})

	t.Run("jobs", func(t *testing.T) {
		byDoc := map[int]oxy.Job{}
		for _, j := range got {
			byDoc[j.Doc] = j
		}
		if j := byDoc[2]; j.Status != oxytype.Done || j.ID != "7500000000000000003" || j.File != filepath.Join(results, "7500000000000000003.json") || j.Input != "https://sandbox.oxylabs.io/products/3" {
			t.Errorf("done job = %+v", j)
		}
		if j := byDoc[1]; j.Status != oxytype.Faulted || j.Error != nil || j.File != "" {
			t.Errorf("faulted job = %+v", j)
		}
		if j := byDoc[0]; j.Status != oxytype.Unfetched || j.Error == nil || j.Error.String() != "404 Not Found" {
			t.Errorf("unfetched job = %+v", j)
		}
	})
}
