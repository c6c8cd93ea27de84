package wsa_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/oxypipe/oxypipe/pkg/payload"
	"github.com/oxypipe/oxypipe/pkg/wsa"
)

func TestDecodeError(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		code    int
		reason  string
		body    string
		message string
		traceID string
	}{
		{"message and trace id", 404, "", `{"message":"Query not found.","trace_id":"abc"}`, "Query not found.", "abc"},
		{"errors as strings", 400, "", `{"errors":["a.","b."]}`, "a. b.", ""},
		{"errors as objects", 400, "", `{"errors":[{"message":"Parameter ` + "`url`" + ` is invalid.","url":"x"},{"message":"c."}]}`, "Parameter `url` is invalid. c.", ""},
		{"errors as one object", 422, "", `{"errors":{"message":"Bad instruction."}}`, "Bad instruction.", ""},
		{"message wins over errors", 400, "", `{"message":"m.","errors":["e."]}`, "m.", ""},
		{"empty message falls to errors", 400, "", `{"message":"","errors":["e."]}`, "e.", ""},
		{"empty body takes the reason phrase", 401, "Unauthorized", ``, "Unauthorized", ""},
		{"empty body without a reason", 401, "", ``, "Unauthorized", ""},
		{"non-standard code", 524, "", ``, "A Timeout Occurred", ""},
		{"nginx 404", 404, "Not Found", `{"message":"Resource not found"}`, "Resource not found", ""},
		{"html page", 500, "Internal Server Error", `<html><body>Something broke. trace_id: 00000001000000000000000000000000</body></html>`, "Internal Server Error", "00000001000000000000000000000000"},
		{"html trace id in a tag", 500, "", `<p>trace_id: <b>d3adb33f</b></p>`, "Internal Server Error", "d3adb33f"},
		{"json list body", 400, "Bad Request", `["x"]`, "Bad Request", ""},
		{"credentials in a message are redacted", 400, "", `{"message":"Bad storage_url https://KEY:SECRET@s3.io/b"}`, "Bad storage_url https://redacted:redacted@s3.io/b", ""},
		{"control characters become spaces", 400, "", `{"message":"a\nb\tc"}`, "a b c", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := wsa.DecodeError(tc.code, tc.reason, []byte(tc.body))
			if e.StatusCode != tc.code || e.Message != tc.message || e.TraceID != tc.traceID {
				t.Fatalf("DecodeError = {%d %q %q}, want {%d %q %q}", e.StatusCode, e.Message, e.TraceID, tc.code, tc.message, tc.traceID)
			}
			if want := fmt.Sprintf("%d %s", tc.code, tc.message); e.Error() != want {
				t.Fatalf("Error() = %q, want %q", e.Error(), want)
			}
		})
	}
}

func TestDecodeErrorBoundsTheMessage(t *testing.T) {
	t.Parallel()
	e := wsa.DecodeError(400, "", []byte(`{"message":"`+strings.Repeat("é", 5000)+`"}`))
	if len(e.Message) > 1100 || !utf8.ValidString(e.Message) || !strings.HasSuffix(e.Message, "…") {
		t.Fatalf("message of %d bytes, valid %v", len(e.Message), utf8.ValidString(e.Message))
	}
}

func TestClassifyOtherErrors(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		err   error
		class wsa.Class
	}{
		{"nil", nil, wsa.None},
		{"local validation", &payload.ValidationError{Key: "url", Message: "The hostname cannot be an ip address."}, wsa.Reject},
		{"wrapped API error", fmt.Errorf("submit: %w", &wsa.APIError{StatusCode: 503}), wsa.Retry},
		{"408", &wsa.APIError{StatusCode: 408, Message: "Timed out."}, wsa.Reject},
		{"batch value refused", &wsa.APIError{StatusCode: 202, Message: "Parameter `url` is invalid."}, wsa.Reject},
		{"caller deadline", fmt.Errorf("x: %w", context.DeadlineExceeded), wsa.Canceled},
		{"unknown error", errors.New("boom"), wsa.Stop},
		{"redirect not followed", &wsa.APIError{StatusCode: 302}, wsa.Stop},
	}
	for _, tc := range cases {
		if got := wsa.Classify(tc.err); got != tc.class {
			t.Errorf("%s: Classify = %v, want %v", tc.name, got, tc.class)
		}
	}
	if wsa.MayHaveCreatedJob(nil) || wsa.MayHaveCreatedJob(errors.New("x")) {
		t.Error("MayHaveCreatedJob true for a non-API error")
	}
	names := []string{wsa.None.String(), wsa.Retry.String(), wsa.Reject.String(), wsa.Stop.String(), wsa.Throttle.String(), wsa.Canceled.String()}
	if strings.Join(names, ",") != "none,retry,reject,stop,throttle,canceled" {
		t.Errorf("class names = %v", names)
	}
}

// FuzzDecodeError checks that any error body decodes without a panic into
// a bounded, one-line, valid UTF-8 message that never shows URL credentials.
func FuzzDecodeError(f *testing.F) {
	f.Add(400, `{"message":"Query parameter is empty."}`)
	f.Add(400, `{"errors":["[product_id]: This field is missing."]}`)
	f.Add(202, `{"errors":[{"message":"m","url":"http://u:p@h"}]}`)
	f.Add(422, `{"errors":{"message":"x"}}`)
	f.Add(500, `<html>trace_id: <i>abc</i></html>`)
	f.Add(401, ``)
	f.Add(599, `{"message":1,"trace_id":["x"],"errors":null}`)
	f.Fuzz(func(t *testing.T, code int, body string) {
		e := wsa.DecodeError(code, "", []byte(body))
		if e.StatusCode != code {
			t.Fatalf("status %d, want %d", e.StatusCode, code)
		}
		for _, s := range []string{e.Message, e.TraceID} {
			if !utf8.ValidString(s) || strings.ContainsAny(s, "\n\r") || len(s) > 1100 {
				t.Fatalf("bad text %q", s)
			}
		}
		if strings.Contains(e.Message, "://") && !strings.Contains(e.Message, "redacted:redacted@") && strings.Contains(e.Message, "@") {
			at := strings.Index(e.Message, "://")
			rest := e.Message[at+3:]
			if end := strings.IndexAny(rest, "/?#@ \"'"); end >= 0 && rest[end] == '@' {
				t.Fatalf("credentials left in %q", e.Message)
			}
		}
		_ = e.Error()
		_ = wsa.Classify(e)
	})
}
