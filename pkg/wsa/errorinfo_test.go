package wsa_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/oxypipe/oxypipe/pkg/oxytype"
	"github.com/oxypipe/oxypipe/pkg/wsa"
)

func TestErrorInfo(t *testing.T) {
	t.Parallel()
	code := func(c int) *int { return &c }
	cases := []struct {
		name string
		err  error
		want *oxytype.ErrorInfo
	}{
		{"no error", nil, nil},
		{"an API answer", fmt.Errorf("checking: %w", &wsa.APIError{StatusCode: 404, Message: "Query not found.", TraceID: "t1"}),
			&oxytype.ErrorInfo{StatusCode: code(404), Message: "Query not found.", TraceID: "t1"}},
		{"no answer", &wsa.APIError{Message: "ConnectError: connection refused", Err: errors.New("dial")},
			&oxytype.ErrorInfo{Message: "ConnectError: connection refused"}},
		{"results gone", &wsa.NoContentError{JobID: "7500000000000000001", JobStatus: wsa.JobDone},
			&oxytype.ErrorInfo{StatusCode: code(204), Message: "job 7500000000000000001: no results: the job is done and its results are gone"}},
		{"any other error", errors.New("disk full"), &oxytype.ErrorInfo{Message: "disk full"}},
	}
	for _, tc := range cases {
		got := wsa.ErrorInfo(tc.err)
		if fmt.Sprintf("%+v/%v", got, got.String()) != fmt.Sprintf("%+v/%v", tc.want, tc.want.String()) {
			t.Errorf("%s: ErrorInfo(%v) = %+v (%s), want %+v (%s)", tc.name, tc.err, got, got.String(), tc.want, tc.want.String())
		}
	}
}

// Whatever carries a URL with credentials (a fallback message built from an
// error's text, or the API's own message), the run log never holds them.
func TestErrorInfoRedactsEveryMessage(t *testing.T) {
	t.Parallel()
	for _, err := range []error{
		errors.New(`Get "https://user:secret@proxy.example/x": connection reset`),
		&wsa.APIError{StatusCode: 400, Message: "bad storage_url s3://AKIA:secret@bucket/"},
		&wsa.APIError{Message: `ReadError: Get "https://user:secret@proxy.example/x": EOF`},
	} {
		info := wsa.ErrorInfo(err)
		if info == nil || strings.Contains(info.Message, "secret") || !strings.Contains(info.Message, "redacted") {
			t.Errorf("ErrorInfo(%v).Message = %+v: want the credentials redacted", err, info)
		}
	}
}
