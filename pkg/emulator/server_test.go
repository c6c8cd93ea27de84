package emulator

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
)

func TestListenAndServeStopsWithItsContext(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	s, err := Start("127.0.0.1:0", Config{Username: "alice", Password: "pw"})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.ServeUntil(ctx) }()
	if s.Username != "alice" || s.Password != "pw" || !strings.HasPrefix(s.URL, "http://127.0.0.1:") {
		t.Fatalf("server %+v", s)
	}
	req, _ := http.NewRequest("GET", s.URL+"/v1/info/callbacker_ips", nil)
	req.SetBasicAuth(s.Username, s.Password)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("ServeUntil: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("ServeUntil did not return after cancel")
	}
	if resp, err := http.Get(s.URL + "/_sandbox/stats"); err == nil {
		resp.Body.Close()
		t.Fatal("the server still answers after shutdown")
	}
	if err := s.Close(); err != nil {
		t.Fatalf("a second stop returns the first one's result: %v", err)
	}
}

func TestListenAndServe(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := ListenAndServe(ctx, "127.0.0.1:0", Config{}); err != nil {
		t.Fatalf("a cancelled context shuts down cleanly: %v", err)
	}
	if err := ListenAndServe(context.Background(), "127.0.0.1:0", Config{RateLimit: -5}); !errors.Is(err, ErrInvalidConfig) {
		t.Fatalf("err = %v", err)
	}
}

func TestStartRejectsBadConfigAndAddress(t *testing.T) {
	t.Parallel()
	if _, err := Start("127.0.0.1:0", Config{FaultRate: 2}); !errors.Is(err, ErrInvalidConfig) {
		t.Fatalf("err = %v, want ErrInvalidConfig", err)
	}
	if _, err := Start("256.0.0.1:0", Config{}); err == nil {
		t.Fatal("want a listen error")
	}
}

func TestRegisterFlags(t *testing.T) {
	t.Parallel()
	var cfg Config
	fs := pflag.NewFlagSet("sandbox", pflag.ContinueOnError)
	cfg.RegisterFlags(fs)
	if got := fs.Lookup("rate-limit").DefValue; got != "50" {
		t.Fatalf("rate-limit default shows %q", got)
	}
	err := fs.Parse([]string{"--job-time", "3s", "--rate-limit", "0", "--render-rate-limit", "5", "--seed", "9",
		"--fault-rate", "0.25", "--error-rate", "0.01", "--time-scale", "0.001", "--rate-limit-headers", "underscored",
		"--username", "u", "--password", "p", "--results-ttl", "30h", "--bad-json-422"})
	if err != nil {
		t.Fatal(err)
	}
	want := Config{JobTime: 3 * time.Second, RateLimit: Unlimited, RenderRateLimit: 5, Seed: 9, FaultRate: 0.25,
		ErrorRate: 0.01, TimeScale: 0.001, HeaderStyle: HeaderUnderscored, Username: "u", Password: "p",
		ResultsTTL: 30 * time.Hour, BadJSON422: true}
	if cfg.JobTime != want.JobTime || cfg.RateLimit != want.RateLimit || cfg.RenderRateLimit != want.RenderRateLimit ||
		cfg.Seed != want.Seed || cfg.FaultRate != want.FaultRate || cfg.ErrorRate != want.ErrorRate ||
		cfg.TimeScale != want.TimeScale || cfg.HeaderStyle != want.HeaderStyle || cfg.Username != want.Username ||
		cfg.Password != want.Password || cfg.ResultsTTL != want.ResultsTTL || !cfg.BadJSON422 {
		t.Fatalf("cfg = %+v", cfg)
	}
	if _, err := New(cfg); err != nil {
		t.Fatal(err)
	}
	for _, bad := range [][]string{{"--rate-limit", "-3"}, {"--rate-limit-headers", "camel"}} {
		fs := pflag.NewFlagSet("sandbox", pflag.ContinueOnError)
		fs.SetOutput(io.Discard)
		var c Config
		c.RegisterFlags(fs)
		if err := fs.Parse(bad); err == nil {
			t.Errorf("%v: want an error", bad)
		}
	}
}

func TestFakeClock(t *testing.T) {
	t.Parallel()
	c := NewFakeClock(time.Time{})
	if !c.Now().Equal(FakeEpoch()) {
		t.Fatalf("starts at %v", c.Now())
	}
	a, b := c.NewTimer(2*time.Second), c.NewTimer(time.Second)
	stopped := c.NewTimer(time.Second)
	if !stopped.Stop() || stopped.Stop() {
		t.Fatal("Stop reports whether the timer was waiting")
	}
	c.Advance(time.Second)
	select {
	case <-b.C():
	default:
		t.Fatal("the 1s timer should have fired")
	}
	select {
	case <-a.C():
		t.Fatal("the 2s timer fired early")
	default:
	}
	c.Set(FakeEpoch()) // never backwards
	if got := c.Now().Sub(FakeEpoch()); got != time.Second {
		t.Fatalf("Set moved the clock back to %v", got)
	}
	c.Set(FakeEpoch().Add(5 * time.Second))
	<-a.C()
	if c.Timers() != 0 {
		t.Fatalf("%d timers left", c.Timers())
	}
	select {
	case <-c.NewTimer(0).C():
	default:
		t.Fatal("a zero timer fires at once")
	}
}
