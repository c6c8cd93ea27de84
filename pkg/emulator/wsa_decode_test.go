package emulator_test

import (
	"context"
	"errors"
	"regexp"
	"testing"
	"time"

	"github.com/oxypipe/oxypipe/pkg/emulator"
	"github.com/oxypipe/oxypipe/pkg/payload"
	"github.com/oxypipe/oxypipe/pkg/wsa"
)

// These tests run the emulator's answers through the client's decoder, the
// same code that reads the live API, so that a shape the client cannot read
// fails here.

func wsaClient(t *testing.T, srv *emulator.Server) *wsa.Client {
	t.Helper()
	c, err := wsa.New(wsa.Config{BaseURL: srv.URL, Username: srv.Username, Password: srv.Password})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func mustPayload(t *testing.T, line string) payload.Payload {
	t.Helper()
	p, err := payload.Parse([]byte(line), 1)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestResponsesDecodeWithTheClient(t *testing.T) {
	t.Parallel()
	clock := emulator.NewFakeClock(time.Time{})
	srv := emulator.NewServer(t, emulator.Config{
		Clock: clock, JobTime: 2 * time.Second, ResultsTTL: time.Hour,
		Rules: []emulator.Rule{
			{Pattern: regexp.MustCompile(`/fault$`), Outcome: emulator.Outcome{Fault: true}},
			{Pattern: regexp.MustCompile(`/broken$`), Outcome: emulator.Outcome{SubmitFailure: &emulator.Failure{Status: 500}}},
			{Pattern: regexp.MustCompile(`/throttled$`), Outcome: emulator.Outcome{Throttle: true}},
		},
	})
	c := wsaClient(t, srv)
	ctx := context.Background()

	job, rl, err := c.Submit(ctx, mustPayload(t, `{"source":"amazon_search","query":"usb c cable","parse":true,"markdown":true,"xhr":true,"render":"html","pages":2,"storage_type":"gcs","storage_url":"bucket"}`))
	if err != nil {
		t.Fatal(err)
	}
	if job.ID != "7500000000000000001" || job.Status != "pending" || !job.CreatedAt.Equal(emulator.FakeEpoch()) || !job.HasStatuses {
		t.Fatalf("job %+v", job)
	}
	if !rl.Known || rl.Total != 50 || rl.TotalRemaining != 48 || !rl.RenderKnown || rl.RenderRemaining != 11 {
		t.Fatalf("rate limit %+v", rl)
	}
	if _, err := c.Results(ctx, job.ID); !errors.Is(err, wsa.ErrPending) {
		t.Fatalf("pending results: %v", err)
	}

	clock.Advance(5 * time.Second)
	st, err := c.Status(ctx, job.ID)
	if err != nil || st.Status != "done" || !st.UpdatedAt.Equal(emulator.FakeEpoch().Add(2*time.Second)) {
		t.Fatalf("status %+v %v", st, err)
	}
	if up, ok := st.Upload(); !ok || up.Code != 13000 {
		t.Fatalf("upload %+v %v", up, ok)
	}
	res, err := c.ResultsDecoded(ctx, job.ID, "parsed", "raw", "markdown", "xhr", "png")
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Results) != 10 || res.Job.ID != job.ID {
		t.Fatalf("%d results", len(res.Results))
	}
	for _, r := range res.Results {
		switch r.Type {
		case "parsed":
			if code, ok := r.ParseStatusCode(); !ok || code != 12000 {
				t.Fatalf("parse status %d %v", code, ok)
			}
		case "raw", "markdown":
			if s, err := r.Text(); err != nil || s == "" {
				t.Fatalf("%s text: %q %v", r.Type, s, err)
			}
		case "xhr":
			if _, err := r.Array(); err != nil {
				t.Fatal(err)
			}
		case "png":
			if !r.Empty() {
				t.Fatalf("%s was not enabled: want empty content", r.Type)
			}
		}
	}

	b, _, err := c.SubmitBatch(ctx, []payload.Payload{
		mustPayload(t, `{"source":"universal","url":"https://sandbox.oxylabs.io/products/1"}`),
		mustPayload(t, `{"source":"universal","url":"https://sandbox.oxylabs.io/fault"}`),
		mustPayload(t, `{"source":"universal","url":"not a url"}`),
	})
	if err != nil {
		t.Fatal(err)
	}
	var apiErr *wsa.APIError
	if b.Accepted() != 2 || b.Items[0].Job.ID == "" || !errors.As(b.Items[2].Err, &apiErr) || apiErr.Message != "Parameter `url` is invalid." {
		t.Fatalf("batch %+v", b)
	}
	clock.Advance(5 * time.Second)
	faulted, err := c.ResultsDecoded(ctx, b.Items[1].Job.ID)
	if err != nil || faulted.Job.Status != "faulted" || len(faulted.Results) != 1 || faulted.Results[0].StatusCode != 613 || !faulted.Results[0].Empty() {
		t.Fatalf("faulted %+v %v", faulted, err)
	}
	clock.Advance(2 * time.Hour)
	if _, err := c.Results(ctx, job.ID); !errors.Is(err, wsa.ErrExpired) {
		t.Fatalf("expired: %v", err)
	}

	for _, tc := range []struct {
		name  string
		line  string
		is    error
		class wsa.Class
		msg   string
		html  bool
	}{
		{"validation 400", `{"source":"universal","url":"https://shop.test/"}`, wsa.ErrBadRequest, wsa.Reject, "Parameter `url` has invalid top level domain format.", false},
		{"strict errors list", `{"source":"walmart_product","query":"1"}`, wsa.ErrBadRequest, wsa.Reject, "[product_id]: This field is missing. [query]: This field was not expected.", false},
		{"500 HTML page", `{"source":"universal","url":"https://shop.com/broken"}`, wsa.ErrInternalServerError, wsa.Retry, "Internal Server Error", true},
		{"domain throttle", `{"source":"universal","url":"https://shop.com/throttled"}`, wsa.ErrDomainThrottle, wsa.Throttle, "Access to shop.com has been limited to 1 req/s due to a low success rate. Please try again later.", false},
	} {
		_, _, err := c.Submit(ctx, mustPayload(t, tc.line))
		if !errors.Is(err, tc.is) || wsa.Classify(err) != tc.class || !errors.As(err, &apiErr) || apiErr.Message != tc.msg {
			t.Errorf("%s: %v (class %v)", tc.name, err, wsa.Classify(err))
		}
		if tc.html && apiErr.TraceID == "" {
			t.Errorf("%s: no trace id read from the HTML page", tc.name)
		}
	}
	if _, err := c.Status(ctx, "7000000000000000001"); !errors.Is(err, wsa.ErrNotFound) || !errors.As(err, &apiErr) || apiErr.Message != "Query not found." {
		t.Fatalf("unknown id: %v", err)
	}
}

func TestRateLimitHeadersDecodeInBothSpellings(t *testing.T) {
	t.Parallel()
	for _, style := range []emulator.HeaderStyle{emulator.HeaderDashed, emulator.HeaderUnderscored} {
		srv := emulator.NewServer(t, emulator.Config{HeaderStyle: style, RateLimit: 3, Clock: emulator.NewFakeClock(time.Time{})})
		c := wsaClient(t, srv)
		_, rl, err := c.Submit(context.Background(), mustPayload(t, `{"source":"universal","url":"https://shop.com/","render":"html"}`))
		if err != nil {
			t.Fatal(err)
		}
		if !rl.Known || !rl.RenderKnown || rl.Total != 3 || rl.TotalRemaining != 2 || rl.Render != 13 || rl.RenderRemaining != 12 {
			t.Errorf("%s: %+v", style, rl)
		}
		_, _, err = c.SubmitBatch(context.Background(), []payload.Payload{
			mustPayload(t, `{"source":"universal","url":"https://shop.com/1"}`),
			mustPayload(t, `{"source":"universal","url":"https://shop.com/2"}`),
			mustPayload(t, `{"source":"universal","url":"https://shop.com/3"}`),
		})
		if !errors.Is(err, wsa.ErrTooManyRequests) || wsa.Classify(err) != wsa.Retry {
			t.Errorf("%s: over-budget batch: %v", style, err)
		}
	}
}
