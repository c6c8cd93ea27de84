package progress

import (
	"fmt"
	"testing"

	"github.com/oxypipe/oxypipe/pkg/messages"
	"github.com/oxypipe/oxypipe/pkg/oxytype"
)

func TestTrackerKeepsStateOnlyForDocsInFlight(t *testing.T) {
	t.Parallel()
	const total = 1000
	tr := NewTracker(messages.RunAnnounced{Total: total})
	ev := func(doc int, dt oxytype.DataType) *messages.StatusEvent {
		return &messages.StatusEvent{Doc: messages.DocID(doc), DataType: dt, Outcome: oxytype.Success,
			Facts: oxytype.Facts{Payload: []byte(fmt.Sprintf(`{"source":"universal","url":"https://shop.example/%d"}`, doc)), APIJobID: fmt.Sprintf("75%017d", doc)}}
	}
	for doc := range total {
		tr.Apply(ev(doc, oxytype.DataPayload))
		tr.Apply(ev(doc, oxytype.DataSubmitted))
	}
	if n := len(tr.inFlight); n != total {
		t.Fatalf("%d docs in flight, want %d", n, total)
	}
	for doc := range total {
		j, ok := tr.Apply(ev(doc, oxytype.DataWritten))
		if !ok || j.ID != fmt.Sprintf("75%017d", doc) || j.Input != fmt.Sprintf("https://shop.example/%d", doc) {
			t.Fatalf("doc %d finished as %+v, %v", doc, j, ok)
		}
	}
	if n := len(tr.inFlight); n != 0 {
		t.Fatalf("%d docs still held after every doc finished", n)
	}
	if p := tr.Progress(); p.Done != total || p.Written != total {
		t.Fatalf("progress %+v", p)
	}
}
