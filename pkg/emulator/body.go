package emulator

import (
	"net/http"
	"strconv"
	"sync"
)

// body is a response body assembled from small pieces rendered into buf and
// large shared buffers (a 20 MB padding, a rule's content) that are written
// as they are, never copied. Bodies are pooled.
type body struct {
	buf     []byte
	scratch []byte
	segs    []seg
	mark    int
}

type seg struct {
	ext      []byte
	from, to int
}

func (b *body) reset() {
	b.buf = b.buf[:0]
	b.scratch = b.scratch[:0]
	b.segs = b.segs[:0]
	b.mark = 0
}

// external inserts p at the current position without copying it.
func (b *body) external(p []byte) {
	b.cut()
	if len(p) > 0 {
		b.segs = append(b.segs, seg{ext: p})
	}
}

func (b *body) cut() {
	if len(b.buf) > b.mark {
		b.segs = append(b.segs, seg{from: b.mark, to: len(b.buf)})
		b.mark = len(b.buf)
	}
}

func (b *body) size() int {
	b.cut()
	n := 0
	for _, s := range b.segs {
		if s.ext != nil {
			n += len(s.ext)
		} else {
			n += s.to - s.from
		}
	}
	return n
}

// send writes the body with its Content-Length and status.
func (b *body) send(w http.ResponseWriter, status int) {
	w.Header()["Content-Length"] = []string{strconv.Itoa(b.size())}
	w.WriteHeader(status)
	for _, s := range b.segs {
		p := s.ext
		if p == nil {
			p = b.buf[s.from:s.to]
		}
		if _, err := w.Write(p); err != nil {
			return // the client went away; nothing else to do
		}
	}
}

// sendCut writes the body's Content-Length and status, then its first half,
// and drops the connection: an answer the client cannot read.
func (b *body) sendCut(w http.ResponseWriter, status int) {
	size := b.size()
	w.Header()["Content-Length"] = []string{strconv.Itoa(size)}
	w.WriteHeader(status)
	left := size / 2
	for _, s := range b.segs {
		p := s.ext
		if p == nil {
			p = b.buf[s.from:s.to]
		}
		p = p[:min(len(p), left)]
		if _, err := w.Write(p); err != nil {
			break
		}
		if left -= len(p); left == 0 {
			break
		}
	}
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
	dropConnection(w)
}

type bodyPool struct{ p sync.Pool }

func (bp *bodyPool) get() *body {
	if b, ok := bp.p.Get().(*body); ok {
		return b
	}
	return &body{buf: make([]byte, 0, 8192)}
}

// put returns b unless it grew too large to be worth keeping.
func (bp *bodyPool) put(b *body) {
	if cap(b.buf) > 1<<20 || cap(b.scratch) > 1<<20 {
		return
	}
	b.reset()
	bp.p.Put(b)
}
