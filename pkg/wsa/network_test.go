package wsa_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/oxypipe/oxypipe/pkg/wsa"
)

// hangingServer accepts requests and answers none until the test ends. It
// reports each request's arrival on the returned channel.
func hangingServer(t *testing.T) (string, <-chan struct{}) {
	t.Helper()
	arrived := make(chan struct{}, 16)
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arrived <- struct{}{}
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(func() { close(release); srv.Close() })
	return srv.URL, arrived
}

func TestCancellationMidRequestReturnsPromptly(t *testing.T) {
	t.Parallel()
	url, arrived := hangingServer(t)
	c := newClient(t, url)
	calls := map[string]func(ctx context.Context) error{
		"submit":  func(ctx context.Context) error { _, _, err := c.Submit(ctx, universal("https://a.io")); return err },
		"status":  func(ctx context.Context) error { _, err := c.Status(ctx, "1"); return err },
		"results": func(ctx context.Context) error { _, err := c.Results(ctx, "1"); return err },
	}
	for name, call := range calls {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			errc := make(chan error, 1)
			go func() { errc <- call(ctx) }()
			<-arrived // the request is at the server
			start := time.Now()
			cancel()
			var err error
			select {
			case err = <-errc:
			case <-time.After(5 * time.Second):
				t.Fatal("the call did not return after its context was canceled")
			}
			if d := time.Since(start); d > time.Second {
				t.Fatalf("returned %v after cancel", d)
			}
			if !errors.Is(err, context.Canceled) || wsa.Classify(err) != wsa.Canceled {
				t.Fatalf("err = %v (%v), want context.Canceled", err, wsa.Classify(err))
			}
			var ae *wsa.APIError
			if !errors.As(err, &ae) || ae.StatusCode != 0 || !ae.RequestSent || ae.Error() != "Canceled: context canceled" {
				t.Fatalf("err = %#v", err)
			}
			// A POST canceled after it went out may have created a job.
			if !wsa.MayHaveCreatedJob(err) {
				t.Fatal("MayHaveCreatedJob = false for a request that reached the server")
			}
		})
	}
}

func TestTimeoutIsRetryable(t *testing.T) {
	t.Parallel()
	url, _ := hangingServer(t)
	c, err := wsa.New(wsa.Config{BaseURL: url, Username: "u", Password: "p", Timeout: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = c.Submit(context.Background(), universal("https://a.io"))
	var ae *wsa.APIError
	if !errors.As(err, &ae) || !errors.Is(err, wsa.ErrTimeout) || ae.Error() != "Timeout: no answer within 50ms" {
		t.Fatalf("err = %v", err)
	}
	if wsa.Classify(err) != wsa.Retry || !wsa.MayHaveCreatedJob(err) || errors.Is(err, context.Canceled) {
		t.Fatalf("class %v, may have created %v", wsa.Classify(err), wsa.MayHaveCreatedJob(err))
	}
}

func TestConnectErrorCreatedNothing(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close() // nothing listens there any more
	c := newClient(t, "http://"+addr)
	_, _, err = c.Submit(context.Background(), universal("https://a.io"))
	var ae *wsa.APIError
	if !errors.As(err, &ae) || ae.StatusCode != 0 || ae.RequestSent || !strings.HasPrefix(ae.Error(), "ConnectError: dial tcp "+addr) {
		t.Fatalf("err = %v", err)
	}
	if wsa.Classify(err) != wsa.Retry || wsa.MayHaveCreatedJob(err) {
		t.Fatalf("class %v, may have created %v", wsa.Classify(err), wsa.MayHaveCreatedJob(err))
	}
	if strings.Contains(err.Error(), "/v1/queries") {
		t.Fatalf("the error repeats the URL: %v", err)
	}
}

func TestConnectionDroppedAfterTheRequestMayHaveCreatedAJob(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conn, _, err := w.(http.Hijacker).Hijack()
		if err == nil {
			_ = conn.Close()
		}
	}))
	t.Cleanup(srv.Close)
	c := newClient(t, srv.URL)
	_, _, err := c.Submit(context.Background(), universal("https://a.io"))
	var ae *wsa.APIError
	if !errors.As(err, &ae) || ae.StatusCode != 0 || !ae.RequestSent || !strings.HasPrefix(ae.Error(), "ReadError: ") {
		t.Fatalf("err = %v", err)
	}
	if wsa.Classify(err) != wsa.Retry || !wsa.MayHaveCreatedJob(err) {
		t.Fatalf("class %v, may have created %v", wsa.Classify(err), wsa.MayHaveCreatedJob(err))
	}
}

func TestTruncated202MayHaveCreatedAJob(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "1000")
		w.WriteHeader(202)
		_, _ = w.Write([]byte(`{"id":"1",`))
		w.(http.Flusher).Flush()
		conn, _, err := w.(http.Hijacker).Hijack()
		if err == nil {
			_ = conn.Close()
		}
	}))
	t.Cleanup(srv.Close)
	c := newClient(t, srv.URL)
	_, _, err := c.Submit(context.Background(), universal("https://a.io"))
	var ae *wsa.APIError
	if !errors.As(err, &ae) || ae.StatusCode != 202 || !errors.Is(err, wsa.ErrBadResponse) {
		t.Fatalf("err = %v", err)
	}
	if wsa.Classify(err) != wsa.Retry || !wsa.MayHaveCreatedJob(err) {
		t.Fatalf("class %v, may have created %v", wsa.Classify(err), wsa.MayHaveCreatedJob(err))
	}
}
