package oxy_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/oxypipe/oxypipe/internal/topology"
	"github.com/oxypipe/oxypipe/pkg/emulator"
	"github.com/oxypipe/oxypipe/pkg/oxy"
	"github.com/oxypipe/oxypipe/pkg/oxytype"
	"github.com/oxypipe/oxypipe/pkg/payload"
	"github.com/oxypipe/oxypipe/pkg/runlog"
)

// mixedPayloads returns n payloads in which every 7th faults at the API,
// every 11th is rejected by the API (400), and every 13th is rejected by
// local validation (an IP address as host), with the state each must end in.
func mixedPayloads(n int) ([]payload.Payload, map[int]oxytype.State) {
	ps := make([]payload.Payload, n)
	want := make(map[int]oxytype.State, n)
	for i := range n {
		url := fmt.Sprintf("https://sandbox.oxylabs.io/items/%d", i)
		want[i] = oxytype.Done
		switch {
		case i%13 == 5:
			url = fmt.Sprintf("https://10.0.0.%d/items", i%250)
			want[i] = oxytype.Rejected
		case i%11 == 3:
			url += "/reject"
			want[i] = oxytype.Rejected
		case i%7 == 2:
			url += "/fault"
			want[i] = oxytype.Faulted
		}
		ps[i] = payload.New("universal", "url", url)
	}
	return ps, want
}

func mixedRules() []emulator.Rule {
	return []emulator.Rule{
		{Pattern: regexp.MustCompile(`/fault$`), Outcome: emulator.Outcome{Fault: true}},
		{Pattern: regexp.MustCompile(`/reject$`), Outcome: emulator.Outcome{Reject: &emulator.Rejection{Status: 400, Message: "Unsupported target."}}},
	}
}

func TestEveryPayloadEndsOnce(t *testing.T) {
	t.Parallel()
	ctx := testContext(t, 60*time.Second)
	c := sandboxClient(t, emulator.Config{Rules: mixedRules(), RateLimit: emulator.Unlimited})
	dir := t.TempDir()
	results, logs := filepath.Join(dir, "results"), filepath.Join(dir, "logs")
	const n = 200
	ps, want := mixedPayloads(n)

	run, err := c.Execute(ctx, ps, oxy.Options{Destination: results, RunLog: logs, Buffer: 8})
	if err != nil {
		t.Fatal(err)
	}
	cl, err := c.Cluster(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// The stages run here: the run is watched through the statusworker's
	// events, with no consumer of its own on the status stream.
	if cons := statusConsumers(t, cl.JetStream()); len(cons) != 1 || cons[0] != string(topology.StatusWorker) {
		t.Errorf("the status stream's consumers are %v, want the statusworker's alone", cons)
	}
	seen := map[int]oxy.Job{}
	for job, err := range run.Jobs() {
		if err != nil {
			t.Fatal(err)
		}
		if prev, dup := seen[job.Doc]; dup {
			t.Fatalf("doc %d finished twice: %+v then %+v", job.Doc, prev, job)
		}
		seen[job.Doc] = job
	}
	if len(seen) != n {
		t.Fatalf("%d docs finished, want %d", len(seen), n)
	}
	t.Logf("%s", run.Progress())
	counts := map[oxytype.State]int{}
	for doc, job := range seen {
		counts[job.Status]++
		if job.Status != want[doc] {
			t.Errorf("doc %d ended %s, want %s (%+v)", doc, job.Status, want[doc], job)
		}
		if (job.ID == "") != (job.Status == oxytype.Rejected) {
			t.Errorf("doc %d: id %q with status %s", doc, job.ID, job.Status)
		}
	}

	lines := readLines(t, runLogPath(t, logs))
	if len(lines) != n {
		t.Fatalf("run log has %d lines, want %d", len(lines), n)
	}
	for doc, l := range lines {
		var line runlog.Line
		if err := json.Unmarshal([]byte(l), &line); err != nil {
			t.Fatal(err)
		}
		if line.State != seen[doc].Status {
			t.Errorf("run log line %d says %s, the run yielded %s", doc, line.State, seen[doc].Status)
		}
		p, err := payload.Parse(line.Payload, doc+1)
		if err != nil || string(p.JSON()) != string(ps[doc].JSON()) {
			t.Errorf("run log line %d holds payload %s, want %s", doc, line.Payload, ps[doc].JSON())
		}
	}

	p := run.Progress()
	if p.Payloads != n || p.Done != counts[oxytype.Done] || p.Faulted != counts[oxytype.Faulted] || p.Rejected != counts[oxytype.Rejected] ||
		p.Written != counts[oxytype.Done] || p.Pending != 0 || p.Unsubmitted != 0 || p.Unfetched != 0 {
		t.Errorf("progress %+v does not match the jobs %v", p, counts)
	}
	if got := len(files(t, results)); got != counts[oxytype.Done] {
		t.Errorf("destination holds %d files, want %d", got, counts[oxytype.Done])
	}
	var incomplete *oxy.IncompleteRunError
	if err := run.Err(); !errors.As(err, &incomplete) || len(incomplete.Rejections) != counts[oxytype.Rejected] ||
		err.Error() != fmt.Sprintf("%d rejected", counts[oxytype.Rejected]) {
		t.Errorf("Err() = %v", err)
	}
	for _, r := range incomplete.Rejections {
		if r.Error == nil {
			t.Errorf("rejection of doc %d has no error", r.Doc)
			continue
		}
		switch {
		case r.Error.StatusCode == nil && r.Error.Message == "The hostname cannot be an ip address.":
		case r.Error.StatusCode != nil && (*r.Error.StatusCode == 400 || *r.Error.StatusCode == 202) && r.Error.Message == "Unsupported target.":
		default:
			t.Errorf("rejection of doc %d: %+v", r.Doc, r.Error)
		}
	}
	for input, times := range cl.Emulator().Emulator.Stats().CreatedByInput {
		if times != 1 {
			t.Errorf("%s was billed %d times", input, times)
		}
	}
}

func TestStopMidRun(t *testing.T) {
	t.Parallel()
	ctx := testContext(t, 60*time.Second)
	// 10 jobs per second: 60 payloads take six seconds unless stopped.
	c := sandboxClient(t, emulator.Config{RateLimit: 10})
	dir := t.TempDir()
	results, logs := filepath.Join(dir, "results"), filepath.Join(dir, "logs")
	const n = 60
	run, err := c.Execute(ctx, products(1, n), oxy.Options{Destination: results, RunLog: logs})
	if err != nil {
		t.Fatal(err)
	}
	finished := map[int]oxytype.State{}
	stopped := false
	for job, err := range run.Jobs() {
		if err != nil {
			t.Fatal(err)
		}
		finished[job.Doc] = job.Status
		if !stopped && len(finished) == 3 {
			if err := run.Stop(ctx); err != nil {
				t.Fatal(err)
			}
			stopped = true
		}
	}
	if len(finished) != n {
		t.Fatalf("%d docs finished, want %d", len(finished), n)
	}
	counts := map[oxytype.State]int{}
	for _, s := range finished {
		counts[s]++
	}
	t.Logf("after a stop: %v, %s", counts, run.Progress())
	if counts[oxytype.Unsubmitted] == 0 || counts[oxytype.Done] < 3 || counts[oxytype.Done]+counts[oxytype.Unsubmitted] != n {
		t.Fatalf("after a stop: %v", counts)
	}
	var incomplete *oxy.IncompleteRunError
	err = run.Err()
	if !errors.As(err, &incomplete) || len(incomplete.Unsubmitted) != counts[oxytype.Unsubmitted] {
		t.Fatalf("Err() = %v", err)
	}
	if err.Error() != fmt.Sprintf("%d unsubmitted", counts[oxytype.Unsubmitted]) {
		t.Errorf("error text %q", err.Error())
	}
	report := run.Report()
	want := fmt.Sprintf("Stopped submitting, because the run was stopped before this payload was submitted; %d payloads stay unsubmitted", counts[oxytype.Unsubmitted])
	if len(report) != 1 || report[0] != want {
		t.Errorf("report = %q, want %q", report, want)
	}
	lines := readLines(t, runLogPath(t, logs))
	if len(lines) != n {
		t.Fatalf("run log has %d lines, want %d", len(lines), n)
	}
	logged := map[oxytype.State]int{}
	for _, l := range lines {
		var line runlog.Line
		if err := json.Unmarshal([]byte(l), &line); err != nil {
			t.Fatal(err)
		}
		logged[line.State]++
		if line.State == oxytype.Unsubmitted && (line.ID != nil || line.Error == nil) {
			t.Errorf("unsubmitted line %s", l)
		}
	}
	if logged[oxytype.Done] != counts[oxytype.Done] || logged[oxytype.Unsubmitted] != counts[oxytype.Unsubmitted] {
		t.Errorf("run log counts %v, jobs %v", logged, counts)
	}
	cl, err := c.Cluster(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := cl.Emulator().Emulator.Stats().JobsCreated; got != int64(counts[oxytype.Done]) {
		t.Errorf("the API created %d jobs, the run has %d done", got, counts[oxytype.Done])
	}
}

// statusConsumers lists the names of the status stream's consumers.
func statusConsumers(t *testing.T, js jetstream.JetStream) []string {
	t.Helper()
	s, err := js.Stream(t.Context(), topology.StreamStatus)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	l := s.ConsumerNames(t.Context())
	for n := range l.Name() {
		names = append(names, n)
	}
	if err := l.Err(); err != nil {
		t.Fatal(err)
	}
	return names
}
