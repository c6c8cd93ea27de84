package emulator

import (
	"fmt"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"
)

// A job costs its 32-byte record, its input's bytes and its input's count:
// no allocation of its own, and jobs with the same options share a spec.
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
	submit := func(batch int) { submitURLs(t, e, batch*1000, 1000) }
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
	if perJob > 140 {
		t.Fatalf("%.0f bytes per job; want at most 140 (a 32-byte record, the input, its count)", perJob)
	}
}

// submitURLs submits the sandbox product URLs from to from+n−1, 1000 to a
// batch.
func submitURLs(t *testing.T, e *Emulator, from, n int) {
	t.Helper()
	for n > 0 {
		k := min(n, 1000)
		vals := make([]string, k)
		for i := range vals {
			vals[i] = fmt.Sprintf(`"%s"`, productURL(from+i))
		}
		req := httptest.NewRequest("POST", "/v1/queries/batch", strings.NewReader(`{"source":"universal","url":[`+strings.Join(vals, ",")+`]}`))
		req.SetBasicAuth("u", "p")
		w := httptest.NewRecorder()
		e.ServeHTTP(w, req)
		if w.Code != 202 {
			t.Fatalf("%d %s", w.Code, w.Body)
		}
		from, n = from+k, n-k
	}
}

func productURL(i int) string { return fmt.Sprintf("https://sandbox.oxylabs.io/products/%d", i) }

// A chunk of jobs that all finished JobTTL ago is released when the next
// chunk fills: its jobs are unknown to the API, uncounted in the stats, and
// an input of it submitted again counts as new.
func TestFinishedJobsAreReleasedAfterJobTTL(t *testing.T) {
	clock := NewFakeClock(time.Unix(1_800_000_000, 0))
	e, err := New(Config{Clock: clock, JobTime: time.Second, ResultsTTL: time.Hour, JobTTL: time.Hour, RateLimit: Unlimited})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = e.Close() }()
	status := func(id uint64) int {
		req := httptest.NewRequest("GET", fmt.Sprintf("/v1/queries/%d", id), nil)
		req.SetBasicAuth("u", "p")
		w := httptest.NewRecorder()
		e.ServeHTTP(w, req)
		return w.Code
	}
	first := uint64(firstJobID + 1)

	submitURLs(t, e, 0, chunkJobs)         // the first chunk, full
	clock.Advance(time.Hour + time.Second) // the jobs finished 1 s after submission
	if c := status(first); c != 404 {
		t.Fatalf("status of a job finished JobTTL ago: %d, want 404", c)
	}
	if st := e.Stats(); st.JobsDone != chunkJobs || st.CreatedByInput[productURL(0)] != 1 {
		t.Fatalf("before the next chunk fills: %d done, input 0 created %d times; want %d and 1 (retained until release)",
			st.JobsDone, st.CreatedByInput[productURL(0)], chunkJobs)
	}
	submitURLs(t, e, chunkJobs, chunkJobs-1)
	if e.jobs.get(first) == nil {
		t.Fatal("the first chunk was released before the second filled")
	}
	submitURLs(t, e, 2*chunkJobs-1, 1) // fills the second chunk
	if e.jobs.get(first) != nil || e.jobs.get(first+chunkJobs-1) != nil {
		t.Fatal("the first chunk's jobs are still stored after the second filled")
	}
	if c := status(first + chunkJobs); c != 200 {
		t.Fatalf("status of a pending job of the second chunk: %d, want 200", c)
	}
	st := e.Stats()
	if st.JobsCreated != 2*chunkJobs || st.JobsDone != 0 || st.JobsPending != chunkJobs ||
		st.CreatedByInput[productURL(0)] != 0 || st.CreatedByInput[productURL(chunkJobs)] != 1 {
		t.Fatalf("after release: created %d, done %d, pending %d, input 0 %d, input %d %d; want %d, 0, %d, 0, 1",
			st.JobsCreated, st.JobsDone, st.JobsPending, st.CreatedByInput[productURL(0)],
			chunkJobs, st.CreatedByInput[productURL(chunkJobs)], 2*chunkJobs, chunkJobs)
	}
	submitURLs(t, e, 0, 1)
	if n := e.Stats().CreatedByInput[productURL(0)]; n != 1 {
		t.Fatalf("input 0 submitted again after release counts %d, want 1", n)
	}
}
