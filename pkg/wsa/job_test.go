package wsa_test

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/oxypipe/oxypipe/pkg/wsa"
)

// A job decoded through encoding/json keeps bytes of its own: the decoder's
// caller may reuse its buffer (a decoded answer's Raw shares the answer's
// bytes, but a job read with json.Unmarshal must not).
func TestUnmarshaledJobKeepsItsOwnBytes(t *testing.T) {
	const object = `{"id":"7508980357849459714","status":"done","source":"universal"}`
	buf := []byte(`{"job":` + object + `}`)
	var got struct {
		Job wsa.Job `json:"job"`
	}
	if err := json.Unmarshal(buf, &got); err != nil {
		t.Fatal(err)
	}
	copy(buf, bytes.Repeat([]byte("x"), len(buf)))
	if string(got.Job.Raw) != object {
		t.Fatalf("Raw = %s after the buffer was reused, want %s", got.Job.Raw, object)
	}
	if got.Job.ID != "7508980357849459714" || got.Job.Status != wsa.JobDone {
		t.Fatalf("job = %+v", got.Job)
	}
}
