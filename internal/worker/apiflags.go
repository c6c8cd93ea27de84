package worker

import (
	"errors"

	"github.com/spf13/pflag"

	"github.com/oxypipe/oxypipe/internal/procenv"
	"github.com/oxypipe/oxypipe/pkg/wsa"
)

// APIFlags are the Web Scraper API settings shared by the submitter, poller
// and writer: the URL from a flag or OXY_API_URL, the credentials from the
// environment only (OXY_WSA_USERNAME, OXY_WSA_PASSWORD), so that they never
// show in a process listing.
type APIFlags struct {
	// URL is the API's base URL.
	URL string
}

// RegisterFlags adds --api-url to fs, with env's wsa.EnvBaseURL as its
// default.
func (a *APIFlags) RegisterFlags(fs *pflag.FlagSet, env *procenv.Env) {
	fs.StringVar(&a.URL, "api-url", env.String(wsa.EnvBaseURL, wsa.DefaultBaseURL),
		"base URL of the Web Scraper API, e.g. an emulator's (env "+wsa.EnvBaseURL+"); "+
			"the credentials only from env "+wsa.EnvUsername+" and "+wsa.EnvPassword)
}

// Client builds the API client. Missing credentials and a bad URL are usage
// errors (exit 2); use it in Spec.Check so they fail before anything connects.
func (a *APIFlags) Client(env *procenv.Env) (*wsa.Client, error) {
	user, pass := env.Get(wsa.EnvUsername), env.Get(wsa.EnvPassword)
	if user == "" || pass == "" {
		return nil, Usagef("the API credentials are missing: set %s and %s", wsa.EnvUsername, wsa.EnvPassword)
	}
	c, err := wsa.New(wsa.Config{BaseURL: a.URL, Username: user, Password: pass})
	if err != nil {
		if errors.Is(err, wsa.ErrNoCredentials) {
			return nil, Usagef("%v", err)
		}
		return nil, Usagef("--api-url: %v", err)
	}
	return c, nil
}
