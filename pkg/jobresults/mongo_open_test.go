package jobresults_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/oxypipe/oxypipe/pkg/jobresults"
)

// An invalid URI or configuration fails before anything connects, as an
// invalid configuration, and the error never shows the URI's password.
func TestOpenMongoRefusesAnInvalidURIWithoutShowingIt(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, uri string
		cfg       jobresults.MongoConfig
	}{
		{"not a MongoDB URI", "http://user:s3cret@db.example/", jobresults.MongoConfig{}},
		{"an invalid database", "mongodb://user:s3cret@db.example/", jobresults.MongoConfig{Database: "a/b"}},
	} {
		_, _, err := jobresults.OpenMongo(t.Context(), tc.uri, "", tc.cfg)
		if !errors.Is(err, jobresults.ErrInvalidConfig) {
			t.Errorf("%s: OpenMongo = %v, want ErrInvalidConfig", tc.name, err)
		}
		if err != nil && strings.Contains(err.Error(), "s3cret") {
			t.Errorf("%s: the error shows the password: %v", tc.name, err)
		}
	}
}
