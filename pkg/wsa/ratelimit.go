package wsa

import (
	"net/http"
	"strconv"
	"strings"
)

// RateLimit is the submission budget the API reported on one answer.
// Submissions and their 429s carry it; status and results answers do not,
// because GETs are not limited. There is no Retry-After and no reset time:
// the window is about one second from the first submission.
type RateLimit struct {
	// Total and TotalRemaining are the jobs per window and what is left of
	// them ("total requests").
	Total, TotalRemaining int
	// Render and RenderRemaining are the same for rendered jobs ("total
	// render requests"); the API only sends them on rendered submissions.
	Render, RenderRemaining int
	// Known is true when the answer carried the total headers.
	Known bool
	// RenderKnown is true when the answer carried the render headers.
	RenderKnown bool
}

// ParseRateLimit reads the x-ratelimit-* headers in either spelling:
//
//	x-ratelimit-total-requests-<uuid>-limit / -remaining
//	x-ratelimit-total_requests_<uuid>-<client>-limit / -remaining
//
// and the render variants (total-render-requests, total_render_requests).
// When several headers of one kind appear (more than one bucket), the
// tightest wins.
func ParseRateLimit(h http.Header) RateLimit {
	var rl RateLimit
	var haveTotal, haveTotalRem, haveRender, haveRenderRem bool
	for name, values := range h {
		if len(values) == 0 || len(name) < len("x-ratelimit-") || !strings.EqualFold(name[:len("x-ratelimit-")], "x-ratelimit-") {
			continue
		}
		rest := strings.ReplaceAll(strings.ToLower(name[len("x-ratelimit-"):]), "_", "-")
		var remaining bool
		switch {
		case strings.HasSuffix(rest, "-remaining"):
			remaining = true
		case strings.HasSuffix(rest, "-limit"):
		default:
			continue
		}
		n, err := strconv.Atoi(strings.TrimSpace(values[0]))
		if err != nil || n < 0 {
			continue
		}
		switch {
		case strings.HasPrefix(rest, "total-render-requests"):
			if remaining {
				rl.RenderRemaining, haveRenderRem = tighter(rl.RenderRemaining, haveRenderRem, n)
			} else {
				rl.Render, haveRender = tighter(rl.Render, haveRender, n)
			}
		case strings.HasPrefix(rest, "total-requests"):
			if remaining {
				rl.TotalRemaining, haveTotalRem = tighter(rl.TotalRemaining, haveTotalRem, n)
			} else {
				rl.Total, haveTotal = tighter(rl.Total, haveTotal, n)
			}
		}
	}
	rl.Known = haveTotal && haveTotalRem
	rl.RenderKnown = haveRender && haveRenderRem
	if !rl.Known {
		rl.Total, rl.TotalRemaining = 0, 0
	}
	if !rl.RenderKnown {
		rl.Render, rl.RenderRemaining = 0, 0
	}
	return rl
}

func tighter(cur int, have bool, n int) (int, bool) {
	if !have || n < cur {
		return n, true
	}
	return cur, true
}
