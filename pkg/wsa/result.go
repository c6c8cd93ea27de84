package wsa

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// ContentKind is the JSON type of a result's content, which depends on the
// output type: raw, markdown and png are strings, parsed is an object, xhr
// is an array.
type ContentKind int

// The kinds of content.
const (
	ContentNone   ContentKind = iota // absent or null
	ContentString                    // raw HTML, markdown, Base64 png
	ContentObject                    // parsed
	ContentArray                     // xhr
	ContentOther                     // a number or a boolean
)

// Result is one entry of a /results body: one page in one output type.
type Result struct {
	// Content is the content as raw JSON; see Kind, Text, Object, Array and
	// PNG.
	Content json.RawMessage
	// Type is raw, parsed, png, markdown or xhr ("" in older answers).
	Type string
	// Page is the page number (from start_page on).
	Page int
	// URL is the address that was scraped.
	URL string
	// JobID is the job's id.
	JobID string
	// StatusCode is the target's HTTP status, or 612/613 for a failure on
	// the API's side (613 on a faulted job's entry).
	StatusCode int
	// CreatedAt and UpdatedAt are the entry's timestamps (UTC).
	CreatedAt, UpdatedAt time.Time
}

// UnmarshalJSON decodes an entry leniently: a page or status code given as
// a string is accepted, and unknown fields are ignored.
func (r *Result) UnmarshalJSON(b []byte) error {
	var aux struct {
		Content    json.RawMessage `json:"content"`
		Type       json.RawMessage `json:"type"`
		Page       json.RawMessage `json:"page"`
		URL        json.RawMessage `json:"url"`
		JobID      json.RawMessage `json:"job_id"`
		StatusCode json.RawMessage `json:"status_code"`
		CreatedAt  json.RawMessage `json:"created_at"`
		UpdatedAt  json.RawMessage `json:"updated_at"`
	}
	if err := json.Unmarshal(b, &aux); err != nil {
		return err
	}
	*r = Result{
		Content:    aux.Content,
		Type:       scalarText(aux.Type),
		Page:       atoi(scalarText(aux.Page)),
		URL:        scalarText(aux.URL),
		JobID:      scalarText(aux.JobID),
		StatusCode: atoi(scalarText(aux.StatusCode)),
		CreatedAt:  parseTime(scalarText(aux.CreatedAt)),
		UpdatedAt:  parseTime(scalarText(aux.UpdatedAt)),
	}
	return nil
}

func atoi(s string) int {
	n, err := strconv.Atoi(s)
	if err != nil {
		return 0
	}
	return n
}

// Kind returns the JSON type of Content.
func (r Result) Kind() ContentKind {
	c := bytes.TrimSpace(r.Content)
	if len(c) == 0 || string(c) == "null" {
		return ContentNone
	}
	switch c[0] {
	case '"':
		return ContentString
	case '{':
		return ContentObject
	case '[':
		return ContentArray
	}
	return ContentOther
}

// Empty reports whether the entry has no content: absent, null or "" (a
// faulted job's entry, or a type the job did not enable).
func (r Result) Empty() bool {
	return r.Kind() == ContentNone || string(bytes.TrimSpace(r.Content)) == `""`
}

// ErrContentKind is returned when content is not of the requested kind.
var ErrContentKind = errors.New("wsa: content is of another kind")

// Text returns string content (raw HTML, markdown, Base64 png).
func (r Result) Text() (string, error) {
	if r.Kind() != ContentString {
		return "", fmt.Errorf("%w: want a string", ErrContentKind)
	}
	var s string
	if err := json.Unmarshal(r.Content, &s); err != nil {
		return "", err
	}
	return s, nil
}

// Object returns object content (parsed) as its raw fields.
func (r Result) Object() (map[string]json.RawMessage, error) {
	if r.Kind() != ContentObject {
		return nil, fmt.Errorf("%w: want an object", ErrContentKind)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(r.Content, &m); err != nil {
		return nil, err
	}
	return m, nil
}

// Array returns array content (xhr) as its raw elements.
func (r Result) Array() ([]json.RawMessage, error) {
	if r.Kind() != ContentArray {
		return nil, fmt.Errorf("%w: want an array", ErrContentKind)
	}
	var a []json.RawMessage
	if err := json.Unmarshal(r.Content, &a); err != nil {
		return nil, err
	}
	return a, nil
}

// PNG decodes png content, which the API sends as Base64 text.
func (r Result) PNG() ([]byte, error) {
	s, err := r.Text()
	if err != nil {
		return nil, err
	}
	s = strings.Map(func(c rune) rune {
		if c == '\n' || c == '\r' || c == ' ' || c == '\t' {
			return -1
		}
		return c
	}, s)
	if b, err := base64.StdEncoding.DecodeString(s); err == nil {
		return b, nil
	}
	b, err := base64.RawStdEncoding.DecodeString(strings.TrimRight(s, "="))
	if err != nil {
		return nil, fmt.Errorf("wsa: png content is not Base64: %w", err)
	}
	return b, nil
}

// ParseStatusCode returns parsed content's parse_status_code (12000 = OK).
func (r Result) ParseStatusCode() (int, bool) {
	m, err := r.Object()
	if err != nil {
		return 0, false
	}
	n := atoi(scalarText(m["parse_status_code"]))
	return n, n != 0
}
