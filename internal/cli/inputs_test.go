package cli

import (
	"strings"
	"testing"
)

func TestPayloadOptions(t *testing.T) {
	t.Parallel()
	t.Run("typed options and -p merge into every payload in their order", func(t *testing.T) {
		t.Parallel()
		res := runCtx(t, t.Context(), "", nil, "run", "--dry-run", "universal", "https://example.com/a", "b",
			"--pages", "2", "--no-parse", "--markdown", "-p", "client_notes=a=b", "-p", "context:=[ {\"key\": \"x\", \"value\": true} ]")
		want := `{"source":"universal","url":"https://example.com/a","pages":2,"markdown":true,"parse":false,"client_notes":"a=b","context":[{"key":"x","value":true}]}` + "\n" +
			`{"source":"universal","query":"b","pages":2,"markdown":true,"parse":false,"client_notes":"a=b","context":[{"key":"x","value":true}]}` + "\n"
		if res.code != 0 || res.stdout != want {
			t.Errorf("exit %d, stdout:\n%s\nwant:\n%s\nstderr: %s", res.code, res.stdout, want, res.stderr)
		}
		if !strings.HasSuffix(res.stderr, "Would submit 2 jobs, which bill at most 4 results\n") {
			t.Errorf("stderr %q", res.stderr)
		}
	})
	t.Run("--parse and --no-parse together are refused", func(t *testing.T) {
		t.Parallel()
		res := run(t, nil, "run", "--dry-run", "universal", "x", "--parse", "--no-parse")
		if res.code != ExitUsage || !strings.Contains(res.stderr, "--parse and --no-parse both set parse") {
			t.Errorf("exit %d, stderr %q", res.code, res.stderr)
		}
	})
	t.Run("-k must name an input key and needs a source", func(t *testing.T) {
		t.Parallel()
		res := run(t, nil, "run", "--dry-run", "universal", "x", "-k", "render")
		if res.code != ExitUsage || !strings.Contains(res.stderr, "-k/--input-key must be one of query, url,") {
			t.Errorf("exit %d, stderr %q", res.code, res.stderr)
		}
		res = runCtx(t, t.Context(), "{}", nil, "run", "--dry-run", "-k", "url")
		if res.code != ExitUsage || !strings.Contains(res.stderr, "it needs a SOURCE first") {
			t.Errorf("exit %d, stderr %q", res.code, res.stderr)
		}
	})
	t.Run("an option may set source for JSON lines without one, and clashes with a line that has one", func(t *testing.T) {
		t.Parallel()
		res := runCtx(t, t.Context(), `{"url": "https://example.com"}`+"\n"+`{"source": "universal", "url": "https://example.com/2"}`+"\n", nil,
			"run", "--dry-run", "-p", "source=universal")
		if res.code != ExitUsage || !strings.Contains(res.stderr, "error: line 2 sets source, and so does an option (-p source)") {
			t.Errorf("exit %d, stderr %q", res.code, res.stderr)
		}
	})
}

func TestInputKeyFor(t *testing.T) {
	t.Parallel()
	cases := []struct{ key, input, want string }{
		{"", "https://example.com", "url"},
		{"", "ftp://example.com", "url"},
		{"", "laptop bag", "query"},
		{"", "example.com", "query"},
		{"product_id", "https://example.com", "product_id"},
	}
	for _, c := range cases {
		if got := inputKeyFor(c.key, c.input); got != c.want {
			t.Errorf("inputKeyFor(%q, %q) = %q, want %q", c.key, c.input, got, c.want)
		}
	}
}
