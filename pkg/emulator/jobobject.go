package emulator

import (
	"strconv"
	"strings"
	"time"
)

// appendStamp appends a quoted UTC timestamp in the API's form
// "YYYY-MM-DD HH:MM:SS" (written by hand: it is on every hot path).
func appendStamp(dst []byte, ns int64) []byte {
	t := time.Unix(0, ns).UTC()
	year, month, day := t.Date()
	hour, minute, second := t.Clock()
	two := func(dst []byte, n int) []byte { return append(dst, byte('0'+n/10), byte('0'+n%10)) }
	dst = append(dst, '"')
	if year < 0 || year > 9999 {
		dst = t.AppendFormat(dst, time.DateTime)
		return append(dst, '"')
	}
	dst = two(dst, year/100)
	dst = two(dst, year%100)
	dst = append(dst, '-')
	dst = two(dst, int(month))
	dst = append(dst, '-')
	dst = two(dst, day)
	dst = append(dst, ' ')
	dst = two(dst, hour)
	dst = append(dst, ':')
	dst = two(dst, minute)
	dst = append(dst, ':')
	dst = two(dst, second)
	return append(dst, '"')
}

// appendJob appends j's job object as it reads at now. base is the scheme
// and host of the `_links` hrefs.
func (e *Emulator) appendJob(dst []byte, j *job, now int64, base string) []byte {
	st := j.status(now)
	var idBuf [20]byte
	id := strconv.AppendUint(idBuf[:0], j.id, 10)
	host := ""
	if j.spec.inputKey == "url" {
		host = hostOf(j.input)
	}
	for i := range j.spec.tmpl {
		p := &j.spec.tmpl[i]
		if p.hole == holeNone {
			dst = append(dst, p.lit...)
			continue
		}
		switch p.hole {
		case holeID:
			dst = append(dst, '"')
			dst = append(dst, id...)
			dst = append(dst, '"')
		case holeCreated:
			dst = appendStamp(dst, j.created)
		case holeUpdated:
			if st == statusPending {
				dst = appendStamp(dst, j.created)
			} else {
				dst = appendStamp(dst, j.finish)
			}
		case holeStatus:
			dst = append(dst, '"')
			dst = append(dst, st.String()...)
			dst = append(dst, '"')
		case holeInput:
			dst = appendString(dst, j.input)
		case holeDomain:
			dst = appendString(dst, domainOf(host))
		case holeSubdomain:
			dst = appendString(dst, subdomainOf(host))
		case holeStorage:
			dst = appendString(dst, j.storage)
		case holeStatuses:
			dst = appendStatuses(dst, j, st, now)
		case holeLinks:
			dst = appendLinks(dst, j, id, base)
		}
	}
	return dst
}

// appendStatuses writes the cloud-upload entry once it is due; it never
// changes updated_at.
func appendStatuses(dst []byte, j *job, st jobStatus, now int64) []byte {
	if j.storage == "" || j.uploadCode == 0 || st == statusPending || now < j.uploadAt {
		return append(dst, "[]"...)
	}
	dst = append(dst, `[{"event":"GCS_STORAGE_UPLOAD","code":`...)
	dst = strconv.AppendInt(dst, int64(j.uploadCode), 10)
	dst = append(dst, `,"message":`...)
	dst = appendString(dst, uploadMessage(int(j.uploadCode)))
	return append(dst, "}]"...)
}

// hostOf returns the host of a URL without port or credentials.
func hostOf(u string) string {
	i := strings.Index(u, "://")
	if i < 0 {
		return ""
	}
	h := u[i+3:]
	if k := strings.IndexAny(h, "/?#"); k >= 0 {
		h = h[:k]
	}
	if k := strings.LastIndexByte(h, '@'); k >= 0 {
		h = h[k+1:]
	}
	if k := strings.LastIndexByte(h, ':'); k >= 0 && !strings.HasSuffix(h, "]") {
		h = h[:k]
	}
	return strings.ToLower(h)
}

// domainOf is the job object's domain for a url host: its last label, or
// "com" without a url.
func domainOf(h string) string {
	if h == "" {
		return "com"
	}
	return h[strings.LastIndexByte(h, '.')+1:]
}

// subdomainOf is the job object's subdomain: the first label of a host with
// more than two, else "www".
func subdomainOf(h string) string {
	if strings.Count(h, ".") > 1 {
		return h[:strings.IndexByte(h, '.')]
	}
	return "www"
}

// appendLinks writes `_links`: self, results, results-content (one href per
// page), results-html, results-content-html, plus the parsed and png pairs
// when the job enabled them.
func appendLinks(dst []byte, j *job, id []byte, base string) []byte {
	self := func(dst []byte) []byte {
		dst = appendEscaped(dst, base)
		dst = append(dst, "/v1/queries/"...)
		return append(dst, id...)
	}
	link := func(dst []byte, rel, suffix string) []byte {
		dst = append(dst, `{"rel":"`...)
		dst = append(dst, rel...)
		dst = append(dst, `","href":"`...)
		dst = self(dst)
		dst = append(dst, suffix...)
		return append(dst, `","method":"GET"}`...)
	}
	list := func(dst []byte, rel, query string) []byte {
		dst = append(dst, `{"rel":"`...)
		dst = append(dst, rel...)
		dst = append(dst, `","href_list":[`...)
		for p := 0; p < j.spec.pages; p++ {
			if p > 0 {
				dst = append(dst, ',')
			}
			dst = append(dst, '"')
			dst = self(dst)
			dst = append(dst, "/results/"...)
			dst = strconv.AppendInt(dst, int64(j.spec.firstPage+p), 10)
			dst = append(dst, "/content"...)
			dst = append(dst, query...)
			dst = append(dst, '"')
		}
		return append(dst, `],"method":"GET"}`...)
	}
	dst = append(dst, '[')
	dst = link(dst, "self", "")
	dst = append(dst, ',')
	dst = link(dst, "results", "/results")
	dst = append(dst, ',')
	dst = list(dst, "results-content", "")
	dst = append(dst, ',')
	dst = link(dst, "results-html", "/results?type=raw")
	dst = append(dst, ',')
	dst = list(dst, "results-content-html", "?type=raw")
	if j.spec.types.has(typeParsed) {
		dst = append(dst, ',')
		dst = link(dst, "results-parsed", "/results?type=parsed")
		dst = append(dst, ',')
		dst = list(dst, "results-content-parsed", "?type=parsed")
	}
	if j.spec.types.has(typePNG) {
		dst = append(dst, ',')
		dst = link(dst, "results-png", "/results?type=png")
		dst = append(dst, ',')
		dst = list(dst, "results-content-png", "?type=png")
	}
	return append(dst, ']')
}
