package testutil

import (
	"errors"
	"iter"
	"testing"

	"github.com/nats-io/nats.go/jetstream"
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

// StreamDecodedEach is StreamDecoded for messages that may hold several
// values (a batch of status events): decode yields each of a message's
// values in order (messages.StatusEvents). A value that does not decode
// fails the test.
func StreamDecodedEach[T any](t testing.TB, js jetstream.JetStream, name string, decode func(subject string, data []byte) iter.Seq2[*T, error]) []T {
	t.Helper()
	var out []T
	for _, m := range StreamMsgs(t, js, name) {
		for v, err := range decode(m.Subject, m.Data) {
			if err != nil {
				t.Fatalf("stream %s, message %d does not decode: %v", name, m.Sequence, err)
			}
			out = append(out, *v)
		}
	}
	return out
}
