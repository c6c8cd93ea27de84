package emulator

import (
	"encoding/json"
	"net/http"
	"time"
)

// RealtimePath is where the emulator serves the Realtime host: POST
// RealtimePath+"/v1/queries" is the Realtime integration's submission, so
// a client's Realtime base URL is the emulator's URL + RealtimePath.
const RealtimePath = "/realtime"

// Realtime's time limits: a job that runs RealtimeTTL or longer is answered
// 408 "Timed out." once RealtimeTimeoutAfter has passed since the request
// (both scaled by Config.TimeScale).
const (
	RealtimeTTL          = 150 * time.Second
	RealtimeTimeoutAfter = 160 * time.Second
)

const (
	msgRealtimeTimedOut = "Timed out."
	msgRealtimeStorage  = "Parameter `storage_url` cannot be used with realtime."
	msgRealtimeLLM      = "This source is not available with realtime."
)

// checkRealtime refuses what Realtime does not take: a storage_url (400)
// and the LLM sources (422).
func checkRealtime(src *sourceInfo, fields map[string]json.RawMessage) *Rejection {
	if raw, ok := fields["storage_url"]; ok && !isNull(raw) {
		return reject(msgRealtimeStorage)
	}
	if src.llm {
		return &Rejection{Status: http.StatusUnprocessableEntity, Message: msgRealtimeLLM}
	}
	return nil
}

// serveRealtime answers POST /v1/queries of the Realtime host: the job is
// created as for Push-Pull, and the answer waits for it: 200 with
// {"results", "job"} once it finished (done or faulted), or 408 "Timed
// out." for a job that runs RealtimeTTL or longer. Nothing is batched.
func (e *Emulator) serveRealtime(w http.ResponseWriter, r *http.Request, user string) {
	b := e.bodies.get()
	defer e.bodies.put(b)
	a, ok := e.admit(w, r, b, user, true)
	if !ok {
		return
	}
	j := a.j
	if a.submitFailure != nil && !a.submitFailure.CutBody {
		e.fail(w, r, &a.submitFailure.Failure, user)
		return
	}
	timedOut := j.finish == never || j.finish-j.created >= e.scaled(RealtimeTTL)
	until := j.finish
	if timedOut {
		until = j.created + e.scaled(RealtimeTimeoutAfter)
	}
	if wait := until - e.now(); wait > 0 {
		t := e.clock.NewTimer(time.Duration(wait))
		select {
		case <-t.C():
		case <-r.Context().Done():
			t.Stop()
			return // the client went away; its job exists, as on the API
		}
	}
	if timedOut {
		e.writeError(w, r, http.StatusRequestTimeout, msgRealtimeTimedOut, nil, user)
		return
	}
	now := max(e.now(), j.finish)
	h := w.Header()
	e.setClientHeaders(h, user)
	b.buf = b.buf[:0]
	var typesBuf [numTypes]outputType
	e.appendResults(b, j, now, requestedTypes(typesBuf[:0], "", j.spec.defType), e.linksBase(r))
	h["Content-Type"] = e.hv.json
	if a.submitFailure != nil {
		e.stats.faultsInjected.Add(1)
		b.sendCut(w, http.StatusOK)
		return
	}
	b.send(w, http.StatusOK)
}
