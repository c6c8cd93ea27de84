package oxy

import (
	"fmt"
	"io"

	"github.com/oxypipe/oxypipe/internal/progress"
)

// Bill is the most a run of some payloads can cost: one job per payload,
// and one billed result per page of a job that ends done (a payload without
// "pages" fetches one). Faulted jobs and rejections bill nothing, so the
// real bill is at most this.
type Bill struct {
	// Jobs is the number of jobs the run would submit.
	Jobs int
	// MaxResults is the sum over the payloads of max(pages, 1).
	MaxResults int
}

// Add counts one more payload of pages pages (below 1 counts as 1).
func (b *Bill) Add(pages int) {
	b.Jobs++
	b.MaxResults += max(pages, 1)
}

// String reads "Would submit 3 jobs, which bill at most 5 results".
func (b Bill) String() string {
	if b.Jobs == 1 {
		return fmt.Sprintf("Would submit 1 job, which bills at most %s", plural(b.MaxResults, "result", "results"))
	}
	return fmt.Sprintf("Would submit %s jobs, which bill at most %s", progress.Thousands(b.Jobs), plural(b.MaxResults, "result", "results"))
}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return progress.Thousands(n) + " " + many
}

// DryRun writes each payload of src to w as it would be sent, one compact
// JSON line each with credentials in URLs replaced by "redacted:redacted",
// and returns what the run would bill at most. It sends nothing and needs no
// Client: nothing is announced, probed or submitted.
func DryRun(src Source, w io.Writer) (Bill, error) {
	var b Bill
	for p, err := range src.All() {
		if err != nil {
			return b, fmt.Errorf("oxy: dry run: %w", err)
		}
		line := append(p.Redacted(), '\n')
		if _, err := w.Write(line); err != nil {
			return b, fmt.Errorf("oxy: dry run: %w", err)
		}
		b.Add(p.Pages())
	}
	return b, nil
}
