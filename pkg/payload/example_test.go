package payload_test

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/oxypipe/oxypipe/pkg/payload"
)

func ExampleParse() {
	p, err := payload.Parse([]byte(`{"source":"universal","url":"https://sandbox.oxylabs.io/products/1","render":"html"}`), 1)
	if err != nil {
		panic(err)
	}
	key, value := p.Input()
	fmt.Println(p.Source(), key, value, p.Validate())
	// Output: universal url https://sandbox.oxylabs.io/products/1 <nil>
}

func ExamplePayload_Validate() {
	p, _ := payload.Parse([]byte(`{"source":"universal","url":"http://10.0.0.1/admin"}`), 1)
	fmt.Println(p.Validate())
	// Output: The hostname cannot be an ip address.
}

func ExamplePayload_Redacted() {
	p, _ := payload.Parse([]byte(`{"source":"universal","url":"https://a.io","storage_type":"s3_compatible","storage_url":"https://KEY:SECRET@s3.example.com/bucket"}`), 1)
	fmt.Println(string(p.Redacted()))
	// Output: {"source":"universal","url":"https://a.io","storage_type":"s3_compatible","storage_url":"https://redacted:redacted@s3.example.com/bucket"}
}

func ExampleReader() {
	in := strings.NewReader(`{"source":"universal","url":"https://sandbox.oxylabs.io/products/1"}

{"source":"universal","url":"https://sandbox.oxylabs.io/products/2"
{"source":"universal","url":"https://sandbox.oxylabs.io/products/3"}
`)
	r := payload.NewReader(in)
	for {
		p, line, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			fmt.Println(err)
			continue
		}
		_, url := p.Input()
		fmt.Println(line, url)
	}
	// Output:
	// 1 https://sandbox.oxylabs.io/products/1
	// line 3: invalid JSON: unexpected end of line
	// 4 https://sandbox.oxylabs.io/products/3
}

func ExampleBatchBody() {
	ps := []payload.Payload{
		payload.New("universal", "url", "https://sandbox.oxylabs.io/products/1"),
		payload.New("google_search", "query", "adidas"),
		payload.New("universal", "url", "https://sandbox.oxylabs.io/products/2"),
	}
	for _, group := range payload.GroupBatches(ps) {
		batch := make([]payload.Payload, len(group))
		for i, idx := range group {
			batch[i] = ps[idx]
		}
		body, err := payload.BatchBody(batch)
		fmt.Println(string(body), err)
	}
	// Output:
	// {"source":"universal","url":["https://sandbox.oxylabs.io/products/1","https://sandbox.oxylabs.io/products/2"]} <nil>
	// {"source":"google_search","query":["adidas"]} <nil>
}
