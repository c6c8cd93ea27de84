package payload_test

import (
	"errors"
	"testing"

	"github.com/oxypipe/oxypipe/pkg/payload"
)

func TestValidateRejects(t *testing.T) {
	t.Parallel()
	cases := []struct{ name, in, key, message string }{
		{"a key set twice", `{"source":"universal","url":"https://a.io","url":"https://b.io"}`, "url", "Parameter `url` is set twice."},
		{"no source", `{"url":"https://a.io"}`, "source", "Parameter `source` is missing."},
		{"empty source", `{"source":"","url":"https://a.io"}`, "source", "Parameter `source` is empty."},
		{"source not a string", `{"source":1,"url":"https://a.io"}`, "source", "Parameter `source` must be a string."},
		{"no input", `{"source":"universal","render":"html"}`, "", "The payload has no input: set one of `query`, `url`, `product_id`, `prompt`, `video_id`, `channel_handle`, `category_id`."},
		{"two inputs", `{"source":"universal","url":"https://a.io","query":"q"}`, "query", "The payload has two inputs, `url` and `query`: set exactly one."},
		{"empty url", `{"source":"universal","url":""}`, "url", "Parameter `url` is empty."},
		{"blank query", `{"source":"google_search","query":"  "}`, "query", "Query parameter is empty."},
		{"empty product_id", `{"source":"walmart_product","product_id":""}`, "product_id", "Parameter `product_id` is empty."},
		{"input is a number", `{"source":"walmart_product","product_id":123}`, "product_id", "Parameter `product_id` must be a string."},
		{"input is a list", `{"source":"universal","url":["https://a.io"]}`, "url", "Parameter `url` must be a string."},
		{"ipv4 host", `{"source":"universal","url":"http://127.0.0.1:8080/x"}`, "url", "The hostname cannot be an ip address."},
		{"ipv6 host", `{"source":"universal","url":"https://[::1]/"}`, "url", "The hostname cannot be an ip address."},
		{"ip host without scheme", `{"source":"universal","url":"10.0.0.1/path"}`, "url", "The hostname cannot be an ip address."},
		{".invalid", `{"source":"universal","url":"https://shop.invalid/a"}`, "url", "Parameter `url` has invalid top level domain format."},
		{".test", `{"source":"universal","url":"https://a.b.TEST./"}`, "url", "Parameter `url` has invalid top level domain format."},
		{".example", `{"source":"universal","url":"http://www.example"}`, "url", "Parameter `url` has invalid top level domain format."},
		{".localhost", `{"source":"universal","url":"http://app.localhost:3000"}`, "url", "Parameter `url` has invalid top level domain format."},
		{"localhost", `{"source":"universal","url":"http://localhost/"}`, "url", "Parameter `url` has invalid top level domain format."},
		{"pages over 20", `{"source":"google_search","query":"q","pages":21}`, "pages", "Parameter `pages` must be at most 20."},
		{"context key twice", `{"source":"universal","url":"https://a.io","context":[{"key":"http_method","value":"get"},{"key":"http_method","value":"post"}]}`, "context", "Context key `http_method` is set twice."},
		{"headers without force_headers", `{"source":"universal","url":"https://a.io","context":[{"key":"headers","value":{"X":"1"}}]}`, "context",
			"Context key `headers` needs `force_headers` set to true: without it the API ignores the headers and still bills the job."},
		{"cookies with force_cookies false", `{"source":"universal","url":"https://a.io","context":[{"key":"cookies","value":[{"key":"a","value":"b"}]},{"key":"force_cookies","value":false}]}`, "context",
			"Context key `cookies` needs `force_cookies` set to true: without it the API ignores the cookies and still bills the job."},
		{"storage object name without job id", `{"source":"universal","url":"https://a.io","storage_type":"s3","storage_url":"bucket/run/{{ source }}.{{ extension }}"}`, "storage_url",
			"Parameter `storage_url` ends in `.{{ extension }}` but has no `{{ job_id }}`: every job would write the same object."},
		{"fetch_resource not last", `{"source":"universal","url":"https://a.io","render":"html","browser_instructions":[{"type":"fetch_resource","filter":"x"},{"type":"wait","wait_time_s":1}]}`, "browser_instructions",
			"Browser instruction `fetch_resource` must be the last one: the API answers 500 to instructions after it."},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := mustParse(t, tc.in).Validate()
			var ve *payload.ValidationError
			if !errors.As(err, &ve) {
				t.Fatalf("Validate() = %v, want a *ValidationError", err)
			}
			if ve.Key != tc.key || ve.Message != tc.message || err.Error() != tc.message {
				t.Fatalf("Validate() = {%q, %q}, want {%q, %q}", ve.Key, ve.Message, tc.key, tc.message)
			}
		})
	}
}

func TestValidateAccepts(t *testing.T) {
	t.Parallel()
	cases := []struct{ name, in string }{
		{"universal url", `{"source":"universal","url":"https://sandbox.oxylabs.io/products/1"}`},
		{"url without scheme", `{"source":"universal","url":"sandbox.oxylabs.io/products"}`},
		{"example.com is a real domain", `{"source":"universal","url":"https://example.com/"}`},
		{"unknown keys and sources are the API's business", `{"source":"no_such_source","query":"q","whatever":{"a":[1]}}`},
		{"pages 20", `{"source":"google_search","query":"q","pages":20}`},
		{"headers with force_headers", `{"source":"universal","url":"https://a.io","context":[{"key":"force_headers","value":true},{"key":"headers","value":{"X":"1"}}]}`},
		{"empty headers need no force", `{"source":"universal","url":"https://a.io","context":[{"key":"headers","value":{}}]}`},
		{"context that is not a list is left to the API", `{"source":"universal","url":"https://a.io","context":{"headers":1}}`},
		{"storage object name with job id", `{"source":"universal","url":"https://a.io","storage_type":"s3","storage_url":"b/{{job_id}}.{{ extension }}"}`},
		{"storage folder", `{"source":"universal","url":"https://a.io","storage_type":"s3","storage_url":"s3://b/run"}`},
		{"fetch_resource last", `{"source":"universal","url":"https://a.io","render":"html","browser_instructions":[{"type":"wait","wait_time_s":1},{"type":"fetch_resource","filter":"x"}]}`},
		{"product_id input", `{"source":"walmart_product","product_id":"123"}`},
		{"prompt input", `{"source":"chatgpt","prompt":"hello"}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if err := mustParse(t, tc.in).Validate(); err != nil {
				t.Fatalf("Validate() = %v, want nil", err)
			}
		})
	}
}
