package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"text/tabwriter"

	"github.com/oxypipe/oxypipe/internal/progress"
	"github.com/oxypipe/oxypipe/internal/statusworker"
	"github.com/oxypipe/oxypipe/pkg/messages"
)

// feedStatus prints `oxy status --feed FEED`: GET /feeds/{feed}.
func feedStatus(ctx context.Context, env Env, c *statusClient, feed string, asJSON bool) error {
	if err := messages.ValidateFeedName(feed); err != nil {
		return usageErrorf("--feed: %v", err)
	}
	var v statusworker.FeedView
	if err := c.get(ctx, "/feeds/"+url.PathEscape(feed), &v); err != nil {
		return err
	}
	if asJSON {
		enc := json.NewEncoder(env.Stdout)
		enc.SetEscapeHTML(false)
		return enc.Encode(v)
	}
	r := v.Record
	var b strings.Builder
	fmt.Fprintf(&b, "Feed %s: %s, %s\n", r.Feed, r.State, cutText(r.Cut))
	fmt.Fprintf(&b, "Destination: %s\n", r.Destination)
	if r.RunLog != "" {
		fmt.Fprintf(&b, "Run log: %s\n", r.RunLog)
	}
	fmt.Fprintf(&b, "Payloads: %s assigned, %s dropped as retries\n", progress.Thousands(int(r.Assigned)), progress.Thousands(int(r.Duplicates)))
	runs := r.Runs
	if r.Current != nil {
		runs = append(runs[:len(runs):len(runs)], *r.Current)
	}
	if len(runs) > 0 {
		b.WriteString("\n")
		tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "RUN\tPAYLOADS\tOPENED\tSTATE")
		for _, run := range runs {
			state := string(v.RunStates[run.Run])
			if state == "" {
				state = "forgotten"
			}
			if r.Current != nil && run.Run == r.Current.Run && !run.Cutting {
				state += " (taking payloads)"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", run.Run, progress.Thousands(run.Docs), run.OpenedAt.UTC().Format("2006-01-02 15:04:05 UTC"), state)
		}
		_ = tw.Flush()
	}
	_, err := fmt.Fprint(env.Stdout, b.String())
	return err
}

// cutText says when a feed's runs are cut.
func cutText(c messages.FeedCut) string {
	var parts []string
	if c.MaxPayloads > 0 {
		parts = append(parts, count(c.MaxPayloads, "payload", "payloads"))
	}
	if c.MaxAge > 0 {
		parts = append(parts, c.MaxAge.String()+" after a run opened")
	}
	return "runs cut at " + strings.Join(parts, " or ")
}
