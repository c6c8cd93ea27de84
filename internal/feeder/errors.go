package feeder

import (
	"fmt"

	"github.com/oxypipe/oxypipe/pkg/messages"
	"github.com/oxypipe/oxypipe/pkg/oxytype"
)

// runStateError wraps a state a run cannot be resumed from.
func runStateError(run string, rec *messages.RunRecord) error {
	switch rec.State {
	case oxytype.RunStateCompleted:
		return fmt.Errorf("feeder: run %s: %w", run, oxytype.ErrRunCompleted)
	case oxytype.RunStateFailed:
		return &oxytype.RunFailedError{Run: run, Reason: rec.Reason}
	}
	return nil
}
