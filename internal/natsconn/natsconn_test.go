package natsconn_test

import (
	"net"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/oxypipe/oxypipe/internal/natsconn"
)

func TestConnectRejectsContradictoryOptions(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		opts natsconn.Options
		want string
	}{
		{"cert without key", natsconn.Options{TLSCert: "c.pem"}, "needs both"},
		{"token and user", natsconn.Options{Token: "t", User: "u"}, "either a token"},
		{"password without user", natsconn.Options{Password: "p"}, "without NATS_USER"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := tc.opts.Connect("test", nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Connect() error = %v, want it to mention %q", err, tc.want)
			}
		})
	}
}

func TestConnectErrorNeverShowsURLCredentials(t *testing.T) {
	t.Parallel()
	// A port that refuses connections: listen, note the address, close.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	opts := natsconn.Options{URL: "nats://alice:s3cret@" + addr}
	_, err = opts.Connect("test", nil)
	if err == nil {
		t.Fatal("Connect() to a closed port succeeded")
	}
	if strings.Contains(err.Error(), "s3cret") {
		t.Fatalf("error leaks the password: %v", err)
	}
	if !strings.Contains(err.Error(), "redacted:redacted@"+addr) {
		t.Fatalf("error %q does not name the (redacted) server", err)
	}
}

func TestFlagsTakeDefaultsFromEnvironmentAndSecretsOnlyFromIt(t *testing.T) {
	t.Setenv("NATS_URL", "nats://n1:4222")
	t.Setenv("NATS_USER", "bob")
	t.Setenv("NATS_PASSWORD", "pw")
	var o natsconn.Options
	fs := pflag.NewFlagSet("x", pflag.ContinueOnError)
	o.RegisterFlags(fs)
	if err := fs.Parse([]string{"--nats-user", "carol"}); err != nil {
		t.Fatal(err)
	}
	if o.URL != "nats://n1:4222" || o.User != "carol" || o.Password != "pw" {
		t.Fatalf("options = %+v, want URL from env, user from flag, password from env", o)
	}
	if fs.Lookup("nats-password") != nil {
		t.Fatal("a --nats-password flag exists; secrets must not be taken on the command line")
	}
}
