package oxy_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"testing"
	"time"

	"github.com/oxypipe/oxypipe/internal/feeder"
	"github.com/oxypipe/oxypipe/pkg/emulator"
	"github.com/oxypipe/oxypipe/pkg/oxy"
	"github.com/oxypipe/oxypipe/pkg/oxytype"
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

// TestStorageCheckHoldsBackAFailedLocation: of the payloads that share a
// storage_url, the first goes alone; its failed upload holds the rest back,
// never submitted, while another location goes on.
func TestStorageCheckHoldsBackAFailedLocation(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	client, err := oxy.NewClient(oxy.Config{Sandbox: true, Emulator: emulator.Config{JobTime: 20 * time.Millisecond, Rules: []emulator.Rule{
		{Pattern: regexp.MustCompile(`products/11$`), Outcome: emulator.Outcome{UploadCode: 13102, UploadDelay: 50 * time.Millisecond}},
		{Pattern: regexp.MustCompile(`products/`), Outcome: emulator.Outcome{UploadDelay: 50 * time.Millisecond}},
	}}})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = client.Close(ctx) }()
	at := func(n int, bucket string) payload.Payload {
		p := storagePayload(t, fmt.Sprintf("https://sandbox.oxylabs.io/products/%d", n))
		_ = p.Set("storage_url", "s3://"+bucket+"/x")
		return p
	}
	ps := []payload.Payload{at(11, "bad"), at(1, "good"), at(12, "bad"), at(2, "good"), at(13, "bad")}
	run, err := client.Execute(ctx, ps, oxy.Options{})
	if err != nil {
		t.Fatal(err)
	}
	got := map[int]oxytype.State{}
	for job, err := range run.Jobs() {
		if err != nil {
			t.Fatal(err)
		}
		got[job.Doc] = job.Status
	}
	want := map[int]oxytype.State{0: oxytype.Done, 1: oxytype.Done, 2: oxytype.Unsubmitted, 3: oxytype.Done, 4: oxytype.Unsubmitted}
	if !maps.Equal(got, want) {
		t.Errorf("states %v, want %v", got, want)
	}
	if p := run.Progress(); p.Uploaded != 2 || p.Unuploaded != 1 {
		t.Errorf("progress %s, want 2 uploaded and 1 unuploaded", p)
	}
	var incomplete *oxy.IncompleteRunError
	if err := run.Err(); !errors.As(err, &incomplete) || err.Error() != "2 unsubmitted, 1 unuploaded" ||
		len(incomplete.Unuploaded) != 1 || incomplete.Unuploaded[0].Doc != 0 || incomplete.Unuploaded[0].Upload.Code != 13102 {
		t.Errorf("Err() = %v, want 2 unsubmitted and the failed upload of doc 0", err)
	}
	cl, err := client.Cluster(ctx)
	if err != nil {
		t.Fatal(err)
	}
	st := cl.Emulator().Emulator.Stats()
	if st.JobsCreated != 3 || st.Requests[emulator.EndpointResults] != 0 {
		t.Errorf("the sandbox created %d jobs and answered %d results GETs, want 3 and 0", st.JobsCreated, st.Requests[emulator.EndpointResults])
	}
}
