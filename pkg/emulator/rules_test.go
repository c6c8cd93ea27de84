package emulator

import (
	"errors"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"
)

func TestInjectedFaults(t *testing.T) {
	t.Parallel()
	t.Run("a 500 is the API's HTML page with a trace id, and creates nothing", func(t *testing.T) {
		t.Parallel()
		f := setup(t, Config{Faults: []Fault{{On: []Endpoint{EndpointSubmit}, Failure: Failure{Status: 500, Times: 2}}}})
		body := `{"source":"universal","url":"https://shop.com/"}`
		for i, trace := range []string{"00000001-000000000000000000000000", "00000002-000000000000000000000000"} {
			r := f.do("POST", "/v1/queries", body).expect(t, 500)
			if !strings.HasPrefix(r.header.Get("Content-Type"), "text/html") || !strings.Contains(string(r.body), "<p>trace_id: "+trace+"</p>") {
				t.Fatalf("attempt %d: %s", i, r.body)
			}
		}
		f.submit(body)
		f.do("GET", "/v1/queries/7500000000000000001", "").expect(t, 200)
		if st := f.srv.Emulator.Stats(); st.JobsCreated != 1 || st.FaultsInjected != 2 {
			t.Fatalf("created %d, faults %d", st.JobsCreated, st.FaultsInjected)
		}
	})

	t.Run("524 on the results endpoint only", func(t *testing.T) {
		t.Parallel()
		f := setup(t, Config{Faults: []Fault{{On: []Endpoint{EndpointResults}, Failure: Failure{Status: 524}}}})
		id := f.submit(`{"source":"universal","url":"https://shop.com/"}`)["id"].(string)
		f.do("GET", jobPath(id), "").expect(t, 200)
		r := f.do("GET", jobPath(id)+"/results", "").expect(t, 524)
		if !strings.Contains(string(r.body), "524") || !strings.Contains(string(r.body), "trace_id: ") {
			t.Fatalf("%s", r.body)
		}
	})

	t.Run("a dropped connection is a network error and creates no job", func(t *testing.T) {
		t.Parallel()
		f := setup(t, Config{Faults: []Fault{{On: []Endpoint{EndpointSubmit, EndpointBatch}, Failure: Failure{Drop: true, Times: 1}}}})
		req, _ := http.NewRequest("POST", f.srv.URL+"/v1/queries", strings.NewReader(`{"source":"universal","url":"https://shop.com/"}`))
		req.SetBasicAuth("u", "p")
		resp, err := f.client.Do(req)
		if err == nil {
			resp.Body.Close()
			t.Fatalf("want a network error, got %d", resp.StatusCode)
		}
		if f.srv.Emulator.Stats().JobsCreated != 0 {
			t.Fatal("a dropped submission creates no job")
		}
		f.submit(`{"source":"universal","url":"https://shop.com/"}`)
	})

	t.Run("ErrorRate 1 fails every API request but not the stats endpoint", func(t *testing.T) {
		t.Parallel()
		f := setup(t, Config{ErrorRate: 1})
		f.do("POST", "/v1/queries", `{"source":"universal","url":"https://shop.com/"}`).expect(t, 500)
		f.do("GET", "/v1/info/callbacker_ips", "").expect(t, 500)
		f.do("GET", "/_sandbox/stats", "").expect(t, 200)
	})

	t.Run("a probability fails a seeded share of requests", func(t *testing.T) {
		t.Parallel()
		count := func(seed int64) (fails int, pattern string) {
			f := setup(t, Config{Seed: seed, Faults: []Fault{{On: []Endpoint{EndpointCallbackerIPs}, Probability: 0.3, Failure: Failure{Status: 503}}}})
			for i := 0; i < 200; i++ {
				r := f.do("GET", "/v1/info/callbacker_ips", "")
				if r.status == 503 {
					fails++
					pattern += "x"
				} else {
					pattern += "."
				}
			}
			return fails, pattern
		}
		n1, p1 := count(7)
		n2, p2 := count(7)
		if p1 != p2 {
			t.Fatal("the same seed must fail the same requests")
		}
		if n1 < 35 || n1 > 85 {
			t.Fatalf("%d of 200 failed at probability 0.3", n1)
		}
		if _, p3 := count(8); p3 == p1 {
			t.Fatal("another seed should fail other requests")
		}
		_ = n2
	})
}

func TestRules(t *testing.T) {
	t.Parallel()
	f := setup(t, Config{Rules: []Rule{
		{Pattern: regexp.MustCompile(`/products/1$`), Outcome: Outcome{StatusFailure: &Failure{Status: 404}}},
		{Pattern: regexp.MustCompile(`/products/2$`), Outcome: Outcome{Fault: true}},
		{Pattern: regexp.MustCompile(`/612$`), Outcome: Outcome{Fault: true, FaultStatusCode: 612}},
		{Pattern: regexp.MustCompile(`/results-404$`), Outcome: Outcome{ResultsFailure: &Failure{Status: 404, Message: "Query not found.", Times: 1}}},
		{Pattern: regexp.MustCompile(`/flaky$`), Outcome: Outcome{SubmitFailure: &Failure{Status: 502, Times: 2}}},
		{Pattern: regexp.MustCompile(`/each-[ab]$`), Outcome: Outcome{SubmitFailure: &Failure{Status: 503, Times: 1}}},
		{Pattern: regexp.MustCompile(`/unknown-outcome$`), Outcome: Outcome{SubmitFailure: &Failure{Status: 500, Times: 1, AfterCreate: true}}},
		{Pattern: regexp.MustCompile(`/cut$`), Outcome: Outcome{SubmitFailure: &Failure{CutBody: true, AfterCreate: true, Times: 1}}},
		{Pattern: regexp.MustCompile(`lowrate\.com`), Outcome: Outcome{Throttle: true}},
		{Source: "amazon_product", Outcome: Outcome{Reject: &Rejection{Status: 403, Message: "Forbidden source."}}},
		{Match: func(s Submission) bool { return s.InputKey == "query" && strings.HasPrefix(s.Input, "broken") },
			Outcome: Outcome{TargetStatusCode: 404, ParseStatusCode: 12002}},
		{Pattern: regexp.MustCompile(`/custom$`), Outcome: Outcome{Content: "<html>\"custom\"</html>", JobTime: time.Minute}},
	}})
	submit := func(u string) string {
		return f.submit(`{"source":"universal","url":"https://sandbox.oxylabs.io` + u + `"}`)["id"].(string)
	}

	t.Run("a status check that returns 404, as in examples/sandbox-rules.json", func(t *testing.T) {
		id := submit("/products/1")
		r := f.do("GET", jobPath(id), "").expect(t, 404)
		body := r.object(t)
		if _, ok := body["message"]; ok {
			t.Fatalf("no message, so a client falls back to the reason phrase: %s", r.body)
		}
		if ok, _ := regexp.MatchString(`^[0-9a-f]{8}-0{24}$`, body["trace_id"].(string)); !ok {
			t.Fatalf("trace_id %v", body["trace_id"])
		}
	})

	t.Run("a url pattern that always faults", func(t *testing.T) {
		id := submit("/products/2")
		f.clock.Advance(2 * time.Second)
		if f.do("GET", jobPath(id), "").expect(t, 200).object(t)["status"] != "faulted" {
			t.Fatal("want faulted")
		}
	})

	t.Run("a fault can report 612", func(t *testing.T) {
		id := submit("/612")
		f.clock.Advance(2 * time.Second)
		e := f.do("GET", jobPath(id)+"/results", "").expect(t, 200).object(t)["results"].([]any)[0].(map[string]any)
		if e["status_code"] != 612.0 || e["content"] != "" {
			t.Fatalf("%v", e)
		}
	})

	t.Run("results fail a number of times", func(t *testing.T) {
		id := submit("/results-404")
		f.clock.Advance(2 * time.Second)
		if r := f.do("GET", jobPath(id)+"/results", "").expect(t, 404); r.message(t) != "Query not found." {
			t.Fatalf("%s", r.body)
		}
		f.do("GET", jobPath(id)+"/results", "").expect(t, 200)
	})

	t.Run("a submission that fails twice creates no job until it passes", func(t *testing.T) {
		body := `{"source":"universal","url":"https://sandbox.oxylabs.io/flaky"}`
		before := f.srv.Emulator.Stats().CreatedByInput["https://sandbox.oxylabs.io/flaky"]
		f.do("POST", "/v1/queries", body).expect(t, 502)
		f.do("POST", "/v1/queries", body).expect(t, 502)
		f.submit(body)
		if got := f.srv.Emulator.Stats().CreatedByInput["https://sandbox.oxylabs.io/flaky"]; got != before+1 {
			t.Fatalf("created %d", got)
		}
	})

	t.Run("a failure's times count for each input, not for the rule", func(t *testing.T) {
		a := `{"source":"universal","url":"https://sandbox.oxylabs.io/each-a"}`
		b := `{"source":"universal","url":"https://sandbox.oxylabs.io/each-b"}`
		f.do("POST", "/v1/queries", a).expect(t, 503)
		f.do("POST", "/v1/queries", b).expect(t, 503)
		f.submit(a)
		f.submit(b)
	})

	t.Run("a failure after creation bills a job the client never heard of", func(t *testing.T) {
		body := `{"source":"universal","url":"https://sandbox.oxylabs.io/unknown-outcome"}`
		f.do("POST", "/v1/queries", body).expect(t, 500)
		f.submit(body)
		if got := f.srv.Emulator.Stats().CreatedByInput["https://sandbox.oxylabs.io/unknown-outcome"]; got != 2 {
			t.Fatalf("created %d, want 2 (a duplicate bill)", got)
		}
	})

	t.Run("an answer cut short still names its job in its header", func(t *testing.T) {
		req, err := http.NewRequest("POST", f.srv.URL+"/v1/queries", strings.NewReader(`{"source":"universal","url":"https://sandbox.oxylabs.io/cut"}`))
		if err != nil {
			t.Fatal(err)
		}
		req.SetBasicAuth(f.srv.Username, f.srv.Password)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = resp.Body.Close() }()
		_, err = io.ReadAll(resp.Body)
		id := resp.Header.Get("X-Oxylabs-Job-Id")
		if resp.StatusCode != 202 || err == nil || id == "" {
			t.Fatalf("status %d, header id %q, body error %v; want 202, an id and a body cut short", resp.StatusCode, id, err)
		}
		f.do("GET", jobPath(id), "").expect(t, 200)
		if got := f.srv.Emulator.Stats().CreatedByInput["https://sandbox.oxylabs.io/cut"]; got != 1 {
			t.Fatalf("created %d, want 1", got)
		}
	})

	t.Run("a domain throttle", func(t *testing.T) {
		r := f.do("POST", "/v1/queries", `{"source":"universal","url":"https://www.lowrate.com/x"}`).expect(t, 429)
		if r.message(t) != "Access to www.lowrate.com has been limited to 1 req/s due to a low success rate. Please try again later." {
			t.Fatalf("%s", r.body)
		}
		r = f.do("POST", "/v1/queries/batch", `{"source":"universal","url":["https://ok.com/","https://lowrate.com/"]}`).expect(t, 429)
		if !strings.HasPrefix(r.message(t), "Access to lowrate.com has been limited") {
			t.Fatalf("%s", r.body)
		}
	})

	t.Run("a source outside the plan", func(t *testing.T) {
		r := f.do("POST", "/v1/queries", `{"source":"amazon_product","query":"B07FZ8S74R"}`).expect(t, 403)
		if r.message(t) != "Forbidden source." {
			t.Fatalf("%s", r.body)
		}
		b := f.do("POST", "/v1/queries/batch", `{"source":"amazon_product","query":["B07FZ8S74R"]}`).expect(t, 202).batch(t)
		if len(b.Queries) != 0 || b.Errors[0].Message != "Forbidden source." {
			t.Fatalf("%+v", b)
		}
	})

	t.Run("a match function sets the target and parse status", func(t *testing.T) {
		id := f.submit(`{"source":"google_search","query":"broken thing","parse":true}`)["id"].(string)
		f.clock.Advance(2 * time.Second)
		e := f.do("GET", jobPath(id)+"/results", "").expect(t, 200).object(t)["results"].([]any)[0].(map[string]any)
		if e["status_code"] != 404.0 || e["content"].(map[string]any)["parse_status_code"] != 12002.0 {
			t.Fatalf("%v", e)
		}
	})

	t.Run("custom content and job time", func(t *testing.T) {
		id := submit("/custom")
		f.clock.Advance(59 * time.Second)
		f.do("GET", jobPath(id)+"/results", "").expect(t, 204)
		f.clock.Advance(time.Second)
		c := f.do("GET", jobPath(id)+"/results/1/content", "").expect(t, 200)
		if string(c.body) != "<html>\"custom\"</html>" {
			t.Fatalf("%q", c.body)
		}
		e := f.do("GET", jobPath(id)+"/results", "").expect(t, 200).object(t)["results"].([]any)[0].(map[string]any)
		if e["content"] != "<html>\"custom\"</html>" {
			t.Fatalf("%q", e["content"])
		}
	})
}

func TestInvalidConfig(t *testing.T) {
	t.Parallel()
	for name, cfg := range map[string]Config{
		"fault rate above 1":       {FaultRate: 1.5},
		"negative time scale":      {TimeScale: -1},
		"bad header style":         {HeaderStyle: "camel"},
		"rate limit below -1":      {RateLimit: -2},
		"unknown fault endpoint":   {Faults: []Fault{{On: []Endpoint{"nope"}}}},
		"fault status 200":         {Faults: []Fault{{Failure: Failure{Status: 200}}}},
		"rule with fault and done": {Rules: []Rule{{Outcome: Outcome{Fault: true, Done: true}}}},
		"negative times":           {Rules: []Rule{{Outcome: Outcome{SubmitFailure: &Failure{Times: -1}}}}},
		"a cut body without a job": {Rules: []Rule{{Outcome: Outcome{SubmitFailure: &Failure{CutBody: true}}}}},
	} {
		if _, err := New(cfg); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("%s: err = %v", name, err)
		}
	}
}
