package submitter_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/oxypipe/oxypipe/internal/natsserver"
	"github.com/oxypipe/oxypipe/internal/stage"
	"github.com/oxypipe/oxypipe/internal/submitter"
	"github.com/oxypipe/oxypipe/internal/topology"
	"github.com/oxypipe/oxypipe/pkg/emulator"
	"github.com/oxypipe/oxypipe/pkg/messages"
	"github.com/oxypipe/oxypipe/pkg/oxytype"
	"github.com/oxypipe/oxypipe/pkg/wsa"
)

// A submitter on an embedded broker against the emulator: one payload in,
// one job created, its Submitted out for the poller.
func Example() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	dir, err := os.MkdirTemp("", "submitter-example")
	check(err)
	defer func() { _ = os.RemoveAll(dir) }()
	srv, err := natsserver.Start(ctx, natsserver.Config{StoreDir: dir})
	check(err)
	defer func() { _ = srv.Shutdown(context.Background()) }()
	nc, err := srv.Connect()
	check(err)
	defer nc.Close()
	js, err := jetstream.New(nc)
	check(err)
	topo, err := topology.EnsureAll(ctx, js, topology.Config{})
	check(err)

	api, err := emulator.Start("127.0.0.1:0", emulator.Config{})
	check(err)
	defer func() { _ = api.Close() }()
	client, err := wsa.New(wsa.Config{BaseURL: api.URL, Username: api.Username, Password: api.Password})
	check(err)

	sub, err := submitter.New(submitter.Config{Stage: stage.Config{Conn: nc, Instance: "example"}, Topology: topo, API: client})
	check(err)
	go func() { _ = sub.Run(ctx) }()

	// A feeder publishes the payload of doc 0.
	run := messages.NewRunID(time.Date(2026, 9, 29, 17, 4, 12, 345e6, time.UTC))
	msg, err := messages.NewMsg(&messages.Payload{Run: run, Doc: messages.DocID(0),
		Payload: json.RawMessage(`{"source":"universal","url":"https://example.com/"}`)}, oxytype.Party{Type: "feeder", Name: "example"})
	check(err)
	_, err = js.PublishMsg(ctx, msg)
	check(err)

	// The poller would consume this.
	stream, err := js.Stream(ctx, topology.StreamSubmitted)
	check(err)
	var raw *jetstream.RawStreamMsg
	for deadline := time.Now().Add(10 * time.Second); raw == nil && time.Now().Before(deadline); {
		if raw, err = stream.GetLastMsgForSubject(ctx, messages.SubmittedSubject(run)); err != nil {
			time.Sleep(10 * time.Millisecond)
		}
	}
	if raw == nil {
		fmt.Println("nothing was submitted:", err)
		return
	}
	s, err := messages.DecodeSubmitted(raw.Subject, raw.Data)
	check(err)
	fmt.Println("doc", s.Doc, "is job", s.APIJobID)
	fmt.Println("jobs billed:", api.Emulator.Stats().JobsCreated)
	// Output:
	// doc 0 is job 7500000000000000001
	// jobs billed: 1
}

func check(err error) {
	if err != nil {
		panic(err)
	}
}
