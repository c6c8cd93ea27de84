package testutil

import (
	"errors"
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
