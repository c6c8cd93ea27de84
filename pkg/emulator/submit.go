package emulator

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/oxypipe/oxypipe/internal/jsonscan"
)

// maxBody bounds a request body (a batch of 5000 long URLs fits easily).
const maxBody = 64 << 20

func (e *Emulator) readBody(w http.ResponseWriter, r *http.Request, b *body) bool {
	buf := bytes.NewBuffer(b.scratch[:0])
	_, err := buf.ReadFrom(http.MaxBytesReader(w, r.Body, maxBody))
	b.scratch = buf.Bytes()
	return err == nil
}

func (e *Emulator) badJSON(w http.ResponseWriter, r *http.Request, user string) {
	e.stats.rejected.Add(1)
	status := http.StatusBadRequest
	if e.cfg.BadJSON422 {
		status = http.StatusUnprocessableEntity
	}
	e.writeError(w, r, status, msgBadJSON, nil, user)
}

func (e *Emulator) rejectWith(w http.ResponseWriter, r *http.Request, rej *Rejection, user string) {
	e.stats.rejected.Add(1)
	status := rej.Status
	if status == 0 {
		status = http.StatusBadRequest
	}
	e.writeError(w, r, status, rej.Message, rej.Errors, user)
}

func (e *Emulator) throttle(w http.ResponseWriter, r *http.Request, input, user string) {
	e.stats.throttled.Add(1)
	host := hostOf(input)
	if host == "" {
		host = input
	}
	e.writeError(w, r, http.StatusTooManyRequests, fmt.Sprintf(msgThrottle, host), nil, user)
}

func (e *Emulator) tooMany(w http.ResponseWriter, r *http.Request, failed int, rendered bool, remaining [2]int, user string) {
	e.stats.rateLimited.Add(1)
	e.setRateHeaders(w.Header(), rendered, remaining)
	msg := msgTooManyTotal
	if failed == limitRender {
		msg = msgTooManyRender
	}
	e.writeError(w, r, http.StatusTooManyRequests, msg, nil, user)
}

// admission is a single submission the emulator accepted: its job, and
// what the answer carries.
type admission struct {
	j             *job
	sp            *spec
	remaining     [2]int
	submitFailure *failure // a scripted failure after the job was created
	now           int64
}

// admit runs the checks, rules and rate limit of a single submission (Push-
// Pull or Realtime) and creates its job. When it refuses, it has written
// the answer and returns false.
func (e *Emulator) admit(w http.ResponseWriter, r *http.Request, b *body, user string, realtime bool) (admission, bool) {
	if !e.readBody(w, r, b) {
		e.badJSON(w, r, user)
		return admission{}, false
	}
	fields, ok := decodeObject(b.scratch)
	if !ok {
		e.badJSON(w, r, user)
		return admission{}, false
	}
	source, _ := jsonscan.String(fields["source"])
	src := e.sources[source]
	if src == nil {
		e.rejectWith(w, r, reject(msgUnsupportedSrc), user)
		return admission{}, false
	}
	input, present, isString := inputOf(fields, src.inputKey)
	if rej := check(src, fields, input, present, isString); rej != nil {
		e.rejectWith(w, r, rej, user)
		return admission{}, false
	}
	if realtime {
		if rej := checkRealtime(src, fields); rej != nil {
			e.rejectWith(w, r, rej, user)
			return admission{}, false
		}
	}
	sub := Submission{Source: source, InputKey: src.inputKey, Input: input, Fields: fields}
	out := matchRules(e.rules, &sub)
	var submitFailure *failure
	if out != nil {
		switch {
		case out.Reject != nil:
			e.rejectWith(w, r, out.Reject, user)
			return admission{}, false
		case out.Throttle:
			e.throttle(w, r, input, user)
			return admission{}, false
		}
		if out.submitFailure.take(input) {
			submitFailure = out.submitFailure
			if !submitFailure.AfterCreate {
				e.fail(w, r, &submitFailure.Failure, user)
				return admission{}, false
			}
		}
	}
	sp := e.specs.get(src, src.inputKey, fields, e.cfg.ClientID)
	now := e.now()
	var remaining [2]int
	if !e.limiter.off() {
		var failed int
		if failed, remaining = e.limiter.take(now, sp.cost, sp.rendered); failed >= 0 {
			e.tooMany(w, r, failed, sp.rendered, remaining, user)
			return admission{}, false
		}
	}
	j := e.createJob(sp, input, out, now, e.linksBase(r), realtime)
	return admission{j: j, sp: sp, remaining: remaining, submitFailure: submitFailure, now: now}, true
}

// serveSubmit answers POST /v1/queries.
func (e *Emulator) serveSubmit(w http.ResponseWriter, r *http.Request, user string) {
	b := e.bodies.get()
	defer e.bodies.put(b)
	a, ok := e.admit(w, r, b, user, false)
	if !ok {
		return
	}
	j, submitFailure := a.j, a.submitFailure
	if submitFailure != nil && !submitFailure.CutBody {
		e.fail(w, r, &submitFailure.Failure, user)
		return
	}
	h := w.Header()
	e.setClientHeaders(h, user)
	id := []string{strconv.FormatUint(j.id, 10)}
	h["X-Oxylabs-Job-Id"] = id
	h["X-Oxyserps-Job-Id"] = id
	e.setRateHeaders(h, a.sp.rendered, a.remaining)
	b.buf = e.appendJob(b.buf[:0], j, a.now, e.linksBase(r))
	h["Content-Type"] = e.hv.json
	if submitFailure != nil {
		e.stats.faultsInjected.Add(1)
		b.sendCut(w, http.StatusAccepted)
		return
	}
	b.send(w, http.StatusAccepted)
}

// batchError is one entry of a batch's `errors` list.
type batchError struct {
	message string
	url     string
}

// serveBatch answers POST /v1/queries/batch.
func (e *Emulator) serveBatch(w http.ResponseWriter, r *http.Request, user string) {
	b := e.bodies.get()
	defer e.bodies.put(b)
	if !e.readBody(w, r, b) {
		e.badJSON(w, r, user)
		return
	}
	fields, ok := decodeObject(b.scratch)
	if !ok {
		e.badJSON(w, r, user)
		return
	}
	var lists []string
	for _, key := range inputKeyNames() {
		if raw := bytes.TrimSpace(fields[key]); len(raw) > 0 && raw[0] == '[' {
			lists = append(lists, key)
		}
	}
	var values []json.RawMessage
	if len(lists) > 0 {
		if err := json.Unmarshal(fields[lists[0]], &values); err != nil {
			e.badJSON(w, r, user)
			return
		}
	}
	source, _ := jsonscan.String(fields["source"])
	src := e.sources[source]
	// The API checks the source before the shape of the batch.
	if src == nil {
		e.batchAllFailed(w, values, msgUnsupportedSrc, user)
		return
	}
	if len(lists) != 1 || (lists[0] != "query" && lists[0] != "url" && lists[0] != "prompt") {
		e.rejectWith(w, r, reject(msgOneArray), user)
		return
	}
	if len(values) > e.cfg.MaxBatch {
		e.rejectWith(w, r, reject(fmt.Sprintf(msgBatchTooLarge, e.cfg.MaxBatch)), user)
		return
	}
	if !src.batch {
		e.batchAllFailed(w, values, fmt.Sprintf(msgNotBatchable, source), user)
		return
	}
	key := lists[0]
	type accepted struct {
		input string
		out   *outcome
	}
	var (
		good     []accepted
		errs     []batchError
		failures []*failure
	)
	single := make(map[string]json.RawMessage, len(fields))
	for k, v := range fields {
		single[k] = v
	}
	for _, raw := range values {
		single[key] = raw
		input, present, isString := inputOf(single, key)
		if src.urlSource && key != "url" {
			input, present, isString = "", false, false // a url source reads only url
		}
		rej := check(src, single, input, present, isString)
		var out *outcome
		if rej == nil {
			sub := Submission{Source: source, InputKey: key, Input: input, Fields: fields}
			if out = matchRules(e.rules, &sub); out != nil {
				switch {
				case out.Reject != nil:
					rej = out.Reject
				case out.Throttle:
					e.throttle(w, r, input, user)
					return
				}
			}
		}
		if rej != nil {
			msg := rej.Message
			if msg == "" && len(rej.Errors) > 0 {
				msg = rej.Errors[0]
			}
			be := batchError{message: msg}
			if key == "url" && input != "" {
				be.url = input
			}
			errs = append(errs, be)
			continue
		}
		if out != nil && out.submitFailure.take(input) {
			failures = append(failures, out.submitFailure)
		}
		good = append(good, accepted{input: input, out: out})
	}
	e.stats.rejectedValues.Add(int64(len(errs)))
	for _, f := range failures {
		if !f.AfterCreate {
			e.fail(w, r, &f.Failure, user)
			return
		}
	}
	h := w.Header()
	e.setClientHeaders(h, user)
	now := e.now()
	var sp *spec
	var remaining [2]int
	if len(good) > 0 {
		single[key] = json.RawMessage(`""`) // the template holds a hole there
		sp = e.specs.get(src, key, single, e.cfg.ClientID)
		if !e.limiter.off() {
			var failed int
			if failed, remaining = e.limiter.take(now, len(good)*sp.cost, sp.rendered); failed >= 0 {
				e.tooMany(w, r, failed, sp.rendered, remaining, user)
				return
			}
		}
		e.setRateHeaders(h, sp.rendered, remaining)
	}
	base := e.linksBase(r)
	jobs := make([]*job, len(good))
	for i, a := range good {
		jobs[i] = e.createJob(sp, a.input, a.out, now, base, false)
	}
	if len(failures) > 0 && !failures[0].CutBody {
		e.fail(w, r, &failures[0].Failure, user)
		return
	}
	b.buf = append(b.buf[:0], `{"queries":[`...)
	for i, j := range jobs {
		if i > 0 {
			b.buf = append(b.buf, ',')
		}
		b.buf = e.appendJob(b.buf, j, now, base)
	}
	b.buf = append(b.buf, ']')
	if len(errs) > 0 {
		appendBatchErrors(b, errs)
	}
	b.buf = append(b.buf, '}')
	h["Content-Type"] = e.hv.json
	if len(failures) > 0 {
		e.stats.faultsInjected.Add(1)
		b.sendCut(w, http.StatusAccepted)
		return
	}
	b.send(w, http.StatusAccepted)
}

func appendBatchErrors(b *body, errs []batchError) {
	b.buf = append(b.buf, `,"errors":[`...)
	for i, be := range errs {
		if i > 0 {
			b.buf = append(b.buf, ',')
		}
		b.buf = append(b.buf, `{"message":`...)
		b.buf = appendString(b.buf, be.message)
		if be.url != "" {
			b.buf = append(b.buf, `,"url":`...)
			b.buf = appendString(b.buf, be.url)
		}
		b.buf = append(b.buf, '}')
	}
	b.buf = append(b.buf, ']')
}

// batchAllFailed answers 202 with no jobs and one error per value, without
// rate-limit headers, as the API does for an unknown or unbatchable source.
func (e *Emulator) batchAllFailed(w http.ResponseWriter, values []json.RawMessage, msg string, user string) {
	e.stats.rejectedValues.Add(int64(len(values)))
	e.setClientHeaders(w.Header(), user)
	b := e.bodies.get()
	defer e.bodies.put(b)
	errs := make([]batchError, len(values))
	for i := range errs {
		errs[i].message = msg
	}
	b.buf = append(b.buf, `{"queries":[]`...)
	appendBatchErrors(b, errs)
	if len(values) == 0 {
		b.buf = append(b.buf, `,"errors":[]`...)
	}
	b.buf = append(b.buf, '}')
	w.Header()["Content-Type"] = e.hv.json
	b.send(w, http.StatusAccepted)
}

// createJob creates, stores and schedules one job. Its random choices come
// from the seed, its source and input and how many retained jobs that input
// already has, so they do not depend on the order of concurrent submissions.
func (e *Emulator) createJob(sp *spec, input string, out *outcome, now int64, base string, realtime bool) *job {
	id := e.nextID.Add(1)
	occurrence := e.stats.created(input, sp.pages)
	r := jobRand(e.seed, sp.src.name, sp.inputKey, input, occurrence)
	j := &job{id: id, spec: sp, input: input, out: out, created: now, realtime: realtime}

	j.faulted = r.Float64() < e.cfg.FaultRate
	if out != nil {
		switch {
		case out.Fault:
			j.faulted = true
		case out.Done:
			j.faulted = false
		}
	}
	var pending time.Duration
	switch {
	case out != nil && out.JobTime > 0:
		pending = out.JobTime
	case e.cfg.JobTime > 0:
		pending = e.cfg.JobTime
	default:
		pending = e.cfg.JobTimeFunc(r, JobInfo{
			Source: sp.src.name, InputKey: sp.inputKey, Input: input,
			Rendered: sp.rendered, Faulted: j.faulted,
		})
	}
	j.finish = now + e.scaled(pending)
	if out != nil && out.StayPending {
		j.finish = never
	}

	if sp.storageURL != "" {
		j.storage = resolveStorage(sp.storageURL, id, sp, input)
		code := 13000
		if out != nil && out.UploadCode != 0 {
			code = out.UploadCode
		}
		delay := time.Second + time.Duration(r.Float64()*float64(2*time.Second))
		if code == 10001 {
			delay = 20 * time.Second
		}
		if out != nil && out.UploadDelay > 0 {
			delay = out.UploadDelay
		}
		j.uploadAt = never
		if code > 0 && j.finish != never {
			j.uploadCode = int16(code)
			j.uploadAt = j.finish + e.scaled(delay)
		}
	}
	if e.jobs.put(j) {
		e.jobs.release(now, e.cfg.JobTTL, e.stats.forget)
	}
	if sp.callbackURL != "" && j.finish != never {
		e.callbacks.schedule(j, base)
	}
	return j
}
