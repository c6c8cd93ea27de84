package payload

import (
	"encoding/json"
	"fmt"
	"net"
	"net/url"
	"regexp"
	"strings"
)

// MaxPages is the most pages one job may fetch: the API answers 400 above
// it, which costs a request and bills nothing, so it is refused here first.
const MaxPages = 20

// ValidationError is a payload that Validate rejects before any request.
// Message uses the API's own wording where the API has a message for the
// same rejection (its 400 answers' "message"), so that a run log reads the
// same whether the API or this package refused the payload.
type ValidationError struct {
	// Key is the payload key at fault, or "" for the payload as a whole.
	Key string
	// Message says what is wrong, e.g. "The hostname cannot be an ip address.".
	Message string
}

// Error returns Message.
func (e *ValidationError) Error() string { return e.Message }

func invalid(key, format string, args ...any) *ValidationError {
	return &ValidationError{Key: key, Message: fmt.Sprintf(format, args...)}
}

// Validate returns a *ValidationError for the first of these problems, or
// nil. Each rule is something the API rejects with a 400 (a request spent for
// nothing) or accepts and bills while ignoring what the payload asked for:
//
//   - a key set twice in the JSON (the API keeps one silently)
//   - "source" missing, not a string, or empty
//   - no input key (url or query), or two input keys
//   - an input that is not a non-empty string ("Parameter `url` is empty.",
//     "Query parameter is empty." live)
//   - a "url" whose host is an IP address ("The hostname cannot be an ip
//     address." live)
//   - a "url" whose host is localhost or ends in a reserved TLD: .invalid,
//     .test, .example, .localhost ("Parameter `url` has invalid top level
//     domain format." live)
//   - "pages" above MaxPages (the API answers 400)
//   - a context key set twice (the API keeps one silently)
//   - a "headers" or "cookies" context entry without "force_headers" or
//     "force_cookies" true: the API ignores them and bills the job anyway
//   - a "storage_url" ending in ".{{ extension }}" without "{{ job_id }}":
//     every job of the run names the same object, so all but the first
//     upload fail with 10001 while every job bills
//   - a "fetch_resource" browser instruction that is not the last one: the
//     API answers 500, which a client would retry until it gives up
//
// Not checked, on purpose: the source name (the API's list changes and a
// wrong name costs nothing: "Unsupported source." is free), per-source
// rules other WSA clients apply to the Amazon and Universal models (render
// together with user_agent_type, currency without geo_location, ASIN length,
// min_price=0) because none is confirmed to bill for nothing, and parsing
// instruction regexes, whose dialect is Python's, not Go's.
func (p Payload) Validate() error {
	if key, ok := p.duplicateKey(); ok {
		return invalid(key, "Parameter `%s` is set twice.", key)
	}
	if err := p.validateSource(); err != nil {
		return err
	}
	if err := p.validateInput(); err != nil {
		return err
	}
	if err := p.validateURL(); err != nil {
		return err
	}
	if p.Has("pages") && p.Pages() > MaxPages {
		return invalid("pages", "Parameter `pages` must be at most %d.", MaxPages)
	}
	if err := p.validateContext(); err != nil {
		return err
	}
	if err := p.validateStorageURL(); err != nil {
		return err
	}
	return p.validateBrowserInstructions()
}

func (p Payload) duplicateKey() (string, bool) {
	if len(p.fields) < 2 {
		return "", false
	}
	seen := make(map[string]struct{}, len(p.fields))
	for _, f := range p.fields {
		if _, dup := seen[f.Key]; dup {
			return f.Key, true
		}
		seen[f.Key] = struct{}{}
	}
	return "", false
}

func (p Payload) validateSource() error {
	if !p.Has("source") {
		return invalid("source", "Parameter `source` is missing.")
	}
	s, ok := p.GetString("source")
	if !ok {
		return invalid("source", "Parameter `source` must be a string.")
	}
	if strings.TrimSpace(s) == "" {
		return invalid("source", "Parameter `source` is empty.")
	}
	return nil
}

func (p Payload) validateInput() error {
	var keys []string
	for _, f := range p.fields {
		if IsInputKey(f.Key) {
			keys = append(keys, f.Key)
		}
	}
	switch len(keys) {
	case 0:
		return invalid("", "The payload has no input: set one of `%s`.", strings.Join(inputKeys[:], "`, `"))
	case 1:
	default:
		return invalid(keys[1], "The payload has two inputs, `%s` and `%s`: set exactly one.", keys[0], keys[1])
	}
	key := keys[0]
	value, ok := p.GetString(key)
	if !ok {
		return invalid(key, "Parameter `%s` must be a string.", key)
	}
	if strings.TrimSpace(value) == "" {
		if key == "query" {
			return invalid(key, "Query parameter is empty.")
		}
		return invalid(key, "Parameter `%s` is empty.", key)
	}
	return nil
}

// isReservedTLD reports whether tld is one that RFC 2606/6761 reserve; the
// API rejects hosts in them.
func isReservedTLD(tld string) bool {
	switch tld {
	case "invalid", "test", "example", "localhost":
		return true
	}
	return false
}

func (p Payload) validateURL() error {
	raw, ok := p.GetString("url")
	if !ok {
		return nil
	}
	host := hostOf(raw)
	if host == "" {
		return nil
	}
	if net.ParseIP(host) != nil {
		return invalid("url", "The hostname cannot be an ip address.")
	}
	labels := strings.Split(strings.ToLower(strings.TrimSuffix(host, ".")), ".")
	if isReservedTLD(labels[len(labels)-1]) {
		return invalid("url", "Parameter `url` has invalid top level domain format.")
	}
	return nil
}

// hostOf returns the host of a URL without port or brackets, adding a scheme
// when the URL has none ("example.com/a"). It returns "" when it cannot tell.
func hostOf(raw string) string {
	raw = strings.TrimSpace(raw)
	if !strings.Contains(raw, "://") {
		raw = "http://" + raw
	}
	u, err := url.Parse(raw)
	if err != nil {
		return ""
	}
	return u.Hostname()
}

type contextEntry struct {
	Key   *string         `json:"key"`
	Value json.RawMessage `json:"value"`
}

func (p Payload) validateContext() error {
	raw, ok := p.Get("context")
	if !ok {
		return nil
	}
	entries, isList := asList(raw)
	if !isList {
		return nil // not a list: the API's own answer is better than a guess
	}
	values := make(map[string]json.RawMessage, len(entries))
	for _, e := range entries {
		var entry contextEntry
		if json.Unmarshal(e, &entry) != nil || entry.Key == nil {
			continue
		}
		if _, dup := values[*entry.Key]; dup {
			return invalid("context", "Context key `%s` is set twice.", *entry.Key)
		}
		values[*entry.Key] = entry.Value
	}
	for _, pair := range [][2]string{{"headers", "force_headers"}, {"cookies", "force_cookies"}} {
		v, set := values[pair[0]]
		if !set || isEmptyJSON(v) {
			continue
		}
		if force := string(values[pair[1]]); force != "true" && force != `"true"` {
			return invalid("context", "Context key `%s` needs `%s` set to true: without it the API ignores the %s and still bills the job.", pair[0], pair[1], pair[0])
		}
	}
	return nil
}

func isEmptyJSON(v json.RawMessage) bool {
	switch string(v) {
	case "", "null", "{}", "[]", `""`:
		return true
	}
	return false
}

var (
	extensionAtEnd = regexp.MustCompile(`\.\{\{\s*extension\s*\}\}$`)
	jobIDTemplate  = regexp.MustCompile(`\{\{\s*job_id\s*\}\}`)
)

func (p Payload) validateStorageURL() error {
	s, ok := p.GetString("storage_url")
	if !ok {
		return nil
	}
	s = strings.TrimSpace(s)
	if extensionAtEnd.MatchString(s) && !jobIDTemplate.MatchString(s) {
		return invalid("storage_url", "Parameter `storage_url` ends in `.{{ extension }}` but has no `{{ job_id }}`: every job would write the same object.")
	}
	return nil
}

func (p Payload) validateBrowserInstructions() error {
	raw, ok := p.Get("browser_instructions")
	if !ok {
		return nil
	}
	steps, isList := asList(raw)
	for i, step := range steps {
		var s struct {
			Type string `json:"type"`
		}
		if isList && json.Unmarshal(step, &s) == nil && s.Type == "fetch_resource" && i != len(steps)-1 {
			return invalid("browser_instructions", "Browser instruction `fetch_resource` must be the last one: the API answers 500 to instructions after it.")
		}
	}
	return nil
}

// asList splits a JSON array into its elements.
func asList(raw json.RawMessage) ([]json.RawMessage, bool) {
	var items []json.RawMessage
	if json.Unmarshal(raw, &items) != nil || items == nil {
		return nil, false
	}
	return items, true
}
