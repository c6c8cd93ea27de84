package gcsdest_test

import (
	"fmt"
	"sync/atomic"
	"testing"

	"cloud.google.com/go/storage"
	"github.com/fsouza/fake-gcs-server/fakestorage"
	"google.golang.org/api/option"

	"github.com/oxypipe/oxypipe/pkg/destination/destinationtest"
	"github.com/oxypipe/oxypipe/pkg/destination/gcsdest"
)

const bucket = "oxypipe"

// startFakeGCS starts fake-gcs-server in this process over plain HTTP on a
// free port, with one bucket.
func startFakeGCS(t testing.TB) *fakestorage.Server {
	t.Helper()
	srv, err := fakestorage.NewServerWithOptions(fakestorage.Options{
		Scheme: "http",
		Host:   "127.0.0.1",
		Port:   0,
	})
	if err != nil {
		t.Skipf("GCS suite skipped: fake-gcs-server does not start here: %v", err)
	}
	t.Cleanup(srv.Stop)
	srv.CreateBucketWithOpts(fakestorage.CreateBucketOpts{Name: bucket})
	return srv
}

func config(srv *fakestorage.Server) gcsdest.Config {
	return gcsdest.Config{ClientOptions: []option.ClientOption{
		option.WithEndpoint(srv.URL() + "/storage/v1/"),
		option.WithoutAuthentication(),
		// The emulator serves object reads on its JSON API only.
		storage.WithJSONReads(),
	}}
}

func TestConformance(t *testing.T) {
	t.Parallel()
	srv := startFakeGCS(t)
	var n atomic.Int64
	open := func(t *testing.T, bucketName, prefix string) destinationtest.Destination {
		s, err := gcsdest.New(t.Context(), bucketName, prefix, config(srv))
		if err != nil {
			t.Fatalf("New: %v", err)
		}
		return s
	}
	destinationtest.Run(t, destinationtest.Setup{
		Open: func(t *testing.T) destinationtest.Destination {
			return open(t, bucket, fmt.Sprintf("runs/t%d", n.Add(1)))
		},
		OpenMissing: func(t *testing.T) destinationtest.Destination {
			return open(t, "no-such-bucket", "results")
		},
	})
}
