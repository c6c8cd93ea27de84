package feeder_test

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/oxypipe/oxypipe/internal/feeder"
	"github.com/oxypipe/oxypipe/pkg/oxytype"
)

// Every line is read and checked before anything is announced or sent. A
// payload the API would refuse (an IP address as host) is not an input
// error: it is fed, and the submitter records it rejected at no cost.
func ExampleReadJSONL() {
	input := `{"source":"universal","url":"https://sandbox.oxylabs.io/products/1"}
{"source":"universal","url":"https://127.0.0.1/"}
`
	spool, err := feeder.ReadJSONL(strings.NewReader(input), feeder.ReadConfig{Dir: os.TempDir()})
	if err != nil {
		panic(err)
	}
	defer func() { _ = spool.Close() }()
	fmt.Println(spool.Len(), "payloads")

	_, err = feeder.ReadJSONL(strings.NewReader(input+`{"source":"universal"}`+"\n"), feeder.ReadConfig{Dir: os.TempDir()})
	var bad *oxytype.InputError
	fmt.Println(errors.As(err, &bad), bad.Line, err)
	// Output:
	// 2 payloads
	// true 3 line 3: the payload has no input key (query, url, product_id, prompt, video_id, channel_handle or category_id)
}
