package wsa

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// DefaultBaseURL is the Push-Pull host of the WSA.
const DefaultBaseURL = "https://data.oxylabs.io"

// DefaultRealtimeURL is the Realtime host of the WSA.
const DefaultRealtimeURL = "https://realtime.oxylabs.io"

// RealtimeTimeout bounds a Realtime call at least: the API answers a job
// that runs 150 s or longer with 408 at 160 s, so a shorter wait would cut
// answers that are on their way.
const RealtimeTimeout = 3 * time.Minute

// DefaultTimeout bounds how long a call waits for the API's answer.
const DefaultTimeout = 2 * time.Minute

// DefaultUserAgent is the User-Agent header sent unless Config says otherwise.
const DefaultUserAgent = "oxypipe-wsa/1"

// ErrNoCredentials is returned by New when Username or Password is empty.
var ErrNoCredentials = errors.New("wsa: Config.Username and Config.Password are required")

// Config configures a Client. Only Username and Password are required.
type Config struct {
	// BaseURL is the API's scheme and host, optionally with a path prefix,
	// without credentials. Default DefaultBaseURL; point it at the emulator
	// in tests.
	BaseURL string
	// RealtimeURL is the Realtime host, in the same form as BaseURL.
	// Default DefaultRealtimeURL; the emulator serves it under
	// emulator.RealtimePath.
	RealtimeURL string

	// Username and Password are the API user's credentials, sent as HTTP
	// Basic auth on every request. Both are required.
	Username string
	Password string

	// HTTPClient sends the requests. Its own Timeout should be zero (Timeout
	// below bounds each call instead). Default: a client whose transport
	// keeps up to 128 idle connections per host, so that many concurrent
	// callers reuse connections.
	HTTPClient *http.Client

	// Timeout bounds how long one call waits for the API. For Submit,
	// SubmitBatch, Status and ResultsDecoded it covers the whole call; for
	// Results it covers the wait for the response headers only, so that a
	// large body can stream for as long as the caller's context allows.
	// Default DefaultTimeout; negative means no limit.
	Timeout time.Duration

	// UserAgent is the User-Agent header. Default DefaultUserAgent.
	UserAgent string
}

// WithDefaults returns the configuration with every unset field filled in.
func (c Config) WithDefaults() Config {
	if c.BaseURL == "" {
		c.BaseURL = DefaultBaseURL
	}
	if c.RealtimeURL == "" {
		c.RealtimeURL = DefaultRealtimeURL
	}
	if c.HTTPClient == nil {
		c.HTTPClient = defaultHTTPClient()
	}
	if c.Timeout == 0 {
		c.Timeout = DefaultTimeout
	}
	if c.UserAgent == "" {
		c.UserAgent = DefaultUserAgent
	}
	return c
}

// validate checks a configuration that WithDefaults has filled in.
func (c Config) validate() error {
	if c.Username == "" || c.Password == "" {
		return ErrNoCredentials
	}
	for _, f := range []struct{ name, value string }{{"BaseURL", c.BaseURL}, {"RealtimeURL", c.RealtimeURL}} {
		if err := checkBaseURL(f.name, f.value); err != nil {
			return err
		}
	}
	if strings.ContainsAny(c.UserAgent, "\r\n") {
		return errors.New("wsa: Config.UserAgent must be one line")
	}
	return nil
}

// checkBaseURL checks a host URL of the configuration (field name).
func checkBaseURL(name, value string) error {
	u, err := url.Parse(value)
	if err != nil {
		return fmt.Errorf("wsa: Config.%s is not a URL: %w", name, err)
	}
	if u.User != nil {
		return fmt.Errorf("wsa: Config.%s must not carry credentials; set Username and Password", name)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Errorf("wsa: Config.%s must be http or https, not %q", name, u.Scheme)
	}
	if u.Host == "" {
		return fmt.Errorf("wsa: Config.%s has no host", name)
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return fmt.Errorf("wsa: Config.%s must not have a query or fragment", name)
	}
	return nil
}

// String describes the configuration without its password.
func (c Config) String() string {
	password := ""
	if c.Password != "" {
		password = "redacted"
	}
	return fmt.Sprintf("wsa.Config{BaseURL:%q Username:%q Password:%q Timeout:%s UserAgent:%q}",
		c.BaseURL, c.Username, password, c.Timeout, c.UserAgent)
}

// GoString is String, so that %#v hides the password too.
func (c Config) GoString() string { return c.String() }

func defaultHTTPClient() *http.Client {
	return &http.Client{Transport: &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          256,
		MaxIdleConnsPerHost:   128,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: time.Second,
	}}
}
