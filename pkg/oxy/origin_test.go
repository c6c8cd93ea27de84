package oxy_test

import (
	"context"
	"errors"
	"testing"

	"github.com/oxypipe/oxypipe/internal/feeder"
	"github.com/oxypipe/oxypipe/pkg/oxy"
	"github.com/oxypipe/oxypipe/pkg/payload"
)

func storagePayload(t *testing.T, url string) payload.Payload {
	t.Helper()
	p := payload.New("universal", "url", url)
	if err := p.Set("storage_type", "s3"); err != nil {
		t.Fatal(err)
	}
	if err := p.Set("storage_url", "s3://bucket/x"); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestRefusedBeforeAnythingBills: the combinations that cannot work are
// refused before the pipeline starts or a request is sent.
func TestRefusedBeforeAnythingBills(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	stored := storagePayload(t, "https://sandbox.oxylabs.io/products/1")
	plain := payload.New("universal", "url", "https://sandbox.oxylabs.io/products/2")

	deployed, err := oxy.NewClient(oxy.Config{NATSURL: "nats://127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := deployed.ExecuteRealtime(ctx, feeder.Slice{plain}, oxy.Options{Destination: t.TempDir()}); !errors.Is(err, oxy.ErrRealtimeDeployed) {
		t.Errorf("Realtime with NATS: %v, want ErrRealtimeDeployed", err)
	}

	client, err := oxy.NewClient(oxy.Config{Sandbox: true})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = client.Close(ctx) }()
	cases := []struct {
		name string
		run  func() error
		want error
	}{
		{"uploads with a destination", func() error {
			_, err := client.Execute(ctx, []payload.Payload{stored}, oxy.Options{Destination: t.TempDir()})
			return err
		}, oxy.ErrStorageWithDestination},
		{"storage and plain payloads mixed", func() error {
			_, err := client.Execute(ctx, []payload.Payload{stored, plain}, oxy.Options{Destination: t.TempDir()})
			return err
		}, oxy.ErrMixedStorage},
		{"plain payloads without a destination", func() error {
			_, err := client.Execute(ctx, []payload.Payload{plain}, oxy.Options{})
			return err
		}, oxy.ErrNoDestination},
		{"Realtime with storage_url", func() error {
			_, err := client.ExecuteRealtime(ctx, feeder.Slice{stored}, oxy.Options{Destination: t.TempDir()})
			return err
		}, oxy.ErrRealtimeStorage},
	}
	for _, c := range cases {
		if err := c.run(); !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
		}
	}
}
