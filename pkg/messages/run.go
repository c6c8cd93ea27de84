package messages

import (
	"encoding/json"
	"reflect"
	"time"

	"github.com/oxypipe/oxypipe/pkg/oxytype"
)

// RunAnnounced describes a run. The feeder stores it in the runs bucket and
// publishes it on [RunSubject] before the first payload.
type RunAnnounced struct {
	V   int    `json:"v"`
	Run string `json:"run"`
	// Total is the number of payloads of the run (docs "0" … Total-1).
	Total int `json:"total"`
	// FinalDataType is the data type at which a doc is complete; normally
	// [FinalDataType].
	FinalDataType oxytype.DataType `json:"final_data_type"`
	// Destination is where done jobs are written: a folder, s3://, gs:// or
	// az:// URL. It must not hold credentials (writers use their own).
	Destination string `json:"destination"`
	// RunLog is where the run log "<run>.jsonl" goes: a folder or an object
	// store URL, like Destination.
	RunLog    string    `json:"run_log"`
	StartedAt time.Time `json:"started_at"`
	// Options holds run options the stages may need (submission batching,
	// poll limits, …) as a JSON object; its schema belongs to the stages.
	Options json.RawMessage `json:"options,omitempty"`
	// StopTimeout bounds a stop of the run, whoever stops it (see RunStop):
	// how long jobs already submitted may still be checked and written
	// before the run is completed with what is recorded. In nanoseconds;
	// 0 means DefaultStopTimeout.
	StopTimeout time.Duration `json:"stop_timeout,omitempty"`
	Extra       Extra         `json:"-"`
}

// RunCompleted is published once per run by the statusworker that won the
// run's completion, on [RunCompletedSubject], after the run log is written.
type RunCompleted struct {
	V   int    `json:"v"`
	Run string `json:"run"`
	// Total is the run's payload count; Done+Faulted+Rejected+Unsubmitted+
	// Unfetched equals it.
	Total       int `json:"total"`
	Done        int `json:"done"`
	Faulted     int `json:"faulted"`
	Rejected    int `json:"rejected"`
	Unsubmitted int `json:"unsubmitted"`
	Unfetched   int `json:"unfetched"`
	// Unidentified counts messages of the run recorded under an
	// [UnknownDocID] (undecodable, doc unreadable). They are not docs of the
	// run and are not part of Total.
	Unidentified int       `json:"unidentified,omitempty"`
	CompletedAt  time.Time `json:"completed_at"`
	// RunLog is the full location of the written run log.
	RunLog string `json:"run_log"`
	Extra  Extra  `json:"-"`
}

// RunRecord is the value stored in the runs bucket under the run's token.
type RunRecord struct {
	V         int              `json:"v"`
	Announced RunAnnounced     `json:"announced"`
	State     oxytype.RunState `json:"state"`
	// Reason explains RunStateFailed or RunStateStopping.
	Reason string `json:"reason,omitempty"`
	// Stop is set with RunStateStopping (and kept once completed): what
	// stopped the run and when it ends regardless.
	Stop      *RunStop  `json:"stop,omitempty"`
	UpdatedAt time.Time `json:"updated_at"`
	// Completed is set with RunStateCompleted.
	Completed *RunCompleted `json:"completed,omitempty"`
	// Feed is set for a run of a standing feed (see FeedRecord). While
	// Feed.Open its Announced.Total is not final and it cannot complete.
	Feed  *RunFeed `json:"feed,omitempty"`
	Extra Extra    `json:"-"`
}

var (
	runAnnouncedKeys = jsonKeys(reflect.TypeFor[RunAnnounced]())
	runCompletedKeys = jsonKeys(reflect.TypeFor[RunCompleted]())
	runRecordKeys    = jsonKeys(reflect.TypeFor[RunRecord]())
)

// Subject implements [Envelope].
func (r *RunAnnounced) Subject() string { return RunSubject(r.Run) }

// MsgID implements [Envelope]: one announcement per run.
func (r *RunAnnounced) MsgID() string { return RunMsgID(r.Run, KindRunAnnounced) }

// MarshalJSON writes the known fields (with "v" set) and then Extra.
func (r RunAnnounced) MarshalJSON() ([]byte, error) {
	type plain RunAnnounced
	q := plain(r)
	if q.V == 0 {
		q.V = Version
	}
	return marshalWithExtra(q, r.Extra, runAnnouncedKeys)
}

// UnmarshalJSON reads the known fields and keeps the others in Extra.
func (r *RunAnnounced) UnmarshalJSON(data []byte) error {
	type plain RunAnnounced
	var q plain
	extra, err := unmarshalWithExtra(data, &q, runAnnouncedKeys)
	if err != nil {
		return err
	}
	*r = RunAnnounced(q)
	r.Extra = extra
	return nil
}

// Subject implements [Envelope].
func (r *RunCompleted) Subject() string { return RunCompletedSubject(r.Run) }

// MsgID implements [Envelope]: one completion per run, so a statusworker
// that publishes it again after a crash is deduplicated.
func (r *RunCompleted) MsgID() string { return RunMsgID(r.Run, KindRunCompleted) }

// MarshalJSON writes the known fields (with "v" set) and then Extra.
func (r RunCompleted) MarshalJSON() ([]byte, error) {
	type plain RunCompleted
	q := plain(r)
	if q.V == 0 {
		q.V = Version
	}
	return marshalWithExtra(q, r.Extra, runCompletedKeys)
}

// UnmarshalJSON reads the known fields and keeps the others in Extra.
func (r *RunCompleted) UnmarshalJSON(data []byte) error {
	type plain RunCompleted
	var q plain
	extra, err := unmarshalWithExtra(data, &q, runCompletedKeys)
	if err != nil {
		return err
	}
	*r = RunCompleted(q)
	r.Extra = extra
	return nil
}

// MarshalJSON writes the known fields (with "v" set) and then Extra.
func (r RunRecord) MarshalJSON() ([]byte, error) {
	type plain RunRecord
	q := plain(r)
	if q.V == 0 {
		q.V = Version
	}
	return marshalWithExtra(q, r.Extra, runRecordKeys)
}

// UnmarshalJSON reads the known fields and keeps the others in Extra.
func (r *RunRecord) UnmarshalJSON(data []byte) error {
	type plain RunRecord
	var q plain
	extra, err := unmarshalWithExtra(data, &q, runRecordKeys)
	if err != nil {
		return err
	}
	*r = RunRecord(q)
	r.Extra = extra
	return nil
}
