package jobresults

import (
	"fmt"
	"math"
	"strings"
	"time"
)

// DefaultCollection is the collection MongoStore uses when MongoConfig
// names none.
const DefaultCollection = "job_results"

// MongoConfig configures a MongoStore.
type MongoConfig struct {
	// Database is the database holding the collection. Required.
	Database string
	// Collection is the collection name. Default DefaultCollection.
	Collection string
	// TTL is the retention of a record after its last write, enforced by a
	// TTL index on the record time that Setup creates or adjusts. It must be
	// a whole number of seconds. Zero leaves the indexes on the time field
	// exactly as they are (no TTL by default; an unset value never drops an
	// existing TTL index). Negative values are an error.
	TTL time.Duration
	// Name names the store in logs and metrics. Default
	// "mongo:<database>.<collection>".
	Name string
	// Scoping stores the scope carried by the context (WithScope) or the
	// entry on every record written, and indexes it. Default off.
	Scoping bool
	// Now is the clock that times writes without an event time. Default
	// time.Now.
	Now func() time.Time
}

// WithDefaults returns a copy of c with unset fields filled in.
func (c MongoConfig) WithDefaults() MongoConfig {
	if c.Collection == "" {
		c.Collection = DefaultCollection
	}
	if c.Name == "" {
		c.Name = "mongo:" + c.Database + "." + c.Collection
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}

// validate checks a configuration after defaults.
func (c MongoConfig) validate() error {
	switch {
	case c.Database == "":
		return fmt.Errorf("%w: Database is required", ErrInvalidConfig)
	case strings.ContainsAny(c.Database, "/\\. \"$\x00") || len(c.Database) >= 64:
		return fmt.Errorf("%w: Database %q is not a valid database name", ErrInvalidConfig, c.Database)
	case strings.ContainsAny(c.Collection, "$\x00") || strings.HasPrefix(c.Collection, "system."):
		return fmt.Errorf("%w: Collection %q is not a valid collection name", ErrInvalidConfig, c.Collection)
	case c.TTL < 0:
		return fmt.Errorf("%w: TTL must be positive (or zero to leave the TTL index alone), got %s", ErrInvalidConfig, c.TTL)
	case c.TTL%time.Second != 0:
		return fmt.Errorf("%w: TTL must be a whole number of seconds, got %s", ErrInvalidConfig, c.TTL)
	case c.TTL/time.Second > math.MaxInt32:
		return fmt.Errorf("%w: TTL %s is too long", ErrInvalidConfig, c.TTL)
	}
	return nil
}
