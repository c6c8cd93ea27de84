package statusworker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/oxypipe/oxypipe/internal/redact"
	"github.com/oxypipe/oxypipe/pkg/jobresults"
	"github.com/oxypipe/oxypipe/pkg/messages"
	"github.com/oxypipe/oxypipe/pkg/oxytype"
	"github.com/oxypipe/oxypipe/pkg/runlog"
)

// Limits of GET /runs/{run}/failures.
const (
	DefaultFailuresLimit = 1000
	MaxFailuresLimit     = 100000
)

// Handler returns the worker's JSON API. Mount it on the worker's HTTP
// server under both "/runs" and "/runs/" (health.Server.Handle or
// worker.Env.Handle):
//
//	GET /runs                              every run: state, total, progress (newest first; ?state= filters)
//	GET /runs/{run}                        the run's record, progress and per-stage counts
//	GET /runs/{run}/stages                 per-stage counts
//	GET /runs/{run}/failures[?stage=&limit=]  failed records, in doc order
//	GET /runs/{run}/errors[?stage=]        unique errors, most frequent first
//	GET /runs/{run}/docs/{doc}             one doc's records and its run-log line
//
// Errors are JSON {"error": "..."}: 404 for an unknown run, doc or path,
// 400 for a bad query, 405 for a method other than GET, 503 when the
// ledger is briefly unavailable, 500 otherwise.
func (w *StatusWorker) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /runs", w.apiRuns)
	mux.HandleFunc("GET /runs/{$}", w.apiRuns)
	mux.HandleFunc("GET /runs/{run}", w.apiRun)
	mux.HandleFunc("GET /runs/{run}/stages", w.apiStages)
	mux.HandleFunc("GET /runs/{run}/failures", w.apiFailures)
	mux.HandleFunc("GET /runs/{run}/errors", w.apiErrors)
	mux.HandleFunc("GET /runs/{run}/docs/{doc}", w.apiDoc)
	mux.HandleFunc("GET /feeds", w.apiFeeds)
	mux.HandleFunc("GET /feeds/{feed}", w.apiFeed)
	mux.HandleFunc("/", func(rw http.ResponseWriter, r *http.Request) {
		writeError(rw, http.StatusNotFound, fmt.Sprintf("no such endpoint: %s", r.URL.Path))
	})
	return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			rw.Header().Set("Allow", "GET, HEAD")
			writeError(rw, http.StatusMethodNotAllowed, "only GET is supported")
			return
		}
		mux.ServeHTTP(rw, r)
	})
}

// RunView is a run as the API shows it.
type RunView struct {
	Run           string                 `json:"run"`
	State         oxytype.RunState       `json:"state"`
	Reason        string                 `json:"reason,omitempty"`
	Total         int                    `json:"total"`
	FinalDataType oxytype.DataType       `json:"final_data_type"`
	Destination   string                 `json:"destination"`
	RunLog        string                 `json:"run_log"`
	StartedAt     time.Time              `json:"started_at"`
	UpdatedAt     time.Time              `json:"updated_at"`
	Progress      *ProgressView          `json:"progress,omitempty"`
	Completed     *messages.RunCompleted `json:"completed,omitempty"`
}

// ProgressView is an open run's progress: docs done (at the final data
// type) and docs hard-failed at some stage. A doc both written and
// hard-failed counts in both until the run completes; Completed has the
// exact counts.
type ProgressView struct {
	Done       int `json:"done"`
	HardFailed int `json:"hard_failed"`
}

// RunDetail is GET /runs/{run}.
type RunDetail struct {
	RunView
	Stages []StageView `json:"stages"`
}

// StageView is the progress of one stage of a run.
type StageView struct {
	DataType   string `json:"data_type"`
	Total      int    `json:"total"`
	Succeeded  int    `json:"succeeded"`
	SoftFailed int    `json:"soft_failed"`
	HardFailed int    `json:"hard_failed"`
}

// RecordView is one ledger record (a doc at a stage).
type RecordView struct {
	Doc          string             `json:"doc"`
	DataType     string             `json:"data_type"`
	Outcome      string             `json:"outcome"`
	State        oxytype.State      `json:"state,omitempty"`
	APIJobID     string             `json:"api_job_id,omitempty"`
	Error        *oxytype.ErrorInfo `json:"error,omitempty"`
	HardFailure  string             `json:"hard_failure,omitempty"`
	SoftFailures []string           `json:"soft_failures,omitempty"`
	RetryCount   int                `json:"retry_count,omitempty"`
	Origin       string             `json:"origin,omitempty"`
	Consumer     string             `json:"consumer,omitempty"`
	Time         time.Time          `json:"time"`
	Version      uint64             `json:"version,omitempty"`
	Payload      json.RawMessage    `json:"payload,omitempty"`
	Upload       *oxytype.Upload    `json:"upload,omitempty"`
}

// ErrorView is a group of failed records sharing their error and stage.
type ErrorView struct {
	Error     string    `json:"error"`
	DataType  string    `json:"data_type"`
	Count     int       `json:"count"`
	FirstSeen time.Time `json:"first_seen"`
	LastSeen  time.Time `json:"last_seen"`
}

// DocView is GET /runs/{run}/docs/{doc}: the doc's records and the line
// the run log has (or would have now) for it.
type DocView struct {
	Run      string       `json:"run"`
	Doc      string       `json:"doc"`
	Resolved bool         `json:"resolved"`
	Line     runlog.Line  `json:"line"`
	Records  []RecordView `json:"records"`
}

func (w *StatusWorker) apiRuns(rw http.ResponseWriter, r *http.Request) {
	state := r.URL.Query().Get("state")
	out := []RunView{}
	for _, rec := range w.runs.list() {
		if state != "" && string(rec.State) != state {
			continue
		}
		v, err := w.runView(r.Context(), rec)
		if err != nil {
			writeStoreError(rw, err)
			return
		}
		out = append(out, v)
	}
	writeJSON(rw, http.StatusOK, map[string]any{"runs": out})
}

func (w *StatusWorker) apiRun(rw http.ResponseWriter, r *http.Request) {
	rec, ok := w.lookup(rw, r)
	if !ok {
		return
	}
	v, err := w.runView(r.Context(), rec)
	if err != nil {
		writeStoreError(rw, err)
		return
	}
	stages, err := w.stages(r.Context(), rec.Announced.Run)
	if err != nil {
		writeStoreError(rw, err)
		return
	}
	writeJSON(rw, http.StatusOK, RunDetail{RunView: v, Stages: stages})
}

func (w *StatusWorker) apiStages(rw http.ResponseWriter, r *http.Request) {
	rec, ok := w.lookup(rw, r)
	if !ok {
		return
	}
	stages, err := w.stages(r.Context(), rec.Announced.Run)
	if err != nil {
		writeStoreError(rw, err)
		return
	}
	writeJSON(rw, http.StatusOK, map[string]any{"run": rec.Announced.Run, "stages": stages})
}

func (w *StatusWorker) apiFailures(rw http.ResponseWriter, r *http.Request) {
	rec, ok := w.lookup(rw, r)
	if !ok {
		return
	}
	limit := DefaultFailuresLimit
	if s := r.URL.Query().Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > MaxFailuresLimit {
			writeError(rw, http.StatusBadRequest, fmt.Sprintf("limit must be a number from 1 to %d", MaxFailuresLimit))
			return
		}
		limit = n
	}
	stage := r.URL.Query().Get("stage")
	recs, err := w.cfg.Ledger.GetFailures(r.Context(), rec.Announced.Run, stage)
	if err != nil {
		writeStoreError(rw, err)
		return
	}
	views := make([]RecordView, 0, min(len(recs), limit))
	for _, fr := range recs[:min(len(recs), limit)] {
		views = append(views, recordView(fr))
	}
	writeJSON(rw, http.StatusOK, map[string]any{
		"run": rec.Announced.Run, "stage": stage, "count": len(recs),
		"truncated": len(recs) > limit, "failures": views,
	})
}

func (w *StatusWorker) apiErrors(rw http.ResponseWriter, r *http.Request) {
	rec, ok := w.lookup(rw, r)
	if !ok {
		return
	}
	stage := r.URL.Query().Get("stage")
	groups, err := w.cfg.Ledger.GetUniqueErrors(r.Context(), rec.Announced.Run, stage)
	if err != nil {
		writeStoreError(rw, err)
		return
	}
	views := make([]ErrorView, 0, len(groups))
	for _, g := range groups {
		views = append(views, ErrorView{Error: redact.String(g.Error), DataType: g.DataType, Count: g.Count, FirstSeen: g.FirstSeen, LastSeen: g.LastSeen})
	}
	writeJSON(rw, http.StatusOK, map[string]any{"run": rec.Announced.Run, "stage": stage, "errors": views})
}

func (w *StatusWorker) apiDoc(rw http.ResponseWriter, r *http.Request) {
	rec, ok := w.lookup(rw, r)
	if !ok {
		return
	}
	run, doc := rec.Announced.Run, r.PathValue("doc")
	if pos, err := messages.ParseDocID(doc); (err != nil || pos >= rec.Announced.Total) && !messages.IsUnknownDocID(doc) && run != messages.UnknownRun {
		writeError(rw, http.StatusNotFound, fmt.Sprintf("doc %q is not a doc of run %s (docs 0 to %d)", doc, run, rec.Announced.Total-1))
		return
	}
	recs, err := w.cfg.Ledger.GetDocStatus(r.Context(), run, doc)
	if err != nil {
		writeStoreError(rw, err)
		return
	}
	v := DocView{Run: run, Doc: doc, Records: make([]RecordView, 0, len(recs))}
	logRecs := make([]runlog.Record, 0, len(recs))
	for _, dr := range recs {
		v.Records = append(v.Records, recordView(dr))
		logRecs = append(logRecs, logRecord(dr))
	}
	v.Line, v.Resolved = runlog.Derive(finalDataType(rec), logRecs)
	writeJSON(rw, http.StatusOK, v)
}

// lookup finds the run named in the path, answering 404 when there is
// none.
func (w *StatusWorker) lookup(rw http.ResponseWriter, r *http.Request) (messages.RunRecord, bool) {
	run := r.PathValue("run")
	if e, ok := w.runs.snapshot(run); ok {
		return e.rec, true
	}
	if run == messages.UnknownRun {
		// Failures of messages whose run could not be read are recorded
		// under this reserved run, which has no record: show them anyway.
		return messages.RunRecord{
			Announced: messages.RunAnnounced{Run: run, FinalDataType: oxytype.FinalDataType},
			Reason:    "failures of messages whose run could not be read",
		}, true
	}
	if messages.ValidateRunID(run) != nil {
		writeError(rw, http.StatusNotFound, fmt.Sprintf("unknown run %q", run))
		return messages.RunRecord{}, false
	}
	ref, err := w.cfg.Topology.Runs().Get(r.Context(), run)
	switch {
	case errors.Is(err, oxytype.ErrRunNotFound):
		writeError(rw, http.StatusNotFound, fmt.Sprintf("unknown run %q", run))
		return messages.RunRecord{}, false
	case err != nil:
		writeError(rw, http.StatusServiceUnavailable, "runs bucket unavailable: "+redact.String(err.Error()))
		return messages.RunRecord{}, false
	}
	return ref.Record, true
}

func (w *StatusWorker) runView(ctx context.Context, rec messages.RunRecord) (RunView, error) {
	a := rec.Announced
	v := RunView{
		Run: a.Run, State: rec.State, Reason: redact.String(rec.Reason), Total: a.Total,
		FinalDataType: finalDataType(rec), Destination: redact.String(a.Destination), RunLog: redact.String(a.RunLog),
		StartedAt: a.StartedAt, UpdatedAt: rec.UpdatedAt, Completed: rec.Completed,
	}
	if rec.State == oxytype.RunStateReady || rec.State == oxytype.RunStateStopping {
		done, err := w.cfg.Ledger.CountCompletedDocs(ctx, a.Run, string(v.FinalDataType))
		if err != nil {
			return v, err
		}
		failed, err := w.cfg.Ledger.CountHardFailedDocs(ctx, a.Run)
		if err != nil {
			return v, err
		}
		v.Progress = &ProgressView{Done: done, HardFailed: failed}
	}
	return v, nil
}

func (w *StatusWorker) stages(ctx context.Context, run string) ([]StageView, error) {
	counts, err := w.cfg.Ledger.GetStageCounts(ctx, run)
	if err != nil {
		return nil, err
	}
	out := make([]StageView, 0, len(counts))
	for _, c := range counts {
		out = append(out, StageView{DataType: c.DataType, Total: c.Total, Succeeded: c.Succeeded, SoftFailed: c.SoftFailed, HardFailed: c.HardFailed})
	}
	return out, nil
}

func recordView(r jobresults.Record) RecordView {
	v := RecordView{
		Doc: r.DocID, DataType: r.DataType, Outcome: string(r.Outcome()), State: r.State,
		APIJobID: r.APIJobID, Error: r.Error, HardFailure: redact.String(r.HardFailure),
		RetryCount: r.RetryCount, Time: r.Time, Version: r.Version,
		Payload: redact.Bytes(r.Payload), Upload: r.Upload,
	}
	for _, s := range r.SoftFailures {
		v.SoftFailures = append(v.SoftFailures, redact.String(s))
	}
	if r.Origin != (oxytype.Party{}) {
		v.Origin = r.Origin.Type + "/" + r.Origin.Name
	}
	if r.Consumer != (oxytype.Party{}) {
		v.Consumer = r.Consumer.Type + "/" + r.Consumer.Name
	}
	return v
}

func writeStoreError(rw http.ResponseWriter, err error) {
	code := http.StatusInternalServerError
	if errors.Is(err, jobresults.ErrTransient) || errors.Is(err, context.DeadlineExceeded) {
		code = http.StatusServiceUnavailable
	}
	writeError(rw, code, "ledger: "+redact.String(err.Error()))
}

func writeError(rw http.ResponseWriter, code int, msg string) {
	writeJSON(rw, code, map[string]string{"error": msg})
}

func writeJSON(rw http.ResponseWriter, code int, v any) {
	rw.Header().Set("Content-Type", "application/json")
	rw.Header().Set("Cache-Control", "no-store")
	rw.WriteHeader(code)
	enc := json.NewEncoder(rw)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
}
