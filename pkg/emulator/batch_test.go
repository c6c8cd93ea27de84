package emulator

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
)

type batchReply struct {
	Queries []map[string]any `json:"queries"`
	Errors  []struct {
		Message string `json:"message"`
		URL     string `json:"url"`
	} `json:"errors"`
}

func (r reply) batch(t *testing.T) batchReply {
	t.Helper()
	var b batchReply
	if err := json.Unmarshal(r.body, &b); err != nil {
		t.Fatalf("batch body: %v: %s", err, r.body)
	}
	return b
}

func TestBatch(t *testing.T) {
	t.Parallel()
	t.Run("partial acceptance lists bad values under errors and still answers 202", func(t *testing.T) {
		t.Parallel()
		f := setup(t, Config{})
		r := f.do("POST", "/v1/queries/batch", `{"source":"universal","url":["https://sandbox.oxylabs.io/products","not a url","","https://sandbox.oxylabs.io/products?page=2","http://10.0.0.1/"]}`).expect(t, 202)
		b := r.batch(t)
		if len(b.Queries) != 2 || b.Queries[0]["url"] != "https://sandbox.oxylabs.io/products" || b.Queries[1]["url"] != "https://sandbox.oxylabs.io/products?page=2" {
			t.Fatalf("queries %v", b.Queries)
		}
		if b.Queries[0]["id"] != "7500000000000000001" || b.Queries[1]["id"] != "7500000000000000002" {
			t.Fatalf("ids %v %v", b.Queries[0]["id"], b.Queries[1]["id"])
		}
		want := []struct{ msg, url string }{
			{"Parameter `url` is invalid.", "not a url"},
			{"Parameter `url` is empty.", ""},
			{"The hostname cannot be an ip address.", "http://10.0.0.1/"},
		}
		if len(b.Errors) != len(want) {
			t.Fatalf("errors %v", b.Errors)
		}
		for i, w := range want {
			if b.Errors[i].Message != w.msg || b.Errors[i].URL != w.url {
				t.Fatalf("error %d = %+v, want %+v", i, b.Errors[i], w)
			}
		}
		if r.header.Get("X-Oxylabs-Job-Id") != "" {
			t.Fatal("a batch has no job id header")
		}
		if got := r.header.Get("X-Ratelimit-Total-Requests-00000000-0000-0000-0000-000000000000-Remaining"); got != "48" {
			t.Fatalf("remaining = %q, want 48 (two values)", got)
		}
	})

	t.Run("every value failing is still 202 with no queries and no limit headers", func(t *testing.T) {
		t.Parallel()
		f := setup(t, Config{})
		for _, c := range []struct{ body, msg string }{
			{`{"source":"google_search","query":["",""]}`, "Query parameter is empty."},
			{`{"source":"no_such","query":["a","b"]}`, "Unsupported source."},
			{`{"source":"walmart_search","query":["a","b"]}`, "Source `walmart_search` is not available with a batch request."},
		} {
			r := f.do("POST", "/v1/queries/batch", c.body).expect(t, 202)
			b := r.batch(t)
			if string(r.body[:14]) != `{"queries":[],` || len(b.Queries) != 0 || len(b.Errors) != 2 || b.Errors[0].Message != c.msg || b.Errors[1].Message != c.msg {
				t.Fatalf("%s: %s", c.body, r.body)
			}
			for name := range r.header {
				if strings.HasPrefix(name, "X-Ratelimit") {
					t.Fatalf("%s carries %s", c.body, name)
				}
			}
		}
		if f.srv.Emulator.Stats().JobsCreated != 0 {
			t.Fatal("no job may be created")
		}
	})

	t.Run("a list in another key is a 400", func(t *testing.T) {
		t.Parallel()
		f := setup(t, Config{})
		for _, body := range []string{
			`{"source":"walmart_product","product_id":["1","2"]}`,
			`{"source":"universal","url":"https://a.com/"}`,
			`{"source":"universal","url":["https://a.com/"],"query":["x"]}`,
		} {
			r := f.do("POST", "/v1/queries/batch", body).expect(t, 400)
			if r.message(t) != "Batch request must contain one array of `query` or `url`." {
				t.Fatalf("%s: %s", body, r.body)
			}
		}
	})

	t.Run("prompt lists work for LLM sources", func(t *testing.T) {
		t.Parallel()
		f := setup(t, Config{})
		b := f.do("POST", "/v1/queries/batch", `{"source":"perplexity","prompt":["what is the tallest mountain in europe",""]}`).expect(t, 202).batch(t)
		if len(b.Queries) != 1 || b.Queries[0]["prompt"] != "what is the tallest mountain in europe" || len(b.Errors) != 1 || b.Errors[0].Message != "Query parameter is empty." {
			t.Fatalf("%+v", b)
		}
		if _, ok := b.Queries[0]["context"]; ok {
			t.Fatal("LLM jobs have the short object")
		}
	})

	t.Run("more than MaxBatch values is a 400", func(t *testing.T) {
		t.Parallel()
		f := setup(t, Config{MaxBatch: 3, RateLimit: Unlimited})
		r := f.do("POST", "/v1/queries/batch", `{"source":"google_search","query":["a","b","c","d"]}`).expect(t, 400)
		if r.message(t) != "Batch request cannot contain more than 3 queries." {
			t.Fatalf("%s", r.body)
		}
		f.do("POST", "/v1/queries/batch", `{"source":"google_search","query":["a","b","c"]}`).expect(t, 202)
	})

	t.Run("5000 values are accepted and share options", func(t *testing.T) {
		t.Parallel()
		f := setup(t, Config{RateLimit: Unlimited})
		values := make([]string, 5000)
		for i := range values {
			values[i] = fmt.Sprintf("%q", fmt.Sprintf("https://sandbox.oxylabs.io/products/%d", i+1))
		}
		b := f.do("POST", "/v1/queries/batch", `{"source":"universal","parse":true,"parser_type":"p","url":[`+strings.Join(values, ",")+`]}`).expect(t, 202).batch(t)
		if len(b.Queries) != 5000 || b.Queries[4999]["id"] != "7500000000000005000" || b.Queries[4999]["parse"] != true {
			t.Fatalf("%d queries; last %v", len(b.Queries), b.Queries[len(b.Queries)-1]["id"])
		}
		f.clock.Advance(time.Minute)
		st := f.do("GET", "/v1/queries/7500000000000002500", "").expect(t, 200).object(t)
		if st["url"] != "https://sandbox.oxylabs.io/products/2500" || st["status"] != "done" {
			t.Fatalf("%v %v", st["url"], st["status"])
		}
	})
}
