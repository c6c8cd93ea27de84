package jobresults

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"unsafe"

	"github.com/oxypipe/oxypipe/pkg/oxytype"
)

// The stages' records of one document keep one copy of its payload and job
// id, however many of them carry it; a different payload gets its own.
func TestMemoryStoreKeepsOnePayloadPerDocument(t *testing.T) {
	t.Parallel()
	s := NewMemoryStore()
	payload := json.RawMessage(`{"source":"universal","url":"https://sandbox.oxylabs.io/products/1"}`)
	var entries []Entry
	for _, stage := range []string{"payload", "submitted", "done", "written"} {
		entries = append(entries, Entry{Key: Key{Run: "run", DataType: stage, DocID: "0"}, Outcome: oxytype.Success,
			Facts: oxytype.Facts{APIJobID: strings.Clone("7500000000000000001"), Payload: append(json.RawMessage(nil), payload...)}})
	}
	entries = append(entries, Entry{Key: Key{Run: "run", DataType: "payload", DocID: "1"}, Outcome: oxytype.Success,
		Facts: oxytype.Facts{Payload: append(json.RawMessage(nil), payload...)}})
	if _, err := s.Apply(context.Background(), entries); err != nil {
		t.Fatal(err)
	}

	doc := func(id string) *memDoc {
		j := s.jobFor("run")
		return s.stripe(j, id).docs[id]
	}
	d0 := doc("0")
	if len(d0.recs) != 4 {
		t.Fatalf("%d records for doc 0, want 4", len(d0.recs))
	}
	first := d0.recs[0].ext
	for i, r := range d0.recs {
		if string(r.ext.payload) != string(payload) || &r.ext.payload[0] != &first.payload[0] {
			t.Errorf("record %d holds its own copy of the payload", i)
		}
		if r.ext.apiJobID != "7500000000000000001" || unsafe.StringData(r.ext.apiJobID) != unsafe.StringData(first.apiJobID) {
			t.Errorf("record %d holds its own copy of the job id", i)
		}
	}
	if d1 := doc("1"); &d1.recs[0].ext.payload[0] == &first.payload[0] {
		t.Error("another document shares doc 0's payload")
	}
	// What a reader gets is a copy: changing it changes nothing stored.
	recs, err := s.GetDocStatus(context.Background(), "run", "0")
	if err != nil || len(recs) != 4 {
		t.Fatalf("GetDocStatus: %v, %d records", err, len(recs))
	}
	recs[1].Payload[0] = 'X'
	if string(first.payload) != string(payload) {
		t.Errorf("a reader's change reached the store: %s", first.payload)
	}
}
