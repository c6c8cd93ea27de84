package messages_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/oxypipe/oxypipe/pkg/messages"
)

func Example() {
	start := time.Date(2026, 9, 29, 17, 4, 12, 345_000_000, time.UTC)
	run := messages.NewRunID(start)

	p := &messages.Payload{Run: run, Doc: messages.DocID(0), Payload: json.RawMessage(`{"source":"universal","url":"https://example.com"}`)}
	data, _ := p.MarshalJSON()
	fmt.Println(p.Subject())
	fmt.Println(p.MsgID())
	fmt.Println(string(data))

	_, err := messages.DecodePayload(p.Subject(), []byte(`{"v":1,"run":"`+run+`","doc":"0"}`))
	var bad *messages.DecodeError
	if errors.As(err, &bad) {
		fmt.Println("hard failure:", bad.Reason)
	}
	// Output:
	// oxy.payload.20260929T170412_345Z
	// 20260929T170412.345Z/0/payload/0
	// {"v":1,"run":"20260929T170412.345Z","doc":"0","payload":{"source":"universal","url":"https://example.com"}}
	// hard failure: "payload" must be a JSON object (a WSA request body)
}
