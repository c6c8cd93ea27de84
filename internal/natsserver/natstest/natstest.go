// Package natstest starts an embedded nats-server for a test and stops it
// when the test ends.
package natstest

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/oxypipe/oxypipe/internal/natsserver"
)

// Start starts a server with JetStream in a fresh t.TempDir and returns it
// with a connected client. Both are closed when the test ends.
func Start(t testing.TB) (*natsserver.Server, *nats.Conn) {
	t.Helper()
	return StartAt(t, t.TempDir())
}

// StartAt is Start on a given store directory: start a second server on
// the first one's StoreDir (after shutting the first down) to test resuming.
func StartAt(t testing.TB, storeDir string) (*natsserver.Server, *nats.Conn) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	srv, err := natsserver.Start(ctx, natsserver.Config{StoreDir: storeDir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			t.Error(err)
		}
	})
	return srv, Connect(t, srv)
}

// Connect returns another client of srv, closed when the test ends.
func Connect(t testing.TB, srv *natsserver.Server, opts ...nats.Option) *nats.Conn {
	t.Helper()
	nc, err := srv.Connect(opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return nc
}
