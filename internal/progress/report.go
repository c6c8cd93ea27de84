package progress

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/oxypipe/oxypipe/pkg/messages"
	"github.com/oxypipe/oxypipe/pkg/oxytype"
)

// IncompleteRunError says a run ended with payloads that were rejected,
// never submitted, whose results were not fetched, or whose upload to cloud
// storage failed: each of those needs the user's action (a fix and a
// resubmission, a fetch by job id, a look at the storage location).
// Faulted jobs alone never make a run incomplete: the API ran them, and they
// are reported, not raised.
type IncompleteRunError struct {
	// Rejections are the payloads the API or local validation refused, with
	// the error (status code, message, trace id) in each Job's Error.
	Rejections []Job
	// Unsubmitted are the payloads that were never accepted, each with the
	// reason in its Error.
	Unsubmitted []Job
	// Unfetched are the jobs whose results were not written; fetch them by
	// ID at no cost.
	Unfetched []Job
	// Unuploaded are the jobs the API ran (and billed) whose upload to
	// cloud storage failed or was never reported, with the upload's code
	// and message in each Job's Upload. Their results stay at the API for
	// its retention time: fetch them by ID at no cost.
	Unuploaded []Job
	// Cause is what stopped the run, when it was stopped (see oxytype.StoppedError).
	Cause error
}

// NewIncompleteRunError builds the error from a run's problems (as
// Tracker.Problems returns them), its failed uploads (as
// Tracker.FailedUploads returns them) and its stop cause. It returns nil
// when nothing was rejected, unsubmitted, unfetched or unuploaded and no
// cause left payloads short of done; allDone says whether every payload
// ended done or faulted.
func NewIncompleteRunError(problems, failedUploads []Job, cause error, allDone bool) *IncompleteRunError {
	e := &IncompleteRunError{Cause: cause, Unuploaded: slices.Clone(failedUploads)}
	for _, j := range problems {
		switch j.Status {
		case oxytype.Rejected:
			e.Rejections = append(e.Rejections, j)
		case oxytype.Unsubmitted:
			e.Unsubmitted = append(e.Unsubmitted, j)
		case oxytype.Unfetched:
			e.Unfetched = append(e.Unfetched, j)
		}
	}
	for _, s := range [][]Job{e.Rejections, e.Unsubmitted, e.Unfetched, e.Unuploaded} {
		slices.SortStableFunc(s, func(a, b Job) int { return cmp.Compare(a.Doc, b.Doc) })
	}
	if len(e.Rejections)+len(e.Unsubmitted)+len(e.Unfetched)+len(e.Unuploaded) == 0 && (cause == nil || allDone) {
		return nil
	}
	return e
}

// Error returns the non-zero counts, e.g. "1 rejected, 2 unfetched, 1 unuploaded", or
// "the run stopped" when there are none but the run had a stop cause.
func (e *IncompleteRunError) Error() string {
	var parts []string
	for _, c := range []struct {
		n    int
		name string
	}{
		{len(e.Rejections), "rejected"},
		{len(e.Unsubmitted), "unsubmitted"},
		{len(e.Unfetched), "unfetched"},
		{len(e.Unuploaded), "unuploaded"},
	} {
		if c.n > 0 {
			parts = append(parts, Thousands(c.n)+" "+c.name)
		}
	}
	if len(parts) == 0 {
		return "the run stopped"
	}
	return strings.Join(parts, ", ")
}

// Unwrap returns the stop cause.
func (e *IncompleteRunError) Unwrap() error { return e.Cause }

// UnfetchedIDs returns the ids of the unfetched jobs, in input order.
func (e *IncompleteRunError) UnfetchedIDs() []string {
	ids := make([]string, 0, len(e.Unfetched))
	for _, j := range e.Unfetched {
		ids = append(ids, j.ID)
	}
	return ids
}

// ReportLines returns the lines of the incomplete-run report for a run's
// problems, in input order: one line per faulted,
// rejected or unfetched job, then one line per distinct reason for the
// unsubmitted payloads:
//
//	Stopped checking job 7500000000000000001, because the API returned 404 Not Found: universal https://…
//	Job 7500000000000000002 faulted: universal https://…
//	Rejected universal https://…: 400 <message>
//	Stopped submitting, because the run was stopped; 6,935 payloads stay unsubmitted
//	Not submitted again, because the API returned 500 Internal Server Error; the API may have created (and billed) a job; 6 payloads stay unsubmitted
//
// The last form is for payloads marked as possibly billed (their error's
// MayHaveBilled): their submission was not stopped, its outcome is unknown.
func ReportLines(problems []Job) []string {
	sorted := slices.Clone(problems)
	slices.SortStableFunc(sorted, func(a, b Job) int { return cmp.Compare(a.Doc, b.Doc) })
	var lines []string
	type group struct {
		cause  string
		marked bool
		n      int
	}
	var groups []*group
	byCause := map[string]*group{}
	for _, j := range sorted {
		switch j.Status {
		case oxytype.Faulted:
			lines = append(lines, fmt.Sprintf("Job %s faulted: %s", j.ID, j.Describe()))
		case oxytype.Rejected:
			lines = append(lines, fmt.Sprintf("Rejected %s: %s", j.Describe(), errorText(j)))
		case oxytype.Unfetched:
			verb := "Stopped checking"
			if j.Stage == oxytype.DataDone {
				verb = "Could not write"
			}
			lines = append(lines, fmt.Sprintf("%s job %s, because %s: %s", verb, j.ID, because(j), j.Describe()))
		case oxytype.Unsubmitted:
			c := because(j)
			marked := j.Error != nil && j.Error.MayHaveBilled
			key := fmt.Sprintf("%t %s", marked, c)
			g := byCause[key]
			if g == nil {
				g = &group{cause: c, marked: marked}
				byCause[key] = g
				groups = append(groups, g)
			}
			g.n++
		}
	}
	for _, g := range groups {
		stay := "payloads stay"
		if g.n == 1 {
			stay = "payload stays"
		}
		verb := "Stopped submitting"
		if g.marked {
			verb = "Not submitted again"
		}
		lines = append(lines, fmt.Sprintf("%s, because %s; %s %s unsubmitted", verb, g.cause, Thousands(g.n), stay))
	}
	return lines
}

// WriteReport writes the incomplete-run report: the problem lines, then,
// when err is not nil, an empty line and err's text (the counts), as the
// seed shows it. It writes nothing when there are neither problems nor err.
func WriteReport(w io.Writer, problems []Job, err error) error {
	var b strings.Builder
	for _, l := range ReportLines(problems) {
		b.WriteString(l)
		b.WriteByte('\n')
	}
	if err != nil {
		if b.Len() > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(err.Error())
		b.WriteByte('\n')
	}
	_, werr := io.WriteString(w, b.String())
	return werr
}

// because says why a payload failed, for "…, because <this>": "the API
// returned 404 Not Found" for an API answer, else the recorded message (a
// stage's "Stopped submitting, because X" gives X, so the report does not
// say it twice).
func because(j Job) string {
	if j.Error != nil && j.Error.StatusCode != nil {
		return "the API returned " + j.Error.String()
	}
	if j.Error != nil && j.Error.Message != "" {
		return messages.Because(j.Error.Message)
	}
	if j.Reason != "" {
		return j.Reason
	}
	return "of an unknown error"
}

func errorText(j Job) string {
	if j.Error != nil {
		if s := j.Error.String(); s != "" {
			return s
		}
	}
	if j.Reason != "" {
		return j.Reason
	}
	return "no reason given"
}
