package stage_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/oxypipe/oxypipe/internal/natsserver"
	"github.com/oxypipe/oxypipe/internal/stage"
	"github.com/oxypipe/oxypipe/internal/topology"
	"github.com/oxypipe/oxypipe/pkg/messages"
	"github.com/oxypipe/oxypipe/pkg/oxytype"
)

// A submitter-shaped worker: decode the payload, publish its output and a
// success event, return nil to ack.
func Example() {
	dir, _ := os.MkdirTemp("", "oxy-example-")
	defer func() { _ = os.RemoveAll(dir) }()
	ctx := context.Background()
	srv, _ := natsserver.Start(ctx, natsserver.Config{StoreDir: dir})
	defer func() { _ = srv.Shutdown(ctx) }()
	nc, _ := srv.Connect()
	defer nc.Close()
	js, _ := jetstream.New(nc)

	topo, _ := topology.Ensure(ctx, js, topology.Config{})
	settings, _ := topology.DefaultConsumer(topology.Submitter)
	if _, err := topo.EnsureConsumer(ctx, settings); err != nil {
		fmt.Println(err)
		return
	}

	p := &messages.Payload{Run: "20260929T170412.345Z", Doc: "0", Payload: json.RawMessage(`{"source":"universal","url":"https://example.com"}`)}
	msg, _ := messages.NewMsg(p, oxytype.Party{Type: "feeder", Name: "example"})
	if _, err := js.PublishMsg(ctx, msg); err != nil {
		fmt.Println(err)
		return
	}

	runCtx, stop := context.WithCancel(ctx)
	w, _ := stage.New(stage.Config{Conn: nc, Consumer: settings, Instance: "pod-1"},
		stage.HandlerFunc(func(ctx context.Context, m *stage.Msg) error {
			p, err := messages.DecodePayload(m.Subject(), m.Data())
			if err != nil {
				return err // recorded as a hard failure, terminated
			}
			out := &messages.Submitted{Run: p.Run, Doc: p.Doc, APIJobID: "7000000000000000001", Payload: p.Payload, SubmittedAt: time.Now()}
			if err := m.Publish(out); err != nil {
				return err
			}
			defer stop() // one message is enough for the example
			return m.Record(&messages.StatusEvent{DataType: oxytype.DataSubmitted, Outcome: oxytype.Success, Facts: oxytype.Facts{APIJobID: out.APIJobID}})
		}))
	if err := w.Run(runCtx); err != nil {
		fmt.Println(err)
	}

	status, _ := js.Stream(ctx, topology.StreamStatus)
	raw, _ := status.GetMsg(ctx, 1)
	ev, _ := messages.DecodeStatusEvent(raw.Subject, raw.Data)
	fmt.Println(ev.Doc, ev.DataType, ev.Outcome, ev.Origin, ev.APIJobID)
	// Output:
	// 0 submitted success submitter/pod-1 7000000000000000001
}
