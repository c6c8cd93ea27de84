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
// Placeholder. A string with nothing to redact is returned unchanged
// without allocation.
func String(s string) string {
	if !hasUserinfo(s) {
		return s
	}
	return userinfo.ReplaceAllString(s, "${1}"+Placeholder+"@")
}

// Bytes is String for byte slices (for example a raw JSON payload). It
// returns b itself when nothing needs redacting.
func Bytes(b []byte) []byte {
	if !hasUserinfo(string(b)) {
		return b
	}
	return userinfo.ReplaceAll(b, []byte("${1}"+Placeholder+"@"))
}

// hasUserinfo reports whether userinfo matches somewhere in s, without
// running the expression: every payload holds a URL, few hold credentials,
// and the expression took a quarter of a status event's encoding.
func hasUserinfo(s string) bool {
	for i := 0; i+2 < len(s); i++ {
		if s[i] != ':' || s[i+1] != '/' || s[i+2] != '/' {
			continue
		}
		j := i + 3
		for j < len(s) && !endsUserinfo(s[j]) {
			j++
		}
		if j > i+3 && j < len(s) && s[j] == '@' {
			return true
		}
	}
	return false
}

// endsUserinfo reports whether c cannot be part of a userinfo: one of
// '/', '?', '#', '@', a quote or white space (as \s matches it).
func endsUserinfo(c byte) bool {
	switch c {
	case '/', '?', '#', '@', '"', '\'', ' ', '\t', '\n', '\f', '\r':
		return true
	}
	return false
}
