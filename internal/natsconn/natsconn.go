package natsconn

import (
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/spf13/pflag"
	"go.uber.org/zap"

	"github.com/oxypipe/oxypipe/internal/redact"
)

// Options says how to reach NATS. The zero value plus WithDefaults connects
// to nats://127.0.0.1:4222 without authentication.
type Options struct {
	// URL is a comma-separated list of server URLs (NATS_URL).
	URL string
	// User and Password authenticate with a user and password
	// (NATS_USER, NATS_PASSWORD).
	User, Password string
	// Token authenticates with a token (NATS_TOKEN).
	Token string
	// CredsFile is a decentralized-auth credentials file (NATS_CREDS).
	CredsFile string
	// TLSCA is a CA bundle to verify the server with (NATS_TLS_CA).
	TLSCA string
	// TLSCert and TLSKey are a client certificate and key for mutual TLS
	// (NATS_TLS_CERT, NATS_TLS_KEY).
	TLSCert, TLSKey string
}

// FromEnv returns the options set in the environment.
func FromEnv() Options {
	return Options{
		URL:       os.Getenv("NATS_URL"),
		User:      os.Getenv("NATS_USER"),
		Password:  os.Getenv("NATS_PASSWORD"),
		Token:     os.Getenv("NATS_TOKEN"),
		CredsFile: os.Getenv("NATS_CREDS"),
		TLSCA:     os.Getenv("NATS_TLS_CA"),
		TLSCert:   os.Getenv("NATS_TLS_CERT"),
		TLSKey:    os.Getenv("NATS_TLS_KEY"),
	}
}

// RegisterFlags adds --nats-url and the auth and TLS flags to fs, with the
// environment's values as defaults. Secrets (password, token) are only read
// from the environment, so they never appear on a command line or in `ps`.
func (o *Options) RegisterFlags(fs *pflag.FlagSet) {
	env := FromEnv()
	o.Password, o.Token = env.Password, env.Token
	fs.StringVar(&o.URL, "nats-url", env.URL, "NATS server URL(s), comma-separated (env NATS_URL; default nats://127.0.0.1:4222)")
	fs.StringVar(&o.User, "nats-user", env.User, "NATS user (env NATS_USER; the password only from env NATS_PASSWORD)")
	fs.StringVar(&o.CredsFile, "nats-creds", env.CredsFile, "NATS credentials file (env NATS_CREDS); a token is read from env NATS_TOKEN")
	fs.StringVar(&o.TLSCA, "nats-tls-ca", env.TLSCA, "CA bundle to verify the NATS server (env NATS_TLS_CA)")
	fs.StringVar(&o.TLSCert, "nats-tls-cert", env.TLSCert, "client certificate for NATS mutual TLS (env NATS_TLS_CERT)")
	fs.StringVar(&o.TLSKey, "nats-tls-key", env.TLSKey, "client key for NATS mutual TLS (env NATS_TLS_KEY)")
}

// WithDefaults fills the URL when it is empty.
func (o Options) WithDefaults() Options {
	if o.URL == "" {
		o.URL = nats.DefaultURL
	}
	return o
}

func (o Options) validate() error {
	if (o.TLSCert == "") != (o.TLSKey == "") {
		return errors.New("natsconn: a TLS client certificate needs both NATS_TLS_CERT and NATS_TLS_KEY")
	}
	if o.Token != "" && (o.User != "" || o.Password != "") {
		return errors.New("natsconn: set either a token or a user and password, not both")
	}
	if o.Password != "" && o.User == "" {
		return errors.New("natsconn: NATS_PASSWORD is set without NATS_USER")
	}
	return nil
}

// Redacted is the URL list with any userinfo replaced, for logs.
func (o Options) Redacted() string { return redact.String(o.WithDefaults().URL) }

// Connect connects as name (shown in the server's connection list) and
// reconnects forever. Connection events are logged at info/warn level.
func (o Options) Connect(name string, log *zap.Logger) (*nats.Conn, error) {
	o = o.WithDefaults()
	if err := o.validate(); err != nil {
		return nil, err
	}
	if log == nil {
		log = zap.NewNop()
	}
	opts := []nats.Option{
		nats.Name(name),
		nats.MaxReconnects(-1),
		nats.ReconnectWait(time.Second),
		nats.RetryOnFailedConnect(false),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
			if err != nil {
				log.Warn("nats disconnected", zap.Error(err))
			}
		}),
		nats.ReconnectHandler(func(c *nats.Conn) {
			log.Info("nats reconnected", zap.String("server", redact.String(c.ConnectedUrl())))
		}),
		nats.ErrorHandler(func(_ *nats.Conn, sub *nats.Subscription, err error) {
			subject := ""
			if sub != nil {
				subject = sub.Subject
			}
			log.Warn("nats async error", zap.String("subject", subject), zap.Error(err))
		}),
	}
	switch {
	case o.CredsFile != "":
		opts = append(opts, nats.UserCredentials(o.CredsFile))
	case o.Token != "":
		opts = append(opts, nats.Token(o.Token))
	case o.User != "":
		opts = append(opts, nats.UserInfo(o.User, o.Password))
	}
	if o.TLSCA != "" {
		opts = append(opts, nats.RootCAs(o.TLSCA))
	}
	if o.TLSCert != "" {
		opts = append(opts, nats.ClientCert(o.TLSCert, o.TLSKey))
	}
	nc, err := nats.Connect(o.URL, opts...)
	if err != nil {
		// The nats error may echo the URL; redact it.
		return nil, fmt.Errorf("natsconn: connect to %s: %s", o.Redacted(), redact.String(err.Error()))
	}
	return nc, nil
}
