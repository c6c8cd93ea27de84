package wsa_test

import (
	"context"
	"testing"
	"time"

	"github.com/oxypipe/oxypipe/pkg/emulator"
	"github.com/oxypipe/oxypipe/pkg/payload"
	"github.com/oxypipe/oxypipe/pkg/wsa"
)

// BenchmarkJobUnmarshal decodes the job object the emulator returns for a
// universal submission (the full 34-field object), as the status call does
// for every doc: one validation of the answer and one scan (UnmarshalJSON
// called directly; through json.Unmarshal the answer is validated twice).
func BenchmarkJobUnmarshal(b *testing.B) {
	srv := emulator.NewServer(b, emulator.Config{RateLimit: emulator.Unlimited, RenderRateLimit: emulator.Unlimited, JobTime: time.Hour})
	c := benchClient(b, srv.URL, srv.Username, srv.Password)
	job, _, err := c.Submit(context.Background(), payload.New("universal", "url", "https://sandbox.oxylabs.io/products/1"))
	if err != nil {
		b.Fatal(err)
	}
	raw := []byte(job.Raw)
	b.ReportAllocs()
	b.SetBytes(int64(len(raw)))
	for b.Loop() {
		var j wsa.Job
		if err := j.UnmarshalJSON(raw); err != nil {
			b.Fatal(err)
		}
	}
}
