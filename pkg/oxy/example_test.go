package oxy_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"time"

	"github.com/oxypipe/oxypipe/pkg/emulator"
	"github.com/oxypipe/oxypipe/pkg/oxy"
	"github.com/oxypipe/oxypipe/pkg/oxytype"
	"github.com/oxypipe/oxypipe/pkg/payload"
	"github.com/oxypipe/oxypipe/pkg/runlog"
)

// withoutElapsed drops the elapsed time from a progress line, which differs
// from run to run.
func withoutElapsed(p oxy.Progress) string {
	line := p.String()
	return line[:strings.LastIndex(line, ", ")]
}

// A run of three payloads, each done job written to a
// folder before it is yielded. The client runs the whole pipeline in this
// process against the sandbox.
func Example() {
	ctx := context.Background()
	client, err := oxy.NewClient(oxy.Config{Sandbox: true, Emulator: emulator.Config{JobTime: 20 * time.Millisecond}})
	if err != nil {
		panic(err)
	}
	defer func() { _ = client.Close(ctx) }()
	dir, err := os.MkdirTemp("", "oxy-example-")
	if err != nil {
		panic(err)
	}
	defer func() { _ = os.RemoveAll(dir) }()
	results := filepath.Join(dir, "results")

	var payloads []payload.Payload
	for n := 1; n <= 3; n++ {
		payloads = append(payloads, payload.New("universal", "url", fmt.Sprintf("https://sandbox.oxylabs.io/products/%d", n)))
	}
	run, err := client.Execute(ctx, payloads, oxy.Options{Destination: results})
	if err != nil {
		panic(err)
	}
	for _, err := range run.Jobs() {
		if err != nil {
			panic(err)
		}
	}
	fmt.Println(withoutElapsed(run.Progress()))
	entries, _ := os.ReadDir(results)
	for _, e := range entries {
		fmt.Println(e.Name())
	}
	fmt.Println(run.Err())
	// Output:
	// 3/3 done, 3 written
	// 7500000000000000001.json
	// 7500000000000000002.json
	// 7500000000000000003.json
	// <nil>
}

// A run that ends incomplete (one job faulted, one unfetched after a 404),
// its run log, and its
// recovery — the faulted payload resubmitted from its run-log line as is,
// the unfetched job fetched by id.
func Example_runLog() {
	ctx := context.Background()
	var faulted atomic.Bool
	client, err := oxy.NewClient(oxy.Config{Sandbox: true, Emulator: emulator.Config{
		JobTime: 20 * time.Millisecond,
		Rules: []emulator.Rule{
			// The status check of products/1 answers 404.
			{Pattern: regexp.MustCompile(`/products/1$`), Outcome: emulator.Outcome{StatusFailure: &emulator.Failure{Status: 404}}},
			// products/2 faults the first time it is submitted.
			{Pattern: regexp.MustCompile(`/products/2$`), Match: func(emulator.Submission) bool { return faulted.CompareAndSwap(false, true) },
				Outcome: emulator.Outcome{Fault: true}},
		},
	}})
	if err != nil {
		panic(err)
	}
	defer func() { _ = client.Close(ctx) }()
	dir, err := os.MkdirTemp("", "oxy-example-")
	if err != nil {
		panic(err)
	}
	defer func() { _ = os.RemoveAll(dir) }()
	results, logs := filepath.Join(dir, "results"), filepath.Join(dir, "logs")

	var payloads []payload.Payload
	for n := 1; n <= 3; n++ {
		payloads = append(payloads, payload.New("universal", "url", fmt.Sprintf("https://sandbox.oxylabs.io/products/%d", n)))
	}
	run, err := client.Execute(ctx, payloads, oxy.Options{Destination: results, RunLog: logs})
	if err != nil {
		panic(err)
	}
	var incomplete *oxy.IncompleteRunError
	if err := run.Wait(ctx); errors.As(err, &incomplete) {
		_ = run.WriteReport(os.Stdout)
	}

	// The run log: one line per payload, in input order.
	f, err := os.Open(run.RunLog())
	if err != nil {
		panic(err)
	}
	defer func() { _ = f.Close() }()
	var resubmit []payload.Payload
	var unfetched []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var line runlog.Line
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			panic(err)
		}
		fmt.Println(line.State, *line.ID)
		switch line.State {
		case oxytype.Faulted:
			p, err := payload.Parse(line.Payload, 0)
			if err != nil {
				panic(err)
			}
			resubmit = append(resubmit, p)
		case oxytype.Unfetched:
			unfetched = append(unfetched, *line.ID)
		}
	}

	again, err := client.Execute(ctx, resubmit, oxy.Options{Destination: results})
	if err != nil {
		panic(err)
	}
	for job, err := range again.Jobs() {
		if err != nil {
			panic(err)
		}
		fmt.Println(job.Status, job.Input)
	}
	for _, id := range unfetched {
		got, err := client.Get(ctx, id)
		if err != nil {
			panic(err)
		}
		fmt.Println(got.Status, id)
	}
	// Output:
	// Stopped checking job 7500000000000000001, because the API returned 404 Not Found: universal https://sandbox.oxylabs.io/products/1
	// Job 7500000000000000002 faulted: universal https://sandbox.oxylabs.io/products/2
	//
	// 1 unfetched
	// unfetched 7500000000000000001
	// faulted 7500000000000000002
	// done 7500000000000000003
	// done https://sandbox.oxylabs.io/products/2
	// done 7500000000000000001
}
