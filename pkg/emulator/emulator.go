package emulator

import (
	"crypto/subtle"
	"encoding/base64"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// Emulator is the API emulator, an http.Handler. Create it with New; call
// Close when done to stop pending callbacks.
type Emulator struct {
	cfg       Config
	seed      uint64
	clock     Clock
	sources   map[string]*sourceInfo
	rules     []*rule
	faults    []*fault
	jobs      jobStore
	specs     specCache
	limiter   *limiter
	rateNames [2]rateHeaderNames // dashed, underscored
	stats     counters
	callbacks *callbacker
	bodies    bodyPool
	hv        headerValues

	nextID     atomic.Uint64
	traces     atomic.Uint64
	requests   atomic.Uint64
	headerFlip atomic.Uint64

	// Most clients send one Authorization header and one Host; remembering
	// the last ones saves a base64 decode and a concatenation per request.
	lastAuth atomic.Pointer[[2]string] // header, user
	lastBase atomic.Pointer[[2]string] // host, base
}

// headerValues are header values shared by every response (never modified).
type headerValues struct {
	json, html, markdown []string
	clientID             []string
	statuses             [3][]string
}

var _ http.Handler = (*Emulator)(nil)

// New returns an Emulator for cfg (after WithDefaults), or an error wrapping
// ErrInvalidConfig.
func New(cfg Config) (*Emulator, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	e := &Emulator{
		cfg:     cfg,
		seed:    uint64(cfg.Seed),
		clock:   cfg.Clock,
		sources: newSourceTable(),
		rules:   compileRules(cfg.Rules),
		faults:  compileFaults(cfg.Faults),
		limiter: newLimiter(cfg.RateLimit, cfg.RenderRateLimit, int64(cfg.RateWindow)),
		rateNames: [2]rateHeaderNames{
			newRateHeaderNames(HeaderDashed, cfg.AccountUUID, cfg.ClientID),
			newRateHeaderNames(HeaderUnderscored, cfg.AccountUUID, cfg.ClientID),
		},
		hv: headerValues{
			json:     []string{"application/json"},
			html:     []string{"text/html; charset=utf-8"},
			markdown: []string{"text/markdown; charset=utf-8"},
			clientID: []string{strconv.Itoa(cfg.ClientID)},
			statuses: [3][]string{{"pending"}, {"done"}, {"faulted"}},
		},
	}
	e.nextID.Store(firstJobID)
	e.callbacks = newCallbacker(e)
	return e, nil
}

// Close stops the callback sender and waits for callbacks in flight. The
// handler keeps answering requests.
func (e *Emulator) Close() error {
	e.callbacks.close()
	return nil
}

// Config returns the emulator's configuration with defaults filled in.
func (e *Emulator) Config() Config { return e.cfg }

func (e *Emulator) now() int64 { return e.clock.Now().UnixNano() }

// scaled applies TimeScale to a job duration.
func (e *Emulator) scaled(d time.Duration) int64 {
	return int64(float64(d) * e.cfg.TimeScale)
}

// route parses the request path. idOK is false for a malformed job id or
// page number (which nginx answers with 404 before any auth).
func route(r *http.Request) (ep Endpoint, id uint64, page int, idOK bool) {
	p := r.URL.Path
	switch p {
	case "/v1/queries":
		return EndpointSubmit, 0, 0, true
	case "/v1/queries/batch":
		if r.Method == http.MethodPost {
			return EndpointBatch, 0, 0, true
		}
	case "/v1/info/callbacker_ips":
		return EndpointCallbackerIPs, 0, 0, true
	case "/_sandbox/stats":
		return EndpointStats, 0, 0, true
	case RealtimePath + "/v1/queries":
		return EndpointRealtime, 0, 0, true
	}
	rest, ok := strings.CutPrefix(p, "/v1/queries/")
	if !ok {
		return EndpointNotFound, 0, 0, true
	}
	idText, rest, _ := strings.Cut(rest, "/")
	id, idOK = parseJobID(idText)
	switch rest {
	case "":
		return EndpointStatus, id, 0, idOK
	case "results":
		return EndpointResults, id, 0, idOK
	}
	pageText, ok := strings.CutPrefix(rest, "results/")
	if !ok {
		return EndpointNotFound, 0, 0, true
	}
	pageText, ok = strings.CutSuffix(pageText, "/content")
	if !ok {
		return EndpointNotFound, 0, 0, true
	}
	n, err := strconv.Atoi(pageText)
	if err != nil || n < 0 {
		return EndpointContent, id, 0, false
	}
	return EndpointContent, id, n, idOK
}

func allowedMethod(ep Endpoint) string {
	switch ep {
	case EndpointSubmit, EndpointBatch, EndpointRealtime:
		return http.MethodPost
	}
	return http.MethodGet
}

// ServeHTTP answers one API request.
func (e *Emulator) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	ep, id, page, idOK := route(r)
	e.stats.requests[endpointIndex(ep)].Add(1)
	switch ep {
	case EndpointStats:
		e.serveStats(w)
		return
	case EndpointNotFound:
		e.nginxNotFound(w)
		return
	}
	if r.Method != allowedMethod(ep) {
		w.Header().Set("Allow", allowedMethod(ep))
		w.Header()["Content-Type"] = e.hv.json
		w.WriteHeader(http.StatusMethodNotAllowed)
		_, _ = w.Write([]byte(`{"message":"Method Not Allowed"}`)) // best effort
		return
	}
	if f := e.injectedFault(ep, e.requests.Add(1)); f != nil {
		e.fail(w, r, f, "")
		return
	}
	if !idOK {
		e.nginxNotFound(w)
		return
	}
	user, ok := e.authenticate(w, r)
	if !ok {
		return
	}
	switch ep {
	case EndpointSubmit:
		e.serveSubmit(w, r, user)
	case EndpointBatch:
		e.serveBatch(w, r, user)
	case EndpointRealtime:
		e.serveRealtime(w, r, user)
	case EndpointCallbackerIPs:
		e.serveCallbackerIPs(w, user)
	default:
		e.serveJob(w, r, ep, id, page, user)
	}
}

// serveJob answers the status, results and content endpoints.
func (e *Emulator) serveJob(w http.ResponseWriter, r *http.Request, ep Endpoint, id uint64, page int, user string) {
	now := e.now()
	j := e.lookup(id, now)
	if j == nil {
		e.writeError(w, r, http.StatusNotFound, msgQueryNotFound, nil, user)
		return
	}
	if j.out != nil {
		f := j.out.resultsFailure
		if ep == EndpointStatus {
			f = j.out.statusFailure
		}
		if f.take(strconv.FormatUint(j.id, 10)) {
			e.fail(w, r, &f.Failure, user)
			return
		}
	}
	e.setClientHeaders(w.Header(), user)
	switch ep {
	case EndpointStatus:
		e.serveStatus(w, r, j, now)
	case EndpointResults:
		e.serveResults(w, r, j, now)
	case EndpointContent:
		e.serveContent(w, r, j, page, now)
	}
}

// lookup returns the job with id, or nil when it never existed or finished
// JobTTL ago or more (the API has forgotten it).
func (e *Emulator) lookup(id uint64, now int64) *job {
	j := e.jobs.get(id)
	if j == nil || j.realtime || j.finish != never && now-j.finish >= int64(e.cfg.JobTTL) {
		return nil
	}
	return j
}

func (e *Emulator) serveStatus(w http.ResponseWriter, r *http.Request, j *job, now int64) {
	h := w.Header()
	h["X-Oxylabs-Job-Id"] = []string{strconv.FormatUint(j.id, 10)}
	h["X-Oxyserps-Job-Id"] = h["X-Oxylabs-Job-Id"]
	b := e.bodies.get()
	defer e.bodies.put(b)
	b.buf = e.appendJob(b.buf, j, now, e.linksBase(r))
	h["Content-Type"] = e.hv.json
	b.send(w, http.StatusOK)
}

func (e *Emulator) serveCallbackerIPs(w http.ResponseWriter, user string) {
	h := w.Header()
	e.setClientHeaders(h, user)
	b := e.bodies.get()
	defer e.bodies.put(b)
	b.buf = append(b.buf, `{"callbacker_ips":[`...)
	for i, ip := range e.cfg.CallbackerIPs {
		if i > 0 {
			b.buf = append(b.buf, ',')
		}
		b.buf = appendString(b.buf, ip)
	}
	b.buf = append(b.buf, "]}"...)
	h["Content-Type"] = e.hv.json
	b.send(w, http.StatusOK)
}

// linksBase is the scheme and host of `_links` hrefs for r.
func (e *Emulator) linksBase(r *http.Request) string {
	if e.cfg.LinksBaseURL != "" {
		return e.cfg.LinksBaseURL
	}
	if last := e.lastBase.Load(); last != nil && last[0] == r.Host {
		return last[1]
	}
	base := "http://" + r.Host
	e.lastBase.Store(&[2]string{r.Host, base})
	return base
}

// authenticate checks Basic auth as the API does: no header → 401 with a
// message; a header that is not Basic → 401 Invalid authorization header;
// unknown credentials → 401 with an empty body.
func (e *Emulator) authenticate(w http.ResponseWriter, r *http.Request) (string, bool) {
	header := r.Header.Get("Authorization")
	if header == "" {
		e.stats.unauthorized.Add(1)
		e.writeError(w, r, http.StatusUnauthorized, msgNoAuth, nil, "")
		return "", false
	}
	if last := e.lastAuth.Load(); last != nil && last[0] == header {
		return last[1], true
	}
	scheme, encoded, _ := strings.Cut(header, " ")
	decoded, err := base64.StdEncoding.DecodeString(strings.TrimSpace(encoded))
	user, pass, hasColon := strings.Cut(string(decoded), ":")
	if !strings.EqualFold(scheme, "Basic") || err != nil || !hasColon {
		e.stats.unauthorized.Add(1)
		e.writeError(w, r, http.StatusUnauthorized, msgBadAuth, nil, "")
		return "", false
	}
	valid := user != "" && pass != ""
	if e.cfg.Username != "" || e.cfg.Password != "" {
		u := subtle.ConstantTimeCompare([]byte(user), []byte(e.cfg.Username))
		p := subtle.ConstantTimeCompare([]byte(pass), []byte(e.cfg.Password))
		valid = u&p == 1
	}
	if !valid {
		e.stats.unauthorized.Add(1)
		e.writeError(w, r, http.StatusUnauthorized, "", nil, "")
		return "", false
	}
	e.lastAuth.Store(&[2]string{header, user})
	return user, true
}

// setClientHeaders writes x-oxylabs-client-id/-name and their x-oxyserps twins.
func (e *Emulator) setClientHeaders(h http.Header, user string) {
	if user == "" {
		return
	}
	name := []string{user}
	h["X-Oxylabs-Client-Id"] = e.hv.clientID
	h["X-Oxylabs-Client-Name"] = name
	h["X-Oxyserps-Client-Id"] = e.hv.clientID
	h["X-Oxyserps-Client-Name"] = name
}

// setJobHeaders writes x-oxylabs-job-id and -job-status with their twins.
func (e *Emulator) setJobHeaders(h http.Header, j *job, st jobStatus) {
	id := []string{strconv.FormatUint(j.id, 10)}
	h["X-Oxylabs-Job-Id"] = id
	h["X-Oxyserps-Job-Id"] = id
	h["X-Oxylabs-Job-Status"] = e.hv.statuses[st]
	h["X-Oxyserps-Job-Status"] = e.hv.statuses[st]
}

// traceID returns the next trace id: %08x followed by 24 zeros
// (00000001-000000000000000000000000, …), so that a test's expected run log
// can name its trace ids.
func (e *Emulator) traceID() string {
	return fmt.Sprintf("%08x-%024d", e.traces.Add(1), 0)
}

// nginxNotFound is the 404 that nginx answers for unknown paths and
// non-numeric ids, with none of the API's headers.
func (e *Emulator) nginxNotFound(w http.ResponseWriter) {
	h := w.Header()
	h["Server"] = []string{"nginx"}
	h["Content-Type"] = e.hv.json
	w.WriteHeader(http.StatusNotFound)
	_, _ = w.Write([]byte(`{"message": "Resource not found"}`)) // best effort
}

// serverErrorPage is the HTML page the API answered a 500 with.
const serverErrorPage = `<!DOCTYPE html>
<html lang="en">
   <head>
       <meta charset="utf-8" />
       <title>%[1]d Internal server error</title>
   </head>
   <body>
       <main>
           <h1>%[1]d Ooops something went wrong :( </h1>
           <p>Something went very very wrong with your request</p>
           <p>When reporting this error, please include the following</p>
           <p>+</p>
           <p>trace_id: %[2]s</p>
       </main>
   </body>
</html>
`

// writeError answers an error: a 5xx is the API's HTML page with a trace id;
// a 401 without a message has an empty body; anything else is the JSON body
// {message|errors, instance, timestamp, trace_id}. Client headers are sent
// when the caller was authenticated.
func (e *Emulator) writeError(w http.ResponseWriter, r *http.Request, status int, msg string, errs []string, user string) {
	h := w.Header()
	if status >= 500 {
		page := fmt.Sprintf(serverErrorPage, status, e.traceID())
		h["Content-Type"] = e.hv.html
		h["Content-Length"] = []string{strconv.Itoa(len(page))}
		w.WriteHeader(status)
		_, _ = w.Write([]byte(page)) // best effort
		return
	}
	if status == http.StatusUnauthorized && msg == "" && errs == nil {
		h["Content-Length"] = []string{"0"}
		w.WriteHeader(status)
		return
	}
	e.setClientHeaders(h, user)
	b := e.bodies.get()
	defer e.bodies.put(b)
	b.buf = append(b.buf, '{')
	switch {
	case errs != nil:
		b.buf = append(b.buf, `"errors":[`...)
		for i, s := range errs {
			if i > 0 {
				b.buf = append(b.buf, ',')
			}
			b.buf = appendString(b.buf, s)
		}
		b.buf = append(b.buf, "],"...)
	case msg != "":
		b.buf = append(b.buf, `"message":`...)
		b.buf = appendString(b.buf, msg)
		b.buf = append(b.buf, ',')
	}
	b.buf = append(b.buf, `"instance":`...)
	b.buf = appendString(b.buf, r.URL.Path)
	b.buf = append(b.buf, `,"timestamp":"`...)
	b.buf = e.clock.Now().UTC().AppendFormat(b.buf, "2006-01-02T15:04:05.000000000Z")
	b.buf = append(b.buf, `","trace_id":`...)
	b.buf = appendString(b.buf, e.traceID())
	b.buf = append(b.buf, '}')
	h["Content-Type"] = e.hv.json
	b.send(w, status)
}
