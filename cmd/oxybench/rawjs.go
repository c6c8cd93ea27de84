package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// rawResult is the raw JetStream rate: n messages published
// asynchronously to a scratch work-queue stream and consumed, each acked,
// from another connection at the same time.
type rawResult struct {
	msgs, size int
	// published is when the last publish was confirmed, elapsed when the
	// last message was acked, both from the first publish.
	published, elapsed time.Duration
}

func (r *rawResult) msgsPerSecond() float64 { return float64(r.msgs) / r.elapsed.Seconds() }

// rawJetStream publishes n messages of size bytes on e's broker and
// consumes them.
func (e *env) rawJetStream(ctx context.Context, n, size int) (*rawResult, error) {
	const name = "OXYBENCH_RAW"
	pubConn, err := e.srv.Connect()
	if err != nil {
		return nil, err
	}
	defer pubConn.Close()
	subConn, err := e.srv.Connect()
	if err != nil {
		return nil, err
	}
	defer subConn.Close()
	pub, err := jetstream.New(pubConn, jetstream.WithPublishAsyncMaxPending(4096))
	if err != nil {
		return nil, err
	}
	sub, err := jetstream.New(subConn)
	if err != nil {
		return nil, err
	}
	stream, err := pub.CreateStream(ctx, jetstream.StreamConfig{
		Name: name, Subjects: []string{"oxybench.raw.>"}, Retention: jetstream.WorkQueuePolicy, Storage: jetstream.FileStorage,
	})
	if err != nil {
		return nil, err
	}
	defer func() { _ = pub.DeleteStream(context.WithoutCancel(ctx), name) }() // scratch
	if _, err := stream.CreateOrUpdateConsumer(ctx, jetstream.ConsumerConfig{
		Durable: "raw", AckPolicy: jetstream.AckExplicitPolicy, AckWait: time.Minute, MaxAckPending: 20000,
	}); err != nil {
		return nil, err
	}
	cons, err := sub.Consumer(ctx, name, "raw")
	if err != nil {
		return nil, err
	}
	var got atomic.Int64
	var ackErrs atomic.Int64
	all := make(chan struct{})
	cc, err := cons.Consume(func(m jetstream.Msg) {
		if err := m.Ack(); err != nil {
			ackErrs.Add(1)
		}
		if got.Add(1) == int64(n) {
			close(all)
		}
	}, jetstream.PullMaxMessages(512))
	if err != nil {
		return nil, err
	}
	defer cc.Stop()

	body := bytes.Repeat([]byte{'x'}, size)
	started := time.Now()
	for i := range n {
		for {
			_, err := pub.PublishAsync(fmt.Sprintf("oxybench.raw.%d", i%16), body)
			if err == nil {
				break
			}
			if !errors.Is(err, jetstream.ErrTooManyStalledMsgs) {
				return nil, err
			}
			// The window stayed full for the client's stall wait (a
			// loaded machine): let it drain, then publish again.
			select {
			case <-pub.PublishAsyncComplete():
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
	}
	select {
	case <-pub.PublishAsyncComplete():
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	res := &rawResult{msgs: n, size: size, published: time.Since(started)}
	select {
	case <-all:
	case <-time.After(5 * time.Minute):
		return nil, fmt.Errorf("consumed %d of %d messages in 5 minutes", got.Load(), n)
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	res.elapsed = time.Since(started)
	if n := ackErrs.Load(); n > 0 {
		return nil, fmt.Errorf("%d acks failed", n)
	}
	return res, nil
}
