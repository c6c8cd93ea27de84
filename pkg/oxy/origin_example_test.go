package oxy_test

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/oxypipe/oxypipe/internal/feeder"
	"github.com/oxypipe/oxypipe/pkg/emulator"
	"github.com/oxypipe/oxypipe/pkg/oxy"
	"github.com/oxypipe/oxypipe/pkg/payload"
)

// A dry run prints what would be sent, credentials redacted, and the most
// it bills: one result per page of each job.
func ExampleDryRun() {
	p := payload.New("universal", "url", "https://sandbox.oxylabs.io/products/1")
	_ = p.Set("pages", 3)
	q := payload.New("google_search", "query", "laptop")
	_ = q.Set("callback_url", "https://user:secret@hooks.example.com/done")
	bill, err := oxy.DryRun(feeder.Slice{p, q}, os.Stdout)
	if err != nil {
		panic(err)
	}
	fmt.Println(bill)
	// Output:
	// {"source":"universal","url":"https://sandbox.oxylabs.io/products/1","pages":3}
	// {"source":"google_search","query":"laptop","callback_url":"https://redacted:redacted@hooks.example.com/done"}
	// Would submit 2 jobs, which bill at most 4 results
}

// Realtime: one call per payload, answered when its job finished; the run
// reports like a Push-Pull run.
func ExampleClient_ExecuteRealtime() {
	ctx := context.Background()
	client, err := oxy.NewClient(oxy.Config{Sandbox: true, Emulator: emulator.Config{JobTime: 20 * time.Millisecond}})
	if err != nil {
		panic(err)
	}
	defer func() { _ = client.Close(ctx) }()
	dir, err := os.MkdirTemp("", "oxy-realtime-")
	if err != nil {
		panic(err)
	}
	defer func() { _ = os.RemoveAll(dir) }()
	src := feeder.Slice{
		payload.New("universal", "url", "https://sandbox.oxylabs.io/products/1"),
		payload.New("universal", "url", "https://sandbox.oxylabs.io/products/2"),
	}
	run, err := client.ExecuteRealtime(ctx, src, oxy.Options{Destination: dir})
	if err != nil {
		panic(err)
	}
	for {
		job, err := run.Next(ctx)
		if err != nil {
			break
		}
		fmt.Println(job.Status, job.Input)
	}
	fmt.Println(withoutElapsed(run.Progress()), run.Err())
	// Unordered output:
	// done https://sandbox.oxylabs.io/products/1
	// done https://sandbox.oxylabs.io/products/2
	// 2/2 done, 2 written <nil>
}
