package procenv_test

import (
	"testing"
	"time"

	"github.com/oxypipe/oxypipe/internal/procenv"
)

func TestEnvReadsSetValuesAndDefaultsUnsetOnes(t *testing.T) {
	t.Parallel()
	vars := map[string]string{"N": "7", "B": "true", "D": "90s", "S": "x"}
	env := procenv.New(func(k string) string { return vars[k] })
	if got := env.Int("N", 1); got != 7 {
		t.Errorf("Int(N) = %d, want 7", got)
	}
	if got := env.Int("UNSET", 3); got != 3 {
		t.Errorf("Int(UNSET) = %d, want the default 3", got)
	}
	if got := env.Bool("B", false); !got {
		t.Error("Bool(B) = false, want true")
	}
	if got := env.Duration("D", time.Second); got != 90*time.Second {
		t.Errorf("Duration(D) = %v, want 1m30s", got)
	}
	if got := env.String("S", "def"); got != "x" {
		t.Errorf("String(S) = %q, want x", got)
	}
	if got := env.String("UNSET", "def"); got != "def" {
		t.Errorf("String(UNSET) = %q, want def", got)
	}
	if err := env.Err(); err != nil {
		t.Fatalf("Err = %v, want nil", err)
	}
}

func TestEnvNamesEveryMalformedValue(t *testing.T) {
	t.Parallel()
	vars := map[string]string{"OXY_NATS_REPLICAS": "x", "OXY_NO_BATCH": "maybe", "OXY_PENDING_LIMIT": "soon"}
	env := procenv.New(func(k string) string { return vars[k] })
	if got := env.Int("OXY_NATS_REPLICAS", 1); got != 1 {
		t.Errorf("a malformed Int returned %d, want the default 1", got)
	}
	env.Bool("OXY_NO_BATCH", false)
	env.Duration("OXY_PENDING_LIMIT", time.Hour)
	err := env.Err()
	want := `OXY_NATS_REPLICAS="x" is not an integer` + "\n" +
		`OXY_NO_BATCH="maybe" is not a boolean` + "\n" +
		`OXY_PENDING_LIMIT="soon" is not a duration`
	if err == nil || err.Error() != want {
		t.Fatalf("Err = %v, want\n%s", err, want)
	}
}

func TestHostnameIsNeverEmpty(t *testing.T) {
	t.Parallel()
	if procenv.Hostname() == "" {
		t.Fatal("Hostname is empty")
	}
}
