package progress

import (
	"github.com/oxypipe/oxypipe/pkg/messages"
	"github.com/oxypipe/oxypipe/pkg/oxytype"
	"github.com/oxypipe/oxypipe/pkg/payload"
)

// stage is where a doc stands, in pipeline order; a success only ever moves
// a doc to a later stage.
type stage uint8

const (
	stageNew     stage = iota // not fed yet
	stageFed                  // fed, not submitted: counts as unsubmitted
	stagePending              // submitted, not finished at the API
	stageDone                 // done at the API, not written yet
	stageFinal                // finished: see doc.final
)

type doc struct {
	stage    stage
	final    oxytype.State
	upload   uint8 // 0 none, 1 uploaded, 2 failed
	apiJobID string
	// payload is the redacted body, kept until the doc finishes.
	payload []byte
}

// Tracker applies a run's status events to a per-doc state machine and keeps
// the counts of Progress. It is the pure part of a Watcher (no I/O), for
// callers that read the events themselves. It is not safe for concurrent use.
type Tracker struct {
	total       int
	destination string
	final       oxytype.DataType
	docs        []doc
	byStage     [stageFinal]int
	byFinal     map[oxytype.State]int
	written     int
	uploaded    int
	unuploaded  int
	retries     int
	ignored     int
	problems    []Job
}

// NewTracker returns a tracker for a run as announced: its Total payloads,
// its Destination (for result file names) and its FinalDataType (default
// messages.FinalDataType).
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
		byFinal:     map[oxytype.State]int{},
	}
	t.byStage[stageNew] = total
	return t
}

// Apply applies one status event. When the event finishes its doc, Apply
// returns the finished job and true; a doc finishes once, and later events
// about it only count retries. Events about docs outside the run (an
// unknown doc id, a position beyond the total) are ignored.
func (t *Tracker) Apply(ev *messages.StatusEvent) (Job, bool) {
	pos, err := messages.ParseDocID(ev.Doc)
	if err != nil || pos >= t.total {
		t.ignored++
		return Job{}, false
	}
	d := &t.docs[pos]
	if ev.Outcome == oxytype.SoftFailure {
		t.retries++
		return Job{}, false
	}
	if d.stage == stageFinal {
		return Job{}, false
	}
	if d.payload == nil && len(ev.Payload) > 0 {
		d.payload = append([]byte(nil), ev.Payload...)
	}
	if ev.APIJobID != "" {
		d.apiJobID = ev.APIJobID
	}
	if ev.Upload != nil && d.upload == 0 {
		if ev.Upload.Code == 13000 {
			d.upload = 1
			t.uploaded++
		} else {
			d.upload = 2
			t.unuploaded++
		}
	}
	switch ev.Outcome {
	case oxytype.Success:
		if ev.DataType == oxytype.DataWritten {
			t.written++
		}
		if ev.DataType == t.final {
			return t.finish(pos, ev, oxytype.Done), true
		}
		switch ev.DataType {
		case oxytype.DataPayload:
			t.advance(d, stageFed)
		case oxytype.DataSubmitted:
			t.advance(d, stagePending)
		case oxytype.DataDone:
			t.advance(d, stageDone)
		}
		return Job{}, false
	case oxytype.HardFailure:
		state := ev.State
		if !state.Valid() || state == oxytype.Done {
			state = messages.FailureState(d.apiJobID)
		}
		return t.finish(pos, ev, state), true
	}
	return Job{}, false
}

func (t *Tracker) advance(d *doc, to stage) {
	if to <= d.stage {
		return
	}
	t.byStage[d.stage]--
	t.byStage[to]++
	d.stage = to
}

func (t *Tracker) finish(pos int, ev *messages.StatusEvent, state oxytype.State) Job {
	d := &t.docs[pos]
	t.byStage[d.stage]--
	d.stage = stageFinal
	d.final = state
	t.byFinal[state]++

	j := Job{Doc: pos, ID: d.apiJobID, Status: state, Payload: d.payload}
	d.payload = nil // the job carries it from here; the tracker no longer needs it
	if len(j.Payload) > 0 {
		if p, err := payload.Parse(j.Payload, 0); err == nil {
			j.Source = p.Source()
			_, j.Input = p.Input()
		}
	}
	if d.upload != 0 {
		j.Upload = ev.Upload
	}
	switch state {
	case oxytype.Done:
		if ev.DataType == oxytype.DataWritten && j.ID != "" {
			j.File = ResultFile(t.destination, j.ID)
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
	}
	if state != oxytype.Done {
		t.problems = append(t.problems, j)
	}
	return j
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

// Ignored counts events that named no doc of the run.
func (t *Tracker) Ignored() int { return t.ignored }
