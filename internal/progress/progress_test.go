package progress_test

import (
	"testing"
	"time"

	"github.com/oxypipe/oxypipe/internal/progress"
)

func TestProgressString(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		p    progress.Progress
		want string
	}{
		{
			"a large run under way",
			progress.Progress{Payloads: 8600, Done: 412, Faulted: 3, Pending: 1250, Unsubmitted: 6935, Retries: 12, Elapsed: 45218 * time.Millisecond},
			"412/8,600 done, 3 faulted, 1,250 pending, 6,935 unsubmitted, 12 retries, 45.21s",
		},
		{
			"a finished run",
			progress.Progress{Payloads: 3, Done: 3, Written: 3, Elapsed: 1004 * time.Millisecond},
			"3/3 done, 3 written, 1.00s",
		},
		{
			"the seed example's incomplete run (one done, one faulted, one unfetched)",
			progress.Progress{Payloads: 3, Done: 1, Faulted: 1, Unfetched: 1, Written: 1, Elapsed: 1500 * time.Millisecond},
			"1/3 done, 1 faulted, 1 unfetched, 1 written, 1.50s",
		},
		{
			"every count, in the line's order",
			progress.Progress{Payloads: 10000, Done: 1, Faulted: 2, Rejected: 3, Unfetched: 4, Pending: 5, Unsubmitted: 9985, Written: 1, Uploaded: 6, Unuploaded: 7, Retries: 1, Elapsed: 312 * time.Millisecond},
			"1/10,000 done, 2 faulted, 3 rejected, 4 unfetched, 5 pending, 9,985 unsubmitted, 1 written, 6 uploaded, 7 unuploaded, 1 retry, 312ms",
		},
		{
			"nothing yet",
			progress.Progress{Payloads: 2, Unsubmitted: 2},
			"0/2 done, 2 unsubmitted, 0ms",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := tc.p.String(); got != tc.want {
				t.Errorf("String() = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestElapsedIsTruncated(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		d    time.Duration
		want string
	}{
		{0, "0ms"},
		{-time.Second, "0ms"},
		{312*time.Millisecond + 999*time.Microsecond, "312ms"},
		{999 * time.Millisecond, "999ms"},
		{time.Second, "1.00s"},
		{4029 * time.Millisecond, "4.02s"},
		{45219 * time.Millisecond, "45.21s"},
		{59999 * time.Millisecond, "59.99s"},
		{time.Minute, "1m 00s"},
		{65900 * time.Millisecond, "1m 05s"},
		{59*time.Minute + 59999*time.Millisecond, "59m 59s"},
		{time.Hour, "1h 00m 00s"},
		{2*time.Hour + 24*time.Minute + 5*time.Second + 999*time.Millisecond, "2h 24m 05s"},
	} {
		if got := progress.Elapsed(tc.d); got != tc.want {
			t.Errorf("Elapsed(%v) = %q, want %q", tc.d, got, tc.want)
		}
	}
}

func TestThousands(t *testing.T) {
	t.Parallel()
	for n, want := range map[int]string{
		0: "0", 7: "7", 999: "999", 1000: "1,000", 8600: "8,600", 12345: "12,345",
		123456: "123,456", 1234567: "1,234,567", -1234: "-1,234", -12: "-12",
	} {
		if got := progress.Thousands(n); got != want {
			t.Errorf("Thousands(%d) = %q, want %q", n, got, want)
		}
	}
}
