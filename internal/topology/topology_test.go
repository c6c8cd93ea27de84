package topology_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/oxypipe/oxypipe/internal/natsserver"
	"github.com/oxypipe/oxypipe/internal/natsserver/natstest"
	"github.com/oxypipe/oxypipe/internal/topology"
	"github.com/oxypipe/oxypipe/pkg/messages"
	"github.com/oxypipe/oxypipe/pkg/oxytype"
)

const run = "20260929T170412.345Z"

func setup(t *testing.T) (*natsserver.Server, jetstream.JetStream) {
	t.Helper()
	srv, nc := natstest.Start(t)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	return srv, js
}

func ensure(t *testing.T, js jetstream.JetStream, cfg topology.Config) *topology.Topology {
	t.Helper()
	topo, err := topology.EnsureAll(context.Background(), js, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return topo
}

func streamInfo(t *testing.T, js jetstream.JetStream, name string) *jetstream.StreamInfo {
	t.Helper()
	s, err := js.Stream(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return info
}

func TestEnsureIsSafeToRaceAndToRepeat(t *testing.T) {
	t.Parallel()
	srv, _ := setup(t)
	// Four workers start at once, each with its own connection.
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		nc := natstest.Connect(t, srv)
		js, err := jetstream.New(nc)
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = topology.EnsureAll(context.Background(), js, topology.Config{})
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("worker %d: %v", i, err)
		}
	}
	_, js := setup(t)
	ensure(t, js, topology.Config{})
	ensure(t, js, topology.Config{}) // and again: nothing changes, nothing fails

	want := map[string]struct {
		subject   string
		retention jetstream.RetentionPolicy
		maxAge    time.Duration
	}{
		topology.StreamRuns:      {messages.AllRuns, jetstream.LimitsPolicy, 0},
		topology.StreamPayloads:  {messages.AllPayloads, jetstream.WorkQueuePolicy, 0},
		topology.StreamSubmitted: {messages.AllSubmitted, jetstream.WorkQueuePolicy, 0},
		topology.StreamDone:      {messages.AllDone, jetstream.WorkQueuePolicy, 0},
		topology.StreamStatus:    {messages.AllStatus, jetstream.LimitsPolicy, 0},
	}
	for name, w := range want {
		cfg := streamInfo(t, js, name).Config
		if len(cfg.Subjects) != 1 || cfg.Subjects[0] != w.subject || cfg.Retention != w.retention || cfg.MaxAge != w.maxAge ||
			cfg.Storage != jetstream.FileStorage || cfg.Replicas != 1 || cfg.Duplicates != topology.DefaultDuplicateWindow {
			t.Errorf("%s: %+v", name, cfg)
		}
	}
	for _, stage := range topology.Stages() {
		s, _ := topology.DefaultConsumer(stage)
		c, err := js.Consumer(context.Background(), s.Stream, string(stage))
		if err != nil {
			t.Fatalf("consumer %s: %v", stage, err)
		}
		cfg := c.CachedInfo().Config
		if cfg.Durable != string(stage) || cfg.AckPolicy != jetstream.AckExplicitPolicy || cfg.MaxDeliver != -1 ||
			cfg.AckWait != s.AckWait || cfg.MaxAckPending != s.MaxAckPending || len(cfg.BackOff) != 0 {
			t.Errorf("consumer %s: %+v", stage, cfg)
		}
	}
	for _, bucket := range []string{topology.BucketClaims, topology.BucketRuns} {
		kv, err := js.KeyValue(context.Background(), bucket)
		if err != nil {
			t.Fatalf("bucket %s: %v", bucket, err)
		}
		// Nothing of a run expires by age: a long or paused run must not
		// lose its record or its claims.
		if st, err := kv.Status(context.Background()); err != nil || st.TTL() != 0 {
			t.Errorf("bucket %s: TTL %v, %v; want none", bucket, ttl(st), err)
		}
	}
}

func TestEnsureAppliesAChangedConfig(t *testing.T) {
	t.Parallel()
	_, js := setup(t)
	ensure(t, js, topology.Config{})
	ensure(t, js, topology.Config{WorkMaxAge: time.Hour, DuplicateWindow: time.Minute})
	cfg := streamInfo(t, js, topology.StreamDone).Config
	if cfg.MaxAge != time.Hour || cfg.Duplicates != time.Minute {
		t.Fatalf("done stream after the change: max age %v, duplicates %v", cfg.MaxAge, cfg.Duplicates)
	}
	s, _ := topology.DefaultConsumer(topology.Writer)
	s.AckWait = 90 * time.Second
	s.MaxAckPending = 17
	c, err := topology.EnsureConsumer(context.Background(), js, s)
	if err != nil {
		t.Fatal(err)
	}
	if got := c.CachedInfo().Config; got.AckWait != 90*time.Second || got.MaxAckPending != 17 {
		t.Fatalf("writer consumer after the change: %+v", got)
	}
	// A change the server cannot make in place is reported, not hidden.
	_, err = topology.Ensure(context.Background(), js, topology.Config{Storage: jetstream.MemoryStorage})
	if err == nil {
		t.Fatal("changing the storage type succeeded")
	}
}

func TestCreateOnlyLeavesWhatExistsAsItIsAndCreatesWhatIsMissing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, js := setup(t)
	// The deployed workers' (or the operators') settings.
	submitter, _ := topology.DefaultConsumer(topology.Submitter)
	submitter.AckWait = 90 * time.Second
	deployed := topology.Config{WorkMaxAge: 2 * time.Hour, DuplicateWindow: time.Minute}
	if _, err := topology.EnsureAll(ctx, js, deployed, submitter); err != nil {
		t.Fatal(err)
	}
	// Someone removed the done stream (and the writer consumer with it)
	// and the runs bucket.
	if err := js.DeleteStream(ctx, topology.StreamDone); err != nil {
		t.Fatal(err)
	}
	if err := js.DeleteKeyValue(ctx, topology.BucketRuns); err != nil {
		t.Fatal(err)
	}

	// A feeder with its own idea of the settings.
	feeder := topology.Config{CreateOnly: true, DuplicateWindow: 30 * time.Second, WorkMaxAge: time.Hour}
	topo, err := topology.EnsureAll(ctx, js, feeder)
	if err != nil {
		t.Fatal(err)
	}

	t.Run("existing streams, buckets and consumers are unchanged", func(t *testing.T) {
		if cfg := streamInfo(t, js, topology.StreamStatus).Config; cfg.MaxAge != 0 || cfg.Duplicates != time.Minute {
			t.Errorf("status stream: max age %v, duplicates %v; want none and 1m", cfg.MaxAge, cfg.Duplicates)
		}
		if cfg := streamInfo(t, js, topology.StreamPayloads).Config; cfg.MaxAge != 2*time.Hour || cfg.Duplicates != time.Minute {
			t.Errorf("payload stream: max age %v, duplicates %v; want 2h and 1m", cfg.MaxAge, cfg.Duplicates)
		}
		c, err := js.Consumer(ctx, topology.StreamPayloads, string(topology.Submitter))
		if err != nil {
			t.Fatal(err)
		}
		if got := c.CachedInfo().Config.AckWait; got != 90*time.Second {
			t.Errorf("submitter consumer AckWait %v, want 90s", got)
		}
	})
	t.Run("missing ones are created with the given settings", func(t *testing.T) {
		if cfg := streamInfo(t, js, topology.StreamDone).Config; cfg.MaxAge != time.Hour || cfg.Duplicates != 30*time.Second ||
			cfg.Retention != jetstream.WorkQueuePolicy {
			t.Errorf("done stream: %+v", cfg)
		}
		if _, err := js.KeyValue(ctx, topology.BucketRuns); err != nil {
			t.Errorf("runs bucket: %v", err)
		}
		if _, err := js.Consumer(ctx, topology.StreamDone, string(topology.Writer)); err != nil {
			t.Errorf("writer consumer: %v", err)
		}
	})
	t.Run("the buckets work through the returned topology", func(t *testing.T) {
		if _, err := topo.Claims().Acquire(ctx, run, "0", 0, "feeder", time.Now()); err != nil {
			t.Fatal(err)
		}
		if _, err := topo.Claims().Get(ctx, run, "0"); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("replicas the server could not even apply are not touched", func(t *testing.T) {
		// A production feeder configured for 3 replicas, or a worker left
		// at 1 against a 3-replica cluster: here the one-node server shows
		// that CreateOnly does not try to change them, where Ensure does.
		if _, err := topology.EnsureAll(ctx, js, topology.Config{CreateOnly: true, Replicas: 3}); err != nil {
			t.Fatalf("CreateOnly with other replicas: %v", err)
		}
		for _, name := range []string{topology.StreamRuns, topology.StreamPayloads, topology.StreamStatus} {
			if r := streamInfo(t, js, name).Config.Replicas; r != 1 {
				t.Errorf("%s: %d replicas", name, r)
			}
		}
		if _, err := topology.Ensure(ctx, js, topology.Config{Replicas: 3}); err == nil {
			t.Error("Ensure changed the replicas of a one-node server's streams without an error")
		}
	})
}

// ttl is a bucket's TTL, or 0 without a status.
func ttl(st jetstream.KeyValueStatus) time.Duration {
	if st == nil {
		return 0
	}
	return st.TTL()
}

func TestConfigAndSettingsAreValidated(t *testing.T) {
	t.Parallel()
	_, js := setup(t)
	for _, cfg := range []topology.Config{{Replicas: 7}, {WorkMaxAge: time.Second}, {WorkMaxAge: -time.Hour}} {
		if _, err := topology.Ensure(context.Background(), js, cfg); err == nil {
			t.Errorf("Ensure(%+v) succeeded", cfg)
		}
	}
	if _, err := topology.DefaultConsumer("mailer"); err == nil {
		t.Error("an unknown stage has defaults")
	}
	s, _ := topology.DefaultConsumer(topology.Poller)
	s.RetryBackoff = nil
	if err := s.Validate(); err == nil || err.Error() != "topology: consumer poller: RetryBackoff is empty" {
		t.Errorf("Validate = %v", err)
	}
}

func TestWorkMessagesAreDeduplicatedButStatusEventsAreNot(t *testing.T) {
	t.Parallel()
	_, js := setup(t)
	ensure(t, js, topology.Config{})
	ctx := context.Background()
	send := func(e messages.Envelope) *jetstream.PubAck {
		m, err := messages.NewMsg(e, oxytype.Party{Type: "feeder"})
		if err != nil {
			t.Fatal(err)
		}
		ack, err := js.PublishMsg(ctx, m)
		if err != nil {
			t.Fatal(err)
		}
		return ack
	}
	p := &messages.Payload{Run: run, Doc: "3", Payload: json.RawMessage(`{}`)}
	if ack := send(p); ack.Duplicate {
		t.Fatal("the first payload is a duplicate")
	}
	if ack := send(p); !ack.Duplicate {
		t.Fatal("the same payload fed twice was stored twice")
	}
	p.Attempt = 1 // a deliberate re-drive
	if ack := send(p); ack.Duplicate {
		t.Fatal("a re-drive with a new attempt was dropped")
	}
	ev := &messages.StatusEvent{Run: run, Doc: "3", DataType: oxytype.DataPayload, Outcome: oxytype.Success, Time: time.Now()}
	send(ev)
	if ack := send(ev); ack.Duplicate {
		t.Fatal("a status event was deduplicated")
	}
	if n := streamInfo(t, js, topology.StreamPayloads).State.Msgs; n != 2 {
		t.Fatalf("%d payloads stored, want 2", n)
	}
	if n := streamInfo(t, js, topology.StreamStatus).State.Msgs; n != 2 {
		t.Fatalf("%d status events stored, want 2", n)
	}
}

func TestClaims(t *testing.T) {
	t.Parallel()
	_, js := setup(t)
	claims := ensure(t, js, topology.Config{}).Claims()
	ctx := context.Background()
	now := time.Date(2026, 9, 29, 17, 5, 0, 0, time.UTC)

	t.Run("exactly one of many racing submitters claims a doc", func(t *testing.T) {
		var wins atomic.Int32
		var wg sync.WaitGroup
		for i := range 10 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, err := claims.Acquire(ctx, run, "1", 0, messages.DocID(i), now)
				switch {
				case err == nil:
					wins.Add(1)
				case !errors.Is(err, topology.ErrClaimHeld):
					t.Error(err)
				}
			}()
		}
		wg.Wait()
		if wins.Load() != 1 {
			t.Fatalf("%d winners", wins.Load())
		}
	})

	t.Run("a submitted claim tells a redelivery the job id", func(t *testing.T) {
		ref, err := claims.Acquire(ctx, run, "2", 0, "pod-a", now)
		if err != nil {
			t.Fatal(err)
		}
		if err := claims.MarkSubmitted(ctx, ref, "7000000000000000002", now.Add(time.Second)); err != nil {
			t.Fatal(err)
		}
		_, err = claims.Acquire(ctx, run, "2", 0, "pod-b", now)
		var held *topology.ClaimHeldError
		if !errors.As(err, &held) || held.Held.Claim.State != messages.ClaimSubmitted || held.Held.Claim.APIJobID != "7000000000000000002" {
			t.Fatalf("Acquire = %v", err)
		}
		if err.Error() != "doc 2 of run "+run+" was already submitted as job 7000000000000000002" {
			t.Fatalf("message = %q", err)
		}
	})

	t.Run("a claim without a job id is reported as held", func(t *testing.T) {
		if _, err := claims.Acquire(ctx, run, "3", 0, "pod-a", now); err != nil {
			t.Fatal(err)
		}
		_, err := claims.Acquire(ctx, run, "3", 0, "pod-b", now)
		var held *topology.ClaimHeldError
		if !errors.As(err, &held) || held.Held.Claim.State != messages.ClaimHeld || held.Held.Claim.By != "pod-a" {
			t.Fatalf("Acquire = %v", err)
		}
	})

	t.Run("a released claim can be claimed again, a stale one cannot be moved", func(t *testing.T) {
		first, err := claims.Acquire(ctx, run, "4", 0, "pod-a", now)
		if err != nil {
			t.Fatal(err)
		}
		stale := *first
		if err := claims.Release(ctx, first, "429 Too Many Requests"); err != nil {
			t.Fatal(err)
		}
		second, err := claims.Acquire(ctx, run, "4", 0, "pod-b", now)
		if err != nil || second.Claim.By != "pod-b" || second.Revision <= first.Revision {
			t.Fatalf("re-Acquire = %+v, %v", second, err)
		}
		if err := claims.MarkSubmitted(ctx, &stale, "1", now); !errors.Is(err, topology.ErrConflict) {
			t.Fatalf("MarkSubmitted with a stale revision = %v", err)
		}
		got, err := claims.Get(ctx, run, "4")
		if err != nil || got.Claim.State != messages.ClaimHeld || got.Claim.By != "pod-b" {
			t.Fatalf("Get = %+v, %v", got, err)
		}
		if _, err := claims.Get(ctx, run, "99"); !errors.Is(err, topology.ErrNoClaim) {
			t.Fatalf("Get of an unclaimed doc = %v", err)
		}
	})
}

func TestRuns(t *testing.T) {
	t.Parallel()
	_, js := setup(t)
	topo := ensure(t, js, topology.Config{})
	ctx := context.Background()
	start := time.Date(2026, 9, 29, 17, 4, 12, 345_000_000, time.UTC)
	ann := messages.RunAnnounced{Total: 2, FinalDataType: oxytype.FinalDataType, Destination: "out", RunLog: "logs", StartedAt: start}
	feeder := oxytype.Party{Type: "feeder", Name: "cli"}

	t.Run("runs started in the same millisecond get distinct sortable ids", func(t *testing.T) {
		first, err := topo.AnnounceRun(ctx, ann, feeder)
		if err != nil {
			t.Fatal(err)
		}
		second, err := topo.AnnounceRun(ctx, ann, feeder)
		if err != nil {
			t.Fatal(err)
		}
		if first != run || second != "20260929T170412.346Z" {
			t.Fatalf("ids %q, %q", first, second)
		}
		named := ann
		named.Run = run
		if _, err := topo.AnnounceRun(ctx, named, feeder); !errors.Is(err, topology.ErrRunExists) {
			t.Fatalf("announcing a taken id = %v", err)
		}
		s, err := js.Stream(ctx, topology.StreamRuns)
		if err != nil {
			t.Fatal(err)
		}
		raw, err := s.GetLastMsgForSubject(ctx, messages.RunSubject(run))
		if err != nil {
			t.Fatal(err)
		}
		got, err := messages.DecodeRunAnnounced(raw.Subject, raw.Data)
		if err != nil || got.Total != 2 || !got.StartedAt.Equal(start) || raw.Header.Get(messages.HeaderOrigin) != "feeder/cli" {
			t.Fatalf("announcement = %+v, %v", got, err)
		}
	})

	t.Run("exactly one racer completes a run, and a waiter sees it", func(t *testing.T) {
		waited := make(chan *topology.RunRef, 1)
		go func() {
			ref, err := topo.Runs().Wait(ctx, run, func(r *messages.RunRecord) bool { return r.State == oxytype.RunStateCompleted })
			if err != nil {
				t.Error(err)
			}
			waited <- ref
		}()
		var wins atomic.Int32
		var wg sync.WaitGroup
		for range 5 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				applied, _, err := topo.Runs().Transition(ctx, run, func(r *messages.RunRecord) bool {
					if r.State == oxytype.RunStateCompleted {
						return false
					}
					r.State = oxytype.RunStateCompleted
					r.Completed = &messages.RunCompleted{Run: run, Total: 2, Done: 2, CompletedAt: time.Now().UTC()}
					return true
				})
				if err != nil {
					t.Error(err)
				}
				if applied {
					wins.Add(1)
				}
			}()
		}
		wg.Wait()
		if wins.Load() != 1 {
			t.Fatalf("%d winners", wins.Load())
		}
		select {
		case ref := <-waited:
			if ref == nil || ref.Record.State != oxytype.RunStateCompleted || ref.Record.Completed.Done != 2 {
				t.Fatalf("waiter saw %+v", ref)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("the waiter did not see the completion")
		}
		if _, err := topo.Runs().Get(ctx, "20200101T000000.000Z"); !errors.Is(err, oxytype.ErrRunNotFound) {
			t.Fatalf("Get of an unknown run = %v", err)
		}
	})
}

func TestStateSurvivesARestartOnTheSameStoreDir(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ctx := context.Background()
	srv, err := natsserver.Start(ctx, natsserver.Config{StoreDir: dir, Listen: true})
	if err != nil {
		t.Fatal(err)
	}
	// A TCP client works too (a worker binary or a producer from another
	// process).
	nc, err := nats.Connect(srv.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	js, _ := jetstream.New(nc)
	ensure(t, js, topology.Config{})
	for i := range 5 {
		m, _ := messages.NewMsg(&messages.Payload{Run: run, Doc: messages.DocID(i), Payload: json.RawMessage(`{}`)}, oxytype.Party{Type: "feeder"})
		if _, err := js.PublishMsg(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	s, _ := topology.DefaultConsumer(topology.Submitter)
	c, err := js.Consumer(ctx, s.Stream, string(s.Stage))
	if err != nil {
		t.Fatal(err)
	}
	batch, err := c.Fetch(2, jetstream.FetchMaxWait(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	for m := range batch.Messages() {
		if err := m.DoubleAck(ctx); err != nil {
			t.Fatal(err)
		}
	}
	nc.Close()
	if err := srv.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}

	_, nc2 := natstest.StartAt(t, dir)
	js2, _ := jetstream.New(nc2)
	ensure(t, js2, topology.Config{}) // what every worker does at start-up
	c2, err := js2.Consumer(ctx, s.Stream, string(s.Stage))
	if err != nil {
		t.Fatal(err)
	}
	info, err := c2.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.NumPending != 3 || info.AckFloor.Stream != 2 {
		t.Fatalf("after the restart: pending %d, ack floor %d; want 3 and 2", info.NumPending, info.AckFloor.Stream)
	}
}

func TestStoppingARun(t *testing.T) {
	t.Parallel()
	_, js := setup(t)
	topo := ensure(t, js, topology.Config{})
	ctx := t.Context()
	feeder := oxytype.Party{Type: "feeder", Name: "cli"}
	announce := func(timeout time.Duration) string {
		run, err := topo.AnnounceRun(ctx, messages.RunAnnounced{Total: 3, FinalDataType: oxytype.FinalDataType,
			StartedAt: time.Now(), StopTimeout: timeout}, feeder)
		if err != nil {
			t.Fatal(err)
		}
		return run
	}
	get := func(run string) messages.RunRecord {
		ref, err := topo.Runs().Get(ctx, run)
		if err != nil {
			t.Fatal(err)
		}
		return ref.Record
	}

	t.Run("a stop carries its cause and a deadline of the run's stop timeout", func(t *testing.T) {
		run := announce(90 * time.Second)
		applied, err := topo.Runs().Stop(ctx, run, topology.StopRequest{Cause: messages.StopByOutput, Reason: "Stopped submitting, because a write to the destination failed: full"})
		if err != nil || !applied {
			t.Fatalf("Stop = %v, %v", applied, err)
		}
		rec := get(run)
		if rec.State != oxytype.RunStateStopping || rec.Stop == nil || rec.Stop.Cause != messages.StopByOutput ||
			rec.Stop.Deadline.Sub(rec.Stop.At) != 90*time.Second || !strings.HasPrefix(rec.Reason, "Stopped submitting") {
			t.Fatalf("record %s %q %+v", rec.State, rec.Reason, rec.Stop)
		}
		if got := rec.NotSubmitted(); got != rec.Reason {
			t.Fatalf("NotSubmitted = %q, want the stopping stage's reason", got)
		}
	})
	t.Run("a second stop keeps the first; one asking for now only brings the deadline forward", func(t *testing.T) {
		run := announce(0)
		if _, err := topo.Runs().Stop(ctx, run, topology.StopRequest{Cause: messages.StopByUser}); err != nil {
			t.Fatal(err)
		}
		first := get(run).Stop
		if first.Deadline.Sub(first.At) != messages.DefaultStopTimeout {
			t.Fatalf("deadline %v after the stop, want the default %v", first.Deadline.Sub(first.At), messages.DefaultStopTimeout)
		}
		applied, err := topo.Runs().Stop(ctx, run, topology.StopRequest{Cause: messages.StopByOutput, Reason: "later"})
		if err != nil || applied {
			t.Fatalf("a second stop applied: %v, %v", applied, err)
		}
		applied, err = topo.Runs().Stop(ctx, run, topology.StopRequest{Cause: messages.StopByUser, Now: true})
		if err != nil || !applied {
			t.Fatalf("Stop now = %v, %v", applied, err)
		}
		rec := get(run)
		if rec.Stop.Cause != messages.StopByUser || !rec.Stop.At.Equal(first.At) || !rec.Stop.Deadline.Before(first.Deadline) || rec.Reason != "" {
			t.Fatalf("stop %+v reason %q, want the first stop with an earlier deadline", rec.Stop, rec.Reason)
		}
		// It takes effect no sooner than the settle time after the stop.
		if got := rec.Expires(messages.StopSettle); !got.Equal(first.At.Add(messages.StopSettle)) {
			t.Fatalf("Expires = %v, want %v", got, first.At.Add(messages.StopSettle))
		}
		if got := rec.NotSubmitted(); got != "the run was stopped before this payload was submitted" {
			t.Fatalf("NotSubmitted = %q", got)
		}
	})
	t.Run("a completed run is left as it is", func(t *testing.T) {
		run := announce(0)
		if _, _, err := topo.Runs().Transition(ctx, run, func(r *messages.RunRecord) bool {
			r.State = oxytype.RunStateCompleted
			return true
		}); err != nil {
			t.Fatal(err)
		}
		applied, err := topo.Runs().Stop(ctx, run, topology.StopRequest{Cause: messages.StopByUser, Now: true})
		if err != nil || applied {
			t.Fatalf("Stop of a completed run = %v, %v", applied, err)
		}
		if rec := get(run); rec.State != oxytype.RunStateCompleted || rec.Stop != nil || !rec.Expires(messages.StopSettle).IsZero() {
			t.Fatalf("record %s %+v", rec.State, rec.Stop)
		}
	})
	t.Run("a negative stop timeout is refused at announce", func(t *testing.T) {
		_, err := topo.AnnounceRun(ctx, messages.RunAnnounced{Total: 1, FinalDataType: oxytype.FinalDataType,
			StartedAt: time.Now(), StopTimeout: -time.Second}, feeder)
		if err == nil || !strings.Contains(err.Error(), "stop timeout -1s is negative") {
			t.Fatalf("AnnounceRun = %v", err)
		}
	})
}
