package messages

import (
	"github.com/nats-io/nats.go"
	"github.com/oxypipe/oxypipe/pkg/oxytype"
)

// Header names oxypipe sets on the messages it publishes.
const (
	// HeaderMsgID is JetStream's deduplication header.
	HeaderMsgID = "Nats-Msg-Id"
	// HeaderOrigin names the publisher as "type/name" (see [Actor]); a stage
	// uses it as the Origin of a failure it records for the message.
	HeaderOrigin = "Oxy-Origin"
)

// NewMsg encodes e into a NATS message for its subject with the
// deduplication and origin headers set. Publish it with JetStream (never core
// NATS, which would not confirm it was stored).
func NewMsg(e Envelope, origin oxytype.Party) (*nats.Msg, error) {
	data, err := e.MarshalJSON()
	if err != nil {
		return nil, err
	}
	m := nats.NewMsg(e.Subject())
	m.Data = data
	if id := e.MsgID(); id != "" {
		m.Header.Set(HeaderMsgID, id)
	}
	if origin.Type != "" {
		m.Header.Set(HeaderOrigin, origin.String())
	}
	return m, nil
}

// OriginOf returns the publisher named by a message's Oxy-Origin header, or
// the zero Actor when the header is missing.
func OriginOf(h nats.Header) oxytype.Party {
	if h == nil {
		return oxytype.Party{}
	}
	v := h.Get(HeaderOrigin)
	if v == "" {
		return oxytype.Party{}
	}
	return oxytype.ParseParty(v)
}
