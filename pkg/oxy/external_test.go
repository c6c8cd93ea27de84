package oxy_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/oxypipe/oxypipe/internal/natsserver/natstest"
	"github.com/oxypipe/oxypipe/internal/topology"
	"github.com/oxypipe/oxypipe/pkg/oxy"
)

// A client on an external NATS uses the deployed topology as it is: its
// own (default) settings would otherwise rewrite what the workers or the
// operators set, such as a cluster's replicas or the streams' duplicate
// window and work max age. What is missing it creates.
func TestAnExternalClientDoesNotRewriteTheDeployedTopology(t *testing.T) {
	t.Parallel()
	ctx := testContext(t, 30*time.Second)
	_, nc := natstest.Start(t)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	deployed := topology.Config{WorkMaxAge: 2 * time.Hour, DuplicateWindow: time.Minute}
	if _, err := topology.Ensure(ctx, js, deployed); err != nil {
		t.Fatal(err)
	}
	if err := js.DeleteStream(ctx, topology.StreamDone); err != nil {
		t.Fatal(err)
	}

	c, err := oxy.NewClient(oxy.Config{Username: "user", Password: "pass", Conn: nc})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close(context.Background()) })
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}

	info := func(name string) jetstream.StreamConfig {
		t.Helper()
		s, err := js.Stream(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		i, err := s.Info(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return i.Config
	}
	if cfg := info(topology.StreamStatus); cfg.Duplicates != time.Minute {
		t.Errorf("status stream: duplicates %v; want the deployed 1m", cfg.Duplicates)
	}
	if cfg := info(topology.StreamPayloads); cfg.MaxAge != 2*time.Hour {
		t.Errorf("payload stream: max age %v; want the deployed 2h", cfg.MaxAge)
	}
	if cfg := info(topology.StreamDone); cfg.Duplicates != topology.DefaultDuplicateWindow || cfg.MaxAge != 0 {
		t.Errorf("the missing done stream was created with duplicates %v, want the client's default", cfg.Duplicates)
	}
}
