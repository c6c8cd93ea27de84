package pipelinetest

import (
	"strings"
	"testing"
	"time"

	"github.com/oxypipe/oxypipe/internal/topology"
	"github.com/oxypipe/oxypipe/pkg/emulator"
	"github.com/oxypipe/oxypipe/pkg/messages"
	"github.com/oxypipe/oxypipe/pkg/oxytype"
)

// malformed is one broken message and the hard failure it must become.
type malformed struct {
	name    string
	subject func(run string) string
	// body is the message; every "%[1]s" in it is replaced by the run id.
	body string
	// doc is the doc the failure is recorded under; "" for an unknown doc
	// ("?<stream>:<sequence>").
	doc string
	// dataType, consumer and state are the failure's; reason must be in its
	// reason.
	dataType oxytype.DataType
	consumer topology.Stage
	state    oxytype.State
	reason   string
}

// A job id the emulator never created.
const unknownJob = "7599999999999999999"

func malformedMessages() []malformed {
	payloadAt := func(doc string) malformed {
		return malformed{subject: messages.PayloadSubject, doc: doc, dataType: oxytype.DataPayload,
			consumer: topology.Submitter, state: oxytype.Unsubmitted}
	}
	submittedAt := func(doc string, state oxytype.State) malformed {
		return malformed{subject: messages.SubmittedSubject, doc: doc, dataType: oxytype.DataSubmitted,
			consumer: topology.Poller, state: state}
	}
	doneAt := func(doc string, state oxytype.State) malformed {
		return malformed{subject: messages.DoneSubject, doc: doc, dataType: oxytype.DataDone,
			consumer: topology.Writer, state: state}
	}
	with := func(m malformed, name, body, reason string) malformed {
		m.name, m.body, m.reason = name, body, reason
		return m
	}
	rejected := func(m malformed) malformed { m.state = oxytype.Rejected; return m }
	return []malformed{
		with(payloadAt(""), "payload: garbage bytes", "\x00\x01 not json {",
			"invalid JSON"),
		with(payloadAt(""), "payload: a JSON array", `[1,2,3]`,
			"the message is a JSON array, want an object"),
		with(payloadAt("900"), "payload: no payload field", `{"v":1,"run":"%[1]s","doc":"900"}`,
			`"payload" must be a JSON object`),
		with(payloadAt("901"), "payload: a payload that is not an object", `{"v":1,"run":"%[1]s","doc":"901","payload":"https://example.com/"}`,
			`"payload" must be a JSON object`),
		with(payloadAt("902"), "payload: no envelope version", `{"run":"%[1]s","doc":"902","payload":{"source":"universal","url":"https://example.com/"}}`,
			`missing "v"`),
		with(payloadAt(""), "payload: no doc", `{"v":1,"run":"%[1]s","payload":{"source":"universal","url":"https://example.com/"}}`,
			"doc"),
		with(rejected(payloadAt("903")), "payload: a WSA body without its url", `{"v":1,"run":"%[1]s","doc":"903","payload":{"source":"universal"}}`,
			"url"),
		with(rejected(payloadAt("904")), "payload: a WSA body whose source is a number", `{"v":1,"run":"%[1]s","doc":"904","payload":{"source":7,"url":"https://example.com/"}}`,
			"source"),

		with(submittedAt("", oxytype.Unsubmitted), "submitted: garbage bytes", "\xff\xfe garbage",
			"invalid JSON"),
		with(submittedAt("910", oxytype.Unsubmitted), "submitted: no api_job_id", `{"v":1,"run":"%[1]s","doc":"910","payload":{"source":"universal","url":"https://example.com/"}}`,
			`missing "api_job_id"`),
		with(submittedAt("911", oxytype.Unfetched), "submitted: a payload that is not an object", `{"v":1,"run":"%[1]s","doc":"911","api_job_id":"`+unknownJob+`","payload":[1]}`,
			`"payload" must be a JSON object`),
		with(submittedAt("912", oxytype.Unfetched), "submitted: a job id that is not one", `{"v":1,"run":"%[1]s","doc":"912","api_job_id":"12; DROP TABLE","payload":{"source":"universal","url":"https://example.com/"}}`,
			"is not a job id"),
		with(submittedAt("913", oxytype.Unfetched), "submitted: a time that is not one", `{"v":1,"run":"%[1]s","doc":"913","api_job_id":"`+unknownJob+`","payload":{"source":"universal","url":"https://example.com/"},"submitted_at":"yesterday"}`,
			`parsing time "yesterday"`),

		with(doneAt("", oxytype.Unsubmitted), "done: garbage bytes", "{{{{",
			"invalid JSON"),
		with(doneAt("920", oxytype.Unsubmitted), "done: no api_job_id", `{"v":1,"run":"%[1]s","doc":"920","status":"done","payload":{"source":"universal","url":"https://example.com/"}}`,
			`missing "api_job_id"`),
		with(doneAt("921", oxytype.Unfetched), "done: a status that is not done", `{"v":1,"run":"%[1]s","doc":"921","api_job_id":"`+unknownJob+`","status":"pending","payload":{}}`,
			`"status" is "pending"`),
		with(doneAt("922", oxytype.Unfetched), "done: a job id that is not one", `{"v":1,"run":"%[1]s","doc":"922","api_job_id":"../../etc/passwd","status":"done","payload":{}}`,
			"is not a job id"),
		with(doneAt("", oxytype.Unfetched), "done: a doc that is not a position", `{"v":1,"run":"%[1]s","doc":"x","api_job_id":"`+unknownJob+`","status":"done","payload":"x"}`,
			"doc"),
	}
}

func TestMalformedMessagesOnEverySubjectAreOneHardFailureEachAndWorkGoesOn(t *testing.T) {
	t.Parallel()
	s := scenario{n: 60, fault: 10}
	cfg := emulator.Config{Seed: 3, JobTime: time.Second, TimeScale: 0.1,
		RateLimit: emulator.Unlimited, RenderRateLimit: emulator.Unlimited, Rules: s.rules()}
	b := inProcess(t, cfg, s.n, stageOptions{})
	bodies := s.bodies()

	// Good docs before and after the broken messages: the workers must
	// still be working after them.
	b.feed(bodies[:s.n/2], 0)
	cases := malformedMessages()
	seqs := make([]uint64, len(cases))
	for i, c := range cases {
		ack := b.publish(raw(c.subject(b.run), []byte(strings.ReplaceAll(c.body, "%[1]s", b.run))))
		seqs[i] = ack.Sequence
	}
	b.feed(bodies, s.n/2)

	b.events.waitFinal(t, b.run, s.n, 30*time.Second)
	b.waitSettled(10 * time.Second)
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			stream := map[topology.Stage]string{topology.Submitter: topology.StreamPayloads,
				topology.Poller: topology.StreamSubmitted, topology.Writer: topology.StreamDone}[c.consumer]
			doc := c.doc
			if doc == "" {
				doc = messages.UnknownDocID(stream, seqs[i])
			}
			evs := b.events.docEvents(b.run, doc)
			if len(evs) != 1 {
				t.Fatalf("doc %s has %d events, want one hard failure: %s", doc, len(evs), describe(evs))
			}
			ev := evs[0]
			if ev.Outcome != oxytype.HardFailure || ev.State != c.state || ev.DataType != c.dataType ||
				ev.Consumer.Type != string(c.consumer) {
				t.Errorf("got %s, want a hard failure %s at %s by the %s", describe(evs), c.state, c.dataType, c.consumer)
			}
			if !strings.Contains(ev.Reason, c.reason) {
				t.Errorf("reason %q does not say %q", ev.Reason, c.reason)
			}
			if ev.Origin.Type != "rogue" {
				t.Errorf("origin %s, want the publisher from the Oxy-Origin header (rogue/pipelinetest)", ev.Origin)
			}
		})
	}
	b.verify(s.n, s.expect, s.url, true)
	if bad := b.events.undecodable(); len(bad) > 0 {
		t.Errorf("%d status events do not decode: %s", len(bad), firstFew(bad, 3))
	}
}
