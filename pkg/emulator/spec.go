package emulator

import (
	"bytes"
	"encoding/json"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/oxypipe/oxypipe/internal/jsonscan"
)

// A spec is everything about a job that comes from its payload except the
// input value: the source, the options, the output types and the job-object
// template. Jobs submitted with the same options share one spec (a batch
// always does; single submissions are interned), so a job costs about a
// hundred bytes plus its input.
type spec struct {
	src       *sourceInfo
	inputKey  string
	firstPage int
	// pages is how many pages the job fetches (results entries, href_list).
	pages int
	// cost is what one value takes from the rate limits (the sent pages).
	cost     int
	rendered bool
	types    typeSet
	defType  outputType
	// callbackURL is the callback_url, or "".
	callbackURL string
	// storageURL is the storage_url template as sent, or "".
	storageURL string
	tmpl       []part
}

type hole uint8

const (
	holeNone hole = iota
	holeID
	holeCreated
	holeUpdated
	holeStatus
	holeInput
	holeDomain
	holeSubdomain
	holeStorage
	holeStatuses
	holeLinks
)

// part is a literal piece of a job-object template, or a hole for a value
// that differs per job or over time.
type part struct {
	lit  []byte
	hole hole
}

type tmplBuilder struct {
	parts []part
	cur   []byte
}

func (b *tmplBuilder) lit(s string) { b.cur = append(b.cur, s...) }
func (b *tmplBuilder) raw(r []byte) { b.cur = append(b.cur, r...) }
func (b *tmplBuilder) key(k string) { b.cur = appendString(b.cur, k); b.cur = append(b.cur, ':') }
func (b *tmplBuilder) comma()       { b.cur = append(b.cur, ',') }
func (b *tmplBuilder) str(s string) { b.cur = appendString(b.cur, s) }
func (b *tmplBuilder) int(n int)    { b.cur = strconv.AppendInt(b.cur, int64(n), 10) }
func (b *tmplBuilder) hole(h hole)  { b.flush(); b.parts = append(b.parts, part{hole: h}) }
func (b *tmplBuilder) done() []part { b.flush(); return b.parts }
func (b *tmplBuilder) flush() {
	if len(b.cur) > 0 {
		b.parts = append(b.parts, part{lit: b.cur})
		b.cur = nil
	}
}

// compact returns raw without insignificant whitespace.
func compact(raw json.RawMessage) []byte {
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		return raw
	}
	return buf.Bytes()
}

// newSpec builds the spec of fields with the input under inputKey (its
// value is ignored: it differs per job).
func newSpec(src *sourceInfo, inputKey string, fields map[string]json.RawMessage, clientID int) *spec {
	sp := &spec{src: src, inputKey: inputKey, firstPage: 1, pages: 1, cost: 1}
	if n, ok := rawInt(fields["pages"], false); ok && n > 0 {
		sp.cost = n
		if !src.onePage {
			sp.pages = n
		}
	}
	if n, ok := rawInt(fields["start_page"], true); ok && n > 0 {
		sp.firstPage = n
	}
	render, _ := jsonscan.String(fields["render"])
	xhr := truthy(fields["xhr"])
	sp.rendered = render != "" || xhr
	sp.types = typeSet(1) << typeRaw
	if truthy(fields["parse"]) {
		sp.types |= 1 << typeParsed
	}
	if render == "png" {
		sp.types |= 1 << typePNG
	}
	if truthy(fields["markdown"]) {
		sp.types |= 1 << typeMarkdown
	}
	if xhr {
		sp.types |= 1 << typeXHR
	}
	sp.defType = sp.types.defaultType()
	sp.callbackURL, _ = jsonscan.String(fields["callback_url"])
	sp.storageURL, _ = jsonscan.String(fields["storage_url"])
	if src.full {
		sp.tmpl = fullTemplate(sp, fields, clientID)
	} else {
		sp.tmpl = shortTemplate(sp, fields)
	}
	return sp
}

// fullTemplate is the 34-field job object, in the order the API writes it.
func fullTemplate(sp *spec, fields map[string]json.RawMessage, clientID int) []part {
	src := sp.src
	var b tmplBuilder
	sent := func(key, def string) {
		b.key(key)
		if raw, ok := fields[key]; ok {
			b.raw(compact(raw))
		} else {
			b.lit(def)
		}
		b.comma()
	}
	b.lit("{")
	sent("callback_url", "null")
	b.key("client_id")
	b.int(clientID)
	b.comma()
	b.key("context")
	b.raw(contextJSON(src, fields))
	b.comma()
	b.key("created_at")
	b.hole(holeCreated)
	b.comma()
	b.key("domain")
	if raw, ok := fields["domain"]; ok {
		b.raw(compact(raw))
	} else {
		b.hole(holeDomain)
	}
	b.comma()
	sent("geo_location", "null")
	b.key("id")
	b.hole(holeID)
	b.comma()
	sent("limit", "10")
	locale := "null"
	if src.name == "google" {
		locale = `""`
	}
	sent("locale", locale)
	b.key("pages")
	b.int(sp.pages)
	b.comma()
	sent("parse", "false")
	sent("parser_type", "null")
	sent("parser_preset", "null")
	sent("parsing_instructions", "null")
	sent("browser_instructions", "null")
	sent("render", "null")
	sent("xhr", "false")
	sent("markdown", "false")
	b.key("url")
	if sp.inputKey == "url" {
		b.hole(holeInput)
	} else {
		b.lit("null")
	}
	b.comma()
	b.key("query")
	switch {
	case sp.inputKey == "query":
		b.hole(holeInput)
	case src.urlSource:
		b.lit(`""`)
	default:
		b.lit("null")
	}
	b.comma()
	b.key("source")
	b.str(src.name)
	b.comma()
	b.key("start_page")
	b.int(sp.firstPage)
	b.comma()
	b.key("status")
	b.hole(holeStatus)
	b.comma()
	sent("storage_type", "null")
	b.key("storage_url")
	if sp.storageURL != "" {
		b.hole(holeStorage)
	} else {
		b.lit("null")
	}
	b.comma()
	sent("aggregate_name", "null")
	b.key("subdomain")
	if raw, ok := fields["subdomain"]; ok {
		b.raw(compact(raw))
	} else {
		b.hole(holeSubdomain)
	}
	b.comma()
	sent("content_encoding", `"utf-8"`)
	b.key("updated_at")
	b.hole(holeUpdated)
	b.comma()
	sent("user_agent_type", `"desktop"`)
	b.key("session_info")
	b.lit("null,")
	b.key("statuses")
	b.hole(holeStatuses)
	b.comma()
	sent("client_notes", "null")
	b.key("_links")
	b.hole(holeLinks)
	b.lit("}")
	return b.done()
}

// contextJSON lists the source's context keys with their defaults, replaced
// by the values sent; unknown keys are dropped, as the API drops them.
func contextJSON(src *sourceInfo, fields map[string]json.RawMessage) []byte {
	sent := map[string]json.RawMessage{}
	var items []struct {
		Key   string          `json:"key"`
		Value json.RawMessage `json:"value"`
	}
	if raw, ok := fields["context"]; ok && json.Unmarshal(raw, &items) == nil {
		for _, it := range items {
			if it.Value == nil {
				it.Value = json.RawMessage("null")
			}
			sent[it.Key] = it.Value
		}
	}
	entries := src.context
	if truthy(fields["parse"]) {
		entries = append(append([]kv(nil), entries...), kv{"successful_parse_status_codes", "[]"})
	}
	out := []byte{'['}
	for i, e := range entries {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, `{"key":`...)
		out = appendString(out, e.key)
		out = append(out, `,"value":`...)
		if v, ok := sent[e.key]; ok {
			out = append(out, compact(v)...)
		} else {
			out = append(out, e.raw...)
		}
		out = append(out, '}')
	}
	return append(out, ']')
}

// shortTemplate is the short job object: the payload's keys sorted by name
// with their values as sent, then id, status, created_at, updated_at, _links.
func shortTemplate(sp *spec, fields map[string]json.RawMessage) []part {
	keys := make([]string, 0, len(fields)+1)
	for k := range fields {
		switch k {
		case "id", "status", "created_at", "updated_at", "_links":
			continue
		}
		keys = append(keys, k)
	}
	if _, ok := fields[sp.inputKey]; !ok {
		keys = append(keys, sp.inputKey)
	}
	sort.Strings(keys)
	var b tmplBuilder
	b.lit("{")
	for _, k := range keys {
		if k == sp.inputKey {
			if _, ok := fields[k]; !ok {
				continue // an input the source may go without (walmart_search)
			}
		}
		b.key(k)
		switch {
		case k == sp.inputKey:
			b.hole(holeInput)
		case k == "storage_url" && sp.storageURL != "":
			b.hole(holeStorage)
		default:
			b.raw(compact(fields[k]))
		}
		b.comma()
	}
	b.key("id")
	b.hole(holeID)
	b.comma()
	b.key("status")
	b.hole(holeStatus)
	b.comma()
	b.key("created_at")
	b.hole(holeCreated)
	b.comma()
	b.key("updated_at")
	b.hole(holeUpdated)
	b.comma()
	b.key("_links")
	b.hole(holeLinks)
	b.lit("}")
	return b.done()
}

// specCache interns specs, so that single submissions with the same options
// share one template. It stops growing at maxSpecs distinct option sets.
type specCache struct {
	mu sync.Mutex
	m  map[string]*spec
}

const maxSpecs = 4096

func (c *specCache) get(src *sourceInfo, inputKey string, fields map[string]json.RawMessage, clientID int) *spec {
	key := specKey(src, inputKey, fields)
	c.mu.Lock()
	sp, ok := c.m[key]
	c.mu.Unlock()
	if ok {
		return sp
	}
	sp = newSpec(src, inputKey, fields, clientID)
	c.mu.Lock()
	if c.m == nil {
		c.m = make(map[string]*spec)
	}
	if other, ok := c.m[key]; ok {
		sp = other
	} else if len(c.m) < maxSpecs {
		c.m[key] = sp
	}
	c.mu.Unlock()
	return sp
}

func specKey(src *sourceInfo, inputKey string, fields map[string]json.RawMessage) string {
	keys := make([]string, 0, len(fields))
	size := len(src.name) + len(inputKey)
	for k, v := range fields {
		if k == inputKey {
			continue
		}
		keys = append(keys, k)
		size += len(k) + len(v) + 2
	}
	sort.Strings(keys)
	var sb strings.Builder
	sb.Grow(size + 2)
	sb.WriteString(src.name)
	sb.WriteByte(0)
	sb.WriteString(inputKey)
	// Whether the input key is present changes a short template.
	if _, ok := fields[inputKey]; ok {
		sb.WriteByte(1)
	}
	for _, k := range keys {
		sb.WriteByte(0)
		sb.WriteString(k)
		sb.WriteByte(0)
		sb.Write(fields[k])
	}
	return sb.String()
}
