package core_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/oxypipe/oxypipe/pkg/destination/internal/core"
)

func TestSanitize(t *testing.T) {
	t.Parallel()
	cases := []struct{ in, want string }{
		{`Put "https://acct.blob.core.windows.net/c/x.json?sv=2024-01-01&sig=abc%2Bdef&se=2026": EOF`,
			`Put "https://acct.blob.core.windows.net/c/x.json?sv=2024-01-01&sig=REDACTED&se=2026": EOF`},
		{"GET https://b.s3.amazonaws.com/k?X-Amz-Credential=AKIA/x&X-Amz-Signature=ff00 failed",
			"GET https://b.s3.amazonaws.com/k?X-Amz-Credential=REDACTED&X-Amz-Signature=REDACTED failed"},
		{"AccountName=a;AccountKey=c2VjcmV0;EndpointSuffix=x", "AccountName=a;AccountKey=REDACTED;EndpointSuffix=x"},
		{"dial https://user:pw@host/p", "dial https://redacted:redacted@host/p"},
		{"no secrets here: monkey=1", "no secrets here: monkey=1"},
	}
	for _, tc := range cases {
		if got := core.Sanitize(tc.in); got != tc.want {
			t.Errorf("Sanitize(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestErrorTextIsSanitizedAndUnwraps(t *testing.T) {
	t.Parallel()
	cause := fmt.Errorf("%w: GET https://h/c?sig=SECRET", core.ErrAccessDenied)
	err := core.Fail("probe", "az://c/p/", "", cause)
	if got, want := err.Error(), "destination az://c/p/: probe: access denied: GET https://h/c?sig=REDACTED"; got != want {
		t.Fatalf("Error() = %q, want %q", got, want)
	}
	if !errors.Is(err, core.ErrAccessDenied) || !errors.Is(err, cause) {
		t.Fatal("the error does not unwrap to its cause")
	}
	if core.Fail("put", "x", "n", nil) != nil {
		t.Fatal("Fail(nil) is not nil")
	}
}

func TestValidateName(t *testing.T) {
	t.Parallel()
	good := []string{"7500000000000000001.json", "20260929T170412.345Z.jsonl", "a b.json", "ü.json", "x..y", "a.", "-", "name*"}
	for _, n := range good {
		if err := core.ValidateName(n); err != nil {
			t.Errorf("ValidateName(%q) = %v, want nil", n, err)
		}
	}
	bad := []string{"", ".", "..", ".x", "a/b", "/a", `a\b`, "a\x00", "a\x7f", "a\r", "\xff"}
	for _, n := range bad {
		if err := core.ValidateName(n); !errors.Is(err, core.ErrInvalidName) {
			t.Errorf("ValidateName(%q) = %v, want ErrInvalidName", n, err)
		}
	}
	long := make([]byte, core.MaxNameLen)
	for i := range long {
		long[i] = 'n'
	}
	if err := core.ValidateName(string(long)); err != nil {
		t.Errorf("a %d-byte name: %v, want nil", len(long), err)
	}
	if err := core.ValidateName(string(long) + "n"); !errors.Is(err, core.ErrInvalidName) {
		t.Errorf("a %d-byte name: %v, want ErrInvalidName", len(long)+1, err)
	}
}

func TestKeyPrefix(t *testing.T) {
	t.Parallel()
	cases := []struct{ in, want string }{
		{"", ""}, {"/", ""}, {"a", "a/"}, {"/a/b/", "a/b/"}, {"a//b", "a/b/"}, {"a b/ü", "a b/ü/"},
	}
	for _, tc := range cases {
		if got, err := core.KeyPrefix(tc.in); err != nil || got != tc.want {
			t.Errorf("KeyPrefix(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
	for _, in := range []string{"..", "a/../b", "./a"} {
		if _, err := core.KeyPrefix(in); !errors.Is(err, core.ErrInvalidLocation) {
			t.Errorf("KeyPrefix(%q) = %v, want ErrInvalidLocation", in, err)
		}
	}
}
