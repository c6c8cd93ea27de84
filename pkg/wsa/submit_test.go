package wsa_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/oxypipe/oxypipe/pkg/wsa"
)

func TestSubmitSendsThePayloadAndReturnsTheJob(t *testing.T) {
	t.Parallel()
	c, rec := setup(t, always(answer{status: 202, body: jobJSON, header: map[string]string{
		"x-oxylabs-job-id": "7508980357849459714",
		"x-ratelimit-total-requests-3fa85f64-5717-4562-b3fc-2c963f66afa6-limit":     "50",
		"x-ratelimit-total-requests-3fa85f64-5717-4562-b3fc-2c963f66afa6-remaining": "49",
	}}))
	p := mustParse(t, `{"source":"universal","url":"https://sandbox.oxylabs.io/","zz_unknown":1.50,"context":[{"key":"http_method","value":"get"}]}`)
	job, rl, err := c.Submit(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	if job.ID != "7508980357849459714" || job.Status != wsa.JobPending || job.Source != "universal" {
		t.Fatalf("job = %+v", job)
	}
	if want := time.Date(2026, 9, 24, 20, 7, 7, 0, time.UTC); !job.CreatedAt.Equal(want) || !job.UpdatedAt.Equal(want) {
		t.Fatalf("timestamps = %v, %v", job.CreatedAt, job.UpdatedAt)
	}
	if !job.HasStatuses || len(job.Statuses) != 0 {
		t.Fatalf("statuses = %v, %v", job.HasStatuses, job.Statuses)
	}
	if string(job.Raw) != jobJSON {
		t.Fatal("Raw is not the object as received")
	}
	if v, ok := job.Field("client_id"); !ok || string(v) != "123456" {
		t.Fatalf("Field(client_id) = %s, %v", v, ok)
	}
	if rl != (wsa.RateLimit{Total: 50, TotalRemaining: 49, Known: true}) {
		t.Fatalf("rate limit = %+v", rl)
	}
	reqs := rec.all()
	if len(reqs) != 1 {
		t.Fatalf("%d requests", len(reqs))
	}
	r := reqs[0]
	if r.Method != "POST" || r.Path != "/v1/queries" || r.Body != string(p.JSON()) {
		t.Fatalf("request = %s %s %s", r.Method, r.Path, r.Body)
	}
	if r.Header.Get("Content-Type") != "application/json" || r.Header.Get("User-Agent") != wsa.DefaultUserAgent {
		t.Fatalf("headers = %v", r.Header)
	}
	if r.Header.Get("Authorization") != "Basic dXNlcjpzM2NyZXQtcGFzcw==" { // user:s3cret-pass
		t.Fatalf("Authorization = %q", r.Header.Get("Authorization"))
	}
}

func TestSubmitWithShortJobObject(t *testing.T) {
	t.Parallel()
	short := `{"parse":"true","product_id":"123","source":"walmart_product","id":"7508980357849459715","status":"pending","created_at":"2026-09-24 20:07:07.000","updated_at":"2026-09-24 20:07:07.000","_links":[]}`
	c, _ := setup(t, always(answer{status: 202, body: short}))
	job, rl, err := c.Submit(context.Background(), mustParse(t, `{"source":"walmart_product","product_id":"123","parse":"true"}`))
	if err != nil {
		t.Fatal(err)
	}
	if job.ID != "7508980357849459715" || job.HasStatuses || job.CreatedAt.IsZero() {
		t.Fatalf("job = %+v", job)
	}
	if rl.Known {
		t.Fatalf("rate limit known without headers: %+v", rl)
	}
}

// failure runs one Submit against a canned answer.
func failure(t *testing.T, a answer) (*wsa.APIError, wsa.RateLimit) {
	t.Helper()
	c, _ := setup(t, always(a))
	_, rl, err := c.Submit(context.Background(), universal("https://sandbox.oxylabs.io/"))
	var ae *wsa.APIError
	if !errors.As(err, &ae) {
		t.Fatalf("Submit error = %v, want an *APIError", err)
	}
	return ae, rl
}

func TestSubmitFailures(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name       string
		answer     answer
		text       string
		traceID    string
		class      wsa.Class
		mayCreate  bool
		is         error
		rateLimits bool
	}{
		{"400 with a message", answer{status: 400, body: `{"message":"The hostname cannot be an ip address.","instance":"/v1/queries","timestamp":"2026-09-24T20:02:06.41Z","trace_id":"4bf92f3577b34da6a3ce929d0e0e4736"}`},
			"400 The hostname cannot be an ip address.", "4bf92f3577b34da6a3ce929d0e0e4736", wsa.Reject, false, wsa.ErrBadRequest, false},
		{"400 with an errors list", answer{status: 400, body: `{"errors":["[product_id]: This field is missing.","[query]: This field was not expected."]}`},
			"400 [product_id]: This field is missing. [query]: This field was not expected.", "", wsa.Reject, false, wsa.ErrBadRequest, false},
		{"400 malformed JSON", answer{status: 400, body: `{"message":"Json error: Unexpected value."}`},
			"400 Json error: Unexpected value.", "", wsa.Reject, false, wsa.ErrBadRequest, false},
		{"401 without a header", answer{status: 401, body: `{"message":"Authorization header not provided."}`},
			"401 Authorization header not provided.", "", wsa.Stop, false, wsa.ErrUnauthorized, false},
		{"401 with an empty body", answer{status: 401},
			"401 Unauthorized", "", wsa.Stop, false, wsa.ErrUnauthorized, false},
		{"403", answer{status: 403, body: `{"message":"Forbidden."}`}, "403 Forbidden.", "", wsa.Stop, false, wsa.ErrForbidden, false},
		{"422", answer{status: 422, body: `{"errors":{"message":"Invalid browser instructions."}}`},
			"422 Invalid browser instructions.", "", wsa.Reject, false, wsa.ErrUnprocessable, false},
		{"429 rate limit", answer{status: 429, body: `{"message":"Too many requests. (Total Dynamic).","trace_id":"t429"}`, header: map[string]string{
			"X-Ratelimit-Total_requests_3fa85f64-5717-4562-b3fc-2c963f66afa6-123456-Limit":     "50",
			"X-Ratelimit-Total_requests_3fa85f64-5717-4562-b3fc-2c963f66afa6-123456-Remaining": "0",
		}}, "429 Too many requests. (Total Dynamic).", "t429", wsa.Retry, false, wsa.ErrTooManyRequests, true},
		{"429 domain throttle", answer{status: 429, body: `{"message":"Access to www.shop.com has been limited to 1 req/s due to a low success rate. Please try again later."}`},
			"429 Access to www.shop.com has been limited to 1 req/s due to a low success rate. Please try again later.", "", wsa.Throttle, false, wsa.ErrDomainThrottle, false},
		{"500 HTML page with a trace id", answer{status: 500, header: map[string]string{"Content-Type": "text/html"},
			body: "<html><head><title>500 Internal Server Error</title></head><body><h1>Oops</h1><p>trace_id: <code>0a1b2c3d000000000000000000000000</code></p></body></html>"},
			"500 Internal Server Error", "0a1b2c3d000000000000000000000000", wsa.Retry, true, wsa.ErrInternalServerError, false},
		{"524", answer{status: 524, body: "<html>A timeout occurred trace_id: abc-123</html>"},
			"524 A Timeout Occurred", "abc-123", wsa.Retry, true, wsa.ErrSiteTimeout, false},
		{"502 JSON", answer{status: 502, body: `{"message":"Bad gateway."}`}, "502 Bad gateway.", "", wsa.Retry, true, nil, false},
		{"409 other 4xx", answer{status: 409, body: ``}, "409 Conflict", "", wsa.Stop, false, nil, false},
		{"202 that is not JSON", answer{status: 202, body: `<html>`}, "", "", wsa.Retry, true, wsa.ErrBadResponse, false},
		{"202 without an id", answer{status: 202, body: `{"status":"pending"}`}, "202 unreadable response: decoding the job: the job has no valid id", "", wsa.Retry, true, wsa.ErrBadResponse, false},
		{"202 whose id is not a job id", answer{status: 202, body: `{"id":"../x","status":"pending"}`}, "202 unreadable response: decoding the job: the job has no valid id", "", wsa.Retry, true, wsa.ErrBadResponse, false},
		{"202 that is not JSON, with a bad id header", answer{status: 202, body: `<html>`, header: map[string]string{"X-Oxylabs-Job-Id": "a/b"}}, "", "", wsa.Retry, true, wsa.ErrBadResponse, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ae, rl := failure(t, tc.answer)
			if tc.text != "" && ae.Error() != tc.text {
				t.Errorf("Error() = %q, want %q", ae.Error(), tc.text)
			}
			if ae.StatusCode != tc.answer.status || ae.TraceID != tc.traceID {
				t.Errorf("status %d trace %q, want %d %q", ae.StatusCode, ae.TraceID, tc.answer.status, tc.traceID)
			}
			if got := wsa.Classify(ae); got != tc.class {
				t.Errorf("Classify = %v, want %v", got, tc.class)
			}
			if got := wsa.MayHaveCreatedJob(ae); got != tc.mayCreate {
				t.Errorf("MayHaveCreatedJob = %v, want %v", got, tc.mayCreate)
			}
			if tc.is != nil && !errors.Is(ae, tc.is) {
				t.Errorf("errors.Is(%v, %v) = false", ae, tc.is)
			}
			if rl.Known != tc.rateLimits {
				t.Errorf("rate limit known = %v", rl.Known)
			}
			if strings.Contains(ae.Error(), "s3cret") {
				t.Error("the error shows the password")
			}
		})
	}
}

func TestSentinelsMatchByCodeOnly(t *testing.T) {
	t.Parallel()
	nf := &wsa.APIError{StatusCode: 404, Message: "Query not found."}
	if !errors.Is(nf, wsa.ErrNotFound) || errors.Is(nf, wsa.ErrBadRequest) || errors.Is(nf, wsa.ErrDomainThrottle) {
		t.Fatal("404 matches the wrong sentinels")
	}
	if nf.Error() != "404 Query not found." || wsa.ErrNotFound.Error() != "404 Not Found" {
		t.Fatalf("texts: %q, %q", nf, wsa.ErrNotFound)
	}
	rate := &wsa.APIError{StatusCode: 429, Message: "Too many requests. (Total Dynamic)."}
	if !errors.Is(rate, wsa.ErrTooManyRequests) || errors.Is(rate, wsa.ErrDomainThrottle) {
		t.Fatal("a rate-limit 429 is taken for a domain throttle")
	}
	if errors.Is(&wsa.APIError{Message: "ConnectError: refused"}, wsa.ErrNotFound) {
		t.Fatal("a network error matches a status sentinel")
	}
	other := &wsa.APIError{StatusCode: 404, Message: "x"}
	if errors.Is(nf, other) {
		t.Fatal("a non-sentinel APIError matched")
	}
}

func TestSubmitTakesTheJobIDHeaderOfAnUnreadable202(t *testing.T) {
	t.Parallel()
	for name, body := range map[string]string{
		"not JSON":  `<html>`,
		"no id":     `{"status":"pending"}`,
		"a bad id":  `{"id":"../x","status":"pending"}`,
		"cut short": `{"id":"75089803578`,
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			c, _ := setup(t, always(answer{status: 202, body: body, header: map[string]string{"X-Oxylabs-Job-Id": "7508980357849459714"}}))
			job, _, err := c.Submit(context.Background(), universal("https://a.io"))
			if err != nil || job.ID != "7508980357849459714" || job.Status != wsa.JobPending {
				t.Fatalf("Submit = %+v, %v; want the header's job", job, err)
			}
		})
	}
	t.Run("a readable body's id wins", func(t *testing.T) {
		t.Parallel()
		c, _ := setup(t, always(answer{status: 202, body: jobJSON, header: map[string]string{"X-Oxylabs-Job-Id": "1"}}))
		job, _, err := c.Submit(context.Background(), universal("https://a.io"))
		if err != nil || job.ID != "7508980357849459714" {
			t.Fatalf("Submit = %+v, %v", job, err)
		}
	})
}
