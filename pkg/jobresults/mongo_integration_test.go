package jobresults_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/testcontainers/testcontainers-go"
	"github.com/testcontainers/testcontainers-go/wait"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/oxypipe/oxypipe/pkg/jobresults"
	"github.com/oxypipe/oxypipe/pkg/jobresults/storetest"
	"github.com/oxypipe/oxypipe/pkg/oxytype"
)

// mongoURIEnv names the MongoDB the Mongo store tests run against. Without
// it they start a MongoDB container when Docker is available, and skip
// otherwise.
const mongoURIEnv = "OXYPIPE_TEST_MONGODB_URI"

// TestMongoStore runs the conformance suite and the Mongo-only checks
// against a real MongoDB.
func TestMongoStore(t *testing.T) {
	t.Parallel()
	client := mongoClient(t)
	db := client.Database("oxypipe_test_" + randomHex(t))
	t.Cleanup(func() { _ = db.Drop(context.Background()) })
	var collections atomic.Int64
	newStore := func(t *testing.T, cfg jobresults.MongoConfig) (*jobresults.MongoStore, *mongo.Collection) {
		t.Helper()
		cfg.Database = db.Name()
		if cfg.Collection == "" {
			cfg.Collection = "job_results_" + strconv.FormatInt(collections.Add(1), 10)
		}
		s, err := jobresults.NewMongoStore(client, cfg)
		if err != nil {
			t.Fatal(err)
		}
		return s, db.Collection(cfg.Collection)
	}

	t.Run("conformance", func(t *testing.T) {
		t.Parallel()
		storetest.Run(t, func(t *testing.T, opts storetest.Options) jobresults.Ledger {
			s, _ := newStore(t, jobresults.MongoConfig{Scoping: opts.Scoping, Now: opts.Now})
			return s
		})
	})

	t.Run("TTL index on the finish stamp is created, changed, replaced or left alone", func(t *testing.T) {
		t.Parallel()
		ctx := context.Background()
		coll := "ttl_" + randomHex(t)
		setup := func(ttl time.Duration) {
			t.Helper()
			s, _ := newStore(t, jobresults.MongoConfig{Collection: coll, TTL: ttl})
			if err := s.Setup(ctx); err != nil {
				t.Fatalf("Setup with TTL %s: %v", ttl, err)
			}
		}
		indexes := db.Collection(coll).Indexes()
		check := func(what, field, want string) {
			t.Helper()
			if got := indexesOn(t, indexes, field); got != want {
				t.Fatalf("%s: indexes on %s = %q, want %q", what, field, got, want)
			}
		}
		// An earlier version's TTL on the record time, which expired the
		// records of open runs.
		if _, err := indexes.CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "time", Value: 1}},
			Options: options.Index().SetName("time_1").SetExpireAfterSeconds(3600)}); err != nil {
			t.Fatal(err)
		}
		setup(0)
		check("no TTL configured", "finished_at", "")
		check("no TTL configured", "time", "time_1:3600")
		setup(time.Hour)
		check("TTL of an hour", "finished_at", "finished_at_1:3600")
		check("the record-time TTL is dropped", "time", "")
		setup(0) // an unset TTL leaves the index as it is, never drops it
		check("TTL unset again", "finished_at", "finished_at_1:3600")
		setup(time.Hour)
		check("same TTL", "finished_at", "finished_at_1:3600")
		setup(2 * time.Hour)
		check("TTL changed", "finished_at", "finished_at_1:7200")

		if err := indexes.DropOne(ctx, "finished_at_1"); err != nil {
			t.Fatal(err)
		}
		if _, err := indexes.CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "finished_at", Value: 1}}, Options: options.Index().SetName("plain")}); err != nil {
			t.Fatal(err)
		}
		setup(time.Hour)
		check("plain index replaced", "finished_at", "finished_at_1:3600")

		if err := indexes.DropOne(ctx, "finished_at_1"); err != nil {
			t.Fatal(err)
		}
		if _, err := indexes.CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "finished_at", Value: 1}},
			Options: options.Index().SetName("retention").SetExpireAfterSeconds(3600)}); err != nil {
			t.Fatal(err)
		}
		setup(time.Hour)
		check("same TTL under another name", "finished_at", "retention:3600")
	})

	t.Run("documents hold a BSON date, the numeric position, the scope and the version", func(t *testing.T) {
		t.Parallel()
		ctx := context.Background()
		s, coll := newStore(t, jobresults.MongoConfig{Scoping: true})
		if err := s.Setup(ctx); err != nil {
			t.Fatal(err)
		}
		sctx := jobresults.WithScope(ctx, "tenant-a")
		p := oxytype.Party{Type: "poller", Name: "p"}
		if err := s.RecordSuccess(sctx, jobresults.Key{Run: "j", DataType: "done", DocID: "12"}, p); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Apply(sctx, []jobresults.Entry{{Key: jobresults.Key{Run: "j", DataType: "done", DocID: "x"}, Outcome: oxytype.Success, Version: 5}}); err != nil {
			t.Fatal(err)
		}
		raw := func(doc string) bson.Raw {
			r, err := coll.FindOne(ctx, bson.D{{Key: "doc_id", Value: doc}}).Raw()
			if err != nil {
				t.Fatal(err)
			}
			return r
		}
		numeric, other := raw("12"), raw("x")
		if typ := numeric.Lookup("time").Type; typ != bson.TypeDateTime {
			t.Errorf("time is BSON %s, want a date", typ)
		}
		if pos, ok := numeric.Lookup("doc_pos").Int64OK(); !ok || pos != 12 {
			t.Errorf("doc_pos = %v, want 12", numeric.Lookup("doc_pos"))
		}
		if _, err := other.LookupErr("doc_pos"); err == nil {
			t.Errorf("a non-numeric doc id has doc_pos %v", other.Lookup("doc_pos"))
		}
		if v, ok := other.Lookup("version").Int64OK(); !ok || v != 5 {
			t.Errorf("version = %v, want 5", other.Lookup("version"))
		}
		if sc := numeric.Lookup("scope").StringValue(); sc != "tenant-a" {
			t.Errorf("scope = %q", sc)
		}
		names := indexNames(t, coll.Indexes())
		for _, want := range []string{"job_id_1_data_type_1_doc_id_1", "job_id_1_data_type_1_success_1", "job_id_1_success_1",
			"job_id_1_doc_id_1", "job_id_1_doc_pos_1_doc_id_1_data_type_1", "scope_1"} {
			if !strings.Contains(names, want+" ") {
				t.Errorf("index %s missing; indexes: %s", want, names)
			}
		}
	})
}

// mongoClient connects to OXYPIPE_TEST_MONGODB_URI, else to a MongoDB
// container, else skips the test with one line saying why.
func mongoClient(t *testing.T) *mongo.Client {
	t.Helper()
	uri := os.Getenv(mongoURIEnv)
	if uri == "" {
		uri = startMongoContainer(t)
	}
	client, err := mongo.Connect(options.Client().ApplyURI(uri).SetServerSelectionTimeout(20 * time.Second))
	if err != nil {
		t.Fatalf("connect to MongoDB: %v", err)
	}
	t.Cleanup(func() { _ = client.Disconnect(context.Background()) })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := client.Ping(ctx, nil); err != nil {
		t.Fatalf("ping MongoDB: %v", err)
	}
	return client
}

func startMongoContainer(t *testing.T) string {
	t.Helper()
	if reason := dockerUnavailable(); reason != "" {
		t.Skipf("MongoDB store tests skipped: %s is not set and Docker is unavailable for testcontainers (%s)", mongoURIEnv, reason)
	}
	ctx := context.Background()
	ctr, err := testcontainers.Run(ctx, "mongo:8",
		testcontainers.WithExposedPorts("27017/tcp"),
		testcontainers.WithWaitStrategyAndDeadline(2*time.Minute,
			wait.ForLog("Waiting for connections"), wait.ForListeningPort("27017/tcp")))
	testcontainers.CleanupContainer(t, ctr)
	if err != nil {
		t.Fatalf("start a MongoDB container: %v", err)
	}
	endpoint, err := ctr.PortEndpoint(ctx, "27017/tcp", "mongodb")
	if err != nil {
		t.Fatalf("MongoDB container endpoint: %v", err)
	}
	return endpoint + "/?directConnection=true"
}

// dockerUnavailable returns why testcontainers cannot run containers, or ""
// when it can. It is testcontainers.SkipIfProviderIsNotHealthy with our own
// skip message.
func dockerUnavailable() (reason string) {
	defer func() {
		if r := recover(); r != nil {
			reason = fmt.Sprint(r)
		}
	}()
	provider, err := testcontainers.ProviderDefault.GetProvider()
	if err != nil {
		return oneLine(err.Error())
	}
	defer func() { _ = provider.Close() }()
	if err := provider.Health(context.Background()); err != nil {
		return oneLine(err.Error())
	}
	return ""
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

func randomHex(t *testing.T) string {
	t.Helper()
	b := make([]byte, 6)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

// timeIndexes renders the indexes keyed on {time: 1} as "name:expireAfterSeconds".
func indexesOn(t *testing.T, iv mongo.IndexView, field string) string {
	t.Helper()
	specs, err := iv.ListSpecifications(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, s := range specs {
		els, err := s.KeysDocument.Elements()
		if err != nil || len(els) != 1 || els[0].Key() != field {
			continue
		}
		if n, ok := els[0].Value().AsInt64OK(); !ok || n != 1 {
			continue
		}
		entry := s.Name
		if s.ExpireAfterSeconds != nil {
			entry += ":" + strconv.Itoa(int(*s.ExpireAfterSeconds))
		}
		out = append(out, entry)
	}
	return strings.Join(out, ",")
}

func indexNames(t *testing.T, iv mongo.IndexView) string {
	t.Helper()
	specs, err := iv.ListSpecifications(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, s := range specs {
		b.WriteString(s.Name + " ")
	}
	return b.String()
}
