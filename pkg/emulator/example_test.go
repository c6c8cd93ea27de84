package emulator_test

import (
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"time"

	"github.com/oxypipe/oxypipe/pkg/emulator"
)

// A test drives the emulator's clock instead of sleeping: a job submitted
// now is pending until the clock passes its two-second job time.
func Example() {
	clock := emulator.NewFakeClock(time.Time{})
	srv, err := emulator.Start("127.0.0.1:0", emulator.Config{Clock: clock, JobTime: 2 * time.Second})
	if err != nil {
		panic(err)
	}
	defer func() { _ = srv.Close() }()

	call := func(method, path, body string) (int, string) {
		req, _ := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
		req.SetBasicAuth(srv.Username, srv.Password)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			panic(err)
		}
		defer resp.Body.Close()
		_, _ = io.Copy(io.Discard, resp.Body)
		return resp.StatusCode, resp.Header.Get("X-Oxylabs-Job-Status")
	}

	code, _ := call("POST", "/v1/queries", `{"source":"universal","url":"https://sandbox.oxylabs.io/products/1"}`)
	fmt.Println("submit:", code)
	code, status := call("GET", "/v1/queries/7500000000000000001/results", "")
	fmt.Println("results:", code, status)
	clock.Advance(2 * time.Second)
	code, status = call("GET", "/v1/queries/7500000000000000001/results", "")
	fmt.Println("results:", code, status)
	fmt.Println("billed:", srv.Emulator.Stats().CreatedByInput["https://sandbox.oxylabs.io/products/1"])
	// Output:
	// submit: 202
	// results: 204 pending
	// results: 200 done
	// billed: 1
}

// Rules script what happens to matching payloads.
func ExampleRule() {
	cfg := emulator.Config{Rules: []emulator.Rule{
		// Every job for this URL faults.
		{Pattern: regexpMust(`/products/2$`), Outcome: emulator.Outcome{Fault: true}},
		// The status check of this job answers 404.
		{Pattern: regexpMust(`/products/1$`), Outcome: emulator.Outcome{StatusFailure: &emulator.Failure{Status: 404}}},
		// The first two submissions of this URL get a 502 and create nothing.
		{Pattern: regexpMust(`/flaky`), Outcome: emulator.Outcome{SubmitFailure: &emulator.Failure{Status: 502, Times: 2}}},
	}}
	e, err := emulator.New(cfg)
	if err != nil {
		panic(err)
	}
	defer func() { _ = e.Close() }()
	fmt.Println(len(e.Config().Rules), e.Config().RateLimit)
	// Output: 3 50
}

func regexpMust(s string) *regexp.Regexp { return regexp.MustCompile(s) }
