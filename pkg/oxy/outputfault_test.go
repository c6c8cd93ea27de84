package oxy_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"

	"github.com/oxypipe/oxypipe/internal/local"
	"github.com/oxypipe/oxypipe/internal/statusworker"
	"github.com/oxypipe/oxypipe/internal/submitter"
	"github.com/oxypipe/oxypipe/internal/testutil"
	"github.com/oxypipe/oxypipe/pkg/destination"
	"github.com/oxypipe/oxypipe/pkg/destination/s3dest"
	"github.com/oxypipe/oxypipe/pkg/emulator"
	"github.com/oxypipe/oxypipe/pkg/oxy"
	"github.com/oxypipe/oxypipe/pkg/oxytype"
	"github.com/oxypipe/oxypipe/pkg/runlog"
)

// These tests run the whole in-process pipeline into a destination that
// fails half-way through a run, at the pace (200 jobs per second,
// batched as the API allows), and check what the issue asks: submission
// stops soon after the failure (far fewer jobs billed than payloads), every
// payload ends in the run log (done with its file, unfetched with the id
// of a job that was billed once, or unsubmitted saying why, billed never),
// and the run ends within its stop bound.

const (
	// stopTimeout and stopSettle bound each run's stop (see oxy.Options
	// StopTimeout and statusworker.Config.StopSettle).
	stopTimeout = 2 * time.Second
	stopSettle  = time.Second
)

// outputTotal is the payloads of each run: ten seconds of submissions at
// outputRate jobs per second (the pace; eight seconds at a quarter
// of it under the race detector, which slows the pipeline tenfold), had
// nothing stopped them; stopSlack is what the run may take past its stop's
// deadline to record what is left and write its run log on a loaded
// machine.
var outputTotal, outputRate, stopSlack = func() (int, int, time.Duration) {
	if testutil.RaceEnabled {
		return 400, 50, 45 * time.Second
	}
	return 2000, 200, 20 * time.Second
}()

// stoppingClient is sandboxClient at outputRate jobs per second, with a
// stop settle time sized for the test (the submitter trusts a run state
// for at most 200 ms and claims within 500 ms: well inside it).
func stoppingClient(t *testing.T, dests destination.Config) *oxy.Client {
	t.Helper()
	c, err := oxy.NewClient(oxy.WithLocal(oxy.Config{
		Sandbox: true, Emulator: emulator.Config{JobTime: fastJobs, RateLimit: outputRate},
		Destinations: dests,
	}, func(lc *local.Config) {
		fast(lc)
		prevSW, prevSub := lc.StatusWorker, lc.Submitter
		lc.StatusWorker = func(sc *statusworker.Config) { prevSW(sc); sc.StopSettle = stopSettle }
		lc.Submitter = func(sc *submitter.Config) {
			prevSub(sc)
			sc.RunStateTTL = 200 * time.Millisecond
			// Room for a request slowed down by a loaded machine or the
			// race detector: a POST cut short by its own timeout has an
			// unknown outcome, which is another test's subject.
			sc.SubmitTimeout, sc.Stage.Consumer.HandlerTimeout, sc.ClaimStaleAfter = 5*time.Second, 10*time.Second, 15*time.Second
			sc.ClaimRecheck = 2 * time.Second
		}
	}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := c.Close(ctx); err != nil {
			t.Error(err)
		}
	})
	return c
}

// stoppedRun is what a run into a failing destination left.
type stoppedRun struct {
	lines []runlog.Line
	// stopped is when the run's stop was recorded; ended when its jobs
	// stopped coming.
	stopped, ended time.Time
	err            error
}

// runIntoFailingOutput runs outputTotal payloads into dest and calls
// breakIt once, from its own goroutine, when written files have appeared
// (written reports how many).
func runIntoFailingOutput(t *testing.T, c *oxy.Client, dest string, written func() int, breakIt func()) stoppedRun {
	t.Helper()
	ctx := testContext(t, 2*time.Minute)
	logs := filepath.Join(t.TempDir(), "logs")
	run, err := c.Execute(ctx, products(1, outputTotal), oxy.Options{Destination: dest, RunLog: logs, StopTimeout: stopTimeout})
	if err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	broke := make(chan struct{})
	go func() {
		for {
			select {
			case <-run.Done():
				return
			case <-time.After(5 * time.Millisecond):
			}
			if written() >= 20 {
				once.Do(func() { breakIt(); close(broke) })
				return
			}
		}
	}()
	cl, err := c.Cluster(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var out stoppedRun
	out.err = run.Wait(ctx)
	out.ended = time.Now()
	select {
	case <-broke:
	default:
		t.Fatalf("the run ended before the destination broke: %v", out.err)
	}
	out.lines = readRunLog(t, run.RunLog())
	rec, err := cl.Topology().Runs().Get(ctx, run.ID())
	if err != nil {
		t.Fatal(err)
	}
	if rec.Record.Stop == nil {
		t.Fatalf("the run was never stopped: state %s, reason %q", rec.Record.State, rec.Record.Reason)
	}
	out.stopped = rec.Record.Stop.At
	if c := rec.Record.Completed; c != nil {
		t.Logf("stopped at %s, deadline %s, completed at %s, the watcher ended at %s",
			rec.Record.Stop.At.Format("15:04:05.000"), rec.Record.Stop.Deadline.Format("15:04:05.000"),
			c.CompletedAt.Format("15:04:05.000"), out.ended.Format("15:04:05.000"))
	}
	return out
}

// checkStoppedRun checks every promise about a run stopped by its output:
// want is what the failed writes say (the unsubmitted payloads' reason
// contains it); has reports whether a done job's file is in place.
func checkStoppedRun(t *testing.T, c *oxy.Client, r stoppedRun, want string, has func(id string) bool) {
	t.Helper()
	cl, err := c.Cluster(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	st := cl.Emulator().Emulator.Stats()
	if len(r.lines) != outputTotal {
		t.Fatalf("run log has %d lines, want %d", len(r.lines), outputTotal)
	}
	counts := map[oxytype.State]int{}
	for i, l := range r.lines {
		counts[l.State]++
		input := fmt.Sprintf("https://sandbox.oxylabs.io/products/%d", i+1)
		billed := st.CreatedByInput[input]
		if billed > 1 {
			t.Errorf("payload %d was billed %d times", i, billed)
		}
		switch l.State {
		case oxytype.Done:
			if l.ID == nil || !has(*l.ID) || billed != 1 {
				t.Errorf("payload %d done as %v, but its file is missing or its job was billed %d times", i, l.ID, billed)
			}
		case oxytype.Unfetched:
			if l.ID == nil || billed != 1 || l.Error == nil {
				t.Errorf("payload %d unfetched without an id, an error or its one job (billed %d): %+v", i, billed, l)
			}
		case oxytype.Unsubmitted:
			if l.Error == nil {
				t.Errorf("payload %d unsubmitted without an error", i)
				continue
			}
			// A submission whose outcome is unknown (in flight at the
			// deadline, or cut short on a loaded machine) may or may not
			// have billed, and says so with the structured mark.
			if l.Error.MayHaveBilled {
				continue
			}
			if billed != 0 {
				t.Errorf("payload %d is plainly unsubmitted, but was billed: %+v", i, l.Error)
			}
			if !strings.HasPrefix(l.Error.Message, "Stopped submitting, because a write to the destination failed: ") ||
				!strings.Contains(l.Error.Message, want) {
				t.Errorf("payload %d unsubmitted with %q, want the failed write (%q)", i, l.Error.Message, want)
			}
		default:
			t.Errorf("payload %d ended %s", i, l.State)
		}
	}
	t.Logf("%d payloads: %v; %d jobs billed; the stop took %v to end the run",
		outputTotal, counts, st.JobsCreated, r.ended.Sub(r.stopped).Round(time.Millisecond))
	if counts[oxytype.Unsubmitted] == 0 || st.JobsCreated > int64(outputTotal/2) {
		t.Errorf("%d of %d payloads billed after the destination failed: submission did not stop", st.JobsCreated, outputTotal)
	}
	if int64(counts[oxytype.Done]+counts[oxytype.Unfetched]) > st.JobsCreated {
		t.Errorf("%d done or unfetched, but only %d jobs created", counts[oxytype.Done]+counts[oxytype.Unfetched], st.JobsCreated)
	}
	if took := r.ended.Sub(r.stopped); took > max(stopTimeout, stopSettle)+stopSlack {
		t.Errorf("the run ended %v after its stop, want within %v + %v", took, max(stopTimeout, stopSettle), stopSlack)
	}
	var incomplete *oxy.IncompleteRunError
	var stopped *oxytype.StoppedError
	if !errors.As(r.err, &incomplete) || !errors.As(r.err, &stopped) || !strings.Contains(stopped.Reason, want) {
		t.Errorf("run error %v, want an incomplete run stopped by the failed write", r.err)
	}
}

func readRunLog(t *testing.T, path string) []runlog.Line {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	lines, err := runlog.ReadAll(f)
	if err != nil {
		t.Fatal(err)
	}
	return lines
}

// countFiles counts the result files in a folder (none once it is gone).
func countFiles(dir string) int {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return 0
	}
	n := 0
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".json") && !strings.HasPrefix(e.Name(), ".") {
			n++
		}
	}
	return n
}

// The reproduction: a small disk fills half-way through the run.
func TestFaultAFullDiskStopsBilling(t *testing.T) {
	t.Parallel()
	disk := testutil.SmallDisk(t, 1<<20)
	dest := filepath.Join(disk, "results")
	c := stoppingClient(t, destination.Config{})
	r := runIntoFailingOutput(t, c, dest, func() int { return countFiles(dest) }, func() {
		// Fill what is left, as the other files on a shared disk would.
		f, err := os.Create(filepath.Join(disk, "filler"))
		if err != nil {
			t.Error(err)
			return
		}
		defer func() { _ = f.Close() }()
		for {
			if _, err := f.Write(make([]byte, 64<<10)); err != nil {
				return
			}
		}
	})
	checkStoppedRun(t, c, r, "no space left on device", func(id string) bool {
		_, err := os.Stat(filepath.Join(dest, id+".json"))
		return err == nil
	})
}

// A folder replaced by a file (an operator's mistake, a volume unmounted)
// half-way through the run.
func TestFaultAFolderReplacedByAFileStopsBilling(t *testing.T) {
	t.Parallel()
	if runtime.GOOS != "linux" {
		t.Skipf("SKIP: swapping a folder for a file in one step is only done on Linux (this is %s)", runtime.GOOS)
	}
	dest := filepath.Join(t.TempDir(), "results")
	var moved string
	c := stoppingClient(t, destination.Config{})
	r := runIntoFailingOutput(t, c, dest, func() int { return countFiles(dest) }, func() {
		var err error
		if moved, err = testutil.ReplaceWithFile(dest); err != nil {
			t.Error(err)
		}
	})
	checkStoppedRun(t, c, r, "not a directory", func(id string) bool {
		_, err := os.Stat(filepath.Join(moved, id+".json"))
		return err == nil
	})
}

// An S3 bucket deleted half-way through the run.
func TestFaultABucketDeletedMidRunStopsBilling(t *testing.T) {
	t.Parallel()
	const bucket = "results"
	backend := s3mem.New()
	if err := backend.CreateBucket(bucket); err != nil {
		t.Fatal(err)
	}
	// What was stored, as the store acknowledged it: the bucket takes its
	// objects with it when it goes.
	var mu sync.Mutex
	stored := map[string]bool{}
	var puts atomic.Int64
	inner := gofakes3.New(backend).Server()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := &statusRecorder{ResponseWriter: w, status: http.StatusOK}
		inner.ServeHTTP(rec, r)
		if r.Method == http.MethodPut && rec.status == http.StatusOK {
			mu.Lock()
			stored[strings.TrimPrefix(r.URL.Path, "/"+bucket+"/")] = true
			mu.Unlock()
			puts.Add(1)
		}
	}))
	t.Cleanup(srv.Close)
	dests := destination.Config{S3: s3dest.Config{
		Region: "us-east-1", Endpoint: srv.URL, UsePathStyle: true,
		Credentials: credentials.NewStaticCredentialsProvider("AKID", "SECRET", ""),
	}}
	c := stoppingClient(t, dests)
	r := runIntoFailingOutput(t, c, "s3://"+bucket+"/run", func() int { return int(puts.Load()) }, func() {
		if err := backend.ForceDeleteBucket(bucket); err != nil {
			t.Error(err)
		}
	})
	checkStoppedRun(t, c, r, "NoSuchBucket", func(id string) bool {
		mu.Lock()
		defer mu.Unlock()
		return stored["run/"+id+".json"]
	})
}

// statusRecorder keeps the status a handler answered.
type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (s *statusRecorder) WriteHeader(code int) {
	s.status = code
	s.ResponseWriter.WriteHeader(code)
}
