package topology_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/oxypipe/oxypipe/internal/topology"
	"github.com/oxypipe/oxypipe/pkg/messages"
	"github.com/oxypipe/oxypipe/pkg/oxytype"
)

// seedRun gives a run a record in state, a claim, a payload, a status event
// and an announcement and completion, and returns its record as read.
func seedRun(t *testing.T, topo *topology.Topology, id string, state oxytype.RunState) *topology.RunRef {
	t.Helper()
	ctx := context.Background()
	js := topo.JetStream()
	ann := messages.RunAnnounced{Run: id, Total: 1, FinalDataType: oxytype.FinalDataType, Destination: "out", StartedAt: time.Now().UTC()}
	if _, err := topo.AnnounceRun(ctx, ann, oxytype.Party{Type: "feeder"}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := topo.Runs().Transition(ctx, id, func(r *messages.RunRecord) bool { r.State = state; return true }); err != nil {
		t.Fatal(err)
	}
	if _, err := topo.Claims().Acquire(ctx, id, "0", 0, "pod", time.Now()); err != nil {
		t.Fatal(err)
	}
	for _, e := range []messages.Envelope{
		&messages.Payload{Run: id, Doc: "0", Payload: json.RawMessage(`{}`)},
		&messages.StatusEvent{Run: id, Doc: "0", DataType: oxytype.DataPayload, Outcome: oxytype.Success, Time: time.Now()},
		&messages.RunCompleted{Run: id, Total: 1, Done: 1, CompletedAt: time.Now()},
	} {
		m, err := messages.NewMsg(e, oxytype.Party{Type: "test"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := js.PublishMsg(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	ref, err := topo.Runs().Get(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	return ref
}

// runMsgs counts the messages of a run in every stream and bucket.
func runMsgs(t *testing.T, js jetstream.JetStream, id string) map[string]uint64 {
	t.Helper()
	tok := messages.RunToken(id)
	got := map[string]uint64{}
	for _, p := range []struct{ stream, subject string }{
		{topology.StreamPayloads, messages.PayloadSubject(id)},
		{topology.StreamStatus, messages.StatusSubject(id)},
		{topology.StreamRuns, messages.RunSubject(id)},
		{topology.StreamRuns, messages.RunCompletedSubject(id)},
		{"KV_" + topology.BucketClaims, "$KV." + topology.BucketClaims + "." + tok + ".>"},
		{"KV_" + topology.BucketRuns, "$KV." + topology.BucketRuns + "." + tok},
	} {
		s, err := js.Stream(context.Background(), p.stream)
		if err != nil {
			t.Fatal(err)
		}
		info, err := s.Info(context.Background(), jetstream.WithSubjectFilter(p.subject))
		if err != nil {
			t.Fatal(err)
		}
		got[p.stream] += 0
		for _, n := range info.State.Subjects {
			got[p.stream] += n
		}
	}
	return got
}

func TestForgetRun(t *testing.T) {
	t.Parallel()
	_, js := setup(t)
	topo := ensure(t, js, topology.Config{})
	ctx := context.Background()
	const finished, open = "20260929T170412.345Z", "20260929T170412.346Z"
	ref := seedRun(t, topo, finished, oxytype.RunStateCompleted)
	openRef := seedRun(t, topo, open, oxytype.RunStateReady)

	t.Run("an open run is never forgotten", func(t *testing.T) {
		if err := topo.ForgetRun(ctx, openRef); !errors.Is(err, topology.ErrRunOpen) {
			t.Fatalf("ForgetRun of a ready run = %v", err)
		}
	})
	t.Run("a record changed since it was read is left for the next look", func(t *testing.T) {
		stale := *ref
		if _, _, err := topo.Runs().Transition(ctx, finished, func(r *messages.RunRecord) bool { r.Reason = "touched"; return true }); err != nil {
			t.Fatal(err)
		}
		if err := topo.ForgetRun(ctx, &stale); !errors.Is(err, topology.ErrConflict) {
			t.Fatalf("ForgetRun with a stale revision = %v", err)
		}
		if _, err := topo.Runs().Get(ctx, finished); err != nil {
			t.Fatalf("the record is gone: %v", err)
		}
	})
	t.Run("a finished run leaves nothing on the broker, and the other runs keep everything", func(t *testing.T) {
		ref, err := topo.Runs().Get(ctx, finished)
		if err != nil {
			t.Fatal(err)
		}
		if err := topo.ForgetRun(ctx, ref); err != nil {
			t.Fatal(err)
		}
		for stream, n := range runMsgs(t, js, finished) {
			if n != 0 {
				t.Errorf("%s still holds %d messages of the forgotten run", stream, n)
			}
		}
		if _, err := topo.Runs().Get(ctx, finished); !errors.Is(err, oxytype.ErrRunNotFound) {
			t.Errorf("Get of the forgotten run = %v", err)
		}
		want := map[string]uint64{topology.StreamPayloads: 1, topology.StreamStatus: 1, topology.StreamRuns: 2,
			"KV_" + topology.BucketClaims: 1, "KV_" + topology.BucketRuns: 1}
		if got := runMsgs(t, js, open); len(got) != len(want) || got[topology.StreamRuns] != 2 || got[topology.StreamPayloads] != 1 ||
			got[topology.StreamStatus] != 1 || got["KV_"+topology.BucketClaims] != 1 || got["KV_"+topology.BucketRuns] != 1 {
			t.Errorf("the open run's messages: %v, want %v", got, want)
		}
		// Forgetting again (another replica, a retry) is harmless.
		if err := topo.ForgetRun(ctx, ref); err != nil {
			t.Fatalf("forgetting twice: %v", err)
		}
	})
}
