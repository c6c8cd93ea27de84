package emulator

import (
	"fmt"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"
)

// Jobs submitted with the same options share one template, so a job costs
// its own few fields, its input and its map entries.
func TestJobsCostLittleMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("allocates 20k jobs")
	}
	e, err := New(Config{Clock: NewFakeClock(time.Time{}), JobTime: time.Second, RateLimit: Unlimited})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = e.Close() }()
	const jobs = 20000
	vals := make([]string, 1000)
	submit := func(batch int) {
		for i := range vals {
			vals[i] = fmt.Sprintf(`"https://sandbox.oxylabs.io/products/%d"`, batch*1000+i)
		}
		req := httptest.NewRequest("POST", "/v1/queries/batch", strings.NewReader(`{"source":"universal","url":[`+strings.Join(vals, ",")+`]}`))
		req.SetBasicAuth("u", "p")
		w := httptest.NewRecorder()
		e.ServeHTTP(w, req)
		if w.Code != 202 {
			t.Fatalf("%d %s", w.Code, w.Body)
		}
	}
	submit(0) // warm the template cache and pools
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for b := 1; b <= jobs/1000; b++ {
		submit(b)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	perJob := float64(after.HeapAlloc-before.HeapAlloc) / jobs
	t.Logf("%.0f bytes per job (inputs of ~40 bytes)", perJob)
	if perJob > 600 {
		t.Fatalf("%.0f bytes per job; want well under a job object's 2 KB", perJob)
	}
}
