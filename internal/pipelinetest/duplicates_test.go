package pipelinetest

import (
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/oxypipe/oxypipe/pkg/emulator"
	"github.com/oxypipe/oxypipe/pkg/messages"
	"github.com/oxypipe/oxypipe/pkg/oxytype"
)

// copyHeader marks the copies, so that the copier does not copy them again.
const copyHeader = "Oxy-Pipelinetest-Copy"

// copier republishes a copy of every message seen on some subjects, with a
// fresh message id, as a broker redelivery or a confused publisher would:
// the copy is a new stream message that no dedupe window drops.
type copier struct {
	b    *broker
	mu   sync.Mutex
	seen []*nats.Msg
	subs []*nats.Subscription
}

// copyEvery watches subjects and, when now is true, republishes each
// message at once (racing the original through the pipeline).
func copyEvery(b *broker, now bool, subjects ...string) *copier {
	b.t.Helper()
	c := &copier{b: b}
	for _, subj := range subjects {
		sub, err := b.nc.Subscribe(subj, func(m *nats.Msg) {
			if m.Header.Get(copyHeader) != "" {
				return // our own copy
			}
			cp := clone(m)
			if id := cp.Header.Get(messages.HeaderMsgID); id != "" {
				cp.Header.Set(messages.HeaderMsgID, id+"/copy")
			}
			cp.Header.Set(copyHeader, "1")
			c.mu.Lock()
			c.seen = append(c.seen, cp)
			c.mu.Unlock()
			if now {
				// A core publish of a copy: JetStream stores it like any
				// other message on the subject.
				if err := b.nc.PublishMsg(cp); err != nil {
					b.t.Errorf("republishing on %s: %v", cp.Subject, err)
				}
			}
		})
		if err != nil {
			b.t.Fatal(err)
		}
		c.subs = append(c.subs, sub)
	}
	b.t.Cleanup(c.stop)
	return c
}

// stop ends the watching.
func (c *copier) stop() {
	for _, s := range c.subs {
		_ = s.Unsubscribe()
	}
}

// replay republishes every message seen so far once more (a late
// redelivery) and waits until they are stored. The ids get another suffix,
// so these are new stream messages too.
func (c *copier) replay() int {
	c.b.t.Helper()
	c.mu.Lock()
	msgs := append([]*nats.Msg(nil), c.seen...)
	c.mu.Unlock()
	for _, m := range msgs {
		cp := clone(m)
		if id := cp.Header.Get(messages.HeaderMsgID); id != "" {
			cp.Header.Set(messages.HeaderMsgID, id+"/late")
		}
		c.b.publishAsync(cp)
	}
	c.b.flush()
	return len(msgs)
}

func TestDuplicatesAndRedeliveriesBillOnceAndWriteOneFilePerJob(t *testing.T) {
	t.Parallel()
	s := scenario{n: 400, fault: 5, reject: 2, lost: 1}
	cfg := emulator.Config{Seed: 11, JobTime: 2 * time.Second, TimeScale: 0.1, Faults: checkFailures(0.02),
		RateLimit: emulator.Unlimited, RenderRateLimit: emulator.Unlimited, Rules: s.rules()}
	b := inProcess(t, cfg, s.n, stageOptions{})
	bodies := s.bodies()

	// Every Submitted and Done is copied the moment it is published.
	live := copyEvery(b, true, messages.SubmittedSubject(b.run), messages.DoneSubject(b.run))
	// Every payload is published twice, the second time under another
	// message id, so the broker keeps both.
	b.feed(bodies, 0)
	for i, body := range bodies {
		m := b.payloadMsg(i, body)
		m.Header.Set(messages.HeaderMsgID, m.Header.Get(messages.HeaderMsgID)+"/again")
		b.publishAsync(m)
	}
	b.flush()

	b.events.waitFinal(t, b.run, s.n, 60*time.Second)
	b.waitSettled(30 * time.Second)
	live.stop()
	// Then every Submitted and Done once more, long after their jobs ended.
	late := live.replay()
	b.waitSettled(30 * time.Second)
	t.Logf("%d docs: %s; %d submitted and done messages copied at once and again at the end",
		s.n, b.events.outcomes(b.run, s.n), late)
	if late < s.n {
		t.Errorf("only %d Submitted and Done messages were seen to copy, want at least %d", late, s.n)
	}

	b.verify(s.n, s.expect, s.url, false)
	// Every copy of a Done rewrote its file and recorded it written again:
	// that is allowed (the ledger keeps one), but the job must be the same.
	written := b.events.count(func(ev messages.StatusEvent) bool {
		return ev.Outcome == oxytype.Success && ev.DataType == oxytype.DataWritten
	})
	done := 0
	for i := range s.n {
		if s.kind(i) == kindOK {
			done++
		}
	}
	// Each done job had its Done, at least one copy at once and one late.
	if written < 3*done {
		t.Errorf("%d successes at written for %d done jobs: the copies of Done were not all handled", written, done)
	}
}

// clone copies a message's subject, body and headers.
func clone(m *nats.Msg) *nats.Msg {
	cp := nats.NewMsg(m.Subject)
	cp.Data = append([]byte(nil), m.Data...)
	for k, v := range m.Header {
		cp.Header[k] = append([]string(nil), v...)
	}
	return cp
}
