package progress

import (
	"strconv"
	"strings"
	"time"
)

// Progress is a snapshot of a run: how many of its payloads are where.
//
// Unsubmitted, Pending, Done, Faulted, Rejected and Unfetched split the
// payloads and sum to Payloads: while the run goes on, Unsubmitted counts the
// payloads not submitted yet (fed or still to be fed) and Pending the jobs the
// API has not finished; at the end they count the payloads that ended so.
// Written, Uploaded, Unuploaded and Retries count events on top of that split.
type Progress struct {
	// Payloads is the run's payload count.
	Payloads int
	// Unsubmitted counts payloads without a job: not submitted yet, or never
	// (stopped, refused account, unknown outcome).
	Unsubmitted int
	// Pending counts jobs submitted and not finished at the API.
	Pending int
	// Done counts jobs the API finished as done (written or about to be).
	Done int
	// Faulted counts jobs the API faulted.
	Faulted int
	// Rejected counts payloads the API or local validation refused.
	Rejected int
	// Unfetched counts jobs whose result was not written (checks stopped,
	// result unreadable, write failed); they can be fetched by id.
	Unfetched int
	// Written counts done jobs whose body is in the destination.
	Written int
	// Uploaded and Unuploaded count jobs with a cloud-storage upload entry
	// that succeeded (code 13000) or failed.
	Uploaded   int
	Unuploaded int
	// Retries counts soft failures: attempts that failed and were retried.
	Retries int
	// Elapsed is the time since the run started (until it completed).
	Elapsed time.Duration
}

// String renders the progress line the CLI prints and scripts read:
// "{done}/{payloads} done", then each non-zero count in the order faulted,
// rejected, unfetched, pending, unsubmitted, written, uploaded, unuploaded,
// then the retries, then the elapsed time, e.g.
// "412/8,600 done, 3 faulted, 1,250 pending, 6,935 unsubmitted, 12 retries, 45.21s".
func (p Progress) String() string {
	var b strings.Builder
	b.WriteString(Thousands(p.Done))
	b.WriteByte('/')
	b.WriteString(Thousands(p.Payloads))
	b.WriteString(" done")
	for _, c := range []struct {
		n    int
		name string
	}{
		{p.Faulted, "faulted"},
		{p.Rejected, "rejected"},
		{p.Unfetched, "unfetched"},
		{p.Pending, "pending"},
		{p.Unsubmitted, "unsubmitted"},
		{p.Written, "written"},
		{p.Uploaded, "uploaded"},
		{p.Unuploaded, "unuploaded"},
	} {
		if c.n != 0 {
			b.WriteString(", ")
			b.WriteString(Thousands(c.n))
			b.WriteByte(' ')
			b.WriteString(c.name)
		}
	}
	switch {
	case p.Retries == 1:
		b.WriteString(", 1 retry")
	case p.Retries != 0:
		b.WriteString(", ")
		b.WriteString(Thousands(p.Retries))
		b.WriteString(" retries")
	}
	b.WriteString(", ")
	b.WriteString(Elapsed(p.Elapsed))
	return b.String()
}

// Elapsed formats a duration the way the progress line does, truncated
// rather than rounded: "312ms", "4.02s", "1m 05s", "2h 24m 05s".
func Elapsed(d time.Duration) string {
	if d < 0 {
		d = 0
	}
	switch {
	case d < time.Second:
		return strconv.FormatInt(d.Milliseconds(), 10) + "ms"
	case d < time.Minute:
		centi := d.Milliseconds() / 10
		return strconv.FormatInt(centi/100, 10) + "." + twoDigits(centi%100) + "s"
	case d < time.Hour:
		s := int64(d / time.Second)
		return strconv.FormatInt(s/60, 10) + "m " + twoDigits(s%60) + "s"
	default:
		s := int64(d / time.Second)
		return Thousands(int(s/3600)) + "h " + twoDigits(s/60%60) + "m " + twoDigits(s%60) + "s"
	}
}

func twoDigits(n int64) string {
	if n < 10 {
		return "0" + strconv.FormatInt(n, 10)
	}
	return strconv.FormatInt(n, 10)
}

// Thousands formats n with a comma between groups of three digits: 8,600.
func Thousands(n int) string {
	s := strconv.Itoa(n)
	neg := n < 0
	if neg {
		s = s[1:]
	}
	if len(s) <= 3 {
		if neg {
			return "-" + s
		}
		return s
	}
	var b strings.Builder
	if neg {
		b.WriteByte('-')
	}
	head := len(s) % 3
	if head > 0 {
		b.WriteString(s[:head])
	}
	for i := head; i < len(s); i += 3 {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(s[i : i+3])
	}
	return b.String()
}
