package redact

import "testing"

// FuzzHasUserinfo holds the quick check to the expression it stands in for.
func FuzzHasUserinfo(f *testing.F) {
	for _, s := range []string{
		"https://KEY:SECRET@host/p", "https://example.com/?mail=a@b.c", "://@", "a://b@", "x://\u00e9@h",
		`{"url":"https://x.io","storage_url":"s3://A:B@h/p"}`, "s3://a b@c", "s3://a\fb@c", "s3://a\vb@c", ":/://x@", "",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := hasUserinfo(s), userinfo.MatchString(s); got != want {
			t.Fatalf("hasUserinfo(%q) = %v, the expression says %v", s, got, want)
		}
	})
}
