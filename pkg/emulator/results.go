package emulator

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// appendContent appends the JSON value of page n's content of type t. Large
// pieces (a rule's content, padding) are inserted into b without copying.
func (e *Emulator) appendContent(b *body, j *job, n int, t outputType) {
	if !j.spec.types.has(t) {
		b.buf = append(b.buf, `""`...)
		return
	}
	switch t {
	case typeRaw:
		b.buf = append(b.buf, '"')
		e.rawHTML(b, j, n, true)
		b.buf = append(b.buf, '"')
	case typeParsed:
		b.buf = appendParsed(b.buf, cannedPage(j, n), j.parseStatus())
	case typePNG:
		b.buf = append(b.buf, '"')
		b.buf = append(b.buf, pngBase64...)
		b.buf = append(b.buf, '"')
	case typeMarkdown:
		b.scratch = appendMarkdown(b.scratch[:0], cannedPage(j, n))
		b.buf = append(b.buf, '"')
		b.buf = appendEscaped(b.buf, string(b.scratch))
		b.buf = append(b.buf, '"')
	case typeXHR:
		b.buf = append(b.buf, "[]"...)
	}
}

// rawHTML writes page n's HTML into b, JSON-escaped when escape is set.
func (e *Emulator) rawHTML(b *body, j *job, n int, escape bool) {
	if o := j.out; o != nil && o.Content != "" {
		if escape {
			b.external(o.escapedContent)
		} else {
			b.external([]byte(o.Content))
		}
		return
	}
	b.scratch = appendHTML(b.scratch[:0], cannedPage(j, n))
	page := b.scratch
	var pad []byte
	if o := j.out; o != nil && o.ContentSize > 0 {
		pad = o.padding(max(o.ContentSize-len(page), 0))
	}
	cut := len(page)
	if pad != nil {
		cut = strings.LastIndex(string(page), bodyMarker)
	}
	if escape {
		b.buf = appendEscaped(b.buf, string(page[:cut]))
	} else {
		b.buf = append(b.buf, page[:cut]...)
	}
	if pad == nil {
		return
	}
	b.external(pad)
	if escape {
		b.buf = appendEscaped(b.buf, string(page[cut:]))
	} else {
		b.buf = append(b.buf, page[cut:]...)
	}
}

// appendEntry appends one results entry.
func (e *Emulator) appendEntry(b *body, j *job, n int, t outputType, faulted bool) {
	b.buf = append(b.buf, `{"content":`...)
	if faulted {
		b.buf = append(b.buf, `""`...)
	} else {
		e.appendContent(b, j, n, t)
	}
	b.buf = append(b.buf, `,"created_at":`...)
	b.buf = appendStamp(b.buf, j.created)
	b.buf = append(b.buf, `,"updated_at":`...)
	b.buf = appendStamp(b.buf, j.finish)
	b.buf = append(b.buf, `,"page":`...)
	b.buf = strconv.AppendInt(b.buf, int64(n), 10)
	b.buf = append(b.buf, `,"url":`...)
	b.buf = appendString(b.buf, targetURL(j, n))
	b.buf = append(b.buf, `,"job_id":"`...)
	b.buf = strconv.AppendUint(b.buf, j.id, 10)
	b.buf = append(b.buf, `","is_render_forced":false,"status_code":`...)
	if faulted {
		b.buf = strconv.AppendInt(b.buf, int64(j.faultStatus()), 10)
	} else {
		b.buf = strconv.AppendInt(b.buf, int64(j.targetStatus()), 10)
	}
	b.buf = append(b.buf, `,"type":"`...)
	b.buf = append(b.buf, t.String()...)
	b.buf = append(b.buf, '"')
	if t == typeParsed && !faulted {
		b.buf = append(b.buf, `,"parser_type":"","parser_preset":null`...)
	}
	if j.spec.src.resultMeta {
		if faulted {
			b.buf = append(b.buf, `,"_request":{"cookies":null,"headers":null},"_response":{"cookies":null,"headers":null}`...)
		} else {
			b.buf = append(b.buf, `,"_request":{"cookies":[],"headers":{"User-Agent":"Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/128.0.0.0 Safari/537.36"}},"_response":{"cookies":[],"headers":{"Content-Type":"text/html; charset=utf-8","Server":"cloudflare"}}`...)
		}
		b.buf = append(b.buf, `,"session_info":{"expires_at":null,"id":null,"remaining":null}`...)
	}
	b.buf = append(b.buf, '}')
}

// appendResults appends the body of /results: one entry per page and per
// requested type, or one 613 entry for a faulted job, then the job.
func (e *Emulator) appendResults(b *body, j *job, now int64, types []outputType, base string) {
	b.buf = append(b.buf, `{"results":[`...)
	if j.status(now) == statusFaulted {
		e.appendEntry(b, j, j.spec.firstPage, typeRaw, true)
	} else {
		first := true
		for n := j.spec.firstPage; n < j.spec.firstPage+j.spec.pages; n++ {
			for _, t := range types {
				if !first {
					b.buf = append(b.buf, ',')
				}
				first = false
				e.appendEntry(b, j, n, t, false)
			}
		}
	}
	b.buf = append(b.buf, `],"job":`...)
	b.buf = e.appendJob(b.buf, j, now, base)
	b.buf = append(b.buf, '}')
}

// queryParam returns the first value of name in a raw query, unescaped.
func queryParam(raw, name string) string {
	for raw != "" {
		var kv string
		kv, raw, _ = strings.Cut(raw, "&")
		k, v, _ := strings.Cut(kv, "=")
		if k == name {
			if strings.ContainsAny(v, "%+") {
				if u, err := url.QueryUnescape(v); err == nil {
					return u
				}
			}
			return v
		}
	}
	return ""
}

func (e *Emulator) serveResults(w http.ResponseWriter, r *http.Request, j *job, now int64) {
	st := j.status(now)
	h := w.Header()
	e.setJobHeaders(h, j, st)
	if st == statusPending || j.resultsExpired(now, e.cfg.ResultsTTL) {
		h["Content-Type"] = e.hv.json
		w.WriteHeader(http.StatusNoContent)
		return
	}
	var typesBuf [numTypes]outputType
	types := requestedTypes(typesBuf[:0], queryParam(r.URL.RawQuery, "type"), j.spec.defType)
	b := e.bodies.get()
	defer e.bodies.put(b)
	e.appendResults(b, j, now, types, e.linksBase(r))
	h["Content-Type"] = e.hv.json
	b.send(w, http.StatusOK)
}

// serveContent answers /results/{n}/content: page n's content of one type
// with no JSON wrapper, or 204 when there is nothing to serve.
func (e *Emulator) serveContent(w http.ResponseWriter, r *http.Request, j *job, n int, now int64) {
	st := j.status(now)
	h := w.Header()
	e.setJobHeaders(h, j, st)
	t := j.spec.defType
	if name := queryParam(r.URL.RawQuery, "type"); name != "" {
		first, _, _ := strings.Cut(name, ",")
		if parsed, ok := parseType(strings.TrimSpace(first)); ok {
			t = parsed
		}
	}
	if st != statusDone || j.resultsExpired(now, e.cfg.ResultsTTL) ||
		n < j.spec.firstPage || n >= j.spec.firstPage+j.spec.pages || !j.spec.types.has(t) {
		h["Content-Type"] = e.hv.json
		w.WriteHeader(http.StatusNoContent)
		return
	}
	b := e.bodies.get()
	defer e.bodies.put(b)
	switch t {
	case typeRaw:
		e.rawHTML(b, j, n, false)
		h["Content-Type"] = e.hv.html
	case typeParsed:
		b.buf = appendParsed(b.buf, cannedPage(j, n), j.parseStatus())
		h["Content-Type"] = e.hv.json
	case typePNG:
		b.buf = append(b.buf, pngBase64...)
		h["Content-Type"] = e.hv.html
	case typeMarkdown:
		b.buf = appendMarkdown(b.buf, cannedPage(j, n))
		h["Content-Type"] = e.hv.markdown
	case typeXHR:
		b.buf = append(b.buf, "[]"...)
		h["Content-Type"] = e.hv.json
	}
	b.send(w, http.StatusOK)
}
