package jobresults

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.mongodb.org/mongo-driver/v2/x/mongo/driver/connstring"

	"github.com/oxypipe/oxypipe/internal/redact"
	"github.com/oxypipe/oxypipe/pkg/retry"
)

// DefaultDatabase is the ledger's database when neither the configuration
// nor the MongoDB URI names one.
const DefaultDatabase = "oxypipe"

// openSetupRetry is how OpenMongo retries the setup of the collection: a
// server that is briefly unreachable (starting next to the worker, electing
// a primary) is waited for, up to a minute, rather than failing the start.
var openSetupRetry = retry.Policy{Initial: 500 * time.Millisecond, Max: 5 * time.Second, MaxElapsed: time.Minute,
	Retryable: retry.On(ErrTransient)}

// OpenMongo connects to the MongoDB server at uri and returns the ledger on
// cfg's collection, set up (indexes, TTL), with the function that
// disconnects from the server. It is the one way every program of this
// module opens the MongoDB ledger.
//
// cfg.Database "" is the URI's database, else DefaultDatabase. appName names
// the connection in the server's logs ("" for none). Setup errors that may
// pass (ErrTransient) are retried for up to a minute. No error ever shows
// the URI, which may hold a password; an invalid URI or configuration wraps
// ErrInvalidConfig.
func OpenMongo(ctx context.Context, uri, appName string, cfg MongoConfig) (*MongoStore, func(context.Context), error) {
	cs, err := connstring.ParseAndValidate(uri)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: the MongoDB URI is not valid (it is not shown: it may hold a password)", ErrInvalidConfig)
	}
	if cfg.Database == "" {
		cfg.Database = cs.Database
	}
	if cfg.Database == "" {
		cfg.Database = DefaultDatabase
	}
	opts := options.Client().ApplyURI(uri)
	if appName != "" {
		opts.SetAppName(appName)
	}
	client, err := mongo.Connect(opts)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: MongoDB: %s", ErrInvalidConfig, redact.String(err.Error()))
	}
	// Nothing is buffered in the client: a failed disconnect loses nothing.
	disconnect := func(ctx context.Context) { _ = client.Disconnect(ctx) }
	store, err := NewMongoStore(client, cfg)
	if err != nil {
		disconnect(context.WithoutCancel(ctx))
		return nil, nil, err
	}
	if err := retry.Do(ctx, openSetupRetry, store.Setup); err != nil {
		disconnect(context.WithoutCancel(ctx))
		if errors.Is(err, ErrInvalidConfig) {
			return nil, nil, err
		}
		return nil, nil, fmt.Errorf("MongoDB ledger setup: %s", redact.String(err.Error()))
	}
	return store, disconnect, nil
}
