package statusworker_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/oxypipe/oxypipe/internal/natsserver"
	"github.com/oxypipe/oxypipe/internal/stage"
	"github.com/oxypipe/oxypipe/internal/statusworker"
	"github.com/oxypipe/oxypipe/internal/topology"
	"github.com/oxypipe/oxypipe/pkg/jobresults"
	"github.com/oxypipe/oxypipe/pkg/messages"
	"github.com/oxypipe/oxypipe/pkg/oxytype"
)

// The one-process shape (oxy run): an embedded server, a memory ledger
// rebuilt from the status stream, one statusworker. The feeder announces a
// run and waits for it to be ready; the stages' status events then complete
// it, and the run log is in the run-log folder.
func Example() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	dir, _ := os.MkdirTemp("", "oxy-example")
	defer func() { _ = os.RemoveAll(dir) }()

	srv, err := natsserver.Start(ctx, natsserver.Config{StoreDir: filepath.Join(dir, "state")})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer func() { _ = srv.Shutdown(context.Background()) }()
	nc, _ := srv.Connect()
	defer nc.Close()
	js, _ := jetstream.New(nc)
	topo, err := topology.Ensure(ctx, js, topology.Config{})
	if err != nil {
		fmt.Println(err)
		return
	}

	sw, err := statusworker.New(statusworker.Config{
		Stage: stage.Config{Conn: nc}, Topology: topo, Ledger: jobresults.NewMemoryStore(), Rebuild: true,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	done := make(chan error, 1)
	go func() { done <- sw.Run(ctx) }()

	// The feeder's side.
	feeder := oxytype.Party{Type: "feeder", Name: "example"}
	run, _ := topo.AnnounceRun(ctx, messages.RunAnnounced{
		Total: 1, FinalDataType: oxytype.FinalDataType, RunLog: filepath.Join(dir, "logs"), StartedAt: time.Now(),
	}, feeder)
	ready, _ := topo.Runs().Wait(ctx, run, func(r *messages.RunRecord) bool { return r.State != oxytype.RunStateAnnounced })
	fmt.Println("run", ready.Record.State)

	// The stages' status events for the one doc.
	for _, dt := range []oxytype.DataType{oxytype.DataPayload, oxytype.DataSubmitted, oxytype.DataDone, oxytype.DataWritten} {
		ev := &messages.StatusEvent{Run: run, Doc: "0", DataType: dt, Outcome: oxytype.Success, Origin: feeder,
			Facts: oxytype.Facts{APIJobID: "7500000000000000001", Payload: json.RawMessage(`{"source":"universal","url":"https://example.com"}`)}, Time: time.Now()}
		m, _ := messages.NewMsg(ev, feeder)
		if _, err := js.PublishMsg(ctx, m); err != nil {
			fmt.Println(err)
			return
		}
	}
	completed, _ := topo.Runs().Wait(ctx, run, func(r *messages.RunRecord) bool { return r.State == oxytype.RunStateCompleted })
	fmt.Println("run", completed.Record.State, "with", completed.Record.Completed.Done, "done")
	log, _ := os.ReadFile(completed.Record.Completed.RunLog)
	fmt.Print(string(log))

	cancel()
	fmt.Println("stopped:", <-done)
	// Output:
	// run ready
	// run completed with 1 done
	// {"state":"done","id":"7500000000000000001","payload":{"source":"universal","url":"https://example.com"},"error":null,"upload":null}
	// stopped: <nil>
}
