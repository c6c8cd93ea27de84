package testutil

import (
	"errors"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/oxypipe/oxypipe/pkg/messages"
)

// StreamMsgs returns the messages the stream name still stores, in order.
func StreamMsgs(t testing.TB, js jetstream.JetStream, name string) []*jetstream.RawStreamMsg {
	t.Helper()
	ctx := t.Context()
	s, err := js.Stream(ctx, name)
	if err != nil {
		t.Fatalf("stream %s: %v", name, err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		t.Fatalf("stream %s: %v", name, err)
	}
	var out []*jetstream.RawStreamMsg
	for seq := info.State.FirstSeq; info.State.Msgs > 0 && seq <= info.State.LastSeq; seq++ {
		m, err := s.GetMsg(ctx, seq)
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			continue // deleted or acked away since Info
		}
		if err != nil {
			t.Fatalf("stream %s, message %d: %v", name, seq, err)
		}
		out = append(out, m)
	}
	return out
}

// StreamDecoded returns the messages the stream name still stores, in
// order, each decoded by decode (messages.DecodeStatusEvent,
// messages.DecodeDone, …). A message that does not decode fails the test:
// whatever a stage stored must be readable by the next one.
func StreamDecoded[T any](t testing.TB, js jetstream.JetStream, name string, decode func(subject string, data []byte) (*T, error)) []T {
	t.Helper()
	var out []T
	for _, m := range StreamMsgs(t, js, name) {
		v, err := decode(m.Subject, m.Data)
		if err != nil {
			t.Fatalf("stream %s, message %d does not decode: %v", name, m.Sequence, err)
		}
		out = append(out, *v)
	}
	return out
}

// StatusEvents returns the status events the stream name still stores, in
// order, the events of a batch message (messages.JoinStatusEvents) one by
// one. An event that does not decode fails the test.
func StatusEvents(t testing.TB, js jetstream.JetStream, name string) []messages.StatusEvent {
	t.Helper()
	var out []messages.StatusEvent
	for _, m := range StreamMsgs(t, js, name) {
		for ev, err := range messages.StatusEvents(m.Subject, m.Data) {
			if err != nil {
				t.Fatalf("stream %s, message %d does not decode: %v", name, m.Sequence, err)
			}
			out = append(out, *ev)
		}
	}
	return out
}
