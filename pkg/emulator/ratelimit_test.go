package emulator

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

const (
	dashedLimit     = "X-Ratelimit-Total-Requests-00000000-0000-0000-0000-000000000000-Limit"
	dashedRemaining = "X-Ratelimit-Total-Requests-00000000-0000-0000-0000-000000000000-Remaining"
	renderLimit     = "X-Ratelimit-Total-Render-Requests-00000000-0000-0000-0000-000000000000-Limit"
	renderRemaining = "X-Ratelimit-Total-Render-Requests-00000000-0000-0000-0000-000000000000-Remaining"
)

func urls(n int) string {
	vals := make([]string, n)
	for i := range vals {
		vals[i] = fmt.Sprintf(`"https://shop.com/p/%d"`, i)
	}
	return "[" + strings.Join(vals, ",") + "]"
}

func TestRateLimitWindow(t *testing.T) {
	t.Parallel()
	f := setup(t, Config{})
	one := `{"source":"universal","url":"https://shop.com/"}`
	remaining := func(r reply) string { return r.header.Get(dashedRemaining) }

	r := f.do("POST", "/v1/queries", one).expect(t, 202)
	if r.header.Get(dashedLimit) != "50" || remaining(r) != "49" {
		t.Fatalf("first submission headers: %v", r.header)
	}
	if r.header.Get(renderLimit) != "" {
		t.Fatal("a plain job carries no render headers")
	}
	f.clock.Advance(500 * time.Millisecond)
	// A pages:2 job takes two.
	if got := remaining(f.do("POST", "/v1/queries", `{"source":"google_search","query":"a","pages":2}`).expect(t, 202)); got != "47" {
		t.Fatalf("after a 2-page job remaining = %s, want 47", got)
	}
	// A 400 takes nothing.
	f.do("POST", "/v1/queries", `{"source":"universal"}`).expect(t, 400)
	// A batch larger than what remains is refused whole, and takes nothing.
	tooMany := f.do("POST", "/v1/queries/batch", `{"source":"universal","url":`+urls(48)+`}`).expect(t, 429)
	if tooMany.message(t) != "Too many requests. (Total Dynamic)." || remaining(tooMany) != "47" || tooMany.header.Get("Retry-After") != "" {
		t.Fatalf("429: %s %v", tooMany.body, tooMany.header)
	}
	if got := remaining(f.do("POST", "/v1/queries/batch", `{"source":"universal","url":`+urls(47)+`}`).expect(t, 202)); got != "0" {
		t.Fatalf("remaining = %s, want 0", got)
	}
	f.do("POST", "/v1/queries", one).expect(t, 429)
	// GETs are never limited.
	for i := 0; i < 20; i++ {
		f.do("GET", "/v1/queries/7500000000000000001", "").expect(t, 200)
	}
	// The window closes one second after the submission that opened it.
	f.clock.Advance(499 * time.Millisecond)
	f.do("POST", "/v1/queries", one).expect(t, 429)
	f.clock.Advance(time.Millisecond)
	if got := remaining(f.do("POST", "/v1/queries", one).expect(t, 202)); got != "49" {
		t.Fatalf("new window remaining = %s, want 49", got)
	}
	st := f.srv.Emulator.Stats()
	if st.RateLimited != 3 || st.JobsCreated != 50 || st.PagesCreated != 51 {
		t.Fatalf("stats: rate limited %d, created %d jobs of %d pages", st.RateLimited, st.JobsCreated, st.PagesCreated)
	}
}

func TestRenderLimit(t *testing.T) {
	t.Parallel()
	f := setup(t, Config{})
	r := f.do("POST", "/v1/queries/batch", `{"source":"universal","render":"html","url":`+urls(14)+`}`).expect(t, 429)
	if r.message(t) != "Too many requests. (Total Render Dynamic)." || r.header.Get(renderRemaining) != "13" || r.header.Get(dashedRemaining) != "50" {
		t.Fatalf("render 429: %s %v", r.body, r.header)
	}
	ok := f.do("POST", "/v1/queries/batch", `{"source":"universal","render":"html","url":`+urls(13)+`}`).expect(t, 202)
	if ok.header.Get(renderLimit) != "13" || ok.header.Get(renderRemaining) != "0" || ok.header.Get(dashedRemaining) != "37" {
		t.Fatalf("render headers: %v", ok.header)
	}
	xhr := f.do("POST", "/v1/queries", `{"source":"universal","url":"https://shop.com/","xhr":true}`).expect(t, 429)
	if xhr.message(t) != "Too many requests. (Total Render Dynamic)." {
		t.Fatal("xhr counts as rendered")
	}
	f.do("POST", "/v1/queries", `{"source":"universal","url":"https://shop.com/"}`).expect(t, 202)
}

func TestRateLimitOffAndCustom(t *testing.T) {
	t.Parallel()
	off := setup(t, Config{RateLimit: Unlimited, RenderRateLimit: Unlimited})
	for range 2 {
		// Unlimited refuses nothing and advertises the whole UnlimitedBudget
		// every time, so that the client goes at its own speed.
		r := off.do("POST", "/v1/queries/batch", `{"source":"universal","render":"html","url":`+urls(200)+`}`).expect(t, 202)
		for _, name := range []string{dashedLimit, dashedRemaining, renderLimit, renderRemaining} {
			if got := r.header.Get(name); got != "1000000" {
				t.Fatalf("unlimited %s = %q, want 1000000", name, got)
			}
		}
	}
	mixed := setup(t, Config{RateLimit: 300, RenderRateLimit: Unlimited})
	r := mixed.do("POST", "/v1/queries/batch", `{"source":"universal","render":"html","url":`+urls(200)+`}`).expect(t, 202)
	if r.header.Get(dashedLimit) != "300" || r.header.Get(dashedRemaining) != "100" ||
		r.header.Get(renderLimit) != "1000000" || r.header.Get(renderRemaining) != "1000000" {
		t.Fatalf("a limited total beside an unlimited render budget: %v", r.header)
	}
	small := setup(t, Config{RateLimit: 2, RateWindow: 10 * time.Second})
	small.do("POST", "/v1/queries/batch", `{"source":"universal","url":`+urls(2)+`}`).expect(t, 202)
	small.clock.Advance(9 * time.Second)
	small.do("POST", "/v1/queries", `{"source":"universal","url":"https://shop.com/"}`).expect(t, 429)
}

func TestHeaderStyles(t *testing.T) {
	t.Parallel()
	const under = "X-Ratelimit-Total_requests_00000000-0000-0000-0000-000000000000-123456-Limit"
	const underRender = "X-Ratelimit-Total_render_requests_00000000-0000-0000-0000-000000000000-123456-Remaining"
	u := setup(t, Config{HeaderStyle: HeaderUnderscored})
	r := u.do("POST", "/v1/queries", `{"source":"universal","url":"https://shop.com/","render":"html"}`).expect(t, 202)
	if r.header.Get(under) != "50" || r.header.Get(underRender) != "12" || r.header.Get(dashedLimit) != "" {
		t.Fatalf("underscored headers: %v", r.header)
	}
	a := setup(t, Config{HeaderStyle: HeaderAlternating})
	var got []bool
	for i := 0; i < 4; i++ {
		h := a.do("POST", "/v1/queries", `{"source":"universal","url":"https://shop.com/"}`).expect(t, 202).header
		got = append(got, h.Get(dashedLimit) != "")
		if (h.Get(dashedLimit) != "") == (h.Get(under) != "") {
			t.Fatalf("exactly one spelling per response: %v", h)
		}
	}
	if !got[0] || got[1] || !got[2] || got[3] {
		t.Fatalf("alternation = %v, want dashed first", got)
	}
}
