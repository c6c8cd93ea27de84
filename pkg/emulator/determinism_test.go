package emulator

import (
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// runScript submits the same payloads to a fresh emulator and returns what
// each job looked like after a while: id, status, updated_at and the body.
func runScript(t *testing.T, seed int64, order []int) map[string]string {
	t.Helper()
	f := setup(t, Config{Seed: seed, FaultRate: 0.3, JobTimeFunc: RealisticJobTime, JobTime: 0, RateLimit: Unlimited})
	out := map[string]string{}
	ids := map[int]string{}
	for _, i := range order {
		job := f.submit(fmt.Sprintf(`{"source":"universal","url":"https://sandbox.oxylabs.io/products/%d"}`, i))
		ids[i] = job["id"].(string)
	}
	f.clock.Advance(10 * time.Minute)
	for i, id := range ids {
		st := f.do("GET", jobPath(id), "").expect(t, 200).object(t)
		res := f.do("GET", jobPath(id)+"/results", "").expect(t, 200)
		out[fmt.Sprint(i)] = fmt.Sprintf("%s %s %d", st["status"], st["updated_at"], len(res.body))
	}
	return out
}

func TestDeterministicUnderASeed(t *testing.T) {
	t.Parallel()
	order := make([]int, 40)
	reversed := make([]int, 40)
	for i := range order {
		order[i] = i + 1
		reversed[len(order)-1-i] = i + 1
	}
	a := runScript(t, 42, order)
	b := runScript(t, 42, order)
	if fmt.Sprint(a) != fmt.Sprint(b) {
		t.Fatal("the same inputs and seed must give the same outcomes")
	}
	// Outcomes follow the input, not the order of submission.
	if c := runScript(t, 42, reversed); fmt.Sprint(a) != fmt.Sprint(c) {
		t.Fatal("outcomes must not depend on submission order")
	}
	if d := runScript(t, 43, order); fmt.Sprint(a) == fmt.Sprint(d) {
		t.Fatal("another seed should give other outcomes")
	}
	faulted, distinctTimes := 0, map[string]bool{}
	for _, v := range a {
		if strings.HasPrefix(v, "faulted") {
			faulted++
		}
		distinctTimes[strings.Fields(v)[2]] = true
	}
	if faulted < 4 || faulted > 22 {
		t.Fatalf("%d of 40 faulted at a 0.3 fault rate", faulted)
	}
	if len(distinctTimes) < 5 {
		t.Fatalf("job times do not vary: %v", distinctTimes)
	}
}

func TestRealisticJobTime(t *testing.T) {
	t.Parallel()
	var plain, rendered, faulted []time.Duration
	for i := 0; i < 2000; i++ {
		r := jobRand(1, "universal", "url", fmt.Sprint(i), 1)
		plain = append(plain, RealisticJobTime(r, JobInfo{}))
		rendered = append(rendered, RealisticJobTime(r, JobInfo{Rendered: true}))
		faulted = append(faulted, RealisticJobTime(r, JobInfo{Faulted: true}))
	}
	median := func(ds []time.Duration) time.Duration {
		s := slices.Clone(ds)
		slices.Sort(s)
		return s[len(s)/2]
	}
	for name, c := range map[string]struct {
		ds       []time.Duration
		lo, hi   time.Duration
		tailOver time.Duration
	}{
		"plain":    {plain, 1700 * time.Millisecond, 2300 * time.Millisecond, 4 * time.Second},
		"rendered": {rendered, 17 * time.Second, 23 * time.Second, 40 * time.Second},
		"faulted":  {faulted, 15 * time.Second, 19 * time.Second, 35 * time.Second},
	} {
		m := median(c.ds)
		if m < c.lo || m > c.hi {
			t.Errorf("%s median %v outside [%v,%v]", name, m, c.lo, c.hi)
		}
		tail := 0
		for _, d := range c.ds {
			if d > c.tailOver {
				tail++
			}
		}
		if tail == 0 {
			t.Errorf("%s has no long tail above %v", name, c.tailOver)
		}
	}
}

func TestStatsCountsBilling(t *testing.T) {
	t.Parallel()
	f := setup(t, Config{Rules: []Rule{{Pattern: regexp.MustCompile(`/f$`), Outcome: Outcome{Fault: true}}}})
	f.submit(`{"source":"universal","url":"https://shop.com/a"}`)
	f.submit(`{"source":"universal","url":"https://shop.com/a"}`)
	f.submit(`{"source":"universal","url":"https://shop.com/f"}`)
	f.submit(`{"source":"google_search","query":"shoes","pages":3}`)
	f.submit(`{"source":"universal","url":"https://bob:hunter2@shop.com/private"}`)
	f.do("POST", "/v1/queries", `{"source":"universal"}`).expect(t, 400)
	f.doAuth("GET", "/v1/queries/7500000000000000001", "", "").expect(t, 401)
	f.clock.Advance(time.Second)
	r := f.do("GET", "/_sandbox/stats", "").expect(t, 200)
	var s Stats
	if err := json.Unmarshal(r.body, &s); err != nil {
		t.Fatal(err)
	}
	if s.JobsCreated != 5 || s.PagesCreated != 7 || s.CreatedByInput["https://shop.com/a"] != 2 ||
		s.CreatedByInput["shoes"] != 1 || s.CreatedByInput["https://redacted:redacted@shop.com/private"] != 1 ||
		s.JobsPending != 5 || s.Rejected != 1 || s.Unauthorized != 1 ||
		s.Requests[EndpointSubmit] != 6 || s.Requests[EndpointStatus] != 1 {
		t.Fatalf("stats %+v", s)
	}
	f.clock.Advance(time.Second)
	s = f.srv.Emulator.Stats()
	if strings.Contains(string(r.body), "hunter2") {
		t.Fatal("stats leak a URL credential")
	}
	if s.JobsDone != 4 || s.JobsFaulted != 1 || s.ResultsBilled != 6 || s.Requests[EndpointStats] != 1 {
		t.Fatalf("stats after completion %+v", s)
	}
}

func TestConcurrentClients(t *testing.T) {
	t.Parallel()
	f := setup(t, Config{Clock: RealClock(), JobTime: 20 * time.Millisecond, RateLimit: Unlimited, FaultRate: 0.1, Seed: 3})
	const workers, perWorker = 8, 40
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < perWorker; i++ {
				body := fmt.Sprintf(`{"source":"universal","url":"https://shop.com/%d/%d"}`, w, i)
				req, _ := http.NewRequest("POST", f.srv.URL+"/v1/queries", strings.NewReader(body))
				req.SetBasicAuth("u", "p")
				resp, err := f.client.Do(req)
				if err != nil {
					errs <- err
					return
				}
				var job map[string]any
				err = json.NewDecoder(resp.Body).Decode(&job)
				resp.Body.Close()
				if err != nil || resp.StatusCode != 202 {
					errs <- fmt.Errorf("submit: %d: %w", resp.StatusCode, err)
					return
				}
				for {
					req, _ := http.NewRequest("GET", f.srv.URL+"/v1/queries/"+job["id"].(string)+"/results", nil)
					req.SetBasicAuth("u", "p")
					resp, err := f.client.Do(req)
					if err != nil {
						errs <- err
						return
					}
					resp.Body.Close()
					if resp.StatusCode == 200 {
						break
					}
					if resp.StatusCode != 204 {
						errs <- fmt.Errorf("results: %d", resp.StatusCode)
						return
					}
					time.Sleep(5 * time.Millisecond) // polling a real-clock job, as a client does
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	s := f.srv.Emulator.Stats()
	if s.JobsCreated != workers*perWorker || len(s.CreatedByInput) != workers*perWorker || s.JobsDone+s.JobsFaulted != workers*perWorker {
		t.Fatalf("stats %+v", s)
	}
}
