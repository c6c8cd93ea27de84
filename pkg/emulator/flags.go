package emulator

import (
	"fmt"
	"strconv"

	"github.com/spf13/pflag"
)

// RegisterFlags adds the emulator's settings to fs, writing into c. The CLI
// owns --addr; these are the behaviour flags of `oxy sandbox`. Defaults shown
// are those of WithDefaults; --rate-limit 0 means unlimited.
func (c *Config) RegisterFlags(fs *pflag.FlagSet) {
	d := c.WithDefaults()
	fs.DurationVar(&c.JobTime, "job-time", c.JobTime,
		"keep every job pending for exactly this long (default: a realistic long-tailed distribution, about 2s)")
	fs.Float64Var(&c.TimeScale, "time-scale", d.TimeScale,
		"multiply every job duration by this factor (0.001 makes a 2s job take 2ms)")
	fs.Int64Var(&c.Seed, "seed", c.Seed, "seed of every random choice (same inputs and seed give the same outcomes)")
	fs.Float64Var(&c.FaultRate, "fault-rate", c.FaultRate, "probability that a job ends faulted (613)")
	fs.Float64Var(&c.ErrorRate, "error-rate", c.ErrorRate, "probability that any API request gets a 500 page")
	fs.Float64Var(&c.DropRate, "drop-rate", c.DropRate, "probability that any API request has its connection dropped")
	fs.Var(&rateFlag{p: &c.RateLimit, def: d.RateLimit}, "rate-limit",
		"jobs the account may submit per second (0 = unlimited: nothing is refused and the headers advertise "+strconv.Itoa(UnlimitedBudget)+")")
	fs.Var(&rateFlag{p: &c.RenderRateLimit, def: d.RenderRateLimit}, "render-rate-limit",
		"rendered jobs the account may submit per second (0 = unlimited, likewise)")
	fs.Var(&styleFlag{p: &c.HeaderStyle, def: d.HeaderStyle}, "rate-limit-headers",
		"spelling of the rate-limit headers: dashed, underscored or alternating")
	fs.StringVar(&c.Username, "username", c.Username, "the only username accepted (default: any non-empty credentials)")
	fs.StringVar(&c.Password, "password", c.Password, "the only password accepted (default: any non-empty credentials)")
	fs.DurationVar(&c.ResultsTTL, "results-ttl", d.ResultsTTL, "how long results stay available after a job finishes")
	fs.BoolVar(&c.BadJSON422, "bad-json-422", c.BadJSON422, "answer malformed JSON with 422 instead of the 400 seen live")
}

// rateFlag is a rate limit on the command line, where 0 means unlimited.
type rateFlag struct {
	p   *int
	def int
}

func (f *rateFlag) String() string {
	if f.p == nil {
		return ""
	}
	switch *f.p {
	case 0:
		return strconv.Itoa(f.def)
	case Unlimited:
		return "0"
	}
	return strconv.Itoa(*f.p)
}

func (f *rateFlag) Set(s string) error {
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		return fmt.Errorf("%q is not a number of jobs per second (0 = unlimited)", s)
	}
	if n == 0 {
		n = Unlimited
	}
	*f.p = n
	return nil
}

func (f *rateFlag) Type() string { return "int" }

type styleFlag struct {
	p   *HeaderStyle
	def HeaderStyle
}

func (f *styleFlag) String() string {
	if f.p == nil || *f.p == "" {
		return string(f.def)
	}
	return string(*f.p)
}

func (f *styleFlag) Set(s string) error {
	switch HeaderStyle(s) {
	case HeaderDashed, HeaderUnderscored, HeaderAlternating:
		*f.p = HeaderStyle(s)
		return nil
	}
	return fmt.Errorf("%q is not dashed, underscored or alternating", s)
}

func (f *styleFlag) Type() string { return "style" }
