package wsa_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/oxypipe/oxypipe/pkg/payload"
	"github.com/oxypipe/oxypipe/pkg/wsa"
)

// shortJob is a job object echoing url.
func shortJob(id, url string) string {
	return fmt.Sprintf(`{"id":%q,"status":"pending","source":"universal","url":%q,"query":"","statuses":[],"created_at":"2026-09-24 20:07:07","updated_at":"2026-09-24 20:07:07"}`, id, url)
}

// outcome is a BatchItem in short: the job id, or "<code> <message>".
func outcomes(res wsa.BatchResult) []string {
	out := make([]string, len(res.Items))
	for i, it := range res.Items {
		if it.Err != nil {
			out[i] = it.Err.Error()
		} else {
			out[i] = it.Job.ID
		}
	}
	return out
}

func TestSubmitBatch(t *testing.T) {
	t.Parallel()
	urls := func(us ...string) []payload.Payload {
		ps := make([]payload.Payload, len(us))
		for i, u := range us {
			ps[i] = universal(u)
		}
		return ps
	}
	cases := []struct {
		name        string
		payloads    []payload.Payload
		body        string
		want        []string
		unmatched   int
		unmatchedEr int
	}{
		{"every value accepted, in another order",
			urls("https://a.io/1", "https://a.io/2", "https://a.io/3"),
			`{"queries":[` + shortJob("3", "https://a.io/3") + `,` + shortJob("1", "https://a.io/1") + `,` + shortJob("2", "https://a.io/2") + `]}`,
			[]string{"1", "2", "3"}, 0, 0},
		{"partial acceptance with errors matched by url",
			urls("https://a.io/1", "not a url", "https://a.io/3", "also bad"),
			`{"queries":[` + shortJob("1", "https://a.io/1") + `,` + shortJob("3", "https://a.io/3") + `],` +
				"\"errors\":[{\"message\":\"Parameter `url` is invalid.\",\"url\":\"also bad\"},{\"message\":\"Parameter `url` is invalid.\",\"url\":\"not a url\"}]}",
			[]string{"1", "202 Parameter `url` is invalid.", "3", "202 Parameter `url` is invalid."}, 0, 0},
		{"duplicates get one job each, in order",
			urls("https://a.io/x", "https://a.io/y", "https://a.io/x"),
			`{"queries":[` + shortJob("1", "https://a.io/x") + `,` + shortJob("2", "https://a.io/y") + `,` + shortJob("3", "https://a.io/x") + `]}`,
			[]string{"1", "2", "3"}, 0, 0},
		{"all failed is still 202",
			urls("https://a.io/1", "https://a.io/2"),
			"{\"queries\":[],\"errors\":[{\"message\":\"Source `walmart_product` is not available with a batch request.\",\"url\":\"https://a.io/1\"},{\"message\":\"Source `walmart_product` is not available with a batch request.\",\"url\":\"https://a.io/2\"}]}",
			[]string{"202 Source `walmart_product` is not available with a batch request.", "202 Source `walmart_product` is not available with a batch request."}, 0, 0},
		{"an echo with a trailing slash and upper-case host still matches",
			urls("https://a.io/2", "https://A.io"),
			`{"queries":[` + shortJob("1", "https://a.io/") + `,` + shortJob("2", "https://a.io/2") + `]}`,
			[]string{"2", "1"}, 0, 0},
		{"a rewritten url falls back to order",
			urls("https://www.amazon.com/dp/B0", "https://a.io/2"),
			`{"queries":[` + shortJob("2", "https://a.io/2") + `,` + shortJob("1", "https://www.amazon.com/-/dp/B0?th=1") + `]}`,
			[]string{"1", "2"}, 0, 0},
		{"a value the answer does not mention",
			urls("https://a.io/1", "https://a.io/2"),
			`{"queries":[` + shortJob("1", "https://a.io/1") + `]}`,
			[]string{"1", "202 The batch returned neither a job nor an error"}, 0, 0},
		{"an unknown source gives no jobs and no errors",
			urls("https://a.io/1"),
			`{"queries":[]}`,
			[]string{"202 The batch returned neither a job nor an error"}, 0, 0},
		{"more jobs than payloads are kept as unmatched",
			urls("https://a.io/1"),
			`{"queries":[` + shortJob("1", "https://a.io/1") + `,` + shortJob("9", "https://a.io/9") + `],"errors":[{"message":"x","url":"https://a.io/8"}]}`,
			[]string{"1"}, 1, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c, rec := setup(t, always(answer{status: 202, body: tc.body}))
			res, _, err := c.SubmitBatch(context.Background(), tc.payloads)
			if err != nil {
				t.Fatal(err)
			}
			got := outcomes(res)
			if strings.Join(got, "|") != strings.Join(tc.want, "|") {
				t.Fatalf("outcomes = %q, want %q", got, tc.want)
			}
			if len(res.UnmatchedJobs) != tc.unmatched || len(res.UnmatchedErrors) != tc.unmatchedEr {
				t.Fatalf("unmatched = %d jobs, %d errors", len(res.UnmatchedJobs), len(res.UnmatchedErrors))
			}
			for _, it := range res.Items {
				if it.Err != nil && wsa.Classify(it.Err) != wsa.Reject {
					t.Fatalf("a refused value classifies as %v, want reject", wsa.Classify(it.Err))
				}
			}
			body, _ := payload.BatchBody(tc.payloads)
			if r := rec.all()[0]; r.Path != "/v1/queries/batch" || r.Body != string(body) {
				t.Fatalf("request = %s %s", r.Path, r.Body)
			}
		})
	}
}

func TestSubmitBatchAcceptedCountsJobs(t *testing.T) {
	t.Parallel()
	c, _ := setup(t, always(answer{status: 202, body: `{"queries":[` + shortJob("1", "q1") + `],"errors":[{"message":"bad","query":"q2"}]}`}))
	ps := []payload.Payload{payload.New("google_search", "query", "q1"), payload.New("google_search", "query", "q2")}
	res, _, err := c.SubmitBatch(context.Background(), ps)
	if err != nil {
		t.Fatal(err)
	}
	// shortJob echoes the value under "url", so the query job matched by order.
	if res.Accepted() != 1 || res.Items[0].Job.ID != "1" || res.Items[1].Err.Error() != "202 bad" {
		t.Fatalf("items = %q", outcomes(res))
	}
}

func TestSubmitBatchWholeFailures(t *testing.T) {
	t.Parallel()
	ps := []payload.Payload{universal("https://a.io/1"), universal("https://a.io/2")}
	t.Run("400 rejects the whole batch", func(t *testing.T) {
		t.Parallel()
		c, _ := setup(t, always(answer{status: 400, body: "{\"message\":\"Batch request must contain one array of `query` or `url`.\"}"}))
		res, _, err := c.SubmitBatch(context.Background(), ps)
		if err == nil || err.Error() != "400 Batch request must contain one array of `query` or `url`." || len(res.Items) != 0 {
			t.Fatalf("err = %v, items = %d", err, len(res.Items))
		}
	})
	t.Run("429 over the budget creates nothing", func(t *testing.T) {
		t.Parallel()
		c, _ := setup(t, always(answer{status: 429, body: `{"message":"Too many requests. (Total Dynamic)."}`, header: map[string]string{
			"x-ratelimit-total-requests-u-limit": "50", "x-ratelimit-total-requests-u-remaining": "1"}}))
		_, rl, err := c.SubmitBatch(context.Background(), ps)
		if wsa.Classify(err) != wsa.Retry || wsa.MayHaveCreatedJob(err) || rl.TotalRemaining != 1 {
			t.Fatalf("err = %v (%v), rl = %+v", err, wsa.Classify(err), rl)
		}
	})
	t.Run("payloads that cannot share a batch fail before any request", func(t *testing.T) {
		t.Parallel()
		c, rec := setup(t, always(answer{status: 500}))
		mixed := []payload.Payload{universal("https://a.io/1"), payload.New("google_search", "query", "q")}
		_, _, err := c.SubmitBatch(context.Background(), mixed)
		if !errors.Is(err, payload.ErrNotBatchable) || wsa.Classify(err) != wsa.Reject || len(rec.all()) != 0 {
			t.Fatalf("err = %v, %d requests", err, len(rec.all()))
		}
	})
	for body, want := range map[string]string{
		`{"queries":{"id":"1"}}`:     `its "queries" is not a list`,
		`{"queries":[{"id":"1"},5]}`: "queries[1]: wsa: a job must be a JSON object",
		`[{"id":"1"}]`:               "the answer is not a JSON object",
		`{"queries":[{"id":"1"}]} x`: "invalid character 'x' after top-level value",
	} {
		t.Run("a 202 that is not a batch answer: "+body, func(t *testing.T) {
			t.Parallel()
			c, _ := setup(t, always(answer{status: 202, body: body}))
			_, _, err := c.SubmitBatch(context.Background(), ps)
			if !errors.Is(err, wsa.ErrBadResponse) || !wsa.MayHaveCreatedJob(err) || !strings.HasSuffix(err.Error(), want) {
				t.Fatalf("err = %v, want it to end in %q", err, want)
			}
		})
	}
	t.Run("a job whose id is not a job id is never passed on", func(t *testing.T) {
		t.Parallel()
		body := `{"queries":[` + shortJob("1", "https://a.io/1") + `,` + shortJob("../../etc", "https://a.io/2") + `,` + shortJob("", "https://a.io/3") + `]}`
		c, _ := setup(t, always(answer{status: 202, body: body}))
		res, _, err := c.SubmitBatch(context.Background(), []payload.Payload{universal("https://a.io/1"), universal("https://a.io/2"), universal("https://a.io/3")})
		if err != nil {
			t.Fatal(err)
		}
		if res.Items[0].Err != nil || res.Items[0].Job.ID != "1" {
			t.Fatalf("item 0 = %+v", res.Items[0])
		}
		for _, it := range res.Items[1:] {
			if it.Job.ID != "" || !errors.Is(it.Err, wsa.ErrBadResponse) || !wsa.MayHaveCreatedJob(it.Err) {
				t.Fatalf("item = %+v, want a bad response that may have created its job", it)
			}
		}
	})
	t.Run("an undecodable 202 may have created jobs", func(t *testing.T) {
		t.Parallel()
		c, _ := setup(t, always(answer{status: 202, body: `{"queries":[`}))
		_, _, err := c.SubmitBatch(context.Background(), ps)
		if !errors.Is(err, wsa.ErrBadResponse) || !wsa.MayHaveCreatedJob(err) || wsa.Classify(err) != wsa.Retry {
			t.Fatalf("err = %v", err)
		}
	})
}
