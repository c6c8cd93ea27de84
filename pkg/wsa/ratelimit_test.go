package wsa_test

import (
	"net/http"
	"testing"

	"github.com/oxypipe/oxypipe/pkg/wsa"
)

func TestParseRateLimit(t *testing.T) {
	t.Parallel()
	const uuid = "3fa85f64-5717-4562-b3fc-2c963f66afa6"
	cases := []struct {
		name   string
		header map[string]string
		want   wsa.RateLimit
	}{
		{"dashed", map[string]string{
			"x-ratelimit-total-requests-" + uuid + "-limit":     "50",
			"x-ratelimit-total-requests-" + uuid + "-remaining": "12",
		}, wsa.RateLimit{Total: 50, TotalRemaining: 12, Known: true}},
		{"underscored with client id, canonicalised by Go", map[string]string{
			http.CanonicalHeaderKey("x-ratelimit-total_requests_" + uuid + "-123456-limit"):     "100",
			http.CanonicalHeaderKey("x-ratelimit-total_requests_" + uuid + "-123456-remaining"): "99",
		}, wsa.RateLimit{Total: 100, TotalRemaining: 99, Known: true}},
		{"render variants in both spellings", map[string]string{
			"x-ratelimit-total-requests-" + uuid + "-limit":                "50",
			"x-ratelimit-total-requests-" + uuid + "-remaining":            "40",
			"x-ratelimit-total-render-requests-" + uuid + "-limit":         "13",
			"x-ratelimit-total_render_requests_" + uuid + "-123-remaining": "3",
		}, wsa.RateLimit{Total: 50, TotalRemaining: 40, Render: 13, RenderRemaining: 3, Known: true, RenderKnown: true}},
		{"the tightest of two buckets", map[string]string{
			"x-ratelimit-total-requests-a-limit":     "50",
			"x-ratelimit-total-requests-a-remaining": "30",
			"x-ratelimit-total-requests-b-limit":     "20",
			"x-ratelimit-total-requests-b-remaining": "10",
		}, wsa.RateLimit{Total: 20, TotalRemaining: 10, Known: true}},
		{"half a pair is unknown", map[string]string{"x-ratelimit-total-requests-a-limit": "50"}, wsa.RateLimit{}},
		{"garbage values are ignored", map[string]string{
			"x-ratelimit-total-requests-a-limit": "lots", "x-ratelimit-total-requests-a-remaining": "-1"}, wsa.RateLimit{}},
		{"no headers, no Retry-After used", map[string]string{"Retry-After": "5"}, wsa.RateLimit{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := http.Header{}
			for k, v := range tc.header {
				h[k] = []string{v}
			}
			if got := wsa.ParseRateLimit(h); got != tc.want {
				t.Fatalf("ParseRateLimit = %+v, want %+v", got, tc.want)
			}
		})
	}
}
