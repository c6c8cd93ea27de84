package emulator

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"time"
)

// Unlimited turns a rate limit off when set as Config.RateLimit or
// Config.RenderRateLimit. The emulator then refuses nothing, yet still
// advertises a budget of UnlimitedBudget in its rate-limit headers: a client
// that hears no budget assumes the smallest plan's and paces itself to it,
// so an unlimited emulator must name one high enough that the client goes at
// its own speed.
const Unlimited = -1

// UnlimitedBudget is the per-window limit and remaining budget an unlimited
// rate limit advertises.
const UnlimitedBudget = 1_000_000

// Defaults of Config, as on a Starter plan and as observed live.
const (
	DefaultRateLimit        = 50
	DefaultRenderRateLimit  = 13
	DefaultResultsTTL       = 48 * time.Hour
	DefaultJobTTL           = 7 * 24 * time.Hour
	DefaultMaxBatch         = 5000
	DefaultClientID         = 123456
	DefaultAccountUUID      = "00000000-0000-0000-0000-000000000000"
	DefaultCallbackAttempts = 3
	DefaultCallbackBackoff  = time.Second
	DefaultRateWindow       = time.Second
)

// HeaderStyle selects how the rate-limit headers are spelled.
type HeaderStyle string

// Header spellings. Both were seen on the live API; a client must read both.
const (
	// HeaderDashed: x-ratelimit-total-requests-<uuid>-limit.
	HeaderDashed HeaderStyle = "dashed"
	// HeaderUnderscored: x-ratelimit-total_requests_<uuid>-<client id>-limit.
	HeaderUnderscored HeaderStyle = "underscored"
	// HeaderAlternating switches spelling on every submission response.
	HeaderAlternating HeaderStyle = "alternating"
)

// JobInfo describes a job to a JobTimeFunc.
type JobInfo struct {
	Source   string
	InputKey string
	Input    string
	// Rendered is true for render or xhr jobs (they take about ten times longer).
	Rendered bool
	// Faulted is true when the job will end faulted (faults take longer).
	Faulted bool
}

// Config configures an Emulator. The zero value is usable: it behaves like a
// Starter-plan account with realistic job durations on the real clock.
type Config struct {
	// Seed makes every random choice reproducible: job durations, faults and
	// injected request errors. The same inputs under the same seed give the
	// same ids and outcomes.
	Seed int64

	// Clock is where time comes from. Default: the real clock. Tests pass a
	// *FakeClock and advance it instead of sleeping.
	Clock Clock

	// TimeScale multiplies every job duration the emulator waits out: the
	// pending time, the cloud-upload delay and callback retry delays. 0.001
	// makes a 2 s job take 2 ms. Rate-limit windows and TTLs are not scaled.
	// Default 1.
	TimeScale float64

	// JobTime, when positive, is how long every job stays pending (before
	// TimeScale). Zero draws each duration from JobTimeFunc.
	JobTime time.Duration

	// JobTimeFunc draws a job's pending time when JobTime is zero. Default: a
	// log-normal distribution with a long tail: about 2 s for plain jobs, 20 s
	// for rendered ones and 17 s for faults, as measured live.
	JobTimeFunc func(r *rand.Rand, job JobInfo) time.Duration

	// FaultRate is the probability in [0,1] that a job ends faulted (613).
	FaultRate float64

	// ErrorRate is the probability in [0,1] that any API request is answered
	// with a 500 HTML page (no job is created).
	ErrorRate float64

	// DropRate is the probability in [0,1] that any API request has its
	// connection closed without an answer.
	DropRate float64

	// Faults are scripted request failures per endpoint, tried in order
	// before any other handling.
	Faults []Fault

	// Rules script the outcome of payloads; the first rule that matches a
	// submitted value applies.
	Rules []Rule

	// RateLimit is the number of jobs (values × pages) the account may submit
	// per window. 0 means DefaultRateLimit (50); Unlimited turns it off.
	RateLimit int

	// RenderRateLimit is the same for rendered jobs (render or xhr).
	// 0 means DefaultRenderRateLimit (13); Unlimited turns it off.
	RenderRateLimit int

	// RateWindow is how long a rate-limit window lasts from the first
	// submission that opens it. Default 1 s.
	RateWindow time.Duration

	// HeaderStyle spells the rate-limit headers. Default HeaderDashed.
	HeaderStyle HeaderStyle

	// AccountUUID is the UUID inside rate-limit header names.
	// Default DefaultAccountUUID (the nil UUID).
	AccountUUID string

	// ClientID is the account's numeric id (job objects' client_id and the
	// x-oxylabs-client-id header). Default DefaultClientID.
	ClientID int

	// Username and Password, when either is set, are the only credentials
	// accepted. When both are empty any non-empty username and password pass.
	Username string
	Password string

	// ResultsTTL is how long after a job finishes its results stay available;
	// later the results and content endpoints answer 204. Default 48 h.
	ResultsTTL time.Duration

	// JobTTL is how long after a job finishes the status endpoint still
	// returns it; later every endpoint answers 404 Query not found.
	// Default 7 days. It is raised to ResultsTTL when shorter.
	JobTTL time.Duration

	// BadJSON422 answers malformed JSON with 422 (as the docs say) instead
	// of the 400 observed live.
	BadJSON422 bool

	// MaxBatch is the largest batch accepted; larger ones get 400.
	// Default 5000.
	MaxBatch int

	// LinksBaseURL is the scheme and host written into `_links` hrefs, such as
	// "http://data.oxylabs.io". Default: "http://" plus the request's Host,
	// which is what the live API does for its own host.
	LinksBaseURL string

	// CallbackClient posts callbacks. Default: a client with a 10 s timeout.
	CallbackClient *http.Client

	// CallbackAttempts is how many times a callback is tried before it is
	// given up (any 2xx is success). Default 3.
	CallbackAttempts int

	// CallbackBackoff is the delay before the second attempt; it doubles for
	// each further attempt (scaled by TimeScale). Default 1 s.
	CallbackBackoff time.Duration

	// CallbackerIPs is the list served by GET /v1/info/callbacker_ips.
	// Default ["127.0.0.1"], where the emulator's callbacks come from.
	CallbackerIPs []string
}

// WithDefaults returns a copy of c with every unset field filled in.
func (c Config) WithDefaults() Config {
	if c.Clock == nil {
		c.Clock = RealClock()
	}
	if c.TimeScale == 0 {
		c.TimeScale = 1
	}
	if c.JobTimeFunc == nil {
		c.JobTimeFunc = RealisticJobTime
	}
	if c.RateLimit == 0 {
		c.RateLimit = DefaultRateLimit
	}
	if c.RenderRateLimit == 0 {
		c.RenderRateLimit = DefaultRenderRateLimit
	}
	if c.RateWindow == 0 {
		c.RateWindow = DefaultRateWindow
	}
	if c.HeaderStyle == "" {
		c.HeaderStyle = HeaderDashed
	}
	if c.AccountUUID == "" {
		c.AccountUUID = DefaultAccountUUID
	}
	if c.ClientID == 0 {
		c.ClientID = DefaultClientID
	}
	if c.ResultsTTL == 0 {
		c.ResultsTTL = DefaultResultsTTL
	}
	if c.JobTTL == 0 {
		c.JobTTL = DefaultJobTTL
	}
	if c.JobTTL < c.ResultsTTL {
		c.JobTTL = c.ResultsTTL
	}
	if c.MaxBatch == 0 {
		c.MaxBatch = DefaultMaxBatch
	}
	if c.CallbackClient == nil {
		c.CallbackClient = &http.Client{Timeout: 10 * time.Second}
	}
	if c.CallbackAttempts == 0 {
		c.CallbackAttempts = DefaultCallbackAttempts
	}
	if c.CallbackBackoff == 0 {
		c.CallbackBackoff = DefaultCallbackBackoff
	}
	if c.CallbackerIPs == nil {
		c.CallbackerIPs = []string{"127.0.0.1"}
	}
	return c
}

// ErrInvalidConfig is wrapped by every error New returns for a bad Config.
var ErrInvalidConfig = errors.New("emulator: invalid config")

func (c Config) validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrInvalidConfig, fmt.Sprintf(format, args...))
	}
	if c.TimeScale < 0 {
		return bad("TimeScale %v is negative", c.TimeScale)
	}
	if c.JobTime < 0 {
		return bad("JobTime %v is negative", c.JobTime)
	}
	for name, p := range map[string]float64{"FaultRate": c.FaultRate, "ErrorRate": c.ErrorRate, "DropRate": c.DropRate} {
		if p < 0 || p > 1 {
			return bad("%s %v is outside [0,1]", name, p)
		}
	}
	if c.RateLimit < Unlimited || c.RenderRateLimit < Unlimited {
		return bad("rate limits must be positive or Unlimited")
	}
	if c.RateWindow < 0 {
		return bad("RateWindow %v is negative", c.RateWindow)
	}
	switch c.HeaderStyle {
	case HeaderDashed, HeaderUnderscored, HeaderAlternating:
	default:
		return bad("HeaderStyle %q is not dashed, underscored or alternating", c.HeaderStyle)
	}
	if c.ResultsTTL < 0 || c.JobTTL < 0 {
		return bad("TTLs must not be negative")
	}
	if c.MaxBatch < 1 {
		return bad("MaxBatch %d is below 1", c.MaxBatch)
	}
	if c.CallbackAttempts < 1 {
		return bad("CallbackAttempts %d is below 1", c.CallbackAttempts)
	}
	if c.CallbackBackoff < 0 {
		return bad("CallbackBackoff %v is negative", c.CallbackBackoff)
	}
	for i, f := range c.Faults {
		if err := f.validate(); err != nil {
			return bad("Faults[%d]: %v", i, err)
		}
	}
	for i, r := range c.Rules {
		if err := r.validate(); err != nil {
			return bad("Rules[%d]: %v", i, err)
		}
	}
	return nil
}
