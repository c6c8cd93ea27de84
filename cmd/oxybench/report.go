package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/oxypipe/oxypipe/pkg/emulator"
	"github.com/oxypipe/oxypipe/pkg/oxytype"
)

// result is what one benchmark run measured.
type result struct {
	payloads int
	noSync   bool
	// brokerSync: the broker fsynced every write (--broker-sync).
	brokerSync bool
	pollFirst  time.Duration
	// started is the first publish, fed the last publish confirmed.
	started, fed time.Time
	// lastSubmitted, lastDone and lastWritten are when the last doc passed
	// each stage.
	lastSubmitted, lastDone, lastWritten time.Time
	states                               map[oxytype.State]int
	// finishToFile holds, per written doc, the time from its job finishing
	// at the API to its file being in place; sorted.
	finishToFile      []time.Duration
	requests          map[emulator.Endpoint]int64
	msgsPerDoc        float64
	claimWritesPerDoc float64
	avgMsgBytes       int
	peakRSS           int64 // bytes; -1 unknown
	// cpu is the process's CPU time (user and system) from the first
	// publish to the end being noticed, wall that time; cpu is -1 unknown.
	cpu, wall time.Duration
	raw       *rawResult
	stages    []stageStats
	limits    string
	// loadBefore and loadAfter are the 1-minute load averages around the
	// run: the machine may be shared.
	loadBefore, loadAfter string
}

// fromDocs fills the times and outcomes in from the docs' events.
func (r *result) fromDocs(docs []docTimes) {
	r.states = map[oxytype.State]int{}
	for _, d := range docs {
		r.states[d.final]++
		r.lastSubmitted = later(r.lastSubmitted, d.submitted)
		r.lastDone = later(r.lastDone, d.done)
		r.lastWritten = later(r.lastWritten, d.written)
		if d.final == oxytype.Done && !d.submitted.IsZero() {
			r.finishToFile = append(r.finishToFile, max(d.written.Sub(d.submitted.Add(jobTime)), 0))
		}
	}
	slices.Sort(r.finishToFile)
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// quantile returns the q-quantile of sorted durations (nearest rank).
func quantile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(q*float64(len(sorted))+0.5) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

// print writes the markdown table.
func (r *result) print(w io.Writer) error {
	total := r.lastWritten.Sub(r.started)
	docsPerSec := float64(r.payloads) / total.Seconds()
	sync := "fsync on"
	if r.noSync {
		sync = "no fsync (--nosync)"
	}
	var states []string
	for s, n := range r.states {
		states = append(states, fmt.Sprintf("%s %d", s, n))
	}
	sort.Strings(states)
	since := func(t time.Time) string { return fmt.Sprintf("%.2f s", t.Sub(r.started).Seconds()) }
	perDoc := func(ep emulator.Endpoint) string {
		return fmt.Sprintf("%.3f", float64(r.requests[ep])/float64(r.payloads))
	}
	var all int64
	for ep, n := range r.requests {
		if ep != emulator.EndpointStats {
			all += n
		}
	}
	rows := [][2]string{
		{"machine", machine()},
		{"load average (1 min) before / after the run", r.loadBefore + " / " + r.loadAfter},
		{"payloads", strconv.Itoa(r.payloads) + " (universal, batchable), emulator job time 1 ms, no rate limit"},
		{"destination", "local folder, " + sync},
		{"broker store", brokerSync(r.brokerSync)},
		{"poller schedule", fmt.Sprintf("first check %v after submission", r.pollFirst)},
		{"stage concurrency (in flight: submitter / poller / writer)", r.limits},
		{"outcomes", strings.Join(states, ", ")},
		{"**end to end** (first publish → last written)", fmt.Sprintf("**%.2f s, %.0f docs/s**", total.Seconds(), docsPerSec)},
		{"fed (all published and stored)", since(r.fed)},
		{"last doc submitted / done / written", since(r.lastSubmitted) + " / " + since(r.lastDone) + " / " + since(r.lastWritten)},
		{"API requests per doc: submit / batch", perDoc(emulator.EndpointSubmit) + " / " + perDoc(emulator.EndpointBatch)},
		{"API requests per doc: status / results", perDoc(emulator.EndpointStatus) + " / " + perDoc(emulator.EndpointResults)},
		{"API requests per doc: all", fmt.Sprintf("%.3f", float64(all)/float64(r.payloads))},
		{"job finished → file in place: p50 / p99", fmt.Sprintf("%v / %v",
			quantile(r.finishToFile, 0.50).Round(time.Millisecond), quantile(r.finishToFile, 0.99).Round(time.Millisecond))},
		{"JetStream messages per doc (work + status events)", fmt.Sprintf("%.2f, ~%d B each; plus %.2f claim writes (KV)", r.msgsPerDoc, r.avgMsgBytes, r.claimWritesPerDoc)},
		{"process CPU during the run (broker + emulator + 3 stages)", r.cpuText()},
		{"peak RSS (VmHWM: broker + emulator + 3 stages)", rss(r.peakRSS)},
	}
	if r.raw != nil {
		rows = append(rows,
			[2]string{"raw JetStream, same process: publish async + consume/ack", fmt.Sprintf("%d msgs of %d B in %.2f s (publishes confirmed at %.2f s)",
				r.raw.msgs, r.raw.size, r.raw.elapsed.Seconds(), r.raw.published.Seconds())},
			[2]string{"**raw JetStream rate**", fmt.Sprintf("**%.0f msgs/s = %.0f docs/s at %.2f msgs/doc**",
				r.raw.msgsPerSecond(), r.raw.msgsPerSecond()/r.msgsPerDoc, r.msgsPerDoc)},
			[2]string{"pipeline / raw JetStream", fmt.Sprintf("%.0f%%", 100*docsPerSec/(r.raw.msgsPerSecond()/r.msgsPerDoc))},
		)
	}
	bw := bufio.NewWriter(w)
	fmt.Fprintln(bw, "| measure | value |")
	fmt.Fprintln(bw, "|---|---|")
	for _, row := range rows {
		fmt.Fprintf(bw, "| %s | %s |\n", row[0], row[1])
	}
	if len(r.stages) > 0 {
		if err := printStages(bw, r.stages, total); err != nil {
			return err
		}
	}
	return bw.Flush()
}

// machine describes the CPU the benchmark ran on.
func machine() string {
	model := "unknown CPU"
	if f, err := os.Open("/proc/cpuinfo"); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
				model = strings.TrimSpace(v)
				break
			}
		}
		_ = f.Close() // read-only
	}
	return fmt.Sprintf("%d × %s (runtime.NumCPU %d, GOMAXPROCS %d), %s %s/%s",
		runtime.NumCPU(), model, runtime.NumCPU(), runtime.GOMAXPROCS(0), runtime.Version(), runtime.GOOS, runtime.GOARCH)
}

// cpuText says how much CPU the run took, per doc and in cores: a figure
// that depends less than docs/s on what else the machine runs.
func (r *result) cpuText() string {
	if r.cpu < 0 || r.wall <= 0 {
		return "unknown"
	}
	return fmt.Sprintf("%.2f s = %.0f µs per doc, %.2f cores busy", r.cpu.Seconds(),
		float64(r.cpu.Microseconds())/float64(r.payloads), r.cpu.Seconds()/r.wall.Seconds())
}

// peakRSS reads the process's peak resident set size (VmHWM) in bytes, or
// -1 where /proc is not available.
func peakRSS() int64 { return readPeakRSS("/proc/self/status") }

// readPeakRSS reads VmHWM from a /proc/PID/status file, or -1.
func readPeakRSS(status string) int64 {
	f, err := os.Open(status)
	if err != nil {
		return -1
	}
	defer func() { _ = f.Close() }() // read-only
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				return -1
			}
			return kb * 1024
		}
	}
	return -1
}

func rss(b int64) string {
	if b < 0 {
		return "unknown (no /proc/self/status)"
	}
	return fmt.Sprintf("%.0f MiB", float64(b)/(1<<20))
}

// loadAverage is the 1-minute load average, or "?".
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	if f := strings.Fields(string(b)); len(f) > 0 {
		return f[0]
	}
	return "?"
}

// brokerSync describes how the broker's store reaches the disk.
func brokerSync(always bool) string {
	if always {
		return "fsync of every write before its ack (--broker-sync, as oxy run --state-dir)"
	}
	return "fsync every 2 minutes (the server's default)"
}

// stageSummary is the stage run's headline figures, for --json.
type stageSummary struct {
	DocsPerSec   float64 `json:"docs_per_second"`
	CPUPerDocMS  float64 `json:"cpu_ms_per_doc"`
	PeakRSSBytes int64   `json:"peak_rss_bytes"`
	// RawMsgsPerSec is the raw JetStream rate in the same process; 0 when
	// skipped.
	RawMsgsPerSec float64 `json:"raw_jetstream_msgs_per_second,omitempty"`
	LoadBefore    string  `json:"load_average_before"`
	LoadAfter     string  `json:"load_average_after"`
}

func (r *result) summary() stageSummary {
	s := stageSummary{
		DocsPerSec:   float64(r.payloads) / r.lastWritten.Sub(r.started).Seconds(),
		PeakRSSBytes: r.peakRSS,
		LoadBefore:   r.loadBefore,
		LoadAfter:    r.loadAfter,
	}
	if r.cpu >= 0 {
		s.CPUPerDocMS = float64(r.cpu.Microseconds()) / 1000 / float64(r.payloads)
	}
	if r.raw != nil {
		s.RawMsgsPerSec = r.raw.msgsPerSecond()
	}
	return s
}
