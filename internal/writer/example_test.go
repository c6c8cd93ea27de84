package writer_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/oxypipe/oxypipe/internal/natsserver"
	"github.com/oxypipe/oxypipe/internal/poller"
	"github.com/oxypipe/oxypipe/internal/stage"
	"github.com/oxypipe/oxypipe/internal/topology"
	"github.com/oxypipe/oxypipe/internal/writer"
	"github.com/oxypipe/oxypipe/pkg/emulator"
	"github.com/oxypipe/oxypipe/pkg/messages"
	"github.com/oxypipe/oxypipe/pkg/oxytype"
	"github.com/oxypipe/oxypipe/pkg/payload"
	"github.com/oxypipe/oxypipe/pkg/wsa"
)

// The poller and the writer in one process, on an embedded broker, against
// the emulator: a submitted job ends as "<api job id>.json" in the run's
// destination. This is how `oxy run` assembles the two stages.
func Example() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "oxy-writer-example-")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer func() { _ = os.RemoveAll(dir) }()

	srv, err := natsserver.Start(ctx, natsserver.Config{StoreDir: filepath.Join(dir, "nats")})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer func() { _ = srv.Shutdown(ctx) }()
	nc, err := srv.Connect()
	if err != nil {
		fmt.Println(err)
		return
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	topo, err := topology.EnsureAll(ctx, js, topology.Config{})
	if err != nil {
		fmt.Println(err)
		return
	}

	api, err := emulator.Start("127.0.0.1:0", emulator.Config{TimeScale: 0.01, JobTime: time.Second})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer func() { _ = api.Close() }()
	client, _ := wsa.New(wsa.Config{BaseURL: api.URL, Username: api.Username, Password: api.Password})

	// What the feeder and the submitter do before: announce the run with
	// its destination, create the job, publish Submitted.
	results := filepath.Join(dir, "results")
	run, err := topo.AnnounceRun(ctx, messages.RunAnnounced{
		Total: 1, FinalDataType: oxytype.FinalDataType, Destination: results, RunLog: dir, StartedAt: time.Now(),
	}, oxytype.Party{Type: "feeder", Name: "example"})
	if err != nil {
		fmt.Println(err)
		return
	}
	body := `{"source":"universal","url":"https://sandbox.oxylabs.io/products/1"}`
	p, _ := payload.Parse([]byte(body), 1)
	job, _, err := client.Submit(ctx, p)
	if err != nil {
		fmt.Println(err)
		return
	}
	msg, _ := messages.NewMsg(&messages.Submitted{Run: run, Doc: messages.DocID(0), APIJobID: job.ID,
		Payload: json.RawMessage(body), SubmittedAt: time.Now()}, oxytype.Party{Type: "submitter", Name: "example"})
	if _, err := js.PublishMsg(ctx, msg); err != nil {
		fmt.Println(err)
		return
	}

	// The two stages: each needs only the connection, the topology and the
	// API client. Schedule is scaled like the emulator.
	pl, err := poller.New(poller.Config{
		Stage:    stage.Config{Conn: nc, Instance: "example"},
		Topology: topo,
		API:      client,
		Schedule: poller.Schedule{First: 10 * time.Millisecond, Step: 10 * time.Millisecond,
			Until: 100 * time.Millisecond, Interval: 50 * time.Millisecond},
		PendingLimit: time.Minute,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	wr, err := writer.New(writer.Config{Stage: stage.Config{Conn: nc, Instance: "example"}, Topology: topo, API: client})
	if err != nil {
		fmt.Println(err)
		return
	}
	runCtx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for _, s := range []interface{ Run(context.Context) error }{pl, wr} {
		wg.Go(func() {
			if err := s.Run(runCtx); err != nil {
				fmt.Println(err)
			}
		})
	}
	file := filepath.Join(results, job.ID+".json")
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if _, err := os.Stat(file); err == nil {
			break
		}
	}
	stop()
	wg.Wait()

	entries, _ := os.ReadDir(results)
	for _, e := range entries {
		fmt.Println(e.Name())
	}
	// Output:
	// 7500000000000000001.json
}
