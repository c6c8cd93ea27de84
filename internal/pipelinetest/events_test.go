package pipelinetest

import (
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/oxypipe/oxypipe/internal/statusworker"
	"github.com/oxypipe/oxypipe/internal/testutil"
	"github.com/oxypipe/oxypipe/internal/topology"
	"github.com/oxypipe/oxypipe/pkg/messages"
	"github.com/oxypipe/oxypipe/pkg/oxytype"
)

// collector reads every status event of the broker, in stream order, with
// an ordered consumer on oxy.status.> (what the statusworker would apply
// to the ledger).
type collector struct {
	mu     sync.Mutex
	events []messages.StatusEvent
	seqs   []uint64         // the stream sequence of each event's message
	index  []int            // each event's index in its message
	byDoc  map[string][]int // run/doc → indexes into events
	broken []string         // events that did not decode
}

// collect starts a collector that runs until the test ends.
func collect(t testing.TB, js jetstream.JetStream) *collector {
	t.Helper()
	c := &collector{byDoc: map[string][]int{}}
	cons, err := js.OrderedConsumer(t.Context(), topology.StreamStatus, jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{messages.SubjectPrefix + ".status.>"},
	})
	if err != nil {
		t.Fatal(err)
	}
	cc, err := cons.Consume(func(m jetstream.Msg) {
		var seq uint64
		if md, err := m.Metadata(); err == nil {
			seq = md.Sequence.Stream
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		i := 0
		for ev, err := range messages.StatusEvents(m.Subject(), m.Data()) {
			i++
			if err != nil {
				c.broken = append(c.broken, err.Error())
				continue
			}
			k := ev.Run + "/" + ev.Doc
			c.byDoc[k] = append(c.byDoc[k], len(c.events))
			c.events = append(c.events, *ev)
			c.seqs = append(c.seqs, seq)
			c.index = append(c.index, i-1)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cc.Stop)
	return c
}

// isFinal reports whether an event is a final outcome: the success at the
// final data type, or a hard failure.
func isFinal(ev messages.StatusEvent) bool {
	return ev.Outcome == oxytype.HardFailure ||
		(ev.Outcome == oxytype.Success && ev.DataType == oxytype.FinalDataType)
}

// finalState is the run-log state a final event implies.
func finalState(ev messages.StatusEvent) oxytype.State {
	if ev.Outcome == oxytype.Success {
		return oxytype.Done
	}
	return ev.State
}

// docEvents returns a copy of one doc's events, in stream order.
func (c *collector) docEvents(run, doc string) []messages.StatusEvent {
	c.mu.Lock()
	defer c.mu.Unlock()
	idx := c.byDoc[run+"/"+doc]
	out := make([]messages.StatusEvent, len(idx))
	for i, k := range idx {
		out[i] = c.events[k]
	}
	return out
}

// finals returns one doc's final events, in stream order.
func (c *collector) finals(run, doc string) []messages.StatusEvent {
	var out []messages.StatusEvent
	for _, ev := range c.docEvents(run, doc) {
		if isFinal(ev) {
			out = append(out, ev)
		}
	}
	return out
}

// missing returns the docs 0..n-1 of run that have no final event yet.
func (c *collector) missing(run string, n int) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for i := range n {
		doc := messages.DocID(i)
		final := false
		for _, k := range c.byDoc[run+"/"+doc] {
			if isFinal(c.events[k]) {
				final = true
				break
			}
		}
		if !final {
			out = append(out, doc)
		}
	}
	return out
}

// count counts the events that match.
func (c *collector) count(match func(messages.StatusEvent) bool) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, ev := range c.events {
		if match(ev) {
			n++
		}
	}
	return n
}

// undecodable returns the events that did not decode.
func (c *collector) undecodable() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.broken...)
}

// waitFinal waits until docs 0..n-1 of run all have a final event.
func (c *collector) waitFinal(t testing.TB, run string, n int, timeout time.Duration) {
	t.Helper()
	var left []string
	testutil.EventuallyExplain(t, testutil.Patient(timeout), func() bool {
		left = c.missing(run, n)
		return len(left) == 0
	}, func() string {
		return fmt.Sprintf("every doc has a final outcome; %d have none (first: %s)", len(left), firstFew(left, 10))
	})
}

// outcomes summarises the final states of docs 0..n-1 ("done": 1840, …),
// for failure messages and logs.
func (c *collector) outcomes(run string, n int) string {
	counts := map[string]int{}
	for i := range n {
		fs := c.finals(run, messages.DocID(i))
		if len(fs) == 0 {
			counts["none"]++
			continue
		}
		counts[string(finalState(fs[len(fs)-1]))]++
	}
	keys := make([]string, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s %d", k, counts[k])
	}
	return strings.Join(parts, ", ")
}

// says returns a constant description for testutil.EventuallyExplain.
func says(s string) func() string { return func() string { return s } }

func firstFew(s []string, n int) string {
	if len(s) > n {
		return strings.Join(s[:n], ", ") + ", …"
	}
	return strings.Join(s, ", ")
}

// sequenced returns a copy of every event with its stream sequence, in
// stream order.
func (c *collector) sequenced() []statusworker.SequencedEvent {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]statusworker.SequencedEvent, len(c.events))
	for i := range c.events {
		ev := c.events[i]
		out[i] = statusworker.SequencedEvent{Event: &ev, Seq: c.seqs[i], Index: c.index[i]}
	}
	return out
}
