package messages_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/oxypipe/oxypipe/pkg/messages"
	"github.com/oxypipe/oxypipe/pkg/oxytype"
)

func statusEvent(t *testing.T, doc string) []byte {
	t.Helper()
	ev := messages.StatusEvent{
		Run: run, Doc: doc, DataType: oxytype.DataSubmitted, Outcome: oxytype.Success,
		Origin: oxytype.Party{Type: "submitter", Name: "pod-1"}, Time: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC),
	}
	data, err := ev.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	return data
}

type decoded struct {
	docs []string
	errs []string
}

func decodeAll(subject string, data []byte) decoded {
	var d decoded
	for ev, err := range messages.StatusEvents(subject, data) {
		switch {
		case err != nil:
			d.errs = append(d.errs, err.Error())
			d.docs = append(d.docs, "!")
		default:
			d.docs = append(d.docs, ev.Doc)
		}
	}
	return d
}

// A batch decodes to its events in order, a single event to itself, and a
// malformed event of a batch spoils only itself.
func TestStatusBatchesDecodeEventByEvent(t *testing.T) {
	t.Parallel()
	subject := messages.StatusSubject(run)
	one := statusEvent(t, "7")
	if got := decodeAll(subject, one); strings.Join(got.docs, ",") != "7" || got.errs != nil {
		t.Fatalf("single event: %+v", got)
	}
	batch := messages.JoinStatusEvents([][]byte{statusEvent(t, "0"), statusEvent(t, "1"), []byte(`{"v":1,"run":"` + run + `","doc":"2"}`), statusEvent(t, "3")})
	got := decodeAll(subject, append([]byte(" \n"), batch...))
	if strings.Join(got.docs, ",") != "0,1,!,3" {
		t.Fatalf("batch docs = %v, want 0,1,!,3 (errors %v)", got.docs, got.errs)
	}
	if len(got.errs) != 1 || !strings.Contains(got.errs[0], `missing "data_type"`) {
		t.Fatalf("the malformed event's error = %v", got.errs)
	}
	elems, err := messages.SplitStatusEvents(subject, batch)
	if err != nil || len(elems) != 4 || string(elems[3]) != string(statusEvent(t, "3")) {
		t.Fatalf("SplitStatusEvents: %d elements, %v", len(elems), err)
	}
	if !messages.IsStatusBatch(batch) || messages.IsStatusBatch(one) {
		t.Fatal("IsStatusBatch tells a batch from an event wrongly")
	}
}

// A batch that is not an array of event objects is refused whole, with a
// reason, and never read past its end.
func TestMalformedStatusBatchesAreRefusedWhole(t *testing.T) {
	t.Parallel()
	subject := messages.StatusSubject(run)
	ev := string(statusEvent(t, "0"))
	many := make([][]byte, messages.MaxStatusBatch+1)
	for i := range many {
		many[i] = []byte(ev)
	}
	for _, tc := range []struct{ name, data, want string }{
		{"empty", `[]`, "holds no event"},
		{"not objects", `[1,2]`, "array of event objects"},
		{"unterminated", `[` + ev, "array of event objects"},
		{"trailing bytes", `[` + ev + `]x`, "array of event objects"},
		{"no comma", `[` + ev + ` ` + ev + `]`, "array of event objects"},
		{"too many", string(messages.JoinStatusEvents(many)), fmt.Sprintf("more than %d", messages.MaxStatusBatch)},
	} {
		_, err := messages.SplitStatusEvents(subject, []byte(tc.data))
		var de *messages.DecodeError
		if !errors.As(err, &de) || !strings.Contains(de.Reason, tc.want) || de.Run != run {
			t.Errorf("%s: error %v, want a DecodeError of run %s saying %q", tc.name, err, run, tc.want)
		}
		if got := decodeAll(subject, []byte(tc.data)); len(got.errs) != 1 || len(got.docs) != 1 {
			t.Errorf("%s: StatusEvents yielded %+v, want one error", tc.name, got)
		}
	}
	if _, err := messages.SplitStatusEvents(subject, messages.JoinStatusEvents(many[:messages.MaxStatusBatch])); err != nil {
		t.Errorf("a batch of exactly MaxStatusBatch events: %v", err)
	}
}

// Versions order events by their message's sequence first and their place
// in the message second.
func TestStatusVersionsFollowStreamThenBatchOrder(t *testing.T) {
	t.Parallel()
	last := messages.StatusVersion(41, messages.MaxStatusBatch-1)
	next := messages.StatusVersion(42, 0)
	if messages.StatusVersion(41, 0) >= messages.StatusVersion(41, 1) || last >= next || next >= messages.StatusVersion(42, 1) {
		t.Fatalf("versions out of order: 41/0 %d, 41/1 %d, 41/last %d, 42/0 %d", messages.StatusVersion(41, 0), messages.StatusVersion(41, 1), last, next)
	}
	if messages.StatusVersion(1, 0) <= 1 {
		t.Fatal("the first message's first event must version above 1, the version every success is written with")
	}
	if got := messages.UnknownBatchDocID("OXY_STATUS", 9, 3); got != "?OXY_STATUS:9:3" || !messages.IsUnknownDocID(got) {
		t.Fatalf("UnknownBatchDocID = %q", got)
	}
}
