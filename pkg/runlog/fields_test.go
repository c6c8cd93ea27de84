package runlog_test

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/oxypipe/oxypipe/pkg/oxytype"
	"github.com/oxypipe/oxypipe/pkg/runlog"
)

// TestEveryLineFieldSurvivesAWriteAndARead is the check of "Adding a
// run-log field" (docs/architecture.md): the writer writes each key by hand
// and the reader lists the keys it requires, so a field added to Line and
// missed by either one fails here. The line below must set every field of
// Line; a new field left unset fails the test until it is.
func TestEveryLineFieldSurvivesAWriteAndARead(t *testing.T) {
	t.Parallel()
	id, code := "7500000000000000001", 403
	full := runlog.Line{
		State:   oxytype.Unfetched,
		ID:      &id,
		Payload: json.RawMessage(`{"source":"universal","url":"https://example.com"}`),
		Error:   &oxytype.ErrorInfo{StatusCode: &code, Message: "Forbidden", TraceID: "t-1", MayHaveBilled: true},
		Upload:  &oxytype.Upload{Code: 13102, Message: "No such path"},
	}
	v := reflect.ValueOf(full)
	for i := range v.NumField() {
		if v.Field(i).IsZero() {
			t.Fatalf("the test's line leaves Line.%s unset: set it, so that the round trip checks it", v.Type().Field(i).Name)
		}
	}

	var buf bytes.Buffer
	if err := runlog.NewWriter(&buf).WriteLine(full); err != nil {
		t.Fatal(err)
	}
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(buf.Bytes(), &keys); err != nil {
		t.Fatal(err)
	}
	for i := range v.NumField() {
		key, _, _ := strings.Cut(v.Type().Field(i).Tag.Get("json"), ",")
		if _, ok := keys[key]; !ok {
			t.Errorf("the writer does not write key %q (Line.%s): %s", key, v.Type().Field(i).Name, buf.Bytes())
		}
	}
	got, err := runlog.ReadAll(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || !reflect.DeepEqual(got[0], full) {
		t.Fatalf("read back %+v, want %+v", got, full)
	}
}
