package wsa_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/oxypipe/oxypipe/pkg/wsa"
)

func TestConfigDefaults(t *testing.T) {
	t.Parallel()
	c := wsa.Config{Username: "u", Password: "p"}.WithDefaults()
	if c.BaseURL != "https://data.oxylabs.io" || c.Timeout != wsa.DefaultTimeout || c.UserAgent != wsa.DefaultUserAgent || c.HTTPClient == nil {
		t.Fatalf("defaults not filled: %v", c)
	}
}

func TestNewRejectsBadConfig(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		cfg  wsa.Config
		want string
	}{
		{"no username", wsa.Config{Password: "p"}, "wsa: Config.Username and Config.Password are required"},
		{"no password", wsa.Config{Username: "u"}, "wsa: Config.Username and Config.Password are required"},
		{"credentials in the URL", wsa.Config{Username: "u", Password: "p", BaseURL: "https://a:b@data.oxylabs.io"}, "wsa: Config.BaseURL must not carry credentials; set Username and Password"},
		{"not http", wsa.Config{Username: "u", Password: "p", BaseURL: "ftp://data.oxylabs.io"}, `wsa: Config.BaseURL must be http or https, not "ftp"`},
		{"no host", wsa.Config{Username: "u", Password: "p", BaseURL: "http://"}, "wsa: Config.BaseURL has no host"},
		{"query", wsa.Config{Username: "u", Password: "p", BaseURL: "http://h/?x=1"}, "wsa: Config.BaseURL must not have a query or fragment"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := wsa.New(tc.cfg)
			if err == nil || err.Error() != tc.want {
				t.Fatalf("New() error = %v, want %q", err, tc.want)
			}
			if strings.Contains(err.Error(), "a:b") {
				t.Fatal("the error shows credentials")
			}
		})
	}
	if _, err := wsa.New(wsa.Config{}); !errors.Is(err, wsa.ErrNoCredentials) {
		t.Fatalf("New(empty) = %v, want ErrNoCredentials", err)
	}
}

func TestPrintedConfigAndClientHideThePassword(t *testing.T) {
	t.Parallel()
	cfg := wsa.Config{Username: "user", Password: "s3cret-pass"}
	c, err := wsa.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{fmt.Sprint(cfg), fmt.Sprintf("%+v", cfg), fmt.Sprintf("%#v", cfg), fmt.Sprint(c), fmt.Sprintf("%+v", c), fmt.Sprintf("%#v", c)} {
		if strings.Contains(s, "s3cret") || strings.Contains(s, "dXNlcjpzM2NyZXQtcGFzcw") {
			t.Fatalf("printed form shows the password: %s", s)
		}
	}
}
