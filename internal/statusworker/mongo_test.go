package statusworker_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"testing"

	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/oxypipe/oxypipe/internal/natsserver/natstest"
	"github.com/oxypipe/oxypipe/pkg/jobresults"
)

// mongoURIEnv names the MongoDB the Mongo-ledger tests run against.
const mongoURIEnv = "OXYPIPE_TEST_MONGODB_URI"

// mongoStore returns a fresh Mongo ledger (its own database, dropped at the
// end), or skips the test loudly when no MongoDB is configured.
func mongoStore(t *testing.T) func() *jobresults.MongoStore {
	t.Helper()
	uri := os.Getenv(mongoURIEnv)
	if uri == "" {
		t.Skipf("SKIPPED: %s is not set; the statusworker's MongoDB ledger tests need a MongoDB (the memory-ledger tests ran)", mongoURIEnv)
	}
	client, err := mongo.Connect(options.Client().ApplyURI(uri))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = client.Disconnect(context.Background()) })
	var b [6]byte
	_, _ = rand.Read(b[:])
	db := "oxypipe_statusworker_test_" + hex.EncodeToString(b[:])
	t.Cleanup(func() { _ = client.Database(db).Drop(context.Background()) })
	return func() *jobresults.MongoStore {
		s, err := jobresults.NewMongoStore(client, jobresults.MongoConfig{Database: db})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Setup(t.Context()); err != nil {
			t.Fatal(err)
		}
		return s
	}
}

func TestMongoLedger(t *testing.T) {
	t.Parallel()
	newStore := mongoStore(t)

	t.Run("the seed example: a 404, a fault, a done job", func(t *testing.T) {
		e := setup(t)
		e.start(e.config(newStore(), nil))
		run, _ := e.announce(3, e.logDir)
		e.publish(seedEvents(run)...)
		e.waitCompleted(run)
		if got := e.readLog(run); got != seedLog {
			t.Fatalf("run log:\n%s", got)
		}
	})

	t.Run("two replicas on one Mongo ledger complete a run once", func(t *testing.T) {
		e := setup(t)
		cfgA, cfgB := e.config(newStore(), natstest.Connect(t, e.srv)), e.config(newStore(), natstest.Connect(t, e.srv))
		cfgA.Stage.Instance, cfgB.Stage.Instance = "sw-a", "sw-b"
		cfgA.Stage.BatchSize, cfgB.Stage.BatchSize = 20, 20
		a, b := e.start(cfgA), e.start(cfgB)
		const total = 200
		run, _ := e.announce(total, e.logDir)
		for n := range total {
			e.publish(doneDoc(run, n)...)
		}
		rec := e.waitCompleted(run)
		if rec.Completed.Done != total {
			t.Fatalf("completion %+v", rec.Completed)
		}
		if err := a.stop(); err != nil {
			t.Fatal(err)
		}
		if err := b.stop(); err != nil {
			t.Fatal(err)
		}
		if n := len(e.completionsOf(run)); n != 1 {
			t.Fatalf("%d RunCompleted messages, want 1", n)
		}
	})
}
