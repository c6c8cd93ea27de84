package oxy_test

import (
	"context"
	"testing"
	"time"

	"github.com/oxypipe/oxypipe/pkg/emulator"
	"github.com/oxypipe/oxypipe/pkg/oxy"
)

// oxy run --state-dir promises that a resumed run never bills a payload
// twice, after a power loss too: the claim protocol needs every
// acknowledged claim on the disk, so the embedded broker must fsync every
// write before acknowledging it. Without a state directory there is
// nothing to resume, and nothing is synced.
func TestFaultTheStateDirBrokerSyncsEveryWrite(t *testing.T) {
	t.Parallel()
	em := emulator.NewServer(t, emulator.Config{JobTime: fastJobs})
	for _, tc := range []struct {
		name     string
		stateDir string
		want     bool
	}{
		{"with --state-dir, every write is synced before it is acknowledged", t.TempDir(), true},
		{"without, the state is temporary and not synced", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := testContext(t, 30*time.Second)
			c, err := oxy.NewClient(oxy.Config{Username: em.Username, Password: em.Password, BaseURL: em.URL, StateDir: tc.stateDir})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = c.Close(context.Background()) })
			cl, err := c.Cluster(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if got := cl.Server().SyncsEveryWrite(); got != tc.want {
				t.Fatalf("the embedded broker syncs every write: %v, want %v", got, tc.want)
			}
		})
	}
}
