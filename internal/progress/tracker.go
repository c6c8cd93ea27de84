package progress

import (
	"github.com/oxypipe/oxypipe/pkg/destination"
	"github.com/oxypipe/oxypipe/pkg/messages"
	"github.com/oxypipe/oxypipe/pkg/oxytype"
	"github.com/oxypipe/oxypipe/pkg/payload"
	"github.com/oxypipe/oxypipe/pkg/runlog"
	"github.com/oxypipe/oxypipe/pkg/wsa"
)

// stage is where a doc stands, in pipeline order; a success only ever moves
// a doc to a later stage.
type stage uint8

const (
	stageNew     stage = iota // not fed yet
	stageFed                  // fed, not submitted: counts as unsubmitted
	stagePending              // submitted, not finished at the API
	stageDone                 // done at the API, not written yet
	stageFinal                // finished
)

// doc is a payload's state in one byte, so that a run of millions costs
// a byte per payload: its stage (the low three bits), its upload (two bits:
// none, uploaded, failed) and the may-have-billed mark (an event of the doc
// carried it; it sticks to the doc's error as it does in the run log).
// What a doc carries beyond that byte (its job id and payload) lives in
// Tracker.live while it is in flight and in its problem once it finished
// other than done.
type doc uint8

const (
	docStage      doc = 0x07
	docUploaded   doc = 0x08
	docUnuploaded doc = 0x10
	docMarked     doc = 0x20
)

func (d doc) stage() stage { return stage(d & docStage) }

func (d *doc) setStage(s stage) { *d = *d&^docStage | doc(s) }

// live is what the tracker keeps of a doc in flight: its API job id and
// its redacted body, until the doc finishes.
type live struct {
	apiJobID string
	payload  []byte
}

// problem is where a finished doc that did not end done sits in
// Tracker.problems, and the outcome that decided it.
type problem struct {
	index int
	won   runlog.DocOutcome
	// apiJobID is the doc's latest job id, which a later final event
	// that decides the doc instead may need for its line.
	apiJobID string
}

// Tracker applies a run's status events to a per-doc state machine and keeps
// the counts of Progress. It is the pure part of a Watcher (no I/O), for
// callers that read the events themselves. It is not safe for concurrent use.
//
// Which event decides a doc's outcome is the run log's rule
// (runlog.DocOutcome): a done beats a hard failure that came first, and a
// hard failure at a later stage beats one at an earlier stage. So the
// counts and Problems agree with the run log the run ends with, even when
// a duplicate message's success arrives after a hard failure.
type Tracker struct {
	total       int
	destination string
	final       oxytype.DataType
	docs        []doc
	live        map[int]*live // docs in flight that carry a job id or a payload
	byStage     [stageFinal]int
	byFinal     map[oxytype.State]int
	written     int
	uploaded    int
	unuploaded  int
	retries     int
	ignored     int
	problems    []Job
	failedUps   []Job           // finished jobs whose upload failed or was never reported
	problemAt   map[int]problem // doc position → its problem
}

// NewTracker returns a tracker for a run as announced: its Total payloads,
// its Destination (for result file names) and its FinalDataType (default
// oxytype.FinalDataType).
func NewTracker(ann messages.RunAnnounced) *Tracker {
	final := ann.FinalDataType
	if final == "" {
		final = oxytype.FinalDataType
	}
	total := max(ann.Total, 0)
	t := &Tracker{
		total:       total,
		destination: ann.Destination,
		final:       final,
		docs:        make([]doc, total),
		live:        map[int]*live{},
		byFinal:     map[oxytype.State]int{},
		problemAt:   map[int]problem{},
	}
	t.byStage[stageNew] = total
	return t
}

// Apply applies one status event. When the event finishes its doc, Apply
// returns the finished job and true. A doc is reported once: a later event
// that decides it instead (a done after a hard failure, a hard failure at a
// later stage) changes the counts and Problems, not the job reported.
// Events about docs outside the run (an unknown doc id, a position beyond
// the total) are ignored.
func (t *Tracker) Apply(ev *messages.StatusEvent) (Job, bool) {
	pos, err := messages.ParseDocID(ev.Doc)
	if err != nil || pos >= t.total {
		t.ignored++
		return Job{}, false
	}
	d := &t.docs[pos]
	if ev.Error != nil && ev.Error.MayHaveBilled {
		*d |= docMarked
	}
	if ev.Outcome == oxytype.SoftFailure {
		t.retries++
		return Job{}, false
	}
	won, final := runlog.FinalOutcome(t.final, ev.DataType,
		ev.Outcome == oxytype.Success, ev.Outcome == oxytype.HardFailure, ev.State, ev.Time)
	if d.stage() == stageFinal {
		p, isProblem := t.problemAt[pos]
		if !isProblem {
			return Job{}, false // a done doc never changes
		}
		if ev.APIJobID != "" {
			p.apiJobID = ev.APIJobID
			t.problemAt[pos] = p
		}
		if final {
			t.reconsider(pos, ev, won, p)
		}
		return Job{}, false
	}
	l := t.live[pos]
	if l == nil && (len(ev.Payload) > 0 || ev.APIJobID != "") {
		l = &live{}
		t.live[pos] = l
	}
	if l != nil && l.payload == nil && len(ev.Payload) > 0 {
		l.payload = append([]byte(nil), ev.Payload...)
	}
	if ev.APIJobID != "" {
		l.apiJobID = ev.APIJobID
	}
	if ev.Upload != nil && *d&(docUploaded|docUnuploaded) == 0 {
		if ev.Upload.Code == wsa.UploadOK {
			*d |= docUploaded
			t.uploaded++
		} else {
			*d |= docUnuploaded
			t.unuploaded++
		}
	}
	if ev.Outcome == oxytype.Success && ev.DataType == oxytype.DataWritten {
		t.written++
	}
	if final {
		t.byStage[d.stage()]--
		d.setStage(stageFinal)
		var held live
		if l != nil {
			held = *l
			delete(t.live, pos) // the job carries them from here
		}
		j := t.finish(pos, ev, won, held)
		if *d&docUnuploaded != 0 { // the same judgement as the unuploaded count
			t.failedUps = append(t.failedUps, j)
		}
		return j, true
	}
	if ev.Outcome == oxytype.Success {
		switch ev.DataType {
		case oxytype.DataPayload:
			t.advance(d, stageFed)
		case oxytype.DataSubmitted:
			t.advance(d, stagePending)
		case oxytype.DataDone:
			t.advance(d, stageDone)
		}
	}
	return Job{}, false
}

func (t *Tracker) advance(d *doc, to stage) {
	if to <= d.stage() {
		return
	}
	t.byStage[d.stage()]--
	t.byStage[to]++
	d.setStage(to)
}

// reconsider applies a final event about a doc that finished other than
// done (its problem is p): when it decides the doc instead
// (runlog.DocOutcome.Beats), the doc's state, counts and problem change to
// what it says.
func (t *Tracker) reconsider(pos int, ev *messages.StatusEvent, won runlog.DocOutcome, p problem) {
	if !won.Beats(p.won) {
		return
	}
	old := t.problems[p.index]
	t.byFinal[old.Status]--
	t.problems = append(t.problems[:p.index], t.problems[p.index+1:]...)
	delete(t.problemAt, pos)
	for q, o := range t.problemAt {
		if o.index > p.index {
			o.index--
			t.problemAt[q] = o
		}
	}
	if ev.Outcome == oxytype.Success && ev.DataType == oxytype.DataWritten {
		t.written++
	}
	t.finish(pos, ev, won, live{apiJobID: p.apiJobID, payload: old.Payload})
}

// finish records the doc at pos as decided by ev (whose outcome is won),
// with the job id and payload it carried, and returns its job.
func (t *Tracker) finish(pos int, ev *messages.StatusEvent, won runlog.DocOutcome, held live) Job {
	d := t.docs[pos]
	j := Job{Doc: pos, ID: held.apiJobID, Status: oxytype.Done, Payload: held.payload}
	if !won.Done {
		j.Status, j.ID = runlog.FailureLine(ev.State, ev.APIJobID, held.apiJobID)
	}
	t.byFinal[j.Status]++
	if len(j.Payload) > 0 {
		if p, err := payload.Parse(j.Payload, 0); err == nil {
			j.Source = p.Source()
			_, j.Input = p.Input()
		}
	}
	if d&(docUploaded|docUnuploaded) != 0 {
		j.Upload = ev.Upload
	}
	switch j.Status {
	case oxytype.Done:
		if ev.DataType == oxytype.DataWritten && j.ID != "" {
			j.File = destination.ResultFile(t.destination, j.ID)
		}
	case oxytype.Faulted:
		j.Stage = ev.DataType
		j.Reason = ev.Reason
	default:
		j.Stage = ev.DataType
		j.Reason = ev.Reason
		j.Error = ev.Error
		if j.Error == nil {
			j.Error = &oxytype.ErrorInfo{Message: ev.Reason}
		}
		if j.ID == "" && !j.Error.MayHaveBilled && d&docMarked != 0 {
			e := *j.Error
			e.MayHaveBilled = true
			j.Error = &e
		}
	}
	if j.Status != oxytype.Done {
		t.problemAt[pos] = problem{index: len(t.problems), won: won, apiJobID: held.apiJobID}
		t.problems = append(t.problems, j)
	}
	return j
}

// rewind prepares the tracker for its run's events to be applied again from
// the first (a watcher that moves from a hub to the stream): the counts
// that every event adds to start over; the rest of its state takes a
// repeated event as the duplicate it is, so no doc is reported twice.
func (t *Tracker) rewind() {
	t.retries, t.ignored = 0, 0
}

// Progress returns the counts so far (Elapsed is left zero).
func (t *Tracker) Progress() Progress {
	p := Progress{
		Payloads:   t.total,
		Pending:    t.byStage[stagePending],
		Done:       t.byStage[stageDone] + t.byFinal[oxytype.Done],
		Faulted:    t.byFinal[oxytype.Faulted],
		Rejected:   t.byFinal[oxytype.Rejected],
		Unfetched:  t.byFinal[oxytype.Unfetched],
		Written:    t.written,
		Uploaded:   t.uploaded,
		Unuploaded: t.unuploaded,
		Retries:    t.retries,
	}
	p.Unsubmitted = t.total - p.Pending - p.Done - p.Faulted - p.Rejected - p.Unfetched
	return p
}

// Finished returns how many docs reached a final outcome.
func (t *Tracker) Finished() int {
	n := 0
	for _, c := range t.byFinal {
		n += c
	}
	return n
}

// Problems returns the finished jobs that did not end done (faulted,
// rejected, unsubmitted, unfetched), in the order they finished.
func (t *Tracker) Problems() []Job {
	return append([]Job(nil), t.problems...)
}

// FailedUploads returns the finished jobs whose upload to cloud storage
// failed or was never reported, in the order they finished.
func (t *Tracker) FailedUploads() []Job {
	return append([]Job(nil), t.failedUps...)
}

// Ignored counts events that named no doc of the run.
func (t *Tracker) Ignored() int { return t.ignored }
