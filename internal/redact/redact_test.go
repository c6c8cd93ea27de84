package redact_test

import (
	"testing"

	"github.com/oxypipe/oxypipe/internal/redact"
)

func TestString(t *testing.T) {
	t.Parallel()
	cases := []struct{ name, in, want string }{
		{"no url", "plain text", "plain text"},
		{"url without credentials", "https://example.com/a@b", "https://example.com/a@b"},
		{"user and password", "https://KEY:SECRET@s3.example.com/bucket", "https://redacted:redacted@s3.example.com/bucket"},
		{"user only", "ftp://alice@host/x", "ftp://redacted:redacted@host/x"},
		{"inside json", `{"storage_url":"s3://A:B@host/p","url":"https://x.io"}`, `{"storage_url":"s3://redacted:redacted@host/p","url":"https://x.io"}`},
		{"two urls", "a http://u:p@h1 b http://v:q@h2", "a http://redacted:redacted@h1 b http://redacted:redacted@h2"},
		{"at sign in query is kept", "https://example.com/?mail=a@b.c", "https://example.com/?mail=a@b.c"},
		{"empty", "", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := redact.String(tc.in); got != tc.want {
				t.Fatalf("String(%q) = %q, want %q", tc.in, got, tc.want)
			}
			if got := string(redact.Bytes([]byte(tc.in))); got != tc.want {
				t.Fatalf("Bytes(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

func FuzzString(f *testing.F) {
	f.Add("https://KEY:SECRET@host/p")
	f.Add("no scheme")
	f.Fuzz(func(t *testing.T, s string) {
		out := redact.String(s)
		if redact.String(out) != out {
			t.Fatalf("redaction is not idempotent for %q", s)
		}
	})
}
