package pipelinetest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/oxypipe/oxypipe/internal/progress"
	"github.com/oxypipe/oxypipe/internal/statusworker"
	"github.com/oxypipe/oxypipe/internal/testutil"
	"github.com/oxypipe/oxypipe/internal/topology"
	"github.com/oxypipe/oxypipe/pkg/emulator"
	"github.com/oxypipe/oxypipe/pkg/messages"
	"github.com/oxypipe/oxypipe/pkg/oxytype"
	"github.com/oxypipe/oxypipe/pkg/payload"
	"github.com/oxypipe/oxypipe/pkg/wsa"
)

// feederActor publishes the payloads, as `oxy run` would.
var feederActor = oxytype.Party{Type: "feeder", Name: "pipelinetest"}

// broker is what every test talks to: a connection with the topology
// ensured, the API, one announced run writing into dest, and the status
// events collected.
type broker struct {
	t      testing.TB
	nc     *nats.Conn
	js     jetstream.JetStream
	topo   *topology.Topology
	api    *apiServer
	client *wsa.Client
	events *collector
	run    string
	dest   string
}

// newBroker ensures the streams and buckets on nc (not the consumers:
// each worker ensures its own), announces a run of total docs into a fresh
// folder and marks it ready, as the feeder and the statusworker do before
// the first payload.
func newBroker(t testing.TB, nc *nats.Conn, api *apiServer, total int) *broker {
	t.Helper()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	topo, err := topology.Ensure(t.Context(), js, topology.Config{})
	if err != nil {
		t.Fatal(err)
	}
	b := &broker{t: t, nc: nc, js: js, topo: topo, api: api, client: api.client(t), dest: filepath.Join(t.TempDir(), "results")}
	b.events = collect(t, js)
	b.run, err = topo.AnnounceRun(t.Context(), messages.RunAnnounced{
		Total: total, FinalDataType: oxytype.FinalDataType, Destination: b.dest,
		RunLog: t.TempDir(), StartedAt: time.Now().UTC(),
	}, feederActor)
	if err != nil {
		t.Fatal(err)
	}
	applied, _, err := topo.Runs().Transition(t.Context(), b.run, func(rec *messages.RunRecord) bool {
		rec.State, rec.UpdatedAt = oxytype.RunStateReady, time.Now().UTC()
		return true
	})
	if err != nil || !applied {
		t.Fatalf("marking the run ready: applied %v, %v", applied, err)
	}
	return b
}

// feed publishes docs from..len(bodies)-1 the way the feeder does: the
// payload message (with its message id) and a success event at "payload".
func (b *broker) feed(bodies []json.RawMessage, from int) {
	b.t.Helper()
	for i := from; i < len(bodies); i++ {
		b.publishAsync(b.payloadMsg(i, bodies[i]))
		b.publishAsync(b.msg(&messages.StatusEvent{Run: b.run, Doc: messages.DocID(i), DataType: oxytype.DataPayload,
			Outcome: oxytype.Success, Origin: feederActor, Facts: oxytype.Facts{Payload: bodies[i]}, Time: time.Now().UTC()}))
	}
	b.flush()
}

// payloadMsg is the payload message of doc i.
func (b *broker) payloadMsg(i int, body json.RawMessage) *nats.Msg {
	return b.msg(&messages.Payload{Run: b.run, Doc: messages.DocID(i), Payload: body})
}

// msg encodes an envelope as the feeder publishes it.
func (b *broker) msg(e messages.Envelope) *nats.Msg {
	b.t.Helper()
	m, err := messages.NewMsg(e, feederActor)
	if err != nil {
		b.t.Fatal(err)
	}
	return m
}

// raw is a message of arbitrary bytes on a subject, as a broken or hostile
// publisher would send it.
func raw(subject string, data []byte) *nats.Msg {
	m := nats.NewMsg(subject)
	m.Data = data
	m.Header.Set(messages.HeaderOrigin, "rogue/pipelinetest")
	return m
}

func (b *broker) publishAsync(m *nats.Msg) {
	b.t.Helper()
	if _, err := b.js.PublishMsgAsync(m); err != nil {
		b.t.Fatalf("publish on %s: %v", m.Subject, err)
	}
}

// flush waits until every async publish is stored.
func (b *broker) flush() {
	b.t.Helper()
	select {
	case <-b.js.PublishAsyncComplete():
	case <-time.After(30 * time.Second):
		b.t.Fatalf("%d publishes still unconfirmed after 30s", b.js.PublishAsyncPending())
	}
}

// publish sends one message and waits until it is stored.
func (b *broker) publish(m *nats.Msg) *jetstream.PubAck {
	b.t.Helper()
	ack, err := b.js.PublishMsg(b.t.Context(), m)
	if err != nil {
		b.t.Fatalf("publish on %s: %v", m.Subject, err)
	}
	return ack
}

// streamMsgs is how many messages a stream holds now. The work streams
// drop a message once its stage acks or terminates it.
func (b *broker) streamMsgs(name string) uint64 {
	b.t.Helper()
	s, err := b.js.Stream(b.t.Context(), name)
	if err != nil {
		b.t.Fatal(err)
	}
	info, err := s.Info(b.t.Context())
	if err != nil {
		b.t.Fatal(err)
	}
	return info.State.Msgs
}

// waitSettled waits until the work streams are empty.
func (b *broker) waitSettled(timeout time.Duration) {
	b.t.Helper()
	b.waitEmpty(timeout, topology.StreamPayloads, topology.StreamSubmitted, topology.StreamDone)
}

// waitEmpty waits until the streams are empty.
func (b *broker) waitEmpty(timeout time.Duration, streams ...string) {
	b.t.Helper()
	left := func() uint64 {
		var n uint64
		for _, s := range streams {
			n += b.streamMsgs(s)
		}
		return n
	}
	testutil.EventuallyExplain(b.t, testutil.Patient(timeout), func() bool { return left() == 0 }, func() string {
		parts := make([]string, len(streams))
		for i, s := range streams {
			parts[i] = fmt.Sprintf("%s %d", s, b.streamMsgs(s))
		}
		return "every work message is settled (left: " + strings.Join(parts, ", ") + ")"
	})
}

// consumerInfo returns a stage's consumer info.
func (b *broker) consumerInfo(s topology.Stage) *jetstream.ConsumerInfo {
	b.t.Helper()
	settings, err := topology.DefaultConsumer(s)
	if err != nil {
		b.t.Fatal(err)
	}
	c, err := b.js.Consumer(b.t.Context(), settings.Stream, string(s))
	if err != nil {
		b.t.Fatal(err)
	}
	info, err := c.Info(b.t.Context())
	if err != nil {
		b.t.Fatal(err)
	}
	return info
}

// files lists the result files in the destination (names not starting with
// a dot: those are temporary files of Puts in progress or interrupted).
func (b *broker) files() (names, temporary []string) {
	b.t.Helper()
	entries, err := os.ReadDir(b.dest)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		b.t.Fatal(err)
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") {
			temporary = append(temporary, e.Name())
			continue
		}
		names = append(names, e.Name())
	}
	return names, temporary
}

// expectation is what should become of one doc.
type expectation struct {
	state oxytype.State
	// check, when set, checks the final event further.
	check func(ev messages.StatusEvent) error
}

// verify checks every promise about a finished run of n docs:
//
//   - each doc has a final outcome, its expected one, and every final event
//     of the doc says the same (exactlyOnce: there is only one);
//   - the destination holds exactly <job id>.json of the done docs, each
//     byte for byte the API's results body;
//   - no input was created (billed) twice: each doc with a job id was
//     created exactly once, a doc whose outcome is unknown at most once,
//     and no other doc at all.
//
// input returns the emulator's input key of doc i (its url).
func (b *broker) verify(n int, want func(i int) expectation, input func(i int) string, exactlyOnce bool) {
	b.t.Helper()
	t := b.t
	doneIDs := map[string]string{} // file name → doc
	once := map[string]bool{}      // inputs that must have exactly one job
	maybe := map[string]bool{}     // inputs that may have one job
	for i := range n {
		doc := messages.DocID(i)
		finals := b.events.finals(b.run, doc)
		if len(finals) == 0 {
			t.Errorf("doc %s has no final outcome", doc)
			continue
		}
		if exactlyOnce && len(finals) != 1 {
			t.Errorf("doc %s has %d final events, want exactly 1: %s", doc, len(finals), describe(finals))
		}
		w := want(i)
		for _, ev := range finals {
			if got := finalState(ev); got != w.state {
				t.Errorf("doc %s ended %s, want %s: %s", doc, got, w.state, describe([]messages.StatusEvent{ev}))
				continue
			}
			if w.check != nil {
				if err := w.check(ev); err != nil {
					t.Errorf("doc %s (%s): %v: %s", doc, w.state, err, describe([]messages.StatusEvent{ev}))
				}
			}
		}
		last := finals[len(finals)-1]
		if ids := jobIDs(finals); len(ids) > 1 {
			t.Errorf("doc %s has final events for several jobs %v", doc, ids)
		}
		switch {
		case last.APIJobID != "":
			once[input(i)] = true
		case unknownOutcome(last):
			maybe[input(i)] = true
		}
		if finalState(last) == oxytype.Done {
			doneIDs[last.APIJobID+".json"] = doc
		}
	}
	b.verifyFiles(doneIDs)
	b.verifyBilling(once, maybe)
	b.verifyLiveViewIsTheRunLog(n)
}

// verifyLiveViewIsTheRunLog checks that what a run shows while it runs and
// what its run log says agree, line by line: the status events, applied in
// stream order to the tracker a watcher (oxy.Run.Problems) uses, give
// exactly the problems of the run log the statusworker would write from
// the same events, each with the run log's state, job id and
// may-have-billed mark, and no problem for a done line.
func (b *broker) verifyLiveViewIsTheRunLog(n int) {
	b.t.Helper()
	t := b.t
	ann := messages.RunAnnounced{Run: b.run, Total: n, FinalDataType: oxytype.FinalDataType, Destination: b.dest}
	events := b.events.sequenced()
	tr := progress.NewTracker(ann)
	for _, e := range events {
		if e.Event.Run == b.run {
			tr.Apply(e.Event)
		}
	}
	lines, err := statusworker.ReplayRunLog(t.Context(), ann, events)
	if err != nil {
		t.Fatalf("the run log of the events: %v", err)
	}
	if len(lines) != n {
		t.Fatalf("the run log has %d lines, want %d", len(lines), n)
	}
	problems := map[int]progress.Job{}
	for _, j := range tr.Problems() {
		if _, twice := problems[j.Doc]; twice {
			t.Errorf("doc %d is a problem twice in the live view", j.Doc)
		}
		problems[j.Doc] = j
	}
	for i, l := range lines {
		j, isProblem := problems[i]
		lineID := ""
		if l.ID != nil {
			lineID = *l.ID
		}
		switch {
		case l.State == oxytype.Done && isProblem:
			t.Errorf("doc %d: the run log says done (job %s), the live view %s (job %q, %s)", i, lineID, j.Status, j.ID, j.Reason)
		case l.State == oxytype.Done:
		case !isProblem:
			t.Errorf("doc %d: the run log says %s (job %q, %s), the live view has no problem for it", i, l.State, lineID, l.Error.String())
		case j.Status != l.State || j.ID != lineID:
			t.Errorf("doc %d: the run log says %s (job %q), the live view %s (job %q)", i, l.State, lineID, j.Status, j.ID)
		case (l.Error != nil && l.Error.MayHaveBilled) != (j.Error != nil && j.Error.MayHaveBilled):
			t.Errorf("doc %d: the run log's may-have-billed mark is %v, the live view's %v", i, l.Error != nil && l.Error.MayHaveBilled, j.Error != nil && j.Error.MayHaveBilled)
		}
	}
	if p := tr.Progress(); p.Done+p.Faulted+p.Rejected+p.Unsubmitted+p.Unfetched != n || tr.Finished() != n {
		t.Errorf("the live view finished %d of %d docs: %+v", tr.Finished(), n, p)
	}
}

// unknownOutcome reports whether a final event says the doc's submission
// may have billed (a submitter died inside its request, or an answer proved
// nothing): the structured mark.
func unknownOutcome(ev messages.StatusEvent) bool {
	return ev.Outcome == oxytype.HardFailure && ev.State == oxytype.Unsubmitted && ev.Error != nil && ev.Error.MayHaveBilled
}

// verifyFiles checks that the destination holds exactly the done jobs'
// files, each byte-identical to the API's body.
func (b *broker) verifyFiles(want map[string]string) {
	b.t.Helper()
	t := b.t
	names, temporary := b.files()
	if len(temporary) > 0 {
		t.Logf("temporary files left in the destination: %s", firstFew(temporary, 5))
	}
	var extra []string
	for _, name := range names {
		if _, ok := want[name]; !ok {
			extra = append(extra, name)
		}
	}
	var missing []string
	for name := range want {
		if !slices.Contains(names, name) {
			missing = append(missing, name)
		}
	}
	sort.Strings(missing)
	if len(extra) > 0 || len(missing) > 0 {
		t.Errorf("the destination holds %d files, want the %d done jobs: %d extra (%s), %d missing (%s)",
			len(names), len(want), len(extra), firstFew(extra, 5), len(missing), firstFew(missing, 5))
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	differ := 0
	for _, name := range names {
		if _, ok := want[name]; !ok {
			continue
		}
		got, err := os.ReadFile(filepath.Join(b.dest, name))
		if err != nil {
			t.Errorf("reading %s: %v", name, err)
			continue
		}
		body, err := b.api.body(ctx, b.client, strings.TrimSuffix(name, ".json"))
		if err != nil {
			t.Errorf("fetching the API's body of %s: %v", name, err)
			continue
		}
		if !bytes.Equal(got, body) {
			if differ++; differ <= 3 {
				t.Errorf("%s (doc %s) differs from the API's body: %d bytes, want %d", name, want[name], len(got), len(body))
			}
		}
	}
	if differ > 3 {
		t.Errorf("%d files in all differ from the API's bodies", differ)
	}
}

// verifyBilling checks the emulator's count of jobs per input: exactly one
// for each input in once, at most one for each in maybe, none for others.
func (b *broker) verifyBilling(once, maybe map[string]bool) {
	b.t.Helper()
	stats := b.api.emu.Stats()
	var twice, unexpected []string
	billedMaybe := 0
	for in, n := range stats.CreatedByInput {
		if n > 1 {
			twice = append(twice, fmt.Sprintf("%s ×%d", in, n))
		}
		switch {
		case maybe[in]:
			billedMaybe++
		case !once[in]:
			unexpected = append(unexpected, in)
		}
	}
	var none []string
	for in := range once {
		if stats.CreatedByInput[in] == 0 {
			none = append(none, in)
		}
	}
	sort.Strings(twice)
	sort.Strings(unexpected)
	sort.Strings(none)
	if len(twice) > 0 {
		b.t.Errorf("%d inputs were billed more than once: %s", len(twice), firstFew(twice, 5))
	}
	if len(unexpected) > 0 {
		b.t.Errorf("%d inputs have a job but no doc says so: %s", len(unexpected), firstFew(unexpected, 5))
	}
	if len(none) > 0 {
		b.t.Errorf("%d docs name a job the emulator never created: %s", len(none), firstFew(none, 5))
	}
	if want := int64(len(once) + billedMaybe); stats.JobsCreated != want {
		b.t.Errorf("the emulator created %d jobs, want %d (one per doc that got a job id, %d of them with an unknown outcome)",
			stats.JobsCreated, want, billedMaybe)
	}
	if len(maybe) > 0 {
		b.t.Logf("%d docs have an unknown outcome; the API created a job for %d of them (billed once, never resubmitted)", len(maybe), billedMaybe)
	}
}

func jobIDs(evs []messages.StatusEvent) []string {
	var ids []string
	for _, ev := range evs {
		if ev.APIJobID != "" && !slices.Contains(ids, ev.APIJobID) {
			ids = append(ids, ev.APIJobID)
		}
	}
	return ids
}

// describe renders events for a failure message.
func describe(evs []messages.StatusEvent) string {
	parts := make([]string, len(evs))
	for i, ev := range evs {
		s := fmt.Sprintf("{%s %s", ev.DataType, ev.Outcome)
		if ev.State != "" {
			s += " " + string(ev.State)
		}
		if ev.APIJobID != "" {
			s += " job " + ev.APIJobID
		}
		if ev.Reason != "" {
			s += fmt.Sprintf(" %q", ev.Reason)
		}
		if ev.Error != nil {
			code := "null"
			if ev.Error.StatusCode != nil {
				code = fmt.Sprint(*ev.Error.StatusCode)
			}
			s += fmt.Sprintf(" error %s %q", code, ev.Error.Message)
		}
		by := ev.Consumer
		if by == (oxytype.Party{}) {
			by = ev.Origin
		}
		parts[i] = s + " by " + by.String() + "}"
	}
	return strings.Join(parts, ", ")
}

// universal is a batchable payload for a URL.
func universal(url string) json.RawMessage {
	return json.RawMessage(fmt.Sprintf(`{"source":"universal","url":%q,"geo_location":"United States"}`, url))
}

// mustParse checks that a body the test feeds is a valid payload.
func mustParse(t testing.TB, body json.RawMessage) payload.Payload {
	t.Helper()
	p, err := payload.Parse(body, 1)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
	return p
}

// scenario is a run's inputs: the share of docs that fault, are rejected
// or whose job is lost (404 on status), by their URL's path.
type scenario struct {
	n int
	// fault, reject and lost are per-hundred counts: doc i is faulted when
	// i%100 < fault, rejected when it is in the next reject, lost in the
	// next lost.
	fault, reject, lost int
}

// Kinds of docs, as URL path segments.
const (
	kindOK     = "ok"
	kindFault  = "fault"
	kindReject = "reject"
	kindLost   = "lost"
)

// rejectMessage is what the API answers for a rejected payload.
const rejectMessage = "Unsupported URL for this source."

func (s scenario) kind(i int) string {
	switch k := i % 100; {
	case k < s.fault:
		return kindFault
	case k < s.fault+s.reject:
		return kindReject
	case k < s.fault+s.reject+s.lost:
		return kindLost
	}
	return kindOK
}

func (s scenario) url(i int) string { return fmt.Sprintf("https://example.com/%s/%d", s.kind(i), i) }

func (s scenario) bodies() []json.RawMessage {
	out := make([]json.RawMessage, s.n)
	for i := range out {
		out[i] = universal(s.url(i))
	}
	return out
}

// rules script the emulator for the scenario.
func (s scenario) rules() []emulator.Rule {
	return []emulator.Rule{
		{Match: func(sub emulator.Submission) bool { return strings.Contains(sub.Input, "/"+kindFault+"/") },
			Outcome: emulator.Outcome{Fault: true}},
		{Match: func(sub emulator.Submission) bool { return strings.Contains(sub.Input, "/"+kindReject+"/") },
			Outcome: emulator.Outcome{Reject: &emulator.Rejection{Status: 400, Message: rejectMessage}}},
		{Match: func(sub emulator.Submission) bool { return strings.Contains(sub.Input, "/"+kindLost+"/") },
			Outcome: emulator.Outcome{StatusFailure: &emulator.Failure{Status: 404, Message: "Query not found"},
				ResultsFailure: &emulator.Failure{Status: 404, Message: "Query not found"}}},
		{Match: func(emulator.Submission) bool { return true }, Outcome: emulator.Outcome{Done: true}},
	}
}

// expect is the outcome the scenario scripts for doc i.
func (s scenario) expect(i int) expectation {
	switch s.kind(i) {
	case kindFault:
		return expectation{state: oxytype.Faulted, check: func(ev messages.StatusEvent) error {
			if ev.DataType != oxytype.DataSubmitted || ev.APIJobID == "" || ev.Error != nil {
				return errors.New("want a poller failure at submitted with the job id and a null error")
			}
			return nil
		}}
	case kindReject:
		return expectation{state: oxytype.Rejected, check: func(ev messages.StatusEvent) error {
			// 400 when the payload was sent alone, 202 for a value listed
			// under a batch answer's "errors".
			if ev.DataType != oxytype.DataPayload || ev.APIJobID != "" || ev.Error == nil ||
				ev.Error.Message != rejectMessage || ev.Error.StatusCode == nil ||
				(*ev.Error.StatusCode != 400 && *ev.Error.StatusCode != 202) {
				return fmt.Errorf("want a submitter failure at payload, no job id, error 400 or 202 %q", rejectMessage)
			}
			return nil
		}}
	case kindLost:
		return expectation{state: oxytype.Unfetched, check: func(ev messages.StatusEvent) error {
			if ev.DataType != oxytype.DataSubmitted || ev.APIJobID == "" || ev.Error == nil ||
				ev.Error.StatusCode == nil || *ev.Error.StatusCode != 404 {
				return errors.New("want a poller failure at submitted with the job id and error 404")
			}
			return nil
		}}
	}
	return expectation{state: oxytype.Done, check: func(ev messages.StatusEvent) error {
		if ev.DataType != oxytype.DataWritten || ev.APIJobID == "" {
			return errors.New("want a success at written with the job id")
		}
		return nil
	}}
}
