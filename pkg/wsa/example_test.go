package wsa_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"

	"github.com/oxypipe/oxypipe/pkg/payload"
	"github.com/oxypipe/oxypipe/pkg/wsa"
)

// fakeAPI answers a submission with a pending job and /results with 204
// pending, like the API does in the first seconds of a job.
func fakeAPI() *httptest.Server {
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/v1/queries":
			w.Header().Set("x-ratelimit-total-requests-00000000-0000-0000-0000-000000000000-limit", "50")
			w.Header().Set("x-ratelimit-total-requests-00000000-0000-0000-0000-000000000000-remaining", "49")
			w.WriteHeader(http.StatusAccepted)
			_, _ = io.WriteString(w, `{"id":"7500000000000000001","status":"pending","source":"universal","url":"https://sandbox.oxylabs.io/products/1","created_at":"2026-01-01 00:00:00","updated_at":"2026-01-01 00:00:00","statuses":[]}`)
		case "/v1/queries/7500000000000000001/results":
			w.Header().Set("x-oxylabs-job-status", "pending")
			w.WriteHeader(http.StatusNoContent)
		default:
			w.WriteHeader(http.StatusNotFound)
			_, _ = io.WriteString(w, `{"message":"Query not found."}`)
		}
	}))
}

func Example() {
	srv := fakeAPI()
	defer srv.Close()
	ctx := context.Background()

	client, err := wsa.New(wsa.Config{BaseURL: srv.URL, Username: "user", Password: "pass"})
	if err != nil {
		panic(err)
	}
	job, rl, err := client.Submit(ctx, payload.New("universal", "url", "https://sandbox.oxylabs.io/products/1"))
	if err != nil {
		panic(err)
	}
	fmt.Println(job.ID, job.Status, rl.TotalRemaining)

	_, err = client.Results(ctx, job.ID)
	fmt.Println(errors.Is(err, wsa.ErrPending))

	_, err = client.Status(ctx, "7500000000000000999")
	fmt.Println(err, errors.Is(err, wsa.ErrNotFound), wsa.Classify(err))
	// Output:
	// 7500000000000000001 pending 49
	// true
	// 404 Query not found. true stop
}

func ExampleClassify() {
	for _, err := range []error{
		&wsa.APIError{StatusCode: 400, Message: "Unsupported source."},
		&wsa.APIError{StatusCode: 429, Message: "Too many requests. (Total Dynamic)."},
		&wsa.APIError{StatusCode: 429, Message: "Access to shop.com has been limited to 1 req/s due to a low success rate."},
		&wsa.APIError{StatusCode: 500, Message: "Internal Server Error"},
		&wsa.APIError{StatusCode: 0, Message: "ConnectError: connection refused"},
		&wsa.APIError{StatusCode: 401, Message: "Unauthorized"},
	} {
		fmt.Printf("%s -> %s (may have created a job: %v)\n", err, wsa.Classify(err), wsa.MayHaveCreatedJob(err))
	}
	// Output:
	// 400 Unsupported source. -> reject (may have created a job: false)
	// 429 Too many requests. (Total Dynamic). -> retry (may have created a job: false)
	// 429 Access to shop.com has been limited to 1 req/s due to a low success rate. -> throttle (may have created a job: false)
	// 500 Internal Server Error -> retry (may have created a job: true)
	// ConnectError: connection refused -> retry (may have created a job: false)
	// 401 Unauthorized -> stop (may have created a job: false)
}

func ExamplePacer() {
	srv := fakeAPI()
	defer srv.Close()
	ctx := context.Background()
	client, _ := wsa.New(wsa.Config{BaseURL: srv.URL, Username: "user", Password: "pass"})
	pacer, _ := wsa.NewPacer(wsa.PacerConfig{})

	p := payload.New("universal", "url", "https://sandbox.oxylabs.io/products/1")
	ticket, err := pacer.Wait(ctx, wsa.CostOf(p))
	if err != nil {
		panic(err)
	}
	_, rl, err := client.Submit(ctx, p)
	pacer.Done(ticket, rl, err)
	fmt.Println(pacer.Limits().Total, pacer.Remaining().Total)
	// Output: 50 49
}
