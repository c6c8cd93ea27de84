package wsa_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/oxypipe/oxypipe/internal/testutil"
	"github.com/oxypipe/oxypipe/pkg/payload"
	"github.com/oxypipe/oxypipe/pkg/wsa"
)

// jobJSON is the job object of a 202 answer to a submission, in its full
// shape (links trimmed).
const jobJSON = `{"id":"7508980357849459714","status":"pending","source":"universal",
 "url":"https://sandbox.oxylabs.io/","query":"","domain":"io","subdomain":"sandbox",
 "geo_location":null,"render":null,"parse":false,"parsing_instructions":null,
 "xhr":false,"markdown":false,"pages":1,"start_page":1,"limit":10,"user_agent_type":"desktop",
 "callback_url":null,"storage_type":null,"storage_url":null,"client_id":123456,"statuses":[],
 "context":[{"key":"force_headers","value":false},{"key":"http_method","value":"get"}],
 "created_at":"2026-09-24 20:07:07","updated_at":"2026-09-24 20:07:07",
 "_links":[
  {"rel":"self","href":"http://data.oxylabs.io/v1/queries/7508980357849459714","method":"GET"},
  {"rel":"results","href":"http://data.oxylabs.io/v1/queries/7508980357849459714/results","method":"GET"}]}`

// request is what a test handler saw.
type request struct {
	Method, Path, RawQuery string
	Header                 http.Header
	Body                   string
}

// recorder keeps the requests a test server received.
type recorder struct {
	mu   sync.Mutex
	reqs []request
}

func (r *recorder) add(req *http.Request) request {
	b, _ := io.ReadAll(req.Body)
	rec := request{Method: req.Method, Path: req.URL.Path, RawQuery: req.URL.RawQuery, Header: req.Header.Clone(), Body: string(b)}
	r.mu.Lock()
	r.reqs = append(r.reqs, rec)
	r.mu.Unlock()
	return rec
}

func (r *recorder) all() []request {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]request(nil), r.reqs...)
}

// answer is a canned response.
type answer struct {
	status int
	header map[string]string
	body   string
}

// setup starts a test server that records each request and answers with
// handle, and returns a client for it.
func setup(t *testing.T, handle func(req request) answer) (*wsa.Client, *recorder) {
	t.Helper()
	rec := &recorder{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a := handle(rec.add(r))
		for k, v := range a.header {
			w.Header()[k] = []string{v} // as sent, not canonicalised
		}
		w.WriteHeader(a.status)
		_, _ = io.WriteString(w, a.body)
	}))
	t.Cleanup(srv.Close)
	return newClient(t, srv.URL), rec
}

func newClient(t *testing.T, baseURL string) *wsa.Client {
	t.Helper()
	c, err := wsa.New(wsa.Config{BaseURL: baseURL, Username: "user", Password: "s3cret-pass", Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func always(a answer) func(request) answer { return func(request) answer { return a } }

func mustParse(t testing.TB, s string) payload.Payload {
	t.Helper()
	p, err := payload.Parse([]byte(s), 1)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func universal(url string) payload.Payload { return payload.New("universal", "url", url) }

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	testutil.Eventually(t, 5*time.Second, what, cond)
}
