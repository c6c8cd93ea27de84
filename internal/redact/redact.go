// Package redact replaces credentials embedded in URLs with "redacted:redacted".
//
// Payloads may carry secrets inside URLs (an s3_compatible storage_url such as
// https://KEY:SECRET@host/bucket, a proxy URL, a callback with basic auth).
// Those strings travel into logs, run logs, errors and status events, so every
// place that prints a payload or an error text passes it through this package
// first. The rule: the userinfo between "://" and the next "@" is replaced,
// whatever it holds, so that no shape of credential slips through.
package redact

import "regexp"

// Placeholder is what stands in for the userinfo of a URL.
const Placeholder = "redacted:redacted"

// userinfo matches "scheme://USERINFO@" anywhere in a string. The userinfo may
// not contain '/', '?', '#', '@', whitespace or quotes, so a path or a query
// that merely contains '@' later on is left alone.
var userinfo = regexp.MustCompile(`(://)[^/?#@\s"']+@`)

// String returns s with the userinfo of every URL in it replaced by
// Placeholder. Strings without "://" are returned unchanged without
// allocation.
func String(s string) string {
	if !containsScheme(s) {
		return s
	}
	return userinfo.ReplaceAllString(s, "${1}"+Placeholder+"@")
}

// Bytes is String for byte slices (for example a raw JSON payload). It
// returns b itself when nothing needs redacting.
func Bytes(b []byte) []byte {
	if !containsScheme(string(b)) {
		return b
	}
	return userinfo.ReplaceAll(b, []byte("${1}"+Placeholder+"@"))
}

func containsScheme(s string) bool {
	for i := 0; i+2 < len(s); i++ {
		if s[i] == ':' && s[i+1] == '/' && s[i+2] == '/' {
			return true
		}
	}
	return false
}
