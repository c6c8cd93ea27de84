package storetest

import (
	"github.com/oxypipe/oxypipe/pkg/jobresults"
	"github.com/oxypipe/oxypipe/pkg/oxytype"
)

// scopeCases check scoping on and off.
var scopeCases = []testCase{
	{name: "with scoping the context's scope is stored on the record", scoping: true, run: func(h *harness) {
		ctx := jobresults.WithScope(h.ctx, "tenant-a")
		if err := h.store.RecordSuccess(ctx, h.key(stageDone, "1"), poller); err != nil {
			h.Fatal(err)
		}
		equal(h, "scope", h.record(stageDone, "1").Scope, "tenant-a")
		// A write without a scope leaves the stored one.
		h.soft(stageDone, "1", poller, writer, 1, "r")
		equal(h, "scope after an unscoped write", h.record(stageDone, "1").Scope, "tenant-a")
		// An entry's own scope wins over the context's.
		en := h.entry(stageDone, "2", oxytype.Success, 1)
		en.Scope = "lane-7"
		if _, err := h.store.Apply(ctx, []jobresults.Entry{en, h.entry(stageDone, "3", oxytype.Success, 1)}); err != nil {
			h.Fatal(err)
		}
		equal(h, "entry scope", h.record(stageDone, "2").Scope, "lane-7")
		equal(h, "context scope in a batch", h.record(stageDone, "3").Scope, "tenant-a")
		equal(h, "the unscoped soft failure is recorded", len(h.failures("")), 1)
	}},
	{name: "without scoping the scope is neither stored nor checked", run: func(h *harness) {
		ctx := jobresults.WithScope(h.ctx, "Not A Valid Scope")
		if err := h.store.RecordSuccess(ctx, h.key(stageDone, "1"), poller); err != nil {
			h.Fatal(err)
		}
		equal(h, "scope", h.record(stageDone, "1").Scope, "")
	}},
}
