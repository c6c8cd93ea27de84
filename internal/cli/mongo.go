package cli

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.mongodb.org/mongo-driver/v2/x/mongo/driver/connstring"

	"github.com/oxypipe/oxypipe/pkg/jobresults"
)

// defaultMongoDatabase is the ledger's database when the URI names none.
const defaultMongoDatabase = "oxypipe"

// mongoSetupTimeout bounds connecting to MongoDB and preparing the ledger's
// indexes before a run.
const mongoSetupTimeout = 30 * time.Second

// openMongoLedger connects to uri and returns the ledger on its database (the
// URI's path, else "oxypipe"), set up, and a function that disconnects. The
// URI is never printed: it may hold a password.
func openMongoLedger(ctx context.Context, uri string) (*jobresults.MongoStore, func(context.Context), error) {
	cs, err := connstring.ParseAndValidate(uri)
	if err != nil {
		return nil, nil, errors.New("the MongoDB URI is not valid (it is not shown: it may hold a password)")
	}
	db := cs.Database
	if db == "" {
		db = defaultMongoDatabase
	}
	client, err := mongo.Connect(options.Client().ApplyURI(uri))
	if err != nil {
		return nil, nil, fmt.Errorf("MongoDB: %w", err)
	}
	disconnect := func(ctx context.Context) { _ = client.Disconnect(ctx) } // the run is over; nothing to save
	store, err := jobresults.NewMongoStore(client, jobresults.MongoConfig{Database: db})
	if err != nil {
		disconnect(ctx)
		return nil, nil, fmt.Errorf("MongoDB: %w", err)
	}
	sctx, cancel := context.WithTimeout(ctx, mongoSetupTimeout)
	defer cancel()
	if err := store.Setup(sctx); err != nil {
		disconnect(ctx)
		return nil, nil, fmt.Errorf("MongoDB ledger: %w", err)
	}
	return store, disconnect, nil
}
