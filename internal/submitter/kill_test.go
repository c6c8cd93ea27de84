package submitter_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/oxypipe/oxypipe/internal/natsserver"
	"github.com/oxypipe/oxypipe/internal/natsserver/natstest"
	"github.com/oxypipe/oxypipe/internal/stage"
	"github.com/oxypipe/oxypipe/internal/submitter"
	"github.com/oxypipe/oxypipe/internal/testutil"
	"github.com/oxypipe/oxypipe/internal/topology"
	"github.com/oxypipe/oxypipe/pkg/emulator"
	"github.com/oxypipe/oxypipe/pkg/messages"
	"github.com/oxypipe/oxypipe/pkg/oxytype"
	"github.com/oxypipe/oxypipe/pkg/wsa"
)

// gate stands in front of the emulator and counts the submission requests
// that reached the API and have not been answered yet. It can hold one of
// them (the holdNth, counting from 1) until release is closed, so that a
// test kills the submitter while exactly that request is in flight. It
// strips the emulator's rate-limit headers: an unlimited emulator
// advertises a budget of a million jobs, which the pacer would follow, and
// the test needs the submitter's own pacer settings to be the only limit.
type gate struct {
	api      *emulator.Emulator
	holdNth  int64 // 0: hold none
	arrived  atomic.Int64
	inFlight atomic.Int64
	held     chan struct{} // closed when the held request arrives
	release  chan struct{}
	once     sync.Once
}

func (g *gate) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodPost && strings.HasPrefix(r.URL.Path, "/v1/queries") {
		g.inFlight.Add(1)
		defer g.inFlight.Add(-1)
		if n := g.arrived.Add(1); n == g.holdNth {
			close(g.held)
			<-g.release
		}
	}
	g.api.ServeHTTP(&noBudget{ResponseWriter: w}, r)
}

// noBudget drops the x-ratelimit-* headers of the answer it writes.
type noBudget struct {
	http.ResponseWriter
	wrote bool
}

func (w *noBudget) WriteHeader(code int) {
	if w.wrote {
		return
	}
	w.wrote = true
	for name := range w.Header() {
		if strings.HasPrefix(strings.ToLower(name), "x-ratelimit-") {
			w.Header().Del(name)
		}
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *noBudget) Write(b []byte) (int, error) {
	w.WriteHeader(http.StatusOK) // as net/http does for a Write before WriteHeader
	return w.ResponseWriter.Write(b)
}

func (g *gate) open() { g.once.Do(func() { close(g.release) }) }

// killSetup is a broker, the topology, a gated emulator without rate
// limits (the submitter's pacer is the only limit) and the consumer
// settings of TestAKillWhilePayloadsWaitForTheRateBudget.
type killSetup struct {
	t    *testing.T
	srv  *natsserver.Server
	obs  *env // an observer on its own connection
	gate *gate
	api  *wsa.Client
	cs   topology.ConsumerSettings
}

func newKillSetup(t *testing.T, holdNth int64) *killSetup {
	t.Helper()
	srv, nc := natstest.Start(t)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	cs := consumer(20)
	cs.HandlerTimeout = 4 * time.Second
	topo, err := topology.EnsureAll(context.Background(), js, topology.Config{}, cs)
	if err != nil {
		t.Fatal(err)
	}
	em, err := emulator.New(emulator.Config{RateLimit: emulator.Unlimited, RenderRateLimit: emulator.Unlimited, JobTime: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = em.Close() })
	g := &gate{api: em, holdNth: holdNth, held: make(chan struct{}), release: make(chan struct{})}
	hs := httptest.NewServer(g)
	t.Cleanup(hs.Close)
	t.Cleanup(g.open) // runs before hs.Close: a held request must not block it
	api, err := wsa.New(wsa.Config{BaseURL: hs.URL, Username: "user", Password: "pass", Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return &killSetup{t: t, srv: srv, obs: &env{t: t, nc: nc, js: js, topo: topo}, gate: g, api: api, cs: cs}
}

// submitter builds a submitter on a connection of its own, so that killing
// it closes only that connection.
func (k *killSetup) submitter(name string, pacer wsa.PacerConfig) (*submitter.Submitter, *nats.Conn) {
	k.t.Helper()
	nc := natstest.Connect(k.t, k.srv)
	js, err := jetstream.New(nc)
	if err != nil {
		k.t.Fatal(err)
	}
	topo, err := topology.EnsureAll(context.Background(), js, topology.Config{}, k.cs)
	if err != nil {
		k.t.Fatal(err)
	}
	core, _ := observer.New(zap.DebugLevel)
	sub, err := submitter.New(submitter.Config{
		Topology: topo, API: k.api,
		Stage: stage.Config{
			Conn: nc, Consumer: k.cs, Instance: name, Logger: zap.New(core), Registerer: prometheus.NewRegistry(),
			FetchWait: 100 * time.Millisecond, WatchdogInterval: 50 * time.Millisecond,
			DrainTimeout: 5 * time.Second, BatchLinger: 50 * time.Millisecond,
		},
		Pacer: pacer, DisableBatch: true,
		SubmitTimeout: 2 * time.Second, KVTimeout: 250 * time.Millisecond,
		ClaimStaleAfter: k.cs.HandlerTimeout, ClaimRecheck: 250 * time.Millisecond, RateLimitedRetry: 50 * time.Millisecond,
	})
	if err != nil {
		k.t.Fatal(err)
	}
	return sub, nc
}

func TestAKillWhilePayloadsWaitForTheRateBudget(t *testing.T) {
	t.Parallel()
	const n = 12
	for _, tc := range []struct {
		name string
		// holdNth is the submission request held in flight at the kill
		// (0: none is).
		holdNth int64
		pacer   wsa.PacerConfig
		// killWhen says the moment of the kill has come.
		killWhen func(k *killSetup) bool
	}{{
		// One job per 10s window: after the first answer every other
		// payload waits for the budget, and no request is in flight.
		name:     "leaves no claim when no request is in flight",
		pacer:    wsa.PacerConfig{Limit: 1, RenderLimit: 1, Window: 10 * time.Second},
		killWhen: func(k *killSetup) bool { return k.obs.count(oxytype.Success) == 1 },
	}, {
		// The second request is held inside the API; the pacer admits no
		// other until it is answered.
		name:     "leaves only the claim of the request in flight",
		holdNth:  2,
		pacer:    wsa.PacerConfig{Limit: 1, RenderLimit: 1, Window: 100 * time.Millisecond, MaxBackoff: 30 * time.Second},
		killWhen: func(k *killSetup) bool { return isClosed(k.gate.held) },
	}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			k := newKillSetup(t, tc.holdNth)
			k.obs.feedUniversal(0, n)

			first, firstConn := k.submitter("killed-pod", tc.pacer)
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan struct{})
			go func() { _ = first.Run(ctx); close(done) }()
			testutil.Eventually(t, 10*time.Second, "the moment of the kill, with payloads waiting for the rate budget", func() bool {
				return tc.killWhen(k) && first.Pacer().Waiters() >= n/2
			})

			// SIGKILL, as the broker sees it: the connection goes first, so
			// nothing is acked, stored or released afterwards.
			firstConn.Close()
			inFlight := k.gate.inFlight.Load()
			cancel()
			k.gate.open() // the held request reaches the API and bills
			select {
			case <-done:
			case <-time.After(testutil.Patient(30 * time.Second)):
				// 10 s ran out twice while the whole suite loaded the machine.
				t.Fatal("the killed submitter's Run did not return")
			}
			if want := min(tc.holdNth, 1); inFlight != want {
				t.Fatalf("%d requests in flight at the kill, the test wants %d", inFlight, want)
			}
			held := 0
			for i := range n {
				if c := k.obs.claim(i); c != nil && c.State == messages.ClaimHeld {
					held++
				}
			}
			if int64(held) != inFlight {
				t.Fatalf("%d claims without a job id after the kill, %d requests were in flight", held, inFlight)
			}

			// The pod restarts and finishes the run.
			again, _ := k.submitter("restarted-pod", wsa.PacerConfig{Window: 100 * time.Millisecond})
			rctx, rcancel := context.WithCancel(context.Background())
			rdone := make(chan struct{})
			go func() { _ = again.Run(rctx); close(rdone) }()
			t.Cleanup(func() { rcancel(); <-rdone })
			testutil.Eventually(t, 20*time.Second, "every payload is settled", func() bool { return k.obs.pending() == 0 })

			unknown, ok := 0, 0
			for i := range n {
				doc := messages.DocID(i)
				hard := k.obs.eventsOf(doc, oxytype.HardFailure)
				succ := k.obs.eventsOf(doc, oxytype.Success)
				switch {
				case len(hard) == 1 && len(succ) == 0 && hard[0].State == oxytype.Unsubmitted && hard[0].Error != nil &&
					strings.Contains(hard[0].Error.Message, "outcome of this payload's submission is unknown"):
					unknown++
				case len(hard) == 0 && len(succ) >= 1:
					ok++
				default:
					t.Errorf("doc %d: hard failures %+v, successes %+v", i, hard, succ)
				}
			}
			if int64(unknown) != inFlight || ok != n-unknown {
				t.Fatalf("%d outcome unknown and %d submitted; %d requests were in flight at the kill", unknown, ok, inFlight)
			}
			st := k.gate.api.Stats()
			if st.JobsCreated != n {
				t.Fatalf("%d jobs created for %d payloads", st.JobsCreated, n)
			}
			for i := range n {
				if c := st.CreatedByInput[url(i)]; c != 1 {
					t.Errorf("doc %d billed %d times", i, c)
				}
			}
		})
	}
}

func isClosed(c chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}
