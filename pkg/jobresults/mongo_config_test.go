package jobresults_test

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/oxypipe/oxypipe/pkg/jobresults"
	"github.com/oxypipe/oxypipe/pkg/oxytype"
)

// unreachableClient returns a client for a local port nobody listens on.
// The driver connects lazily, so the client is created at once; every
// operation then fails server selection after selectTimeout.
func unreachableClient(t *testing.T, selectTimeout time.Duration) *mongo.Client {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	client, err := mongo.Connect(options.Client().ApplyURI("mongodb://" + addr + "/?directConnection=true").
		SetServerSelectionTimeout(selectTimeout).SetConnectTimeout(selectTimeout))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = client.Disconnect(context.Background()) })
	return client
}

func TestMongoConfigValidation(t *testing.T) {
	t.Parallel()
	client := unreachableClient(t, time.Second)
	if _, err := jobresults.NewMongoStore(nil, jobresults.MongoConfig{Database: "oxypipe"}); !errors.Is(err, jobresults.ErrInvalidConfig) {
		t.Errorf("nil client: err = %v, want ErrInvalidConfig", err)
	}
	for name, cfg := range map[string]jobresults.MongoConfig{
		"no database":            {},
		"database with a dot":    {Database: "a.b"},
		"database with a slash":  {Database: "a/b"},
		"system collection":      {Database: "oxypipe", Collection: "system.views"},
		"collection with dollar": {Database: "oxypipe", Collection: "a$b"},
		"negative TTL":           {Database: "oxypipe", TTL: -time.Hour},
		"fractional TTL":         {Database: "oxypipe", TTL: 1500 * time.Millisecond},
		"TTL beyond int32":       {Database: "oxypipe", TTL: 100 * 365 * 24 * time.Hour},
	} {
		if _, err := jobresults.NewMongoStore(client, cfg); !errors.Is(err, jobresults.ErrInvalidConfig) {
			t.Errorf("%s: err = %v, want ErrInvalidConfig", name, err)
		}
	}
	s, err := jobresults.NewMongoStore(client, jobresults.MongoConfig{Database: "oxypipe", TTL: 0})
	if err != nil {
		t.Fatalf("zero TTL: %v", err)
	}
	if s.Name() != "mongo:oxypipe.job_results" {
		t.Errorf("default name = %q", s.Name())
	}
	def := jobresults.MongoConfig{Database: "oxypipe"}.WithDefaults()
	if def.Collection != jobresults.DefaultCollection || def.Now == nil {
		t.Errorf("defaults = %+v", def)
	}
	if s, err := jobresults.NewMongoStore(client, jobresults.MongoConfig{Database: "oxypipe", Name: "ledger", TTL: 72 * time.Hour}); err != nil || s.Name() != "ledger" {
		t.Errorf("named store: %v, %v", s, err)
	}
}

// TestMongoStoreWithoutAServer runs the real driver against a port where no
// server listens: bad input is refused before any network call, and every
// operation fails with a transient error the caller can retry on.
func TestMongoStoreWithoutAServer(t *testing.T) {
	t.Parallel()
	client := unreachableClient(t, 150*time.Millisecond)
	s, err := jobresults.NewMongoStore(client, jobresults.MongoConfig{Database: "oxypipe", TTL: time.Hour, Scoping: true})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	k := jobresults.Key{Run: "job-1", DataType: "done", DocID: "1"}
	p := oxytype.Party{Type: "poller", Name: "p"}

	t.Run("bad input is refused without contacting the server", func(t *testing.T) {
		t.Parallel()
		// Had the store contacted the server, these would be transient
		// server-selection errors instead.
		for what, err := range map[string]error{
			"empty doc id":      s.RecordSuccess(ctx, jobresults.Key{Run: "j", DataType: "d"}, p),
			"negative retry":    s.RecordSoftFailure(ctx, k, p, p, -1, "r"),
			"empty hard error":  s.RecordHardFailure(ctx, k, p, p, ""),
			"invalid scope":     s.RecordSuccess(jobresults.WithScope(ctx, "UPPER"), k, p),
			"empty job id read": s.ForEachRecord(ctx, "", func(jobresults.Record) error { return nil }),
		} {
			if !errors.Is(err, jobresults.ErrInvalidInput) || errors.Is(err, jobresults.ErrTransient) {
				t.Errorf("%s: err = %v, want ErrInvalidInput only", what, err)
			}
		}
		if _, err := s.Apply(ctx, []jobresults.Entry{{Key: k, Outcome: "unknown"}}); !errors.Is(err, jobresults.ErrInvalidInput) {
			t.Errorf("Apply with an unknown outcome: err = %v, want ErrInvalidInput", err)
		}
	})

	calls := map[string]func() error{
		"Setup":             func() error { return s.Setup(ctx) },
		"RecordSuccess":     func() error { return s.RecordSuccess(ctx, k, p) },
		"RecordSoftFailure": func() error { return s.RecordSoftFailure(ctx, k, p, p, 1, "r") },
		"RecordHardFailure": func() error { return s.RecordHardFailure(ctx, k, p, p, "e") },
		"Apply": func() error {
			_, err := s.Apply(ctx, []jobresults.Entry{{Key: k, Outcome: oxytype.Success, Version: 3}})
			return err
		},
		"CountCompletedDocs":  func() error { _, err := s.CountCompletedDocs(ctx, "job-1", "done"); return err },
		"CountHardFailedDocs": func() error { _, err := s.CountHardFailedDocs(ctx, "job-1"); return err },
		"CountResolvedDocs":   func() error { _, err := s.CountResolvedDocs(ctx, "job-1", "done"); return err },
		"GetStageCounts":      func() error { _, err := s.GetStageCounts(ctx, "job-1"); return err },
		"GetDocStatus":        func() error { _, err := s.GetDocStatus(ctx, "job-1", "1"); return err },
		"GetFailures":         func() error { _, err := s.GetFailures(ctx, "job-1", ""); return err },
		"GetUniqueErrors":     func() error { _, err := s.GetUniqueErrors(ctx, "job-1", ""); return err },
		"ForEachRecord": func() error {
			return s.ForEachRecord(ctx, "job-1", func(jobresults.Record) error { return nil })
		},
	}
	for op, call := range calls {
		t.Run(op+" fails with a transient error", func(t *testing.T) {
			t.Parallel()
			err := call()
			var se *jobresults.StoreError
			if !errors.Is(err, jobresults.ErrTransient) || !errors.As(err, &se) || se.Op != op {
				t.Fatalf("err = %v, want a transient *StoreError for %s", err, op)
			}
			if !strings.Contains(err.Error(), "transient store error") {
				t.Fatalf("message %q does not say the error is transient", err)
			}
		})
	}

	t.Run("a cancelled context is not transient", func(t *testing.T) {
		t.Parallel()
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		err := s.RecordSuccess(cctx, k, p)
		if !errors.Is(err, context.Canceled) || errors.Is(err, jobresults.ErrTransient) {
			t.Fatalf("err = %v, want context.Canceled, not transient", err)
		}
	})
}
