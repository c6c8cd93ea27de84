package writer_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/oxypipe/oxypipe/internal/natsserver/natstest"
	"github.com/oxypipe/oxypipe/internal/stage"
	"github.com/oxypipe/oxypipe/internal/testutil"
	"github.com/oxypipe/oxypipe/internal/topology"
	"github.com/oxypipe/oxypipe/internal/writer"
	"github.com/oxypipe/oxypipe/pkg/destination"
	"github.com/oxypipe/oxypipe/pkg/destination/s3dest"
	"github.com/oxypipe/oxypipe/pkg/emulator"
	"github.com/oxypipe/oxypipe/pkg/messages"
	"github.com/oxypipe/oxypipe/pkg/oxytype"
	"github.com/oxypipe/oxypipe/pkg/payload"
	"github.com/oxypipe/oxypipe/pkg/wsa"
)

var (
	pollerActor = oxytype.Party{Type: "poller", Name: "test"}
	feeder      = oxytype.Party{Type: "feeder", Name: "test"}
)

// maxDeliver is the writer consumer's MaxDeliver in these tests.
const maxDeliver = 4

// fixture is one test's broker, emulator and writer configuration.
type fixture struct {
	t      testing.TB
	js     jetstream.JetStream
	topo   *topology.Topology
	api    *emulator.Server
	client *wsa.Client
	reg    *prometheus.Registry
	cfg    writer.Config
	runs   atomic.Int64
}

// setup starts a broker with the full topology and an emulator whose jobs
// finish within milliseconds. The writer is not started: change f.cfg, then
// start.
func setup(t testing.TB, emu emulator.Config) *fixture {
	t.Helper()
	_, nc := natstest.Start(t)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	settings, err := topology.DefaultConsumer(topology.Writer)
	if err != nil {
		t.Fatal(err)
	}
	settings.AckWait = 5 * time.Second
	settings.MaxDeliver = maxDeliver
	settings.RetryBackoff = []time.Duration{20 * time.Millisecond}
	topo, err := topology.EnsureAll(t.Context(), js, topology.Config{Storage: jetstream.MemoryStorage}, settings)
	if err != nil {
		t.Fatal(err)
	}
	emu.TimeScale, emu.JobTime = 0.001, time.Second
	emu.RateLimit, emu.RenderRateLimit = emulator.Unlimited, emulator.Unlimited
	api := emulator.NewServer(t, emu)
	client, err := wsa.New(wsa.Config{BaseURL: api.URL, Username: api.Username, Password: api.Password, Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	return &fixture{
		t: t, js: js, topo: topo, api: api, client: client, reg: reg,
		cfg: writer.Config{
			Stage: stage.Config{
				Conn: nc, Consumer: settings, Instance: "writer-test",
				FetchWait: 100 * time.Millisecond, WatchdogInterval: 100 * time.Millisecond,
				DrainTimeout: 5 * time.Second, Registerer: reg,
			},
			API:          client,
			Topology:     topo,
			Destinations: destination.Config{Local: destination.LocalConfig{NoSync: true}},
		},
	}
}

// start runs a writer with f.cfg until the test ends.
func (f *fixture) start() *writer.Writer {
	f.t.Helper()
	w, err := writer.New(f.cfg)
	if err != nil {
		f.t.Fatal(err)
	}
	testutil.RunUntilCleanup(f.t, "the writer", w.Run)
	return w
}

// announce creates a run writing to dest and returns its id.
func (f *fixture) announce(dest string, final oxytype.DataType) string {
	f.t.Helper()
	start := time.Date(2026, 9, 29, 17, 4, 12, 0, time.UTC).Add(time.Duration(f.runs.Add(1)) * time.Second)
	id, err := f.topo.AnnounceRun(f.t.Context(), messages.RunAnnounced{
		Total: 10, FinalDataType: final, Destination: dest, RunLog: f.t.TempDir(), StartedAt: start,
	}, feeder)
	if err != nil {
		f.t.Fatal(err)
	}
	return id
}

// job creates a job at the emulator and waits until it is done.
func (f *fixture) job(url string) (id string, body json.RawMessage) {
	f.t.Helper()
	id, body = f.submitJob(url)
	testutil.Eventuallyf(f.t, 5*time.Second, func() bool {
		j, err := f.client.Status(f.t.Context(), id)
		return err == nil && j.Status.Final()
	}, "job %s finishes", id)
	return id, body
}

// submitJob creates a job at the emulator for a universal payload of url.
func (f *fixture) submitJob(url string) (id string, body json.RawMessage) {
	f.t.Helper()
	body = json.RawMessage(fmt.Sprintf(`{"source":"universal","url":%q}`, url))
	p, err := payload.Parse(body, 1)
	if err != nil {
		f.t.Fatal(err)
	}
	job, _, err := f.client.Submit(f.t.Context(), p)
	if err != nil {
		f.t.Fatalf("Submit: %v", err)
	}
	return job.ID, body
}

// done publishes the Done of a job as the poller would.
func (f *fixture) done(run string, doc int, id string, body json.RawMessage) *messages.Done {
	f.t.Helper()
	d := &messages.Done{Run: run, Doc: messages.DocID(doc), APIJobID: id, Payload: body, FinishedAt: time.Now().UTC()}
	f.publish(d)
	return d
}

func (f *fixture) publish(e messages.Envelope) {
	f.t.Helper()
	m, err := messages.NewMsg(e, pollerActor)
	if err != nil {
		f.t.Fatal(err)
	}
	f.publishMsg(m)
}

func (f *fixture) publishMsg(m *nats.Msg) {
	f.t.Helper()
	if _, err := f.js.PublishMsg(f.t.Context(), m); err != nil {
		f.t.Fatal(err)
	}
}

// results is the API's body for a job, as a client reads it.
func (f *fixture) results(id string) []byte {
	f.t.Helper()
	res, err := f.client.Results(f.t.Context(), id)
	if err != nil {
		f.t.Fatalf("Results(%s): %v", id, err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		f.t.Fatal(err)
	}
	return b
}

// events returns the status events of a run's doc stored so far.
func (f *fixture) events(run, doc string) []messages.StatusEvent {
	f.t.Helper()
	var out []messages.StatusEvent
	for _, ev := range f.allEvents() {
		if ev.Run == run && ev.Doc == doc {
			out = append(out, ev)
		}
	}
	return out
}

func (f *fixture) allEvents() []messages.StatusEvent {
	f.t.Helper()
	return testutil.StreamDecodedEach(f.t, f.js, topology.StreamStatus, messages.StatusEvents)
}

// final waits until the doc's last event is a success or a hard failure and
// returns its events.
func (f *fixture) final(run, doc string) []messages.StatusEvent {
	f.t.Helper()
	var evs []messages.StatusEvent
	testutil.Eventuallyf(f.t, 15*time.Second, func() bool {
		evs = f.events(run, doc)
		if len(evs) == 0 {
			return false
		}
		o := evs[len(evs)-1].Outcome
		return o == oxytype.Success || o == oxytype.HardFailure
	}, "doc %s of run %s reaches a final event", doc, run)
	return evs
}

// counter reads a counter of the registry by name and labels.
func (f *fixture) counter(name string, labels map[string]string) float64 {
	return testutil.Metric(f.t, f.reg, name, labels)
}

// fakeS3 is an S3-protocol server in this process with one bucket. It
// counts the listings (a probe is one) and can refuse uploads.
type fakeS3 struct {
	url      string
	backend  *s3mem.Backend
	lists    atomic.Int64
	denyPuts atomic.Bool
	// failPuts answers that many uploads (-1: every one) with a 400 the
	// SDK does not retry and no rule calls permanent, and puts counts the
	// uploads tried.
	failPuts atomic.Int64
	// stallPuts holds that many uploads, after reading their bodies,
	// until their clients give up on them.
	stallPuts atomic.Int64
	puts      atomic.Int64
}

const (
	bucket    = "oxypipe"
	accessKey = "AKIAOXYPIPETEST"
	secretKey = "s3cr3t-oxypipe-test-key"
)

func startFakeS3(t testing.TB) *fakeS3 {
	t.Helper()
	f := &fakeS3{backend: s3mem.New()}
	if err := f.backend.CreateBucket(bucket); err != nil {
		t.Fatal(err)
	}
	inner := gofakes3.New(f.backend).Server()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet && strings.Trim(r.URL.Path, "/") == bucket {
			f.lists.Add(1)
		}
		upload := r.Method == http.MethodPut || r.Method == http.MethodPost
		if upload {
			f.puts.Add(1)
		}
		if upload && f.failPuts.Load() != 0 {
			f.failPuts.Add(-1)
			w.Header().Set("Content-Type", "application/xml")
			w.WriteHeader(http.StatusBadRequest)
			_, _ = io.WriteString(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>InvalidArgument</Code><Message>Injected failure</Message></Error>`)
			return
		}
		if upload && f.stallPuts.Load() > 0 {
			f.stallPuts.Add(-1)
			// The server notices a closed connection only once the body is read.
			_, _ = io.Copy(io.Discard, r.Body)
			select {
			case <-r.Context().Done():
			case <-time.After(time.Minute): // the client never gave up; its test fails on its own
			}
			return
		}
		if upload && f.denyPuts.Load() {
			w.Header().Set("Content-Type", "application/xml")
			w.WriteHeader(http.StatusForbidden)
			_, _ = io.WriteString(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>AccessDenied</Code><Message>Access Denied</Message></Error>`)
			return
		}
		inner.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	f.url = srv.URL
	return f
}

// config is the s3dest configuration that reaches this server.
func (f *fakeS3) config() s3dest.Config {
	return s3dest.Config{
		Region: "us-east-1", Endpoint: f.url, UsePathStyle: true,
		Credentials: credentials.NewStaticCredentialsProvider(accessKey, secretKey, ""),
	}
}

// object returns the stored object at key.
func (f *fakeS3) object(t *testing.T, key string) []byte {
	t.Helper()
	obj, err := f.backend.GetObject(bucket, key, nil)
	if err != nil {
		t.Fatalf("object %s: %v", key, err)
	}
	defer obj.Contents.Close()
	b, err := io.ReadAll(obj.Contents)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
