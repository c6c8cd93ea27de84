package topology

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/oxypipe/oxypipe/pkg/messages"
	"github.com/oxypipe/oxypipe/pkg/oxytype"
)

// maxRunIDBumps bounds how many milliseconds AnnounceRun moves a run id
// forward to find a free one.
const maxRunIDBumps = 1000

// AnnounceRun creates the run's record (state announced) and publishes its
// announcement, and returns the run id.
//
// When ann.Run is empty the id is [messages.NewRunID](ann.StartedAt), moved
// forward a millisecond at a time while another run holds it, so two runs
// started in the same millisecond still get distinct, sortable ids. When
// ann.Run is set and taken, the error wraps ErrRunExists.
func (t *Topology) AnnounceRun(ctx context.Context, ann messages.RunAnnounced, origin oxytype.Party) (string, error) {
	derive := ann.Run == ""
	if derive {
		ann.Run = messages.NewRunID(ann.StartedAt)
	}
	ann.StartedAt = ann.StartedAt.UTC()
	data, err := ann.MarshalJSON()
	if err != nil {
		return "", err
	}
	if _, err := messages.DecodeRunAnnounced(ann.Subject(), data); err != nil {
		return "", fmt.Errorf("topology: announce: %w", err)
	}
	for bump := 0; ; bump++ {
		_, err := t.runs.Create(ctx, messages.RunRecord{Announced: ann, State: oxytype.RunStateAnnounced, UpdatedAt: time.Now().UTC()})
		if err == nil {
			break
		}
		if !derive || !errors.Is(err, ErrRunExists) || bump == maxRunIDBumps {
			return "", err
		}
		start, perr := messages.ParseRunTime(ann.Run)
		if perr != nil {
			return "", err
		}
		ann.Run = messages.NewRunID(start.Add(time.Millisecond))
	}
	msg, err := messages.NewMsg(&ann, origin)
	if err != nil {
		return "", err
	}
	if _, err := t.js.PublishMsg(ctx, msg); err != nil {
		return "", fmt.Errorf("topology: announce run %s: %w", ann.Run, err)
	}
	return ann.Run, nil
}
