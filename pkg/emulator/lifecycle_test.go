package emulator

import (
	"bytes"
	"encoding/base64"
	"image/png"
	"regexp"
	"strings"
	"testing"
	"time"
)

func TestLifecyclePendingThenDone(t *testing.T) {
	t.Parallel()
	f := setup(t, Config{JobTime: 3 * time.Second})
	job := f.submit(`{"source":"universal","url":"https://sandbox.oxylabs.io/products/7"}`)
	id := job["id"].(string)

	t.Run("pending: status 200 pending, results and content 204 with the status header", func(t *testing.T) {
		st := f.do("GET", jobPath(id), "").expect(t, 200).object(t)
		if st["status"] != "pending" || st["updated_at"] != st["created_at"] {
			t.Fatalf("status %v updated_at %v", st["status"], st["updated_at"])
		}
		for _, p := range []string{"/results", "/results/1/content"} {
			r := f.do("GET", jobPath(id)+p, "").expect(t, 204)
			if len(r.body) != 0 || r.header.Get("X-Oxylabs-Job-Status") != "pending" || r.header.Get("X-Oxyserps-Job-Status") != "pending" {
				t.Fatalf("%s: body %q headers %v", p, r.body, r.header)
			}
		}
	})

	f.clock.Advance(3 * time.Second)

	t.Run("done: updated_at is the finish time", func(t *testing.T) {
		st := f.do("GET", jobPath(id), "").expect(t, 200).object(t)
		if st["status"] != "done" || st["updated_at"] != "2026-01-01 00:00:03" || st["created_at"] != "2026-01-01 00:00:00" {
			t.Fatalf("status %v created %v updated %v", st["status"], st["created_at"], st["updated_at"])
		}
	})

	t.Run("results: one raw entry with the canned page and the job", func(t *testing.T) {
		r := f.do("GET", jobPath(id)+"/results", "").expect(t, 200)
		if r.header.Get("X-Oxylabs-Job-Status") != "done" || r.header.Get("X-Oxylabs-Job-Id") != id {
			t.Fatalf("headers %v", r.header)
		}
		body := r.object(t)
		results := body["results"].([]any)
		if len(results) != 1 {
			t.Fatalf("%d results, want 1", len(results))
		}
		e := results[0].(map[string]any)
		if e["type"] != "raw" || e["page"] != 1.0 || e["status_code"] != 200.0 || e["job_id"] != id ||
			e["url"] != "https://sandbox.oxylabs.io/products/7" || e["updated_at"] != "2026-01-01 00:00:03" {
			t.Fatalf("entry %v", e)
		}
		html := e["content"].(string)
		if !strings.HasPrefix(html, "<!DOCTYPE html>") || !strings.Contains(html, `class="price"`) {
			t.Fatalf("content %q", html)
		}
		if _, ok := e["_request"]; !ok {
			t.Fatal("universal entries carry _request")
		}
		if body["job"].(map[string]any)["status"] != "done" {
			t.Fatal("job.status should be done")
		}
		// The content endpoint serves the same page, unwrapped.
		c := f.do("GET", jobPath(id)+"/results/1/content", "").expect(t, 200)
		if string(c.body) != html || c.header.Get("Content-Type") != "text/html; charset=utf-8" {
			t.Fatalf("content endpoint: %q %v", c.body, c.header.Get("Content-Type"))
		}
		// A page the job did not fetch is 204 with status done.
		g := f.do("GET", jobPath(id)+"/results/2/content", "").expect(t, 204)
		if g.header.Get("X-Oxylabs-Job-Status") != "done" {
			t.Fatalf("unfetched page header %v", g.header)
		}
	})
}

func TestResultsTypes(t *testing.T) {
	t.Parallel()
	f := setup(t, Config{})
	job := f.submit(`{"source":"amazon_search","query":"usb c cable","pages":2,"parse":true,"markdown":true,"xhr":true,"render":"html"}`)
	id := job["id"].(string)
	f.clock.Advance(time.Minute)

	type entry struct {
		typ  string
		page float64
	}
	cases := []struct {
		name  string
		query string
		want  []entry
	}{
		{"default is parsed when parse is on", "", []entry{{"parsed", 1}, {"parsed", 2}}},
		{"a comma list gives each type per page", "?type=raw,xhr", []entry{{"raw", 1}, {"xhr", 1}, {"raw", 2}, {"xhr", 2}}},
		{"unknown names are ignored and duplicates dropped", "?type=markdown,bogus,markdown", []entry{{"markdown", 1}, {"markdown", 2}}},
		{"a type the job did not enable comes back empty", "?type=png", []entry{{"png", 1}, {"png", 2}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			results := f.do("GET", jobPath(id)+"/results"+c.query, "").expect(t, 200).object(t)["results"].([]any)
			if len(results) != len(c.want) {
				t.Fatalf("%d entries, want %d", len(results), len(c.want))
			}
			for i, w := range c.want {
				e := results[i].(map[string]any)
				if e["type"] != w.typ || e["page"] != w.page {
					t.Fatalf("entry %d = %v/%v, want %v", i, e["type"], e["page"], w)
				}
				switch w.typ {
				case "parsed":
					content := e["content"].(map[string]any)
					if content["parse_status_code"] != 12000.0 || e["parser_type"] != "" {
						t.Fatalf("parsed entry %v", e)
					}
				case "xhr":
					if _, ok := e["content"].([]any); !ok {
						t.Fatalf("xhr content is %T, want an array", e["content"])
					}
				case "png":
					if e["content"] != "" {
						t.Fatalf("png was not enabled; content = %v", e["content"])
					}
				case "raw", "markdown":
					if s, _ := e["content"].(string); s == "" {
						t.Fatalf("%s content is empty", w.typ)
					}
				}
			}
		})
	}

	t.Run("content endpoint types", func(t *testing.T) {
		p := f.do("GET", jobPath(id)+"/results/2/content", "").expect(t, 200)
		if p.header.Get("Content-Type") != "application/json" || p.object(t)["parse_status_code"] != 12000.0 {
			t.Fatalf("parsed content: %v %s", p.header.Get("Content-Type"), p.body)
		}
		x := f.do("GET", jobPath(id)+"/results/1/content?type=xhr", "").expect(t, 200)
		if string(x.body) != "[]" {
			t.Fatalf("xhr content %q", x.body)
		}
		f.do("GET", jobPath(id)+"/results/1/content?type=png", "").expect(t, 204)
		f.do("GET", jobPath(id)+"/results/3/content", "").expect(t, 204)
	})
}

func TestPNGIsBase64(t *testing.T) {
	t.Parallel()
	f := setup(t, Config{})
	id := f.submit(`{"source":"universal","url":"https://sandbox.oxylabs.io/","render":"png","parse":true,"parser_type":"x"}`)["id"].(string)
	f.clock.Advance(time.Minute)
	e := f.do("GET", jobPath(id)+"/results", "").expect(t, 200).object(t)["results"].([]any)[0].(map[string]any)
	if e["type"] != "png" {
		t.Fatalf("default type with png and parse = %v, want png", e["type"])
	}
	raw, err := base64.StdEncoding.DecodeString(e["content"].(string))
	if err != nil {
		t.Fatalf("png content is not Base64: %v", err)
	}
	if img, err := png.Decode(bytes.NewReader(raw)); err != nil || img.Bounds().Dx() != 1 {
		t.Fatalf("png content does not decode to an image: %v", err)
	}
	c := f.do("GET", jobPath(id)+"/results/1/content", "").expect(t, 200)
	if c.header.Get("Content-Type") != "text/html; charset=utf-8" || string(c.body) != e["content"] {
		t.Fatalf("png content endpoint: %v", c.header.Get("Content-Type"))
	}
}

func TestFaultedJob(t *testing.T) {
	t.Parallel()
	f := setup(t, Config{Rules: []Rule{{Pattern: regexp.MustCompile(`fault`), Outcome: Outcome{Fault: true, JobTime: 17 * time.Second}}}})
	id := f.submit(`{"source":"universal","url":"https://oxy-fault.com/","pages":3}`)["id"].(string)
	f.clock.Advance(16 * time.Second)
	f.do("GET", jobPath(id)+"/results", "").expect(t, 204)
	f.clock.Advance(time.Second)
	st := f.do("GET", jobPath(id), "").expect(t, 200).object(t)
	if st["status"] != "faulted" || st["updated_at"] != "2026-01-01 00:00:17" || len(st["statuses"].([]any)) != 0 {
		t.Fatalf("status object %v", st)
	}
	r := f.do("GET", jobPath(id)+"/results?type=parsed,raw", "").expect(t, 200)
	if r.header.Get("X-Oxylabs-Job-Status") != "faulted" {
		t.Fatal("missing faulted status header")
	}
	results := r.object(t)["results"].([]any)
	if len(results) != 1 {
		t.Fatalf("a faulted job has one entry, got %d", len(results))
	}
	e := results[0].(map[string]any)
	if e["status_code"] != 613.0 || e["content"] != "" || e["type"] != "raw" {
		t.Fatalf("faulted entry %v", e)
	}
	c := f.do("GET", jobPath(id)+"/results/1/content", "").expect(t, 204)
	if c.header.Get("X-Oxylabs-Job-Status") != "faulted" {
		t.Fatal("content of a faulted job: 204 with status faulted")
	}
}

func TestExpiryAndPurge(t *testing.T) {
	t.Parallel()
	f := setup(t, Config{ResultsTTL: 24 * time.Hour, JobTTL: 72 * time.Hour})
	id := f.submit(`{"source":"universal","url":"https://sandbox.oxylabs.io/products/1"}`)["id"].(string)
	f.clock.Advance(2*time.Second + 24*time.Hour - time.Second)
	f.do("GET", jobPath(id)+"/results", "").expect(t, 200)
	f.clock.Advance(time.Second)
	for _, p := range []string{"/results", "/results/1/content"} {
		r := f.do("GET", jobPath(id)+p, "").expect(t, 204)
		if r.header.Get("X-Oxylabs-Job-Status") != "done" {
			t.Fatalf("expired %s: want status done, got %v", p, r.header)
		}
	}
	if f.do("GET", jobPath(id), "").expect(t, 200).object(t)["status"] != "done" {
		t.Fatal("the status endpoint outlives the results")
	}
	f.clock.Advance(48 * time.Hour)
	for _, p := range []string{"", "/results"} {
		if r := f.do("GET", jobPath(id)+p, "").expect(t, 404); r.message(t) != "Query not found." {
			t.Fatalf("purged %q: %s", p, r.body)
		}
	}
}

func TestStayPendingAndTimeScale(t *testing.T) {
	t.Parallel()
	f := setup(t, Config{
		TimeScale: 0.5,
		Rules:     []Rule{{Pattern: regexp.MustCompile(`/forever`), Outcome: Outcome{StayPending: true}}},
	})
	forever := f.submit(`{"source":"universal","url":"https://shop.com/forever"}`)["id"].(string)
	scaled := f.submit(`{"source":"universal","url":"https://shop.com/scaled"}`)["id"].(string)
	f.clock.Advance(999 * time.Millisecond)
	f.do("GET", jobPath(scaled)+"/results", "").expect(t, 204)
	f.clock.Advance(time.Millisecond)
	f.do("GET", jobPath(scaled)+"/results", "").expect(t, 200)
	f.clock.Advance(1000 * time.Hour)
	if f.do("GET", jobPath(forever), "").expect(t, 200).object(t)["status"] != "pending" {
		t.Fatal("a StayPending job must stay pending")
	}
}

func TestContentSizeServesLargeBodies(t *testing.T) {
	t.Parallel()
	const size = 1 << 20
	f := setup(t, Config{Rules: []Rule{{Pattern: regexp.MustCompile(`big`), Outcome: Outcome{ContentSize: size}}}})
	id := f.submit(`{"source":"universal","url":"https://shop.com/big"}`)["id"].(string)
	f.clock.Advance(time.Minute)
	for i := 0; i < 2; i++ {
		c := f.do("GET", jobPath(id)+"/results/1/content", "").expect(t, 200)
		if len(c.body) < size || len(c.body) > size+4096 || !strings.HasSuffix(string(c.body), "</main></body></html>") {
			t.Fatalf("content of %d bytes (want about %d) ending %q", len(c.body), size, c.body[len(c.body)-30:])
		}
		r := f.do("GET", jobPath(id)+"/results", "").expect(t, 200)
		content := r.object(t)["results"].([]any)[0].(map[string]any)["content"].(string)
		if content != string(c.body) {
			t.Fatal("results content differs from the content endpoint")
		}
	}
}
