package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"math"

	"github.com/oxypipe/oxypipe/pkg/jobresults"
	"github.com/oxypipe/oxypipe/pkg/oxytype"
)

// inputCases check that bad input is refused with ErrInvalidInput and
// writes nothing.
var inputCases = []testCase{
	{name: "bad input is refused and writes nothing", run: func(h *harness) {
		ctx, s, job := h.ctx, h.store, h.job
		good := h.key(stageDone, "1")
		noJob, noType, noDoc := good, good, good
		noJob.Run, noType.DataType, noDoc.DocID = "", "", ""
		entry := func(mod func(*jobresults.Entry)) []jobresults.Entry {
			ok := jobresults.Entry{Key: h.key(stageDone, "9"), Outcome: oxytype.Success, Origin: poller}
			bad := jobresults.Entry{Key: good, Outcome: oxytype.SoftFailure, Origin: poller, Consumer: writer, Reason: "r"}
			mod(&bad)
			return []jobresults.Entry{ok, bad} // the valid first entry must not be written either
		}
		apply := func(entries []jobresults.Entry) error {
			n, err := s.Apply(ctx, entries)
			if n != 0 {
				h.Errorf("Apply with bad input applied %d entries", n)
			}
			return err
		}
		for what, err := range map[string]error{
			"success without job id":           s.RecordSuccess(ctx, noJob, poller),
			"success without data type":        s.RecordSuccess(ctx, noType, poller),
			"success without doc id":           s.RecordSuccess(ctx, noDoc, poller),
			"soft failure without doc id":      s.RecordSoftFailure(ctx, noDoc, poller, writer, 1, "r"),
			"soft failure with negative retry": s.RecordSoftFailure(ctx, good, poller, writer, -1, "r"),
			"hard failure without job id":      s.RecordHardFailure(ctx, noJob, poller, writer, "e"),
			"hard failure without error":       s.RecordHardFailure(ctx, good, poller, writer, ""),
			"apply without data type":          apply(entry(func(e *jobresults.Entry) { e.DataType = "" })),
			"apply with negative retry":        apply(entry(func(e *jobresults.Entry) { e.RetryCount = -3 })),
			"apply with unknown outcome":       apply(entry(func(e *jobresults.Entry) { e.Outcome = "maybe" })),
			"apply with empty outcome":         apply(entry(func(e *jobresults.Entry) { e.Outcome = "" })),
			"apply hard failure without error": apply(entry(func(e *jobresults.Entry) {
				e.Outcome, e.Reason = oxytype.HardFailure, ""
			})),
			"apply with unknown state":     apply(entry(func(e *jobresults.Entry) { e.State = oxytype.State("lost") })),
			"apply with invalid payload":   apply(entry(func(e *jobresults.Entry) { e.Payload = json.RawMessage(`{"a":`) })),
			"apply with a too big version": apply(entry(func(e *jobresults.Entry) { e.Version = math.MaxInt64 + 1 })),
			"completed without job id":     second(s.CountCompletedDocs(ctx, "", stageDone)),
			"completed without final type": second(s.CountCompletedDocs(ctx, job, "")),
			"resolved without job id":      second(s.CountResolvedDocs(ctx, "", stageDone)),
			"resolved without final type":  second(s.CountResolvedDocs(ctx, job, "")),
			"hard-failed without job id":   second(s.CountHardFailedDocs(ctx, "")),
			"stage counts without job id":  second(s.GetStageCounts(ctx, "")),
			"doc status without job id":    second(s.GetDocStatus(ctx, "", "1")),
			"doc status without doc id":    second(s.GetDocStatus(ctx, job, "")),
			"failures without job id":      second(s.GetFailures(ctx, "", "")),
			"unique errors without job id": second(s.GetUniqueErrors(ctx, "", "")),
			"records without job id":       s.ForEachRecord(ctx, "", func(jobresults.Record) error { return nil }),
		} {
			if !errors.Is(err, jobresults.ErrInvalidInput) {
				h.Errorf("%s: err = %v, want ErrInvalidInput", what, err)
			}
		}
		equal(h, "stage counts", h.stageCounts(), []jobresults.StageCount{})
	}},
	{name: "an invalid scope is refused when scoping is on", scoping: true, run: func(h *harness) {
		for _, scope := range []string{"Upper", "-lead", "has space", "x23456789012345678901234567890123456789012"} {
			err := h.store.RecordSuccess(jobresults.WithScope(h.ctx, scope), h.key(stageDone, "1"), poller)
			if !errors.Is(err, jobresults.ErrInvalidInput) {
				h.Errorf("scope %q: err = %v, want ErrInvalidInput", scope, err)
			}
			_, err = h.store.Apply(context.Background(), []jobresults.Entry{{Key: h.key(stageDone, "1"), Outcome: oxytype.Success, Scope: scope}})
			if !errors.Is(err, jobresults.ErrInvalidInput) {
				h.Errorf("entry scope %q: err = %v, want ErrInvalidInput", scope, err)
			}
		}
		equal(h, "stage counts", h.stageCounts(), []jobresults.StageCount{})
	}},
}

// second returns the error of a two-value call.
func second[T any](_ T, err error) error { return err }
