package oxy_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/oxypipe/oxypipe/internal/testutil"
	"github.com/oxypipe/oxypipe/pkg/destination"
	"github.com/oxypipe/oxypipe/pkg/emulator"
	"github.com/oxypipe/oxypipe/pkg/oxy"
	"github.com/oxypipe/oxypipe/pkg/oxytype"
	"github.com/oxypipe/oxypipe/pkg/payload"
	"github.com/oxypipe/oxypipe/pkg/wsa"
)

func TestNothingBillsWhenARunCannotStart(t *testing.T) {
	t.Parallel()
	ctx := testContext(t, 60*time.Second)
	c := sandboxClient(t, emulator.Config{})
	dir := t.TempDir()
	blocker := filepath.Join(dir, "a-file")
	if err := os.WriteFile(blocker, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	good := filepath.Join(dir, "results")

	t.Run("missing credentials", func(t *testing.T) {
		if _, err := oxy.NewClient(oxy.Config{Username: "user"}); !errors.Is(err, oxy.ErrNoCredentials) {
			t.Errorf("NewClient = %v", err)
		}
	})
	t.Run("an external pipeline needs no local credentials, except to Get", func(t *testing.T) {
		ext, err := oxy.NewClient(oxy.Config{NATSURL: "nats://127.0.0.1:1"})
		if err != nil {
			t.Fatalf("NewClient without credentials for an external NATS = %v, want nil", err)
		}
		defer func() { _ = ext.Close(ctx) }()
		if _, err := ext.Get(ctx, "7500000000000000001"); !errors.Is(err, oxy.ErrNoCredentials) {
			t.Errorf("Get without credentials = %v, want ErrNoCredentials", err)
		}
	})
	t.Run("the retry after an unknown outcome is the deployed submitters' setting", func(t *testing.T) {
		_, err := oxy.NewClient(oxy.Config{NATSURL: "nats://127.0.0.1:1", RetryUnknownOnce: true})
		if err == nil || !strings.Contains(err.Error(), "OXY_RETRY_UNKNOWN_ONCE") {
			t.Errorf("NewClient = %v, want an error naming the submitters' setting", err)
		}
	})
	t.Run("no destination", func(t *testing.T) {
		if _, err := c.Execute(ctx, products(1, 1), oxy.Options{}); !errors.Is(err, oxy.ErrNoDestination) {
			t.Errorf("Execute = %v", err)
		}
	})
	t.Run("a payload without an input", func(t *testing.T) {
		bad, err := payload.Parse([]byte(`{"source":"universal","render":"html"}`), 0)
		if err != nil {
			t.Fatal(err)
		}
		_, err = c.Execute(ctx, append(products(1, 2), bad), oxy.Options{Destination: good})
		var ie *oxytype.InputError
		if !errors.As(err, &ie) || ie.Doc != 2 || !errors.Is(err, oxytype.ErrNoInput) {
			t.Fatalf("Execute = %v", err)
		}
		if !strings.HasPrefix(err.Error(), "payload 2: the payload has no input key") {
			t.Errorf("error text %q", err.Error())
		}
	})
	t.Run("a destination that cannot be written", func(t *testing.T) {
		_, err := c.Execute(ctx, products(1, 2), oxy.Options{Destination: filepath.Join(blocker, "results")})
		if !errors.Is(err, destination.ErrLocationNotFound) {
			t.Errorf("Execute = %v", err)
		}
	})
	t.Run("a run log that cannot be written", func(t *testing.T) {
		_, err := c.Execute(ctx, products(1, 2), oxy.Options{Destination: good, RunLog: filepath.Join(blocker, "logs")})
		var rf *oxytype.RunFailedError
		if !errors.As(err, &rf) || !strings.Contains(rf.Reason, "run log cannot be written") {
			t.Fatalf("Execute = %v", err)
		}
	})

	cl, err := c.Cluster(ctx)
	if err != nil {
		t.Fatal(err)
	}
	st := cl.Emulator().Emulator.Stats()
	if st.JobsCreated != 0 || st.Requests[emulator.EndpointSubmit]+st.Requests[emulator.EndpointBatch] != 0 {
		t.Errorf("the API was called: %+v", st)
	}
}

func TestGet(t *testing.T) {
	t.Parallel()
	ctx := testContext(t, 30*time.Second)
	c := sandboxClient(t, emulator.Config{Rules: []emulator.Rule{
		{Pattern: mustRegexp(`/pending$`), Outcome: emulator.Outcome{StayPending: true}},
		{Pattern: mustRegexp(`/fault$`), Outcome: emulator.Outcome{Fault: true}},
		{Pattern: mustRegexp(`/expired$`), Outcome: emulator.Outcome{ResultsTTL: time.Millisecond}},
	}})
	cl, err := c.Cluster(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string]string{}
	for _, name := range []string{"done", "pending", "fault", "expired"} {
		job, _, err := cl.API().Submit(ctx, payload.New("universal", "url", "https://sandbox.oxylabs.io/"+name))
		if err != nil {
			t.Fatal(err)
		}
		ids[name] = job.ID
	}
	ids["unknown"] = "7500000000000009999"
	want := map[string]oxy.FetchStatus{
		"done": oxy.FetchDone, "pending": oxy.FetchPending, "fault": oxy.FetchFaulted,
		"expired": oxy.FetchExpired, "unknown": oxy.FetchUnknown,
	}
	sentinel := map[oxy.FetchStatus]error{
		oxy.FetchPending: oxy.ErrJobPending, oxy.FetchFaulted: oxy.ErrJobFaulted,
		oxy.FetchExpired: oxy.ErrJobExpired, oxy.FetchUnknown: oxy.ErrJobUnknown,
	}
	for name, status := range want {
		var f *oxy.Fetched
		testutil.Eventually(t, 10*time.Second, name+" to be "+string(status), func() bool {
			f, err = c.Get(ctx, ids[name])
			if err != nil {
				t.Fatal(err)
			}
			return f.Status == status
		})
		if status == oxy.FetchDone {
			if f.Err() != nil || len(f.Body) == 0 || f.Job.ID != ids[name] {
				t.Errorf("done: %v, %d bytes, job %q", f.Err(), len(f.Body), f.Job.ID)
			}
			continue
		}
		if f.Body != nil || !errors.Is(f.Err(), sentinel[status]) {
			t.Errorf("%s: body %d bytes, Err() = %v", name, len(f.Body), f.Err())
		}
	}

	t.Run("lookup reads the status only", func(t *testing.T) {
		before := cl.Emulator().Emulator.Stats().Requests[emulator.EndpointResults]
		for name, status := range map[string]oxy.FetchStatus{
			"done": oxy.FetchDone, "pending": oxy.FetchPending, "fault": oxy.FetchFaulted, "unknown": oxy.FetchUnknown,
		} {
			f, err := c.Lookup(ctx, ids[name])
			if err != nil || f.Status != status || f.Body != nil {
				t.Errorf("Lookup(%s) = %+v, %v; want %s and no body", name, f, err, status)
			}
		}
		unknown, _ := c.Lookup(ctx, ids["unknown"])
		if !errors.Is(unknown.Err(), wsa.ErrNotFound) || !errors.Is(unknown.Err(), oxy.ErrJobUnknown) {
			t.Errorf("an unknown job's Err() = %v: want it to carry the API's 404", unknown.Err())
		}
		if after := cl.Emulator().Emulator.Stats().Requests[emulator.EndpointResults]; after != before {
			t.Errorf("Lookup read results %d times", after-before)
		}
	})

	t.Run("save writes the body of a done job only", func(t *testing.T) {
		dir := t.TempDir()
		dest, err := destination.Open(ctx, dir)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = dest.Close() }()
		f, err := c.Save(ctx, ids["done"], dest)
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(filepath.Join(dir, ids["done"]+".json"))
		if err != nil || string(got) != string(f.Body) {
			t.Errorf("saved file: %v", err)
		}
		if f, err := c.Save(ctx, ids["fault"], dest); err != nil || f.File != "" {
			t.Errorf("save of a faulted job: %+v, %v", f, err)
		}
		if names := files(t, dir); len(names) != 1 {
			t.Errorf("destination holds %v", names)
		}
	})
}
