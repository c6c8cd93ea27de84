package progress_test

import (
	"fmt"
	"os"
	"time"

	"github.com/oxypipe/oxypipe/internal/progress"
	"github.com/oxypipe/oxypipe/pkg/oxytype"
)

func ExampleProgress_String() {
	p := progress.Progress{Payloads: 8600, Done: 412, Faulted: 3, Pending: 1250, Unsubmitted: 6935, Retries: 12, Elapsed: 45218 * time.Millisecond}
	fmt.Println(p)
	fmt.Println(progress.Progress{Payloads: 3, Done: 3, Written: 3, Elapsed: time.Second})
	// Output:
	// 412/8,600 done, 3 faulted, 1,250 pending, 6,935 unsubmitted, 12 retries, 45.21s
	// 3/3 done, 3 written, 1.00s
}

func ExampleWriteReport() {
	notFound := 404
	problems := []progress.Job{
		{Doc: 0, ID: "7500000000000000001", Status: oxytype.Unfetched, Source: "universal", Input: "https://sandbox.oxylabs.io/products/1",
			Error: &oxytype.ErrorInfo{StatusCode: &notFound, Message: "Not Found", TraceID: "00000001-000000000000000000000000"}},
		{Doc: 1, ID: "7500000000000000002", Status: oxytype.Faulted, Source: "universal", Input: "https://sandbox.oxylabs.io/products/2"},
	}
	err := progress.NewIncompleteRunError(problems, nil, nil, false)
	_ = progress.WriteReport(os.Stdout, problems, err)
	// Output:
	// Stopped checking job 7500000000000000001, because the API returned 404 Not Found: universal https://sandbox.oxylabs.io/products/1
	// Job 7500000000000000002 faulted: universal https://sandbox.oxylabs.io/products/2
	//
	// 1 unfetched
}
