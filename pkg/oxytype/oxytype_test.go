package oxytype_test

import (
	"testing"

	"github.com/oxypipe/oxypipe/pkg/oxytype"
)

func TestRunStateOpenAndTerminal(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		s        oxytype.RunState
		terminal bool
	}{
		{oxytype.RunStateAnnounced, false},
		{oxytype.RunStateReady, false},
		{oxytype.RunStateStopping, false},
		{oxytype.RunStateFailed, true},
		{oxytype.RunStateCompleted, true},
	} {
		if got := c.s.Terminal(); got != c.terminal {
			t.Errorf("%s.Terminal() = %v, want %v", c.s, got, c.terminal)
		}
		if got := c.s.Open(); got == c.terminal {
			t.Errorf("%s.Open() = %v, want %v", c.s, got, !c.terminal)
		}
		if !c.s.Valid() {
			t.Errorf("%s is not Valid", c.s)
		}
	}
	if oxytype.RunState("paused").Valid() {
		t.Error(`"paused" is Valid`)
	}
}

func TestDataTypeRankIsThePipelineOrder(t *testing.T) {
	t.Parallel()
	order := []oxytype.DataType{oxytype.DataPayload, oxytype.DataSubmitted, oxytype.DataDone, oxytype.DataWritten}
	for i, d := range order {
		if got := d.Rank(); got != i+1 {
			t.Errorf("%s.Rank() = %d, want %d", d, got, i+1)
		}
	}
	for _, d := range []oxytype.DataType{oxytype.DataStatus, "later"} {
		if got := d.Rank(); got != 0 {
			t.Errorf("%s.Rank() = %d, want 0 (below every stage)", d, got)
		}
	}
	if oxytype.FinalDataType != oxytype.DataWritten {
		t.Errorf("FinalDataType = %s", oxytype.FinalDataType)
	}
}

func TestPartyStringRoundTrips(t *testing.T) {
	t.Parallel()
	for _, p := range []oxytype.Party{{Type: "writer", Name: "w-1"}, {Type: "feeder"}} {
		if got := oxytype.ParseParty(p.String()); got != p {
			t.Errorf("ParseParty(%q) = %+v, want %+v", p.String(), got, p)
		}
	}
	if got := (oxytype.Party{Type: "feeder"}).String(); got != "feeder" {
		t.Errorf("String() = %q", got)
	}
}
