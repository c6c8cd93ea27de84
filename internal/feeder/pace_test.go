package feeder_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/oxypipe/oxypipe/internal/feeder"
	"github.com/oxypipe/oxypipe/internal/natsserver"
	"github.com/oxypipe/oxypipe/internal/testutil"
	"github.com/oxypipe/oxypipe/internal/topology"
	"github.com/oxypipe/oxypipe/pkg/messages"
	"github.com/oxypipe/oxypipe/pkg/oxytype"
	"github.com/oxypipe/oxypipe/pkg/payload"
)

// paced starts a broker and a feeder whose feed keeps at most limit docs
// ahead of the count in resolved; it returns the feeder and a function that
// reports how many payloads the broker holds.
func paced(t *testing.T, limit int, resolved *atomic.Int64) (*feeder.Feeder, *topology.Topology, func() uint64) {
	t.Helper()
	ctx := context.Background()
	srv, err := natsserver.Start(ctx, natsserver.Config{StoreDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Shutdown(context.Background()) })
	nc, err := srv.Connect()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	topo, err := topology.Ensure(ctx, js, topology.Config{})
	if err != nil {
		t.Fatal(err)
	}
	f, err := feeder.New(feeder.Config{
		Topology:      topo,
		MaxUnresolved: limit,
		Resolved:      func(context.Context, string) (int, error) { return int(resolved.Load()), nil },
	})
	if err != nil {
		t.Fatal(err)
	}
	return f, topo, func() uint64 {
		s, err := js.Stream(ctx, topology.StreamPayloads)
		if err != nil {
			t.Fatal(err)
		}
		info, err := s.Info(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return info.State.Msgs
	}
}

func products(n int) feeder.Slice {
	src := make(feeder.Slice, n)
	for i := range src {
		src[i] = payload.New("universal", "url", fmt.Sprintf("https://shop.example/p/%d", i))
	}
	return src
}

func announced(run string, total int) messages.RunAnnounced {
	return messages.RunAnnounced{V: messages.Version, Run: run, Total: total, FinalDataType: oxytype.FinalDataType,
		Destination: "results", RunLog: "logs", StartedAt: time.Now().UTC()}
}

// create stores a run record, and checks that it reads back (the pacer
// reads it to see whether the run is stopping).
func create(t *testing.T, topo *topology.Topology, rec messages.RunRecord) {
	t.Helper()
	rec.V, rec.UpdatedAt = messages.Version, time.Now().UTC()
	ctx := context.Background()
	if _, err := topo.Runs().Create(ctx, rec); err != nil {
		t.Fatal(err)
	}
	if _, err := topo.Runs().Get(ctx, rec.Announced.Run); err != nil {
		t.Fatal(err)
	}
}

type feedOutcome struct {
	res feeder.FeedResult
	err error
}

func feed(f *feeder.Feeder, run string, src feeder.Source) <-chan feedOutcome {
	out := make(chan feedOutcome, 1)
	go func() {
		res, err := f.Feed(context.Background(), run, src)
		out <- feedOutcome{res, err}
	}()
	return out
}

func TestFeedKeepsPaceWithTheResolvedDocs(t *testing.T) {
	t.Parallel()
	const limit, total = 1000, 5000
	t.Run("at most the limit is fed ahead of the resolved docs", func(t *testing.T) {
		t.Parallel()
		var resolved atomic.Int64
		f, topo, fed := paced(t, limit, &resolved)
		run := messages.NewRunID(time.Now())
		create(t, topo, messages.RunRecord{Announced: announced(run, total), State: oxytype.RunStateReady})
		done := feed(f, run, products(total))
		testutil.EventuallyExplain(t, 10*time.Second, func() bool { return fed() == limit },
			func() string { return fmt.Sprintf("the first window to be fed: %d fed", fed()) })
		select {
		case o := <-done:
			t.Fatalf("the feed ended with nothing resolved: %+v, %v", o.res, o.err)
		default:
		}
		// A waiting feed holds back no fed event in a batch: 1,000 is not
		// a multiple of the batch size.
		fedEvents := func() int {
			return len(testutil.StreamDecodedEach(t, topo.JetStream(), topology.StreamStatus, messages.StatusEvents))
		}
		testutil.EventuallyExplain(t, 10*time.Second, func() bool { return fedEvents() == limit },
			func() string {
				return fmt.Sprintf("the fed events of the waiting feed's docs: %d stored of %d", fedEvents(), limit)
			})
		resolved.Store(3000)
		testutil.EventuallyExplain(t, 30*time.Second, func() bool { return fed() == 3000+limit },
			func() string { return fmt.Sprintf("the feed to follow the count: %d fed", fed()) })
		resolved.Store(total - limit)
		o := <-done
		if o.err != nil || o.res.Payloads != total || o.res.Events != total {
			t.Fatalf("feed = %+v, %v; want %d payloads and events", o.res, o.err, total)
		}
	})
	t.Run("a stopping run is fed at once", func(t *testing.T) {
		t.Parallel()
		var resolved atomic.Int64
		f, topo, fed := paced(t, limit, &resolved)
		run := messages.NewRunID(time.Now())
		now := time.Now()
		create(t, topo, messages.RunRecord{Announced: announced(run, total), State: oxytype.RunStateStopping,
			Stop: &messages.RunStop{Cause: messages.StopByUser, At: now, Deadline: now.Add(time.Minute)}})
		o := <-feed(f, run, products(total))
		if o.err != nil || o.res.Payloads != total || fed() != total {
			t.Fatalf("feed = %+v, %v with %d in the broker; want all %d", o.res, o.err, fed(), total)
		}
	})
}
