package submitter_test

import (
	"context"
	"net"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/oxypipe/oxypipe/internal/natsserver"
	"github.com/oxypipe/oxypipe/internal/stage"
	"github.com/oxypipe/oxypipe/internal/submitter"
	"github.com/oxypipe/oxypipe/internal/testutil"
	"github.com/oxypipe/oxypipe/internal/topology"
	"github.com/oxypipe/oxypipe/pkg/emulator"
	"github.com/oxypipe/oxypipe/pkg/messages"
	"github.com/oxypipe/oxypipe/pkg/oxytype"
	"github.com/oxypipe/oxypipe/pkg/wsa"
)

// listeningServer starts a broker that clients reach over TCP on port, so
// that it can be shut down and started again under them.
func listeningServer(t *testing.T, dir string, port int) *natsserver.Server {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	srv, err := natsserver.Start(ctx, natsserver.Config{StoreDir: dir, Listen: true, Port: port})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Shutdown(context.Background()) }) // it may be down already
	return srv
}

// freePort returns a TCP port nothing listens on.
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = ln.Close() }()
	return ln.Addr().(*net.TCPAddr).Port
}

// reconnecting connects to url and keeps reconnecting for ever.
func reconnecting(t *testing.T, url string) *nats.Conn {
	t.Helper()
	nc, err := nats.Connect(url, nats.MaxReconnects(-1), nats.ReconnectWait(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return nc
}

func TestFaultAJobIDSurvivesABrokerOutageAndADrain(t *testing.T) {
	t.Parallel()
	dir, port := t.TempDir(), freePort(t)
	srv := listeningServer(t, dir, port)
	obsConn := reconnecting(t, srv.ClientURL())
	obsJS, err := jetstream.New(obsConn)
	if err != nil {
		t.Fatal(err)
	}
	cs := consumer(20)
	cs.HandlerTimeout = 4 * time.Second
	obsTopo, err := topology.EnsureAll(context.Background(), obsJS, topology.Config{}, cs)
	if err != nil {
		t.Fatal(err)
	}
	obs := &env{t: t, nc: obsConn, js: obsJS, topo: obsTopo}

	em, err := emulator.New(emulator.Config{JobTime: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = em.Close() })
	g := &gate{api: em, holdNth: 1, held: make(chan struct{}), release: make(chan struct{})}
	hs := httptest.NewServer(g)
	t.Cleanup(hs.Close)
	t.Cleanup(g.open)
	api, err := wsa.New(wsa.Config{BaseURL: hs.URL, Username: "user", Password: "pass", Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}

	nc := reconnecting(t, srv.ClientURL())
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	topo, err := topology.EnsureAll(context.Background(), js, topology.Config{}, cs)
	if err != nil {
		t.Fatal(err)
	}
	core, logs := observer.New(zap.DebugLevel)
	sub, err := submitter.New(submitter.Config{
		Topology: topo, API: api,
		Stage: stage.Config{
			Conn: nc, Consumer: cs, Instance: "pod", Logger: zap.New(core), Registerer: prometheus.NewRegistry(),
			FetchWait: 100 * time.Millisecond, WatchdogInterval: 50 * time.Millisecond,
			DrainTimeout: 300 * time.Millisecond, BatchLinger: 20 * time.Millisecond,
		},
		Pacer:         wsa.PacerConfig{Window: 100 * time.Millisecond},
		SubmitTimeout: 2 * time.Second, KVTimeout: 250 * time.Millisecond, DisableBatch: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	logged := func(s string) bool { return logs.FilterMessageSnippet(s).Len() > 0 }

	obs.feedUniversal(0, 1)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = sub.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	testutil.Eventually(t, 10*time.Second, "the submission reaches the API", func() bool { return isClosed(g.held) })

	// The broker goes down while the API creates the job.
	if err := srv.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	g.open()
	testutil.Eventually(t, 10*time.Second, "the id cannot be stored", func() bool {
		return logged("a job was created but its id could not be stored under the claim yet")
	})
	// SIGTERM meanwhile: the drain runs out of time, and still keeps the
	// message whose job id exists only in this process.
	cancel()
	testutil.Eventually(t, 10*time.Second, "the drain waits for the pinned message", func() bool {
		return logged("not stopping yet")
	})
	if isClosed(done) {
		t.Fatal("Run returned while a job id was not stored")
	}

	listeningServer(t, dir, port)
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("Run did not return once the broker was back")
	}

	if em.Stats().JobsCreated != 1 {
		t.Fatalf("%d jobs, want 1", em.Stats().JobsCreated)
	}
	c := obs.claim(0)
	if c == nil || c.State != messages.ClaimSubmitted || c.APIJobID == "" {
		t.Fatalf("claim = %+v, want submitted with the job's id", c)
	}
	testutil.Eventually(t, 10*time.Second, "the job's success is recorded", func() bool {
		ok := obs.eventsOf("0", oxytype.Success)
		return len(ok) == 1 && ok[0].APIJobID == c.APIJobID
	})
	if subs := obs.submitted(); len(subs) != 1 || subs[0].APIJobID != c.APIJobID {
		t.Fatalf("Submitted = %+v, want job %s", subs, c.APIJobID)
	}
	if n := obs.count(oxytype.HardFailure); n != 0 {
		t.Fatalf("%d hard failures, want none", n)
	}
}
