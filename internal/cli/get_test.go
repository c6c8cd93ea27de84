package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/oxypipe/oxypipe/pkg/emulator"
)

func TestGetRefusesBeforeAnyRequest(t *testing.T) {
	t.Parallel()
	srv := emulator.NewServer(t, emulator.Config{})
	creds := []string{"OXY_API_URL=" + srv.URL, "OXY_WSA_USERNAME=u", "OXY_WSA_PASSWORD=p"}
	blocker := filepath.Join(t.TempDir(), "blocker")
	if err := os.WriteFile(blocker, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		vars []string
		args []string
		want string
	}{
		{"no id", creds, []string{"get"}, "error: no job id given"},
		{"an id that is not a number", creds, []string{"get", "7500000000000000001", "x1"}, `error: "x1" is not a job id`},
		{"no credentials", []string{"OXY_API_URL=" + srv.URL}, []string{"get", "7500000000000000001"}, "error: OXY_WSA_USERNAME and OXY_WSA_PASSWORD must be set"},
		{"a destination that cannot be written", creds, []string{"get", "7500000000000000001", "-d", filepath.Join(blocker, "out")}, "error: destination cannot be written, so nothing was sent"},
	}
	for _, c := range cases {
		res := run(t, c.vars, c.args...)
		if res.code != ExitUsage || !strings.HasPrefix(res.stderr, c.want) || res.stdout != "" {
			t.Errorf("%s: exit %d, stdout %q, stderr %q; want 2 and %q", c.name, res.code, res.stdout, res.stderr, c.want)
		}
	}
	if st := srv.Emulator.Stats(); len(st.Requests) != 0 {
		t.Errorf("requests were sent: %v", st.Requests)
	}
}
