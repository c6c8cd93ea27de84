package poller_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/oxypipe/oxypipe/internal/poller"
)

func TestScheduleNext(t *testing.T) {
	t.Parallel()
	s := poller.DefaultSchedule()
	cases := []struct{ elapsed, next time.Duration }{
		{0, time.Second},
		{999 * time.Millisecond, time.Second},
		{time.Second, 2 * time.Second},
		{1500 * time.Millisecond, 2 * time.Second},
		{8 * time.Second, 9 * time.Second},
		{9 * time.Second, 10 * time.Second},
		{9999 * time.Millisecond, 10 * time.Second},
		{10 * time.Second, 15 * time.Second},
		{12 * time.Second, 15 * time.Second},
		// A late delivery skips the checks it missed: the next one is the
		// next on the schedule, not five seconds after the last.
		{47 * time.Second, 50 * time.Second},
		{time.Hour, time.Hour + 5*time.Second},
	}
	for _, c := range cases {
		if got := s.Next(c.elapsed); got != c.next {
			t.Errorf("Next(%v) = %v, want %v", c.elapsed, got, c.next)
		}
	}
}

func TestScheduleWithUnevenSteps(t *testing.T) {
	t.Parallel()
	// Early checks at 0.5, 2, 3.5 s; the late ones at 4, 7, 10 s.
	s := poller.Schedule{First: 500 * time.Millisecond, Step: 1500 * time.Millisecond, Until: 4 * time.Second, Interval: 3 * time.Second}
	var got []time.Duration
	for e := time.Duration(0); e < 10*time.Second; e = s.Next(e) {
		got = append(got, s.Next(e))
	}
	want := []time.Duration{500 * time.Millisecond, 2 * time.Second, 3500 * time.Millisecond, 4 * time.Second, 7 * time.Second, 10 * time.Second}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("checks = %v, want %v", got, want)
	}
	if n := s.Checks(10 * time.Second); n != len(want) {
		t.Fatalf("Checks(10s) = %d, want %d", n, len(want))
	}
}

func TestScheduleChecks(t *testing.T) {
	t.Parallel()
	s := poller.DefaultSchedule()
	cases := []struct {
		d    time.Duration
		want int
	}{
		{0, 0},
		{999 * time.Millisecond, 0},
		{time.Second, 1},
		{9 * time.Second, 9},
		{10 * time.Second, 10},
		{14 * time.Second, 10},
		{15 * time.Second, 11},
		{time.Hour, 9 + 719},
	}
	for _, c := range cases {
		if got := s.Checks(c.d); got != c.want {
			t.Errorf("Checks(%v) = %d, want %d", c.d, got, c.want)
		}
	}
	// Checks agrees with Next: walking the schedule counts the same.
	for _, d := range []time.Duration{3 * time.Second, 10 * time.Second, 61 * time.Second} {
		n := 0
		for e := s.Next(0); e <= d; e = s.Next(e) {
			n++
		}
		if got := s.Checks(d); got != n {
			t.Errorf("Checks(%v) = %d, walking Next gives %d", d, got, n)
		}
	}
}

func TestScheduleValidate(t *testing.T) {
	t.Parallel()
	if err := (poller.Schedule{}).WithDefaults().Validate(); err != nil {
		t.Fatalf("defaults: %v", err)
	}
	if got := (poller.Schedule{}).WithDefaults(); got != poller.DefaultSchedule() {
		t.Fatalf("WithDefaults of zero = %+v", got)
	}
	bad := []poller.Schedule{
		{First: -time.Second, Step: time.Second, Until: time.Second, Interval: time.Second},
		{First: 2 * time.Second, Step: time.Second, Until: time.Second, Interval: time.Second},
	}
	for _, s := range bad {
		if err := s.Validate(); err == nil {
			t.Errorf("Validate(%+v) = nil", s)
		}
	}
}

// The default schedule: dense for the first ten seconds, then every five.
func ExampleSchedule() {
	s := poller.DefaultSchedule()
	for _, elapsed := range []time.Duration{0, 1500 * time.Millisecond, 9500 * time.Millisecond, 12 * time.Second, 47 * time.Second} {
		fmt.Printf("at %v the next check is at %v\n", elapsed, s.Next(elapsed))
	}
	fmt.Println("a job pending for an hour costs", s.Checks(time.Hour), "checks")
	// Output:
	// at 0s the next check is at 1s
	// at 1.5s the next check is at 2s
	// at 9.5s the next check is at 10s
	// at 12s the next check is at 15s
	// at 47s the next check is at 50s
	// a job pending for an hour costs 728 checks
}
