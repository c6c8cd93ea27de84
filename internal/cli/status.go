package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/oxypipe/oxypipe/internal/progress"
	"github.com/oxypipe/oxypipe/internal/redact"
	"github.com/oxypipe/oxypipe/internal/statusworker"
)

// statusTimeout bounds each request to the statusworker.
const statusTimeout = 30 * time.Second

// defaultFailuresShown is how many failed records `oxy status` lists.
const defaultFailuresShown = 20

// statusOptions are the flags of `oxy status`.
type statusOptions struct {
	url    string
	asJSON bool
	limit  int
	feed   string
}

func statusFlags() (*flagSet, *statusOptions) {
	o := &statusOptions{}
	fs := newFlagSet("status", "[flags] RUN | --feed FEED", `
Show a run's state, its per-stage counts, its failed records and its unique
errors, from a statusworker's HTTP API (the ledger's view of the run, which a
deployed pipeline shares among its statusworkers). RUN is the run's id, such as
20260929T170412.345Z (the run log's name without .jsonl). With --feed, show a
standing feed instead: its state, cut, counts and runs.

A one-process run serves the same API with oxy run --status-addr.`)
	fs.StringVar(&o.url, "url", "", "the statusworker's HTTP `URL`, e.g. http://statusworker:8080")
	fs.BoolVar(&o.asJSON, "json", false, "print one JSON object {run, failures, errors} instead of tables")
	fs.IntVar(&o.limit, "failures", defaultFailuresShown, "list at most `N` failed records")
	fs.StringVar(&o.feed, "feed", "", "show the standing feed `FEED` and its runs instead of a run")
	fs.bindEnv("url", envStatusURL)
	return fs, o
}

func statusCommand(ctx context.Context, env Env, args []string) error {
	fs, o := statusFlags()
	if err := fs.parse(env, args); err != nil {
		return err
	}
	switch {
	case o.feed != "" && fs.NArg() != 0:
		return usageErrorf("status --feed takes no run id, got %d arguments", fs.NArg())
	case o.feed == "" && fs.NArg() != 1:
		return usageErrorf("status takes one run id, got %d arguments", fs.NArg())
	}
	if o.url == "" {
		return usageErrorf("--url is required: the statusworker's HTTP address, e.g. --url http://statusworker:8080\nhint: a one-process run serves it with oxy run --status-addr 127.0.0.1:8081")
	}
	if o.limit < 1 || o.limit > statusworker.MaxFailuresLimit {
		return usageErrorf("--failures must be from 1 to %d", statusworker.MaxFailuresLimit)
	}
	u, err := url.Parse(o.url)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return usageErrorf("--url %q is not an http:// or https:// URL", redact.String(o.url))
	}
	c := &statusClient{base: strings.TrimSuffix(u.String(), "/"), http: &http.Client{Timeout: statusTimeout}}
	if o.feed != "" {
		return feedStatus(ctx, env, c, o.feed, o.asJSON)
	}
	run := fs.Arg(0)
	rep, err := c.report(ctx, run, o.limit)
	if err != nil {
		return err
	}
	if o.asJSON {
		enc := json.NewEncoder(env.Stdout)
		enc.SetEscapeHTML(false)
		return enc.Encode(rep)
	}
	return writeStatus(env.Stdout, rep)
}

// statusReport is everything `oxy status` shows, and its --json form.
type statusReport struct {
	Run      statusworker.RunDetail `json:"run"`
	Failures failuresView           `json:"failures"`
	Errors   errorsView             `json:"errors"`
}

// failuresView is GET /runs/{run}/failures.
type failuresView struct {
	Count     int                       `json:"count"`
	Truncated bool                      `json:"truncated"`
	Failures  []statusworker.RecordView `json:"failures"`
}

// errorsView is GET /runs/{run}/errors.
type errorsView struct {
	Errors []statusworker.ErrorView `json:"errors"`
}

// statusClient reads a statusworker's JSON API.
type statusClient struct {
	base string
	http *http.Client
}

func (c *statusClient) report(ctx context.Context, run string, limit int) (statusReport, error) {
	var rep statusReport
	path := "/runs/" + url.PathEscape(run)
	if err := c.get(ctx, path, &rep.Run); err != nil {
		return rep, err
	}
	if err := c.get(ctx, path+"/failures?limit="+strconv.Itoa(limit), &rep.Failures); err != nil {
		return rep, err
	}
	if err := c.get(ctx, path+"/errors", &rep.Errors); err != nil {
		return rep, err
	}
	return rep, nil
}

// errRunNotFound is a 404 from the statusworker.
var errRunNotFound = errors.New("not found")

func (c *statusClient) get(ctx context.Context, path string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base+path, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("statusworker: %w", err)
	}
	defer func() { _ = resp.Body.Close() }() // read to its end below
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return fmt.Errorf("statusworker %s: %w", path, err)
	}
	if resp.StatusCode != http.StatusOK {
		var e struct {
			Error string `json:"error"`
		}
		msg := resp.Status
		if json.Unmarshal(body, &e) == nil && e.Error != "" {
			msg = e.Error
		}
		if resp.StatusCode == http.StatusNotFound {
			return fmt.Errorf("statusworker %s: %w: %s", path, errRunNotFound, msg)
		}
		return fmt.Errorf("statusworker %s: %s", path, msg)
	}
	if err := json.Unmarshal(body, v); err != nil {
		return fmt.Errorf("statusworker %s: unreadable answer: %w", path, err)
	}
	return nil
}

// writeStatus prints the report as aligned tables.
func writeStatus(w io.Writer, rep statusReport) error {
	r := rep.Run
	var b strings.Builder
	fmt.Fprintf(&b, "Run %s: %s, %s", r.Run, r.State, count(r.Total, "payload", "payloads"))
	if !r.StartedAt.IsZero() {
		fmt.Fprintf(&b, ", started %s", r.StartedAt.UTC().Format("2006-01-02 15:04:05 UTC"))
	}
	b.WriteString("\n")
	if r.Reason != "" {
		fmt.Fprintf(&b, "Reason: %s\n", r.Reason)
	}
	fmt.Fprintf(&b, "Destination: %s\n", r.Destination)
	if r.RunLog != "" {
		fmt.Fprintf(&b, "Run log: %s\n", r.RunLog)
	}
	switch {
	case r.Completed != nil:
		c := r.Completed
		fmt.Fprintf(&b, "Outcome: %s\n", outcomeCounts(c.Done, c.Faulted, c.Rejected, c.Unsubmitted, c.Unfetched))
	case r.Progress != nil:
		fmt.Fprintf(&b, "Progress: %s/%s done, %s failed\n", progress.Thousands(r.Progress.Done), progress.Thousands(r.Total), progress.Thousands(r.Progress.HardFailed))
	}

	b.WriteString("\n")
	rows := [][]string{{"STAGE", "TOTAL", "SUCCEEDED", "SOFT-FAILED", "HARD-FAILED"}}
	for _, s := range r.Stages {
		rows = append(rows, []string{s.DataType, progress.Thousands(s.Total), progress.Thousands(s.Succeeded), progress.Thousands(s.SoftFailed), progress.Thousands(s.HardFailed)})
	}
	writeCountTable(&b, rows)

	f := rep.Failures
	var tw *tabwriter.Writer
	if f.Count > 0 {
		shown := ""
		if f.Truncated {
			shown = fmt.Sprintf(", first %d shown", len(f.Failures))
		}
		fmt.Fprintf(&b, "\nFailures (%s%s):\n", progress.Thousands(f.Count), shown)
		tw = tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "DOC\tSTAGE\tOUTCOME\tSTATE\tJOB ID\tERROR")
		for _, v := range f.Failures {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", v.Doc, v.DataType, v.Outcome, dash(string(v.State)), dash(v.APIJobID), oneLine(recordError(v)))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	if len(rep.Errors.Errors) > 0 {
		b.WriteString("\nErrors:\n")
		tw = tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "COUNT\tSTAGE\tERROR")
		for _, e := range rep.Errors.Errors {
			fmt.Fprintf(tw, "%s\t%s\t%s\n", progress.Thousands(e.Count), e.DataType, oneLine(e.Error))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	_, err := io.WriteString(w, redact.String(b.String()))
	return err
}

// writeCountTable writes rows with the first column left-aligned and the
// others (counts) right-aligned, two spaces apart.
func writeCountTable(b *strings.Builder, rows [][]string) {
	widths := make([]int, len(rows[0]))
	for _, row := range rows {
		for i, cell := range row {
			widths[i] = max(widths[i], len([]rune(cell)))
		}
	}
	for _, row := range rows {
		for i, cell := range row {
			pad := strings.Repeat(" ", widths[i]-len([]rune(cell)))
			if i == 0 {
				b.WriteString(cell + pad)
			} else {
				b.WriteString("  " + pad + cell)
			}
		}
		b.WriteString("\n")
	}
}

// outcomeCounts reads like a run log's summary: "1 done, 1 faulted, 1
// unfetched" (zero counts left out, done always shown).
func outcomeCounts(done, faulted, rejected, unsubmitted, unfetched int) string {
	parts := []string{progress.Thousands(done) + " done"}
	for _, c := range []struct {
		n    int
		name string
	}{{faulted, "faulted"}, {rejected, "rejected"}, {unsubmitted, "unsubmitted"}, {unfetched, "unfetched"}} {
		if c.n > 0 {
			parts = append(parts, progress.Thousands(c.n)+" "+c.name)
		}
	}
	return strings.Join(parts, ", ")
}

// recordError is the error of a failed record: the structured one as the
// run log prints it, else the hard failure's text, else the last soft one.
func recordError(v statusworker.RecordView) string {
	switch {
	case v.Error != nil && v.Error.String() != "":
		return v.Error.String()
	case v.HardFailure != "":
		return v.HardFailure
	case len(v.SoftFailures) > 0:
		return v.SoftFailures[len(v.SoftFailures)-1]
	}
	return "-"
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// oneLine keeps a table row on one line, and not too wide.
func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	const maxRunes = 120
	if r := []rune(s); len(r) > maxRunes {
		s = string(r[:maxRunes-1]) + "…"
	}
	return s
}
