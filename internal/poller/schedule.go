package poller

import (
	"errors"
	"fmt"
	"time"
)

// Schedule says when a job is checked, as offsets from its submission. The
// checks are at
//
//	First, First+Step, First+2·Step, …   while below Until
//	Until, Until+Interval, …             from Until on
//
// The default (DefaultSchedule) is 1 s, 2 s, … 9 s, then every 5 s from
// 10 s. Dense checks early notice the many short jobs
// quickly; sparse checks later keep a long job cheap.
type Schedule struct {
	// First is the first check's offset. Default 1s.
	First time.Duration
	// Step separates the early checks. Default 1s.
	Step time.Duration
	// Until ends the early checks; it is itself a check. Default 10s. It
	// must not be below First.
	Until time.Duration
	// Interval separates the checks from Until on. Default 5s.
	Interval time.Duration
}

// DefaultSchedule returns the schedule used when Config.Schedule is zero.
func DefaultSchedule() Schedule {
	return Schedule{First: time.Second, Step: time.Second, Until: 10 * time.Second, Interval: 5 * time.Second}
}

// WithDefaults returns s with every unset field taken from DefaultSchedule.
func (s Schedule) WithDefaults() Schedule {
	d := DefaultSchedule()
	if s.First == 0 {
		s.First = d.First
	}
	if s.Step == 0 {
		s.Step = d.Step
	}
	if s.Until == 0 {
		s.Until = max(d.Until, s.First)
	}
	if s.Interval == 0 {
		s.Interval = d.Interval
	}
	return s
}

// Validate reports whether the schedule can be used (after WithDefaults).
func (s Schedule) Validate() error {
	switch {
	case s.First <= 0 || s.Step <= 0 || s.Until <= 0 || s.Interval <= 0:
		return errors.New("every duration of the schedule must be positive")
	case s.Until < s.First:
		return fmt.Errorf("the schedule's Until (%v) is before its First check (%v)", s.Until, s.First)
	}
	return nil
}

// Next returns the offset of the first check strictly after elapsed (the
// time since the submission). Checks that elapsed has already passed are
// skipped, however late the caller is.
func (s Schedule) Next(elapsed time.Duration) time.Duration {
	if elapsed < s.First {
		return s.First
	}
	if elapsed < s.Until {
		if t := s.First + ((elapsed-s.First)/s.Step+1)*s.Step; t < s.Until {
			return t
		}
		return s.Until
	}
	return s.Until + ((elapsed-s.Until)/s.Interval+1)*s.Interval
}

// Checks returns how many checks the schedule makes within d of the
// submission (offsets in [0, d]): what a job pending that long costs.
func (s Schedule) Checks(d time.Duration) int {
	if d < s.First {
		return 0
	}
	n := 0
	if s.First < s.Until {
		last := min(d, s.Until-1)
		n += int((last-s.First)/s.Step) + 1
	}
	if d >= s.Until {
		n += int((d-s.Until)/s.Interval) + 1
	}
	return n
}
