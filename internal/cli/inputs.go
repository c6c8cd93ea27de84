package cli

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/oxypipe/oxypipe/pkg/payload"
)

// fieldKind is the JSON type an option's value takes in the payload.
type fieldKind int

const (
	stringField fieldKind = iota
	intField
	boolField
)

// typedField is one option of `oxy run` that sets one payload field.
type typedField struct {
	key   string // the payload key, e.g. "user_agent_type"
	kind  fieldKind
	usage string
}

// flag is the option's name: the key with dashes.
func (t typedField) flag() string { return strings.ReplaceAll(t.key, "_", "-") }

// typedFields are the payload fields `oxy run` has an option for. parse has
// --no-parse too, so that a false value can be given.
var typedFields = []typedField{
	{"render", stringField, "render the page with JavaScript: `html` or png"},
	{"parse", boolField, "ask for parsed results (--no-parse: parse false)"},
	{"user_agent_type", stringField, "user agent `TYPE`: desktop, mobile, desktop_chrome, …"},
	{"geo_location", stringField, "where the request is made from: a country, a city, a postal code `LOCATION`"},
	{"locale", stringField, "Accept-Language `LOCALE`, e.g. en-us"},
	{"domain", stringField, "the site's top-level `DOMAIN`, e.g. com or de"},
	{"start_page", intField, "first results page `N`"},
	{"pages", intField, "number of results pages `N` (each done page bills one result)"},
	{"limit", intField, "results per page `N`"},
	{"markdown", boolField, "return the content as Markdown"},
	{"xhr", boolField, "return the page's XHR requests too"},
	{"parser_preset", stringField, "name of a saved parser `PRESET`"},
	{"content_encoding", stringField, "content `ENCODING`, e.g. base64"},
	{"client_notes", stringField, "`NOTES` kept with the job"},
	{"aggregate_name", stringField, "results aggregator `NAME`"},
	{"callback_url", stringField, "`URL` the API notifies when a job finishes"},
	{"storage_type", stringField, "upload results to cloud storage: `TYPE` gcs, s3 or s3_compatible"},
	{"storage_url", stringField, "cloud storage `URL` the API uploads results to (may hold credentials: never echoed)"},
}

// payloadFlags are the options of `oxy run` that build or complete payloads.
type payloadFlags struct {
	inputKey string
	strings  map[string]*string
	ints     map[string]*int
	bools    map[string]*bool
	noParse  bool
	params   []string // -p KEY=VALUE and KEY:=JSON, in order
}

// register adds the payload options.
func (p *payloadFlags) register(fs *flagSet) {
	p.strings, p.ints, p.bools = map[string]*string{}, map[string]*int{}, map[string]*bool{}
	fs.StringVarP(&p.inputKey, "input-key", "k", "", "put each INPUT into `KEY` (default: url when it contains ://, else query)")
	for _, t := range typedFields {
		switch t.kind {
		case stringField:
			p.strings[t.key] = fs.String(t.flag(), "", t.usage)
		case intField:
			p.ints[t.key] = fs.Int(t.flag(), 0, t.usage)
		case boolField:
			p.bools[t.key] = fs.Bool(t.flag(), false, t.usage)
		}
		if t.key == "parse" {
			fs.BoolVar(&p.noParse, "no-parse", false, "set parse to false")
		}
	}
	fs.StringArrayVarP(&p.params, "param", "p", nil, "set a payload field: `KEY=VALUE` (a string) or KEY:=JSON (any JSON value); repeatable")
}

// option is one payload field an option sets.
type option struct {
	key   string
	value json.RawMessage
	by    string // the option, for messages: "--render", "-p render"
}

// payloadOptions are the fields every payload of a run gets.
type payloadOptions []option

// options returns the fields the options set, refusing a field set twice.
// Errors name the option and the key, never the value: a value may be a
// credential (a storage_url).
func (p *payloadFlags) options(fs *flagSet) (payloadOptions, error) {
	var opts payloadOptions
	add := func(key string, value json.RawMessage, by string) error {
		for _, o := range opts {
			if o.key == key {
				return usageErrorf("%s and %s both set %s: give it once", o.by, by, key)
			}
		}
		opts = append(opts, option{key: key, value: value, by: by})
		return nil
	}
	for _, t := range typedFields {
		if !fs.Changed(t.flag()) {
			continue
		}
		var v any
		switch t.kind {
		case stringField:
			v = *p.strings[t.key]
		case intField:
			v = *p.ints[t.key]
		case boolField:
			v = *p.bools[t.key]
		}
		raw, err := marshalValue(v)
		if err != nil {
			return nil, usageErrorf("--%s: %v", t.flag(), err)
		}
		if err := add(t.key, raw, "--"+t.flag()); err != nil {
			return nil, err
		}
	}
	if fs.Changed("no-parse") && p.noParse {
		if err := add("parse", json.RawMessage("false"), "--no-parse"); err != nil {
			return nil, err
		}
	}
	for i, param := range p.params {
		key, raw, err := parseParam(param)
		if err != nil {
			return nil, usageErrorf("-p number %d: %v", i+1, err)
		}
		if err := add(key, raw, "-p "+key); err != nil {
			return nil, err
		}
	}
	return opts, nil
}

// parseParam reads one -p: KEY=VALUE is the string VALUE, KEY:=JSON the
// JSON value. The error never quotes the value.
func parseParam(s string) (key string, raw json.RawMessage, err error) {
	key, value, ok := strings.Cut(s, "=")
	if !ok {
		return "", nil, errors.New("want KEY=VALUE or KEY:=JSON")
	}
	isJSON := strings.HasSuffix(key, ":")
	key = strings.TrimSuffix(key, ":")
	if strings.TrimSpace(key) == "" {
		return "", nil, errors.New("want KEY=VALUE or KEY:=JSON, and the key is empty")
	}
	if !isJSON {
		raw, err := marshalValue(value)
		return key, raw, err
	}
	if !json.Valid([]byte(value)) {
		return "", nil, fmt.Errorf("the value of %s after := is not valid JSON (use %s=VALUE for a string)", key, key)
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, []byte(value)); err != nil {
		return "", nil, fmt.Errorf("the value of %s after := is not valid JSON", key)
	}
	return key, buf.Bytes(), nil
}

// marshalValue encodes v as JSON without HTML escaping (URLs keep their &).
func marshalValue(v any) (json.RawMessage, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, errors.New("the value cannot be encoded")
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), nil
}

// checkFor refuses options that would take the place of what each payload
// brings itself: its source (given as SOURCE) and its input.
func (o payloadOptions) checkFor(source string) error {
	for _, opt := range o {
		switch {
		case payload.IsInputKey(opt.key) && source != "":
			return usageErrorf("%s sets %s, which holds each INPUT: choose the input key with -k %s instead", opt.by, opt.key, opt.key)
		case payload.IsInputKey(opt.key):
			return usageErrorf("%s sets %s, an input key: each payload has its own input, so an option cannot set one", opt.by, opt.key)
		case opt.key == "source" && source != "":
			return usageErrorf("%s sets source, and so does the first argument (%s)", opt.by, source)
		}
	}
	return nil
}

// clashError is a payload line that sets a field an option sets too.
type clashError struct {
	key, by string
}

func (e *clashError) Error() string {
	return fmt.Sprintf("sets %s, and so does an option (%s)", e.key, e.by)
}

// apply merges the options into p: a field p sets already is an error, not
// a silent choice between the two values.
func (o payloadOptions) apply(p payload.Payload) (payload.Payload, error) {
	for _, opt := range o {
		if p.Has(opt.key) {
			return p, &clashError{key: opt.key, by: opt.by}
		}
		if err := p.SetRaw(opt.key, opt.value); err != nil {
			return p, fmt.Errorf("%s cannot be set", opt.key)
		}
	}
	return p, nil
}

// inputArgs is the first argument and the rest of `oxy run` read as the
// origin's command line does: SOURCE [INPUT…], or one FILE (or "-") of JSON
// payloads.
type inputArgs struct {
	file   string // "" with source: inputs; "" without: stdin JSON payloads
	source string
	inputs []string
}

// readArgs tells a FILE from a SOURCE: "-", an existing file, or an
// argument that looks like a path (a dot or a slash, which no source name
// has) is a file; anything else is a source.
func readArgs(args []string) (inputArgs, error) {
	if len(args) == 0 {
		return inputArgs{}, nil
	}
	first := args[0]
	_, statErr := os.Stat(first)
	if first == "-" || statErr == nil || strings.ContainsAny(first, "./\\") {
		if len(args) > 1 {
			return inputArgs{}, usageErrorf("a FILE of JSON payloads takes no INPUT after it (got %d more arguments); to give inputs, start with a source: oxy run universal URL…", len(args)-1)
		}
		return inputArgs{file: first}, nil
	}
	return inputArgs{source: first, inputs: args[1:]}, nil
}

// inputKeyFor is the payload key an input goes into: -k, else url for an
// input containing "://", else query.
func inputKeyFor(key, input string) string {
	switch {
	case key != "":
		return key
	case strings.Contains(input, "://"):
		return "url"
	}
	return "query"
}

// inputPayloads turns inputs (the arguments, or else the lines of stdin)
// into JSON payload lines for feeder.ReadJSONL, one per line, so that line
// numbers in errors are those of stdin. Blank lines stay blank (skipped).
// Close the reader once read: it ends the goroutine that reads stdin.
func inputPayloads(source, key string, inputs []string, stdin io.Reader) io.ReadCloser {
	line := func(input string) []byte {
		return append(payload.New(source, inputKeyFor(key, input), input).JSON(), '\n')
	}
	if len(inputs) > 0 {
		var b bytes.Buffer
		for _, in := range inputs {
			b.Write(line(in))
		}
		return io.NopCloser(&b)
	}
	pr, pw := io.Pipe()
	go func() {
		sc := bufio.NewScanner(stdin)
		sc.Buffer(make([]byte, 64<<10), payload.DefaultMaxLineBytes)
		w := bufio.NewWriter(pw)
		for sc.Scan() {
			in := strings.TrimSpace(sc.Text())
			if in == "" {
				_ = w.WriteByte('\n')
				continue
			}
			_, _ = w.Write(line(in))
		}
		err := sc.Err()
		if errors.Is(err, bufio.ErrTooLong) {
			err = fmt.Errorf("an input line is longer than %s bytes", strconv.Itoa(payload.DefaultMaxLineBytes))
		}
		if ferr := w.Flush(); err == nil {
			err = ferr
		}
		_ = pw.CloseWithError(err) // nil closes with EOF
	}()
	return pr
}
