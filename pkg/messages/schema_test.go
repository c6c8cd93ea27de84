package messages_test

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/oxypipe/oxypipe/pkg/messages"
	"github.com/oxypipe/oxypipe/pkg/oxytype"
	"github.com/oxypipe/oxypipe/pkg/runlog"
)

// schemaDir holds the published JSON Schemas of the wire contract
// (docs/wire-contract.md).
const schemaDir = "../../docs/schemas"

// compileSchema compiles one schema of the wire contract, with formats
// (date-time) asserted as a strict producer's validator would.
func compileSchema(t *testing.T, name string) *jsonschema.Schema {
	t.Helper()
	path, err := filepath.Abs(filepath.Join(schemaDir, name))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	s, err := c.Compile(path)
	if err != nil {
		t.Fatalf("compile %s: %v", name, err)
	}
	return s
}

// contractCase is one message of the wire contract: its schema and two
// values of its Go type, one with every field set and one with only what is
// always written.
type contractCase struct {
	schema  string
	full    any
	minimal any
}

func contractCases() []contractCase {
	at := time.Date(2026, 9, 29, 17, 4, 12, 345_000_000, time.UTC)
	code := 404
	jobID := "7383027301239487230"
	actor := oxytype.Party{Type: "feeder", Name: "host-1"}
	body := json.RawMessage(`{"source":"universal","url":"https://example.com/?a=<b>&c"}`)
	announced := messages.RunAnnounced{
		V: messages.Version, Run: "20260929T170412.345Z", Total: 3, FinalDataType: oxytype.FinalDataType,
		Destination: "s3://bucket/results", RunLog: "logs", StartedAt: at,
		Options: json.RawMessage(`{"batch":true}`), StopTimeout: 5 * time.Second,
	}
	completed := messages.RunCompleted{
		V: messages.Version, Run: announced.Run, Total: 5, Done: 1, Faulted: 1, Rejected: 1, Unsubmitted: 1, Unfetched: 1,
		Unidentified: 2, CompletedAt: at, RunLog: "logs/20260929T170412.345Z.jsonl",
	}
	return []contractCase{
		{
			schema:  "run-announced.json",
			full:    announced,
			minimal: messages.RunAnnounced{Run: "r1", FinalDataType: oxytype.FinalDataType, StartedAt: at},
		},
		{
			schema: "run-record.json",
			full: messages.RunRecord{
				V: messages.Version, Announced: announced, State: oxytype.RunStateCompleted, Reason: "stopped by the user",
				Stop:      &messages.RunStop{Cause: messages.StopByUser, At: at, Deadline: at.Add(time.Minute)},
				UpdatedAt: at, Completed: &completed, Feed: &messages.RunFeed{Name: "crawler", Open: true},
			},
			minimal: messages.RunRecord{
				Announced: messages.RunAnnounced{Run: "r1", FinalDataType: oxytype.FinalDataType, StartedAt: at},
				State:     oxytype.RunStateAnnounced, UpdatedAt: at,
			},
		},
		{
			schema:  "run-stop.json",
			full:    messages.RunStop{Cause: messages.StopByOutput, At: at, Deadline: at.Add(time.Minute)},
			minimal: messages.RunStop{Cause: messages.StopByOutput, At: at, Deadline: at},
		},
		{
			schema:  "run-completed.json",
			full:    completed,
			minimal: messages.RunCompleted{Run: "r1", CompletedAt: at},
		},
		{
			schema:  "payload.json",
			full:    messages.Payload{V: messages.Version, Run: "r1", Doc: "17", Attempt: 1, Payload: body},
			minimal: messages.Payload{Run: "r1", Doc: "0", Payload: json.RawMessage(`{}`)},
		},
		{
			schema: "status-event.json",
			full: messages.StatusEvent{
				V: messages.Version, Run: "r1", Doc: "17", Attempt: 1, DataType: oxytype.DataPayload, Outcome: oxytype.HardFailure,
				Origin: actor, Consumer: oxytype.Party{Type: "submitter", Name: "pod-2"}, RetryCount: 2, Reason: "refused",
				Facts: oxytype.Facts{
					Error: &oxytype.ErrorInfo{StatusCode: &code, Message: "Not Found", TraceID: "t-1", MayHaveBilled: true},
					State: oxytype.Rejected, APIJobID: jobID, Payload: body, Upload: &oxytype.Upload{Code: 13000, Message: "ok"},
				},
				Time: at,
			},
			minimal: messages.StatusEvent{Run: "r1", Doc: "0", DataType: oxytype.DataPayload, Outcome: oxytype.Success, Origin: actor, Time: at},
		},
		{
			schema:  "feed-payload.json",
			full:    messages.FeedPayload{V: messages.Version, Feed: "crawler", ID: "https://example.com/a", Payload: body},
			minimal: messages.FeedPayload{Feed: "crawler", ID: "1", Payload: json.RawMessage(`{}`)},
		},
		{
			schema: "feed-control.json",
			full: messages.FeedControl{V: messages.Version, Feed: "crawler", Op: messages.FeedOpen,
				Cut: messages.FeedCut{MaxPayloads: 1000, MaxAge: time.Hour}, Destination: "s3://bucket/results", RunLog: "logs"},
			minimal: messages.FeedControl{Feed: "crawler", Op: messages.FeedPause},
		},
		{
			schema: "feed-record.json",
			full: messages.FeedRecord{
				V: messages.Version, Feed: "crawler", State: messages.FeedStateClosing,
				Cut: messages.FeedCut{MaxPayloads: 1000, MaxAge: time.Hour}, Destination: "results", RunLog: "logs",
				Current: &messages.FeedRun{Run: "crawler.2", Docs: 3, OpenedAt: at, Cutting: true},
				Runs:    []messages.FeedRun{{Run: "crawler.1", Docs: 1000, OpenedAt: at, Cutting: true}},
				Opened:  2, CloseAfter: 77, Assigned: 1003, Duplicates: 4, UpdatedAt: at,
			},
			minimal: messages.FeedRecord{Feed: "crawler", State: messages.FeedStateOpen, UpdatedAt: at},
		},
		{
			schema: "run-log-line.json",
			full: runlog.Line{
				State: oxytype.Unfetched, ID: &jobID, Payload: body,
				Error:  &oxytype.ErrorInfo{StatusCode: &code, Message: "Not Found", TraceID: "t-1", MayHaveBilled: true},
				Upload: &oxytype.Upload{Code: 13000, Message: "ok"},
			},
			minimal: runlog.Line{State: oxytype.Rejected},
		},
	}
}

// encode writes v the way the pipeline does: the envelope's own MarshalJSON
// (no HTML escaping), json.Marshal for the other values.
func encode(t *testing.T, v any) []byte {
	t.Helper()
	var (
		data []byte
		err  error
	)
	if m, ok := v.(json.Marshaler); ok {
		data, err = m.MarshalJSON()
	} else {
		data, err = json.Marshal(v)
	}
	if err != nil {
		t.Fatalf("encode %T: %v", v, err)
	}
	return data
}

func decodeAny(t *testing.T, data []byte) any {
	t.Helper()
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("decode %s: %v", data, err)
	}
	return v
}

// TestSchemasMatchEncoders checks the published schemas against the Go
// encoders both ways, so that neither can change without the other:
//   - every field of the Go type is set in the full value (a new field the
//     test does not know fails here), and its encoding validates against a
//     schema that refuses unknown properties, so every Go field is in the
//     schema;
//   - every property of the schema, nested ones included, is written by the
//     encoder for the full value, so the schema names no field Go lacks;
//   - the value with only what is always written validates too, and the
//     keys it has are exactly the schema's required ones.
func TestSchemasMatchEncoders(t *testing.T) {
	for _, tc := range contractCases() {
		t.Run(tc.schema, func(t *testing.T) {
			s := compileSchema(t, tc.schema)
			if zero := zeroFields(reflect.ValueOf(tc.full), reflect.TypeOf(tc.full).Name()); len(zero) > 0 {
				t.Fatalf("the full %T leaves fields unset: %s (set them here and describe them in %s)",
					tc.full, strings.Join(zero, ", "), tc.schema)
			}
			full := decodeAny(t, encode(t, tc.full))
			if err := s.Validate(full); err != nil {
				t.Errorf("the encoding of a full %T does not validate against %s: %v", tc.full, tc.schema, err)
			}
			var missing []string
			schemaProperties(s, full, "", &missing, map[*jsonschema.Schema]bool{})
			if len(missing) > 0 {
				t.Errorf("%s has properties the encoder of %T never writes: %s", tc.schema, tc.full, strings.Join(missing, ", "))
			}

			minimal := decodeAny(t, encode(t, tc.minimal))
			if err := s.Validate(minimal); err != nil {
				t.Errorf("the encoding of a minimal %T does not validate against %s: %v", tc.minimal, tc.schema, err)
			}
			written := keysOf(minimal)
			required := slices.Sorted(slices.Values(resolve(s).Required))
			if !slices.Equal(written, required) {
				t.Errorf("%T always writes %v; %s requires %v", tc.minimal, written, tc.schema, required)
			}
		})
	}
}

// zeroFields lists the exported fields of v (recursively into structs and
// pointers) that hold their zero value, except Extra (unknown fields are
// not part of the contract).
func zeroFields(v reflect.Value, path string) []string {
	for v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return []string{path}
		}
		v = v.Elem()
	}
	if v.Kind() != reflect.Struct || v.Type() == reflect.TypeFor[time.Time]() {
		if v.IsZero() {
			return []string{path}
		}
		return nil
	}
	var zero []string
	for i := range v.NumField() {
		f := v.Type().Field(i)
		if !f.IsExported() || f.Type == reflect.TypeFor[messages.Extra]() {
			continue
		}
		zero = append(zero, zeroFields(v.Field(i), path+"."+f.Name)...)
	}
	return zero
}

// resolve follows a schema's $ref chain to the schema that has the
// properties.
func resolve(s *jsonschema.Schema) *jsonschema.Schema {
	for s.Ref != nil && len(s.Properties) == 0 {
		s = s.Ref
	}
	return s
}

// schemaProperties appends to missing every property of s (and of the
// schemas it refers to or combines) that value does not have.
func schemaProperties(s *jsonschema.Schema, value any, path string, missing *[]string, seen map[*jsonschema.Schema]bool) {
	if s == nil || seen[s] {
		return
	}
	seen[s] = true
	defer delete(seen, s)
	obj, isObj := value.(map[string]any)
	schemaProperties(s.Ref, value, path, missing, seen)
	for _, sub := range slices.Concat(s.AllOf, s.AnyOf, s.OneOf) {
		if isObj && len(resolve(sub).Properties) > 0 {
			schemaProperties(sub, value, path, missing, seen)
		}
	}
	for _, name := range slices.Sorted(mapKeys(s.Properties)) {
		child, ok := obj[name]
		if !ok {
			*missing = append(*missing, path+"/"+name)
			continue
		}
		schemaProperties(s.Properties[name], child, path+"/"+name, missing, seen)
	}
}

func mapKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

func keysOf(v any) []string {
	obj, _ := v.(map[string]any)
	return slices.Sorted(mapKeys(obj))
}

// TestSchemasRefuseBadMessages checks that the schemas refuse what the
// workers refuse, so a producer that validates against them learns of a
// bad message before publishing it. Where the Go decoder is named, it must
// refuse the message too, with a reason naming what is wrong.
func TestSchemasRefuseBadMessages(t *testing.T) {
	const okPayload = `{"v":1,"run":"r1","doc":"0","payload":{"source":"universal","url":"https://example.com"}}`
	const okEvent = `{"v":1,"run":"r1","doc":"0","data_type":"payload","outcome":"success","origin":{"type":"producer","name":"p"},"time":"2026-09-29T17:04:12Z"}`
	const okAnnounced = `{"v":1,"run":"r1","total":2,"final_data_type":"written","destination":"out","run_log":"logs","started_at":"2026-09-29T17:04:12Z"}`
	for _, sch := range []struct{ schema, ok string }{{"payload.json", okPayload}, {"status-event.json", okEvent}, {"run-announced.json", okAnnounced}} {
		if err := compileSchema(t, sch.schema).Validate(decodeAny(t, []byte(sch.ok))); err != nil {
			t.Fatalf("the good %s message is refused: %v", sch.schema, err)
		}
	}
	payloadDecoder := func(data []byte) error { _, err := messages.DecodePayload("oxy.payload.r1", data); return err }
	eventDecoder := func(data []byte) error { _, err := messages.DecodeStatusEvent("oxy.status.r1", data); return err }
	announcedDecoder := func(data []byte) error { _, err := messages.DecodeRunAnnounced("oxy.run.r1", data); return err }
	const okFeed = `{"v":1,"feed":"crawler","id":"a1","payload":{"source":"universal","url":"https://example.com"}}`
	const okOpen = `{"v":1,"feed":"crawler","op":"open","cut":{"max_payloads":100}}`
	feedDecoder := func(data []byte) error { _, err := messages.DecodeFeedPayload("oxy.feed.crawler", data); return err }
	controlDecoder := func(data []byte) error { _, err := messages.DecodeFeedControl("oxy.feedctl.crawler", data); return err }
	for _, good := range []struct{ schema, ok string }{{"feed-payload.json", okFeed}, {"feed-control.json", okOpen}} {
		if err := compileSchema(t, good.schema).Validate(decodeAny(t, []byte(good.ok))); err != nil {
			t.Fatalf("the good %s message is refused: %v", good.schema, err)
		}
	}
	if err := feedDecoder([]byte(okFeed)); err != nil {
		t.Fatalf("the good feed payload is refused: %v", err)
	}
	if err := controlDecoder([]byte(okOpen)); err != nil {
		t.Fatalf("the good feed open is refused: %v", err)
	}
	cases := []struct {
		name    string
		schema  string
		message string
		decode  func([]byte) error
		reason  string // a part of the decoder's reason
	}{
		{"a payload without a version", "payload.json", `{"run":"r1","doc":"0","payload":{"source":"universal"}}`, payloadDecoder, `missing "v"`},
		{"a payload of an unknown envelope version", "payload.json", strings.Replace(okPayload, `"v":1`, `"v":2`, 1), payloadDecoder, "unsupported envelope version 2"},
		{"a payload whose doc is not canonical", "payload.json", strings.Replace(okPayload, `"doc":"0"`, `"doc":"07"`, 1), payloadDecoder, "invalid doc id"},
		{"a payload whose body is not an object", "payload.json", `{"v":1,"run":"r1","doc":"0","payload":["universal"]}`, payloadDecoder, "must be a JSON object"},
		{"a payload without a body", "payload.json", `{"v":1,"run":"r1","doc":"0"}`, payloadDecoder, "must be a JSON object"},
		{"a payload whose run holds an underscore", "payload.json", strings.Replace(okPayload, `"run":"r1"`, `"run":"r_1"`, 1), nil, ""},
		{"a payload with a negative attempt", "payload.json", strings.Replace(okPayload, `"doc":"0"`, `"doc":"0","attempt":-1`, 1), payloadDecoder, "attempt -1 is negative"},
		{"a payload with a misspelt field", "payload.json", strings.Replace(okPayload, `"doc":"0"`, `"doc":"0","atempt":1`, 1), nil, ""},
		{"a payload that is an array", "payload.json", `[1]`, payloadDecoder, "want an object"},
		{"an event without a time", "status-event.json", strings.Replace(okEvent, `,"time":"2026-09-29T17:04:12Z"`, "", 1), eventDecoder, `missing "time"`},
		{"an event whose time is not RFC 3339", "status-event.json", strings.Replace(okEvent, `2026-09-29T17:04:12Z`, `yesterday`, 1), eventDecoder, "time"},
		{"an event with an unknown outcome", "status-event.json", strings.Replace(okEvent, `"success"`, `"fine"`, 1), eventDecoder, "outcome \"fine\""},
		{"a hard failure without a state", "status-event.json", strings.Replace(okEvent, `"success"`, `"hard_failure"`, 1), eventDecoder, `needs a "state"`},
		{"an event with an unknown state", "status-event.json", strings.Replace(okEvent, `"success"`, `"hard_failure","state":"lost"`, 1), eventDecoder, "state \"lost\""},
		{"an event whose origin has no type", "status-event.json", strings.Replace(okEvent, `"type":"producer",`, ``, 1), nil, ""},
		{"a feed payload without an id", "feed-payload.json", strings.Replace(okFeed, `"id":"a1",`, ``, 1), feedDecoder, `missing "id"`},
		{"a feed payload of an unknown envelope version", "feed-payload.json", strings.Replace(okFeed, `"v":1`, `"v":3`, 1), feedDecoder, "unsupported envelope version 3"},
		{"a feed payload for another feed than its subject's (no schema can see the subject)", "", strings.Replace(okFeed, `"crawler"`, `"export"`, 1), feedDecoder, `does not match the subject's feed`},
		{"a feed payload whose feed name has a dot", "feed-payload.json", strings.Replace(okFeed, `"crawler"`, `"craw.ler"`, 1), feedDecoder, `does not match`},
		{"a feed payload whose body is a string", "feed-payload.json", strings.Replace(okFeed, `{"source":"universal","url":"https://example.com"}`, `"https://example.com"`, 1), feedDecoder, "must be a JSON object"},
		{"a feed open without a cut", "feed-control.json", `{"v":1,"feed":"crawler","op":"open"}`, controlDecoder, `"cut" needs max_payloads or max_age`},
		{"a feed open with an empty cut", "feed-control.json", `{"v":1,"feed":"crawler","op":"open","cut":{}}`, controlDecoder, `"cut" needs max_payloads or max_age`},
		{"a feed open with a cut age below a second", "feed-control.json", `{"v":1,"feed":"crawler","op":"open","cut":{"max_age":1000}}`, controlDecoder, "below one second"},
		{"a feed control with an unknown op", "feed-control.json", `{"v":1,"feed":"crawler","op":"delete"}`, controlDecoder, `op "delete"`},
		{"an announcement with a negative total", "run-announced.json", strings.Replace(okAnnounced, `"total":2`, `"total":-1`, 1), announcedDecoder, "total -1 is negative"},
		{"an announcement without a final data type", "run-announced.json", strings.Replace(okAnnounced, `"final_data_type":"written",`, ``, 1), announcedDecoder, `missing "final_data_type"`},
		{"an announcement without a start", "run-announced.json", strings.Replace(okAnnounced, `,"started_at":"2026-09-29T17:04:12Z"`, ``, 1), announcedDecoder, `missing "started_at"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.message == "" || !json.Valid([]byte(tc.message)) {
				t.Fatalf("the test's message is not JSON: %s", tc.message)
			}
			if tc.schema == "" {
				// only the decoder can check it
			} else if err := compileSchema(t, tc.schema).Validate(decodeAny(t, []byte(tc.message))); err == nil {
				t.Errorf("%s accepts %s", tc.schema, tc.message)
			}
			if tc.decode == nil {
				return
			}
			err := tc.decode([]byte(tc.message))
			if err == nil || !strings.Contains(err.Error(), tc.reason) {
				t.Errorf("the decoder's answer to %s is %v, want a reason containing %q", tc.message, err, tc.reason)
			}
		})
	}
}
