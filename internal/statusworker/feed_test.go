package statusworker_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/oxypipe/oxypipe/internal/statusworker"
	"github.com/oxypipe/oxypipe/internal/testutil"
	"github.com/oxypipe/oxypipe/internal/topology"
	"github.com/oxypipe/oxypipe/pkg/jobresults"
	"github.com/oxypipe/oxypipe/pkg/messages"
	"github.com/oxypipe/oxypipe/pkg/oxytype"
	"github.com/oxypipe/oxypipe/pkg/runlog"
)

// feedMsg is a feed payload message as a producer publishes it; msgID ""
// leaves out the Nats-Msg-Id header (a producer retrying after the broker's
// duplicate window, as far as the broker can tell).
func feedMsg(feed, msgID string, body string) *nats.Msg {
	m := nats.NewMsg(messages.FeedSubject(feed))
	m.Data = []byte(body)
	if msgID != "" {
		m.Header.Set(messages.HeaderMsgID, msgID)
	}
	m.Header.Set(messages.HeaderOrigin, "producer/test")
	return m
}

func feedControl(t *testing.T, c messages.FeedControl) *nats.Msg {
	t.Helper()
	m, err := messages.NewMsg(&c, oxytype.Party{Type: "producer", Name: "test"})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// playStages plays submitter, poller and writer for every payload the feed
// publishes: each doc is written. It returns the payloads seen per run/doc.
func (e *env) playStages() func() map[string][]json.RawMessage {
	e.t.Helper()
	cons, err := e.js.CreateOrUpdateConsumer(e.t.Context(), topology.StreamPayloads, jetstream.ConsumerConfig{
		Durable: "test-stages", AckPolicy: jetstream.AckExplicitPolicy, FilterSubject: messages.AllPayloads,
	})
	if err != nil {
		e.t.Fatal(err)
	}
	var mu sync.Mutex
	seen := map[string][]json.RawMessage{}
	cc, err := cons.Consume(func(m jetstream.Msg) {
		p, err := messages.DecodePayload(m.Subject(), m.Data())
		if err != nil {
			e.t.Errorf("the feed published a payload that does not decode: %v", err)
			_ = m.Term()
			return
		}
		mu.Lock()
		seen[p.Run+"/"+p.Doc] = append(seen[p.Run+"/"+p.Doc], p.Payload)
		mu.Unlock()
		n, _ := messages.ParseDocID(p.Doc)
		for _, ev := range []*messages.StatusEvent{submitted(p.Run, n), polled(p.Run, n), written(p.Run, n)} {
			ev.Time = time.Now().UTC()
			msg, err := messages.NewMsg(ev, ev.Origin)
			if err == nil {
				_, err = e.js.PublishMsg(context.Background(), msg)
			}
			if err != nil {
				e.t.Errorf("stage event: %v", err)
			}
		}
		_ = m.Ack()
	})
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(cc.Stop)
	return func() map[string][]json.RawMessage {
		mu.Lock()
		defer mu.Unlock()
		out := map[string][]json.RawMessage{}
		for k, v := range seen {
			out[k] = v
		}
		return out
	}
}

func (e *env) feedRecord(feed string) messages.FeedRecord {
	e.t.Helper()
	ref, err := e.topo.Feeds().Get(e.t.Context(), feed)
	if errors.Is(err, topology.ErrFeedNotFound) {
		return messages.FeedRecord{} // not opened yet
	}
	if err != nil {
		e.t.Fatal(err)
	}
	return ref.Record
}

// TestFeedCutsRunsAndRejectsBadMessages publishes a feed's control
// messages and payloads while no statusworker runs, then starts one: the
// feed is cut into runs of three, a retry of an id without the broker's
// dedupe header bills once, every kind of bad message ends a rejected
// run-log line with its reason, the close assigns what was stored before it
// and keeps what comes after for the next opening, and the HTTP API shows
// the feed.
func TestFeedCutsRunsAndRejectsBadMessages(t *testing.T) {
	t.Parallel()
	e := setup(t)
	const feed = "crawler"
	e.publishRaw(feedControl(t, messages.FeedControl{Feed: feed, Op: messages.FeedOpen,
		Cut: messages.FeedCut{MaxPayloads: 3}, Destination: t.TempDir(), RunLog: e.logDir}))
	good := func(id string, n int) *nats.Msg {
		return feedMsg(feed, feed+"/"+id, fmt.Sprintf(`{"v":1,"feed":%q,"id":%q,"payload":%s}`, feed, id, payloadOf(n)))
	}
	oversized := fmt.Sprintf(`{"v":1,"feed":%q,"id":"big","payload":{"source":"universal","url":"https://example.com/%s"}}`,
		feed, strings.Repeat("x", messages.MaxFeedPayloadBytes))
	for _, m := range []*nats.Msg{
		good("a", 0), good("b", 1), good("c", 2),
		feedMsg(feed, "", fmt.Sprintf(`{"v":1,"feed":%q,"id":"a","payload":%s}`, feed, payloadOf(0))), // a retry of "a"
		feedMsg(feed, "", `this is not JSON`),
		feedMsg(feed, "", fmt.Sprintf(`{"v":1,"feed":%q,"payload":%s}`, feed, payloadOf(4))),
		feedMsg(feed, "", fmt.Sprintf(`{"v":2,"feed":%q,"id":"v2","payload":%s}`, feed, payloadOf(5))),
		feedMsg(feed, "", fmt.Sprintf(`{"v":1,"feed":%q,"id":"str","payload":"https://example.com/"}`, feed)),
		feedMsg(feed, "", oversized),
		good("d", 3),
	} {
		e.publishRaw(m)
	}
	e.publishRaw(feedControl(t, messages.FeedControl{Feed: feed, Op: messages.FeedClose}))

	seen := e.playStages()
	sw := e.start(e.config(jobresults.NewMemoryStore(), nil))
	for _, run := range []string{"crawler.1", "crawler.2", "crawler.3"} {
		e.waitCompleted(run)
	}
	testutil.Eventually(t, 20*time.Second, "the feed is closed", func() bool {
		return e.feedRecord(feed).State == messages.FeedStateClosed
	})
	// A payload published after the close waits in the stream; opening the
	// feed again assigns it to a new run, and closing it ends that run.
	e.publishRaw(good("late", 9))
	e.publishRaw(feedControl(t, messages.FeedControl{Feed: feed, Op: messages.FeedOpen,
		Cut: messages.FeedCut{MaxPayloads: 3}, Destination: t.TempDir(), RunLog: e.logDir}))
	testutil.Eventually(t, 20*time.Second, "the late payload is assigned after the reopening", func() bool {
		return e.feedRecord(feed).Assigned == 10
	})
	e.publishRaw(feedControl(t, messages.FeedControl{Feed: feed, Op: messages.FeedClose}))
	e.waitCompleted("crawler.4")
	testutil.Eventually(t, 20*time.Second, "the feed is closed again", func() bool {
		return e.feedRecord(feed).State == messages.FeedStateClosed
	})

	rec := e.feedRecord(feed)
	if rec.Opened != 4 || rec.Assigned != 10 || rec.Duplicates != 1 || rec.Current != nil || len(rec.Runs) != 4 {
		t.Errorf("feed record: %d runs opened, %d assigned, %d duplicates, current %+v, runs %+v; want 4, 10, 1, none, 4",
			rec.Opened, rec.Assigned, rec.Duplicates, rec.Current, rec.Runs)
	}
	type line struct {
		state  oxytype.State
		reason string // part of the error message; "" for none
	}
	want := map[string][]line{
		"crawler.1": {{oxytype.Done, ""}, {oxytype.Done, ""}, {oxytype.Done, ""}},
		"crawler.2": {{oxytype.Rejected, "invalid JSON"}, {oxytype.Rejected, `missing "id"`}, {oxytype.Rejected, "unsupported envelope version 2"}},
		"crawler.3": {{oxytype.Rejected, `"payload" must be a JSON object`}, {oxytype.Rejected, "over the limit"}, {oxytype.Done, ""}},
		"crawler.4": {{oxytype.Done, ""}},
	}
	for run, lines := range want {
		got := strings.Split(strings.TrimSpace(e.readLog(run)), "\n")
		if len(got) != len(lines) {
			t.Errorf("run log of %s has %d lines, want %d:\n%s", run, len(got), len(lines), strings.Join(got, "\n"))
			continue
		}
		for i, l := range lines {
			var rl runlog.Line
			if err := json.Unmarshal([]byte(got[i]), &rl); err != nil {
				t.Fatalf("%s line %d: %v", run, i+1, err)
			}
			msg := ""
			if rl.Error != nil {
				msg = rl.Error.Message
			}
			if rl.State != l.state || (l.reason == "") != (rl.Error == nil) || !strings.Contains(msg, l.reason) {
				t.Errorf("%s line %d: %s, want %s with an error containing %q", run, i+1, got[i], l.state, l.reason)
			}
			if l.reason == "over the limit" && len(rl.Payload) > 0 && string(rl.Payload) != "null" {
				t.Errorf("%s line %d keeps a copy of the oversized payload (%d bytes)", run, i+1, len(rl.Payload))
			}
		}
	}
	// Each good payload reached the stages exactly once, in its doc.
	wantSeen := map[string]string{"crawler.1/0": string(payloadOf(0)), "crawler.1/1": string(payloadOf(1)),
		"crawler.1/2": string(payloadOf(2)), "crawler.3/2": string(payloadOf(3)), "crawler.4/0": string(payloadOf(9))}
	got := seen()
	if len(got) != len(wantSeen) {
		t.Errorf("the stages got payloads for %d docs, want %d: %v", len(got), len(wantSeen), got)
	}
	for doc, body := range wantSeen {
		if ps := got[doc]; len(ps) != 1 || string(ps[0]) != body {
			t.Errorf("doc %s reached the stages as %q, want once as %s", doc, ps, body)
		}
	}

	// The HTTP API shows the feed and its runs.
	h := sw.w.Handler()
	resp := httptest.NewRecorder()
	h.ServeHTTP(resp, httptest.NewRequestWithContext(t.Context(), http.MethodGet, "/feeds/"+feed, nil))
	var view statusworker.FeedView
	if err := json.Unmarshal(resp.Body.Bytes(), &view); resp.Code != http.StatusOK || err != nil {
		t.Fatalf("GET /feeds/%s: %d %s (%v)", feed, resp.Code, resp.Body, err)
	}
	wantStates := map[string]oxytype.RunState{"crawler.1": oxytype.RunStateCompleted, "crawler.2": oxytype.RunStateCompleted,
		"crawler.3": oxytype.RunStateCompleted, "crawler.4": oxytype.RunStateCompleted}
	if view.Record.State != messages.FeedStateClosed || fmt.Sprint(view.RunStates) != fmt.Sprint(wantStates) {
		t.Errorf("GET /feeds/%s: state %s, runs %v; want closed, %v", feed, view.Record.State, view.RunStates, wantStates)
	}
	resp = httptest.NewRecorder()
	h.ServeHTTP(resp, httptest.NewRequestWithContext(t.Context(), http.MethodGet, "/feeds", nil))
	if resp.Code != http.StatusOK || !strings.Contains(resp.Body.String(), `"feed":"crawler"`) {
		t.Errorf("GET /feeds: %d %s", resp.Code, resp.Body)
	}
}

// TestFeedPauseHoldsPayloadsAndAgeCutsRuns cuts a feed's runs by age only.
// While the feed is paused, its payloads wait in the stream: the run open at
// the pause is cut by age (so the pump kept looking after the feed) without
// them, and the resume assigns them to the next run, which is cut by age
// too.
func TestFeedPauseHoldsPayloadsAndAgeCutsRuns(t *testing.T) {
	t.Parallel()
	e := setup(t)
	const feed = "hourly"
	seen := e.playStages()
	e.start(e.config(jobresults.NewMemoryStore(), nil))
	e.publishRaw(feedControl(t, messages.FeedControl{Feed: feed, Op: messages.FeedOpen,
		Cut: messages.FeedCut{MaxPayloads: 100, MaxAge: time.Second}, Destination: t.TempDir(), RunLog: e.logDir}))
	good := func(id string, n int) *nats.Msg {
		return feedMsg(feed, feed+"/"+id, fmt.Sprintf(`{"v":1,"feed":%q,"id":%q,"payload":%s}`, feed, id, payloadOf(n)))
	}
	e.publishRaw(good("p0", 0))
	testutil.Eventually(t, 20*time.Second, "p0 is assigned", func() bool { return e.feedRecord(feed).Assigned == 1 })
	e.publishRaw(feedControl(t, messages.FeedControl{Feed: feed, Op: messages.FeedPause}))
	testutil.Eventually(t, 20*time.Second, "the feed is paused", func() bool { return e.feedRecord(feed).State == messages.FeedStatePaused })
	e.publishRaw(good("p1", 1))
	e.publishRaw(good("p2", 2))

	first := e.waitCompleted("hourly.1")
	if first.Announced.Total != 1 || first.Completed.Done != 1 {
		t.Errorf("the run open at the pause was cut with %d payloads (%+v), want 1: a paused feed assigned more", first.Announced.Total, first.Completed)
	}
	// The run completes as soon as the cut writes its total, a step before
	// the cut clears the feed's current run: wait for the cut to finish.
	testutil.Eventually(t, 20*time.Second, "the cut of hourly.1 is finished", func() bool {
		c := e.feedRecord(feed).Current
		return c == nil || !c.Cutting
	})
	if rec := e.feedRecord(feed); rec.Assigned != 1 || rec.Current != nil {
		t.Errorf("while paused: %d assigned, current run %+v; want 1 and none", rec.Assigned, rec.Current)
	}

	e.publishRaw(feedControl(t, messages.FeedControl{Feed: feed, Op: messages.FeedResume}))
	second := e.waitCompleted("hourly.2")
	if second.Announced.Total != 2 || second.Completed.Done != 2 {
		t.Errorf("the run after the resume: total %d, %+v; want the 2 held payloads, done", second.Announced.Total, second.Completed)
	}
	if got := seen(); len(got) != 3 || len(got["hourly.2/0"]) != 1 || len(got["hourly.2/1"]) != 1 {
		t.Errorf("the stages got %v, want hourly.1/0, hourly.2/0 and hourly.2/1 once each", got)
	}
}

// TestFeedPumpFinishesAnInterruptedAssignment starts a statusworker on the
// state a pump leaves when it dies mid-assignment, and redelivers the
// messages it held: an id whose assignment was committed (within its run's
// count) but not published goes into that same run and doc; an id assigned
// in a run that was cut before the assignment was committed (so it was never
// published) gets a doc of the current run instead. Nothing is published
// twice and every run completes.
func TestFeedPumpFinishesAnInterruptedAssignment(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := t.Context()
	const feed = "resume"
	now := time.Now().UTC()
	dest := t.TempDir()
	for _, r := range []messages.RunRecord{
		{Announced: messages.RunAnnounced{Run: "resume.1", Total: 1, FinalDataType: oxytype.FinalDataType, Destination: dest, RunLog: e.logDir, StartedAt: now},
			State: oxytype.RunStateAnnounced, UpdatedAt: now, Feed: &messages.RunFeed{Name: feed}},
		{Announced: messages.RunAnnounced{Run: "resume.2", FinalDataType: oxytype.FinalDataType, Destination: dest, RunLog: e.logDir, StartedAt: now},
			State: oxytype.RunStateAnnounced, UpdatedAt: now, Feed: &messages.RunFeed{Name: feed, Open: true}},
	} {
		if _, err := e.topo.Runs().Create(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := e.topo.Feeds().Put(ctx, nil, messages.FeedRecord{
		Feed: feed, State: messages.FeedStateOpen, Cut: messages.FeedCut{MaxPayloads: 10}, Destination: dest, RunLog: e.logDir,
		Runs:    []messages.FeedRun{{Run: "resume.1", Docs: 1, OpenedAt: now, Cutting: true}},
		Current: &messages.FeedRun{Run: "resume.2", OpenedAt: now}, Opened: 2, Assigned: 1,
	}); err != nil {
		t.Fatal(err)
	}
	for id, a := range map[string]messages.FeedAssignment{
		"x": {Run: "resume.1", Doc: "0"}, // committed: doc 0 < resume.1's 1 doc
		"z": {Run: "resume.1", Doc: "1"}, // not committed: resume.1 was cut at 1 doc
	} {
		if _, err := e.topo.Feeds().Assign(ctx, feed, id, nil, a); err != nil {
			t.Fatal(err)
		}
	}
	for i, id := range []string{"x", "z", "y"} {
		e.publishRaw(feedMsg(feed, feed+"/"+id, fmt.Sprintf(`{"v":1,"feed":%q,"id":%q,"payload":%s}`, feed, id, payloadOf(i))))
	}
	e.publishRaw(feedControl(t, messages.FeedControl{Feed: feed, Op: messages.FeedClose}))
	seen := e.playStages()
	e.start(e.config(jobresults.NewMemoryStore(), nil))

	first, second := e.waitCompleted("resume.1"), e.waitCompleted("resume.2")
	if first.Completed.Total != 1 || first.Completed.Done != 1 || second.Completed.Total != 2 || second.Completed.Done != 2 {
		t.Errorf("resume.1 %+v, resume.2 %+v; want 1 and 2 docs, all done", first.Completed, second.Completed)
	}
	want := map[string]string{"resume.1/0": string(payloadOf(0)), "resume.2/0": string(payloadOf(1)), "resume.2/1": string(payloadOf(2))}
	got := seen()
	if len(got) != len(want) {
		t.Errorf("the stages got %d docs, want %d: %v", len(got), len(want), got)
	}
	for doc, body := range want {
		if ps := got[doc]; len(ps) != 1 || string(ps[0]) != body {
			t.Errorf("doc %s reached the stages as %q, want once as %s", doc, ps, body)
		}
	}
	for id, wantA := range map[string]messages.FeedAssignment{
		"x": {V: 1, Run: "resume.1", Doc: "0", Published: true},
		"z": {V: 1, Run: "resume.2", Doc: "0", Published: true},
		"y": {V: 1, Run: "resume.2", Doc: "1", Published: true},
	} {
		a, err := e.topo.Feeds().Assignment(ctx, feed, id)
		if err != nil || a == nil || a.Assignment != wantA {
			t.Errorf("assignment of %s: %+v (%v), want %+v", id, a, err, wantA)
		}
	}
	testutil.Eventually(t, 20*time.Second, "the feed is closed", func() bool {
		return e.feedRecord(feed).State == messages.FeedStateClosed
	})
}

// BenchmarkFeedAssignment measures how fast one statusworker assigns a
// feed's payloads (stored before it starts) to runs of 1,000: the limit of a
// standing feed, which assigns one payload at a time.
func BenchmarkFeedAssignment(b *testing.B) {
	const n = 500
	for range b.N {
		b.StopTimer()
		e := setup(b)
		const feed = "bench"
		m, err := messages.NewMsg(&messages.FeedControl{Feed: feed, Op: messages.FeedOpen,
			Cut: messages.FeedCut{MaxPayloads: 1000}, Destination: b.TempDir(), RunLog: e.logDir}, oxytype.Party{Type: "producer"})
		if err != nil {
			b.Fatal(err)
		}
		e.publishRaw(m)
		for i := range n {
			id := fmt.Sprintf("p%d", i)
			e.publishRaw(feedMsg(feed, feed+"/"+id, fmt.Sprintf(`{"v":1,"feed":%q,"id":%q,"payload":%s}`, feed, id, payloadOf(i))))
		}
		b.StartTimer()
		start := time.Now()
		e.start(e.config(jobresults.NewMemoryStore(), nil))
		testutil.Eventually(b, 5*time.Minute, "every payload is assigned", func() bool {
			ref, err := e.topo.Feeds().Get(context.Background(), feed)
			return err == nil && ref.Record.Assigned == n
		})
		b.ReportMetric(float64(n)/time.Since(start).Seconds(), "payloads/s")
	}
}
