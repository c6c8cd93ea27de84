package poller_test

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/oxypipe/oxypipe/internal/natsserver/natstest"
	"github.com/oxypipe/oxypipe/internal/poller"
	"github.com/oxypipe/oxypipe/internal/stage"
	"github.com/oxypipe/oxypipe/internal/testutil"
	"github.com/oxypipe/oxypipe/internal/topology"
	"github.com/oxypipe/oxypipe/pkg/emulator"
	"github.com/oxypipe/oxypipe/pkg/messages"
	"github.com/oxypipe/oxypipe/pkg/oxytype"
	"github.com/oxypipe/oxypipe/pkg/payload"
	"github.com/oxypipe/oxypipe/pkg/retry"
	"github.com/oxypipe/oxypipe/pkg/wsa"
)

const run = "20260929T170412.345Z"

var submitter = oxytype.Party{Type: "submitter", Name: "test"}

// fastSchedule checks at 100 ms steps up to 1 s, then every 500 ms: the
// default schedule at a tenth of its pace, for emulators at TimeScale 0.1.
func fastSchedule() poller.Schedule {
	return poller.Schedule{First: 100 * time.Millisecond, Step: 100 * time.Millisecond, Until: time.Second, Interval: 500 * time.Millisecond}
}

// fixture is one test's broker, emulator and poller.
type fixture struct {
	t      testing.TB
	nc     *nats.Conn
	js     jetstream.JetStream
	api    *emulator.Server
	client *wsa.Client
	reg    *prometheus.Registry
	cfg    poller.Config
}

// setup starts a broker with the full topology and an emulator at a tenth
// of real time. The poller is not started yet: change f.cfg, then start.
func setup(t testing.TB, emu emulator.Config) *fixture {
	t.Helper()
	_, nc := natstest.Start(t)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	settings, err := topology.DefaultConsumer(topology.Poller)
	if err != nil {
		t.Fatal(err)
	}
	settings.AckWait = 5 * time.Second
	topo, err := topology.EnsureAll(t.Context(), js, topology.Config{Storage: jetstream.MemoryStorage}, settings)
	if err != nil {
		t.Fatal(err)
	}
	if emu.TimeScale == 0 {
		emu.TimeScale = 0.1
	}
	if emu.JobTime == 0 {
		emu.JobTime = time.Second
	}
	emu.RateLimit, emu.RenderRateLimit = emulator.Unlimited, emulator.Unlimited
	api := emulator.NewServer(t, emu)
	client, err := wsa.New(wsa.Config{BaseURL: api.URL, Username: api.Username, Password: api.Password, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	return &fixture{
		t: t, nc: nc, js: js, api: api, client: client, reg: reg,
		cfg: poller.Config{
			Stage: stage.Config{
				Conn: nc, Consumer: settings, Instance: "poller-test",
				FetchWait: 100 * time.Millisecond, WatchdogInterval: 100 * time.Millisecond,
				DrainTimeout: 5 * time.Second, Registerer: reg,
			},
			Topology:     topo,
			API:          client,
			Schedule:     fastSchedule(),
			PendingLimit: 10 * time.Second,
			Retry:        retry.Policy{Initial: 20 * time.Millisecond, Max: 100 * time.Millisecond},
		},
	}
}

// start runs a poller with f.cfg until the test ends.
func (f *fixture) start() *poller.Poller {
	f.t.Helper()
	p, err := poller.New(f.cfg)
	if err != nil {
		f.t.Fatal(err)
	}
	testutil.RunUntilCleanup(f.t, "the poller", p.Run)
	return p
}

// submit creates a job at the emulator for a universal payload of url and
// publishes its Submitted as doc.
func (f *fixture) submit(doc int, body string) *messages.Submitted {
	f.t.Helper()
	p, err := payload.Parse([]byte(body), 1)
	if err != nil {
		f.t.Fatal(err)
	}
	job, _, err := f.client.Submit(f.t.Context(), p)
	if err != nil {
		f.t.Fatalf("Submit: %v", err)
	}
	s := &messages.Submitted{Run: run, Doc: messages.DocID(doc), APIJobID: job.ID, Payload: json.RawMessage(body), SubmittedAt: time.Now()}
	f.publish(s)
	return s
}

func (f *fixture) publish(e messages.Envelope) {
	f.t.Helper()
	m, err := messages.NewMsg(e, submitter)
	if err != nil {
		f.t.Fatal(err)
	}
	if _, err := f.js.PublishMsg(f.t.Context(), m); err != nil {
		f.t.Fatal(err)
	}
}

// urlPayload is a universal payload for a URL.
func urlPayload(path string) string {
	return fmt.Sprintf(`{"source":"universal","url":"https://sandbox.oxylabs.io/%s"}`, path)
}

// events returns the status events stored so far, in stream order.
func (f *fixture) events() []messages.StatusEvent {
	f.t.Helper()
	return testutil.StreamDecodedEach(f.t, f.js, topology.StreamStatus, messages.StatusEvents)
}

// dones returns the Done messages stored so far.
func (f *fixture) dones() []messages.Done {
	f.t.Helper()
	return testutil.StreamDecoded(f.t, f.js, topology.StreamDone, messages.DecodeDone)
}

// final waits for the doc's last event to be a success at done or a hard
// failure, and returns the doc's events in order.
func (f *fixture) final(doc string) []messages.StatusEvent {
	f.t.Helper()
	var got []messages.StatusEvent
	testutil.Eventuallyf(f.t, 10*time.Second, func() bool {
		got = got[:0]
		for _, ev := range f.events() {
			if ev.Doc == doc {
				got = append(got, ev)
			}
		}
		if len(got) == 0 {
			return false
		}
		last := got[len(got)-1]
		return last.Outcome == oxytype.HardFailure || last.Outcome == oxytype.Success
	}, "doc %s reaches a final event", doc)
	return got
}

// statusRequests is how many status checks the emulator answered.
func (f *fixture) statusRequests() int64 {
	return f.api.Emulator.Stats().Requests[emulator.EndpointStatus]
}

// counter reads a counter of the registry by name and labels.
func (f *fixture) counter(name string, labels map[string]string) float64 {
	return testutil.Metric(f.t, f.reg, name, labels)
}

// newPoller builds a poller from f.cfg without starting it.
func newPoller(f *fixture) (*poller.Poller, error) { return poller.New(f.cfg) }
