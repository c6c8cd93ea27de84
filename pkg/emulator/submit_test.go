package emulator

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"
)

func TestAuth(t *testing.T) {
	t.Parallel()
	f := setup(t, Config{})
	strict := setup(t, Config{Username: "alice", Password: "s3cret"})
	basic := func(user, pass string) string {
		return "Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+pass))
	}
	cases := []struct {
		name    string
		f       *fixture
		auth    string
		status  int
		message string
		empty   bool
	}{
		{"no header gives 401 with the live message", f, "", 401, "Authorization header not provided.", false},
		{"a bearer header is an invalid authorization header", f, "Bearer abc", 401, "Invalid authorization header", false},
		{"garbage base64 is an invalid authorization header", f, "Basic !!!", 401, "Invalid authorization header", false},
		{"empty password gives an empty 401", f, basic("user", ""), 401, "", true},
		{"any non-empty credentials pass by default", f, basic("anyone", "anything"), 200, "", false},
		{"wrong credentials give an empty 401 when configured", strict, basic("alice", "wrong"), 401, "", true},
		{"configured credentials pass", strict, basic("alice", "s3cret"), 200, "", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := c.f.doAuth("GET", "/v1/info/callbacker_ips", "", c.auth).expect(t, c.status)
			switch {
			case c.empty:
				if len(r.body) != 0 || r.header.Get("Content-Length") != "0" {
					t.Fatalf("body %q, Content-Length %q; want empty", r.body, r.header.Get("Content-Length"))
				}
			case c.message != "":
				if got := r.message(t); got != c.message {
					t.Fatalf("message = %q, want %q", got, c.message)
				}
				if r.header.Get("X-Oxylabs-Client-Id") != "" {
					t.Fatal("a 401 must not carry client headers")
				}
			default:
				ips := r.object(t)["callbacker_ips"].([]any)
				if len(ips) != 1 || ips[0] != "127.0.0.1" {
					t.Fatalf("callbacker_ips = %v", ips)
				}
			}
		})
	}
}

// fullFields are the 34 keys of the full job object, in the API's order.
var fullFields = []string{
	"callback_url", "client_id", "context", "created_at", "domain", "geo_location", "id", "limit",
	"locale", "pages", "parse", "parser_type", "parser_preset", "parsing_instructions",
	"browser_instructions", "render", "xhr", "markdown", "url", "query", "source", "start_page",
	"status", "storage_type", "storage_url", "aggregate_name", "subdomain", "content_encoding",
	"updated_at", "user_agent_type", "session_info", "statuses", "client_notes", "_links",
}

// keysInOrder returns the top-level keys of a JSON object in body order.
func keysInOrder(t *testing.T, body []byte) []string {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(string(body)))
	if _, err := dec.Token(); err != nil {
		t.Fatal(err)
	}
	var keys []string
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, tok.(string))
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			t.Fatal(err)
		}
	}
	return keys
}

func TestSubmitFullShape(t *testing.T) {
	t.Parallel()
	f := setup(t, Config{})
	r := f.do("POST", "/v1/queries", `{"source":"universal","url":"https://sandbox.oxylabs.io/products/1","foo_bar":"x","context":[{"key":"http_method","value":"post"},{"key":"nope","value":1}]}`).expect(t, 202)
	if got := keysInOrder(t, r.body); !slices.Equal(got, fullFields) {
		t.Fatalf("keys = %v\nwant %v", got, fullFields)
	}
	job := r.object(t)
	want := map[string]any{
		"id": "7500000000000000001", "status": "pending", "source": "universal",
		"url": "https://sandbox.oxylabs.io/products/1", "query": "", "domain": "io", "subdomain": "sandbox",
		"client_id": 123456.0, "pages": 1.0, "start_page": 1.0, "limit": 10.0, "parse": false,
		"created_at": "2026-01-01 00:00:00", "updated_at": "2026-01-01 00:00:00",
		"user_agent_type": "desktop", "content_encoding": "utf-8", "render": nil, "storage_url": nil,
	}
	for k, v := range want {
		if job[k] != v {
			t.Errorf("%s = %#v, want %#v", k, job[k], v)
		}
	}
	if s := job["statuses"].([]any); len(s) != 0 {
		t.Errorf("statuses = %v, want []", s)
	}
	ctx := job["context"].([]any)
	if len(ctx) != 16 {
		t.Fatalf("universal lists %d context keys, want 16", len(ctx))
	}
	for _, item := range ctx {
		m := item.(map[string]any)
		if m["key"] == "nope" {
			t.Error("an unknown context key must be dropped")
		}
		if m["key"] == "http_method" && m["value"] != "post" {
			t.Errorf("http_method = %v, want the sent post", m["value"])
		}
	}
	if _, ok := job["foo_bar"]; ok {
		t.Error("an unknown top-level key must be dropped on a lenient source")
	}
	if r.header.Get("X-Oxylabs-Job-Id") != "7500000000000000001" || r.header.Get("X-Oxyserps-Job-Id") != "7500000000000000001" {
		t.Errorf("job id headers = %q / %q", r.header.Get("X-Oxylabs-Job-Id"), r.header.Get("X-Oxyserps-Job-Id"))
	}
	if r.header.Get("X-Oxylabs-Client-Name") != f.srv.Username || r.header.Get("X-Oxylabs-Client-Id") != "123456" {
		t.Errorf("client headers = %v", r.header)
	}
	links := job["_links"].([]any)
	rels := []string{}
	for _, l := range links {
		m := l.(map[string]any)
		rels = append(rels, m["rel"].(string))
		href, _ := m["href"].(string)
		if list, ok := m["href_list"].([]any); ok {
			href = list[0].(string)
		}
		if !strings.HasPrefix(href, "http://") {
			t.Errorf("%s href %q is not http://", m["rel"], href)
		}
	}
	wantRels := []string{"self", "results", "results-content", "results-html", "results-content-html"}
	if !slices.Equal(rels, wantRels) {
		t.Errorf("rels = %v, want %v", rels, wantRels)
	}
}

func TestSubmitShortShapeEchoesPayloadSorted(t *testing.T) {
	t.Parallel()
	f := setup(t, Config{})
	r := f.do("POST", "/v1/queries", `{"source":"walmart_product","product_id":"11601059297","parse":"true","user_agent_type":"mobile","domain":"com","delivery_zip":"10001"}`).expect(t, 202)
	want := []string{"delivery_zip", "domain", "parse", "product_id", "source", "user_agent_type", "id", "status", "created_at", "updated_at", "_links"}
	if got := keysInOrder(t, r.body); !slices.Equal(got, want) {
		t.Fatalf("keys = %v, want %v", got, want)
	}
	job := r.object(t)
	if job["parse"] != "true" {
		t.Errorf(`parse = %#v, want the string "true" as sent`, job["parse"])
	}
	rels := []string{}
	for _, l := range job["_links"].([]any) {
		rels = append(rels, l.(map[string]any)["rel"].(string))
	}
	if !slices.Contains(rels, "results-parsed") || !slices.Contains(rels, "results-content-parsed") {
		t.Errorf("parse:\"true\" should add the parsed links; rels = %v", rels)
	}
}

func TestSubmitPagesAndLinks(t *testing.T) {
	t.Parallel()
	f := setup(t, Config{})
	job := f.submit(`{"source":"amazon_search","query":"usb c cable","pages":2,"start_page":20,"render":"png"}`)
	if job["pages"] != 2.0 || job["start_page"] != 20.0 {
		t.Fatalf("pages/start_page = %v/%v", job["pages"], job["start_page"])
	}
	var contentList []any
	rels := []string{}
	for _, l := range job["_links"].([]any) {
		m := l.(map[string]any)
		rels = append(rels, m["rel"].(string))
		if m["rel"] == "results-content" {
			contentList = m["href_list"].([]any)
		}
	}
	if len(contentList) != 2 || !strings.HasSuffix(contentList[0].(string), "/results/20/content") ||
		!strings.HasSuffix(contentList[1].(string), "/results/21/content") {
		t.Fatalf("href_list = %v, want pages 20 and 21", contentList)
	}
	if !slices.Contains(rels, "results-png") || !slices.Contains(rels, "results-content-png") {
		t.Fatalf("render png should add png links: %v", rels)
	}
}

func TestSubmitValidation(t *testing.T) {
	t.Parallel()
	f := setup(t, Config{})
	cases := []struct {
		name    string
		body    string
		message string
		errors  []string
	}{
		{"malformed JSON", `{"source":`, "Json error: Unexpected value.", nil},
		{"a JSON array is not a payload", `[1,2]`, "Json error: Unexpected value.", nil},
		{"unknown source", `{"source":"no_such_source","url":"https://a.com"}`, "Unsupported source.", nil},
		{"sources the API dropped", `{"source":"amazon_reviews","query":"x"}`, "Unsupported source.", nil},
		{"universal without url", `{"source":"universal"}`, "Parameter `url` is empty.", nil},
		{"universal with a query instead of a url", `{"source":"universal","query":"https://sandbox.oxylabs.io/products/1"}`, "Parameter `url` is empty.", nil},
		{"empty url", `{"source":"universal","url":""}`, "Parameter `url` is empty.", nil},
		{"not a url", `{"source":"universal","url":"not a url"}`, "Parameter `url` is invalid.", nil},
		{"ip host", `{"source":"universal","url":"http://127.0.0.1/x"}`, "The hostname cannot be an ip address.", nil},
		{"ipv6 host", `{"source":"universal","url":"http://[::1]/x"}`, "The hostname cannot be an ip address.", nil},
		{".invalid tld", `{"source":"universal","url":"https://shop.invalid/"}`, "Parameter `url` has invalid top level domain format.", nil},
		{".test tld", `{"source":"universal","url":"https://x.test"}`, "Parameter `url` has invalid top level domain format.", nil},
		{".example tld", `{"source":"universal","url":"https://www.example"}`, "Parameter `url` has invalid top level domain format.", nil},
		{"empty query", `{"source":"google_search","query":""}`, "Query parameter is empty.", nil},
		{"missing query", `{"source":"amazon_product"}`, "Query parameter is empty.", nil},
		{"short ASIN", `{"source":"amazon_product","query":"B07FZ8S7"}`, "ASIN length is not valid.", nil},
		{"lower-case ASIN", `{"source":"amazon_product","query":"b07fz8s74r"}`, "ASIN should only contain alphanumeric values.", nil},
		{"url on a query source", `{"source":"google_search","url":"https://google.com"}`, "Source `google_search` is not available with url parameter.", nil},
		{"amazon_search without query or merchant", `{"source":"amazon_search"}`, "Either `query` or `context:merchant_id` parameters must be set.", nil},
		{"pages zero", `{"source":"google_search","query":"a","pages":0}`, "Parameter `pages` should be a positive integer.", nil},
		{"pages over 20", `{"source":"google_search","query":"a","pages":21}`, "Parameter `pages` should not exceed 20.", nil},
		{"start_page text", `{"source":"google_search","query":"a","start_page":"x"}`, "Invalid type for parameter `start_page`, supported types: `integer, string`.", nil},
		{"bad callback url", `{"source":"google_search","query":"a","callback_url":"nope"}`, "Parameter `callback_url` is invalid.", nil},
		{"strict source with the wrong input key", `{"source":"walmart_product","query":"436012154"}`, "",
			[]string{"[product_id]: This field is missing.", "[query]: This field was not expected."}},
		{"strict source with an unknown key", `{"source":"walmart_product","product_id":"436012154","foo_bar":"x"}`, "",
			[]string{"[foo_bar]: This field was not expected."}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := f.do("POST", "/v1/queries", c.body).expect(t, 400)
			body := r.object(t)
			if c.errors != nil {
				got := []string{}
				for _, e := range body["errors"].([]any) {
					got = append(got, e.(string))
				}
				if !slices.Equal(got, c.errors) {
					t.Fatalf("errors = %q, want %q", got, c.errors)
				}
			} else if body["message"] != c.message {
				t.Fatalf("message = %q, want %q", body["message"], c.message)
			}
			if body["instance"] != "/v1/queries" || body["timestamp"] == nil {
				t.Fatalf("body lacks instance/timestamp: %s", r.body)
			}
			if ok, _ := regexp.MatchString(`^[0-9a-f]{8}-0{24}$`, body["trace_id"].(string)); !ok {
				t.Fatalf("trace_id %q is not %%08x + 24 zeros", body["trace_id"])
			}
			if r.header.Get("X-Oxylabs-Job-Id") != "" || r.header.Get("X-Ratelimit-Total-Requests-00000000-0000-0000-0000-000000000000-Limit") != "" {
				t.Fatal("a 400 carries neither a job id nor rate-limit headers")
			}
		})
	}
	if got := f.srv.Emulator.Stats(); got.JobsCreated != 0 || got.Rejected != int64(len(cases)) {
		t.Fatalf("stats after rejections: created %d rejected %d", got.JobsCreated, got.Rejected)
	}
}

func TestBadJSON422Switch(t *testing.T) {
	t.Parallel()
	f := setup(t, Config{BadJSON422: true})
	r := f.do("POST", "/v1/queries", `{"source`).expect(t, http.StatusUnprocessableEntity)
	if r.message(t) != "Json error: Unexpected value." {
		t.Fatalf("message = %q", r.message(t))
	}
}

func TestAcceptedEdgeCases(t *testing.T) {
	t.Parallel()
	f := setup(t, Config{})
	for _, body := range []string{
		`{"source":"amazon_bestsellers","query":""}`,
		`{"source":"amazon_search","context":[{"key":"merchant_id","value":"A1"}]}`,
		`{"source":"universal_ecommerce","url":"https://shop.com/x"}`,
		`{"source":"perplexity","prompt":"tallest mountain"}`,
		`{"source":"google_search","query":"a","start_page":"3","geo_location":null,"render":""}`,
		`{"source":"walmart_search"}`,
	} {
		f.submit(body)
	}
}

func TestUnknownPathsAndMethods(t *testing.T) {
	t.Parallel()
	f := setup(t, Config{})
	for _, path := range []string{"/v1/queries/abc", "/v1/queries/abc/results", "/v1/queries/1/results/x/content", "/v2/nothing"} {
		r := f.doAuth("GET", path, "", "").expect(t, 404)
		if r.message(t) != "Resource not found" || r.header.Get("Server") != "nginx" || r.header.Get("X-Oxylabs-Client-Id") != "" {
			t.Errorf("%s: %s %v", path, r.body, r.header)
		}
	}
	r := f.do("GET", "/v1/queries/7000000000000000001", "").expect(t, 404)
	if r.message(t) != "Query not found." || r.object(t)["instance"] != "/v1/queries/7000000000000000001" {
		t.Errorf("unknown id: %s", r.body)
	}
	f.do("GET", "/v1/queries/99999999999999999999999", "").expect(t, 404)
	f.do("GET", "/v1/queries", "").expect(t, http.StatusMethodNotAllowed)
}
