package emulator_test

import (
	"strings"
	"testing"
	"time"

	"github.com/oxypipe/oxypipe/pkg/emulator"
)

func TestRulesFile(t *testing.T) {
	t.Parallel()
	t.Run("maps every key onto the emulator's rules, faults and settings", func(t *testing.T) {
		t.Parallel()
		var cfg emulator.Config
		err := cfg.ParseRules([]byte(`{
			"rules": [
				{"source": "universal", "pattern": "products/1$",
				 "outcome": {"status_failure": {"status": 404, "message": "Not Found", "times": 1}}},
				{"pattern": "products/2$", "times": 2, "outcome": {"fault": true, "fault_status_code": 612, "job_time": "1.5s"}},
				{"outcome": {"reject": {"status": 422, "errors": ["bad"]}, "results_ttl": "1h"}}
			],
			"faults": [{"on": ["submit", "batch"], "status": 503, "times": 2, "probability": 0.5}],
			"job_time": "250ms", "seed": 7, "fault_rate": 0.25, "rate_limit": 5000, "render_rate_limit": 40
		}`))
		if err != nil {
			t.Fatal(err)
		}
		if len(cfg.Rules) != 3 || len(cfg.Faults) != 1 {
			t.Fatalf("%d rules, %d faults", len(cfg.Rules), len(cfg.Faults))
		}
		r0 := cfg.Rules[0]
		if r0.Source != "universal" || !r0.Pattern.MatchString("https://x/products/1") || r0.Pattern.MatchString("https://x/products/10") ||
			r0.Match != nil || r0.Outcome.StatusFailure == nil || *r0.Outcome.StatusFailure != (emulator.Failure{Status: 404, Message: "Not Found", Times: 1}) {
			t.Errorf("rule 0: %+v", r0)
		}
		r1 := cfg.Rules[1]
		if !r1.Outcome.Fault || r1.Outcome.FaultStatusCode != 612 || r1.Outcome.JobTime != 1500*time.Millisecond || r1.Match == nil {
			t.Errorf("rule 1: %+v", r1)
		}
		// "times": 2 holds for the first two submissions only.
		var got []bool
		for range 3 {
			got = append(got, r1.Match(emulator.Submission{}))
		}
		if got[0] != true || got[1] != true || got[2] != false {
			t.Errorf("times 2 matched %v", got)
		}
		r2 := cfg.Rules[2]
		if r2.Outcome.Reject == nil || r2.Outcome.Reject.Status != 422 || r2.Outcome.Reject.Errors[0] != "bad" || r2.Outcome.ResultsTTL != time.Hour || r2.Pattern != nil {
			t.Errorf("rule 2: %+v", r2)
		}
		f := cfg.Faults[0]
		if len(f.On) != 2 || f.On[1] != emulator.EndpointBatch || f.Status != 503 || f.Times != 2 || f.Probability != 0.5 {
			t.Errorf("fault: %+v", f)
		}
		if cfg.JobTime != 250*time.Millisecond || cfg.Seed != 7 || cfg.FaultRate != 0.25 || cfg.TimeScale != 0 ||
			cfg.RateLimit != 5000 || cfg.RenderRateLimit != 40 {
			t.Errorf("settings: %+v", cfg)
		}
		if _, err := emulator.New(cfg); err != nil {
			t.Errorf("the emulator refuses the mapped config: %v", err)
		}
	})
	for _, c := range []struct{ name, json, want string }{
		{"an unknown key is an error, not a rule that scripts nothing", `{"rules": [{"outcome": {"faulted": true}}]}`, `unknown field "faulted"`},
		{"a bad pattern", `{"rules": [{"pattern": "(", "outcome": {}}]}`, "rules[0].pattern"},
		{"a duration that is a number", `{"job_time": 5}`, `a duration is a string such as "1.5s"`},
		{"two values", `{} {}`, "more than one JSON value"},
		{"negative times", `{"rules": [{"times": -1, "outcome": {}}]}`, "rules[0].times must not be negative"},
		{"a rate limit of nothing", `{"rate_limit": 0}`, "rate_limit must be at least 1 job per second, got 0"},
		{"a negative render rate limit", `{"render_rate_limit": -1}`, "render_rate_limit must be at least 1 job per second, got -1"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			var cfg emulator.Config
			err := cfg.ParseRules([]byte(c.json))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %v, want %q", err, c.want)
			}
		})
	}
}
