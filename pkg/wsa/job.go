package wsa

import (
	"bytes"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/oxypipe/oxypipe/internal/jsonscan"
	"github.com/oxypipe/oxypipe/internal/jsonvalid"
)

// JobStatus is a job's status. The set is closed: pending, then done or
// faulted; jobs cannot be cancelled.
type JobStatus string

// The statuses of a job.
const (
	JobPending JobStatus = "pending"
	JobDone    JobStatus = "done"
	JobFaulted JobStatus = "faulted"
)

// Final reports whether the status is done or faulted.
func (s JobStatus) Final() bool { return s == JobDone || s == JobFaulted }

// UploadStatus is an entry of a job's "statuses" list: the outcome of the
// cloud-storage upload. Code 13000 means the upload succeeded.
type UploadStatus struct {
	Event   string `json:"event"`
	Code    int    `json:"code"`
	Message string `json:"message"`
}

// UploadOK is the code of a successful cloud-storage upload.
const UploadOK = 13000

// Job is a job object as the API returns it on submission, from the status
// endpoint, inside a results body and in a callback. The typed fields are
// the ones the pipeline acts on; Raw holds the whole object as received,
// unknown fields included, and is what MarshalJSON writes back.
type Job struct {
	// ID is the 19-digit job id.
	ID string
	// Status is pending, done or faulted.
	Status JobStatus
	// Source is the payload's source, as echoed by the API.
	Source string
	// CreatedAt and UpdatedAt are the job's timestamps (UTC); UpdatedAt is
	// the finish time once the job is done or faulted. Zero when missing or
	// in an unknown format.
	CreatedAt, UpdatedAt time.Time
	// Statuses is the cloud-storage upload list. HasStatuses is false when
	// the object has no "statuses" key at all (the short job objects of most
	// sources), which is not the same as an empty list.
	Statuses    []UploadStatus
	HasStatuses bool
	// Raw is the job object exactly as received. A decoded answer's Raw
	// shares the answer's bytes: read it, never change it.
	Raw json.RawMessage
}

// UnmarshalJSON decodes the typed fields and keeps the object in Raw. It is
// lenient about the types of the typed fields (a numeric id, an unknown
// timestamp format) so that one odd field never makes a job unreadable; it
// fails only for a body that is not a JSON object.
func (j *Job) UnmarshalJSON(b []byte) error {
	if err := validJSON(b); err != nil {
		return err
	}
	// encoding/json may reuse b once this returns: Raw gets bytes of its own.
	job, err := decodeJob(bytes.Clone(b))
	if err != nil {
		return err
	}
	*j = job
	return nil
}

// decodeJob reads a job object from b, which must be valid JSON (checked by
// the caller): the typed fields in one pass over the bytes. The client's
// answers are checked once with validJSON and then only scanned, so a job
// costs one validation instead of three (encoding/json validates again at
// every nested Unmarshal).
//
// Raw is b itself, not a copy: b must be bytes nobody changes or reuses
// afterwards. Every caller passes bytes of its own: an answer body (or a
// part of one) read into a fresh buffer, which goes with the last job that
// points into it, or UnmarshalJSON's copy. A copy per job was one
// allocation and one copy of each answer on the hottest path of a run.
func decodeJob(b []byte) (Job, error) {
	b = bytes.TrimSpace(b)
	var j Job
	var statuses []byte
	isObject := jsonscan.Object(b, func(name, value []byte) {
		switch string(name) {
		case "id":
			j.ID = scalarText(value)
		case "status":
			j.Status = JobStatus(scalarText(value))
		case "source":
			j.Source = scalarText(value)
		case "created_at":
			j.CreatedAt = parseTime(scalarText(value))
		case "updated_at":
			j.UpdatedAt = parseTime(scalarText(value))
		case "statuses":
			statuses = value
		}
	})
	if !isObject {
		return Job{}, errors.New("wsa: a job must be a JSON object")
	}
	j.Raw = json.RawMessage(b)
	if len(statuses) > 0 && string(statuses) != "null" {
		j.HasStatuses = true
		jsonscan.Array(statuses, func(e []byte) {
			var s UploadStatus
			if json.Unmarshal(e, &s) == nil {
				j.Statuses = append(j.Statuses, s)
			}
		})
	}
	return j, nil
}

// validJSON returns nil for valid JSON, else encoding/json's syntax error,
// which names the offset.
func validJSON(b []byte) error {
	if jsonvalid.Valid(b) {
		return nil
	}
	var v json.RawMessage
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	return errors.New("invalid JSON")
}

// MarshalJSON writes Raw, the object as received. A Job built in code,
// without Raw, is written from its typed fields.
func (j Job) MarshalJSON() ([]byte, error) {
	if len(j.Raw) > 0 {
		return j.Raw, nil
	}
	out := map[string]any{"id": j.ID, "status": j.Status}
	if j.Source != "" {
		out["source"] = j.Source
	}
	if !j.CreatedAt.IsZero() {
		out["created_at"] = j.CreatedAt.UTC().Format(TimeLayout)
	}
	if !j.UpdatedAt.IsZero() {
		out["updated_at"] = j.UpdatedAt.UTC().Format(TimeLayout)
	}
	if j.HasStatuses {
		out["statuses"] = append([]UploadStatus{}, j.Statuses...)
	}
	return json.Marshal(out)
}

// Field returns (a copy of) the raw value of a key of the job object.
func (j Job) Field(key string) (json.RawMessage, bool) {
	v, ok := jsonscan.Member(j.Raw, key)
	if !ok {
		return nil, false
	}
	return append(json.RawMessage(nil), v...), true
}

// Upload returns the first cloud-storage upload entry with a code, if any.
func (j Job) Upload() (UploadStatus, bool) {
	for _, s := range j.Statuses {
		if s.Code != 0 {
			return s, true
		}
	}
	return UploadStatus{}, false
}

// TimeLayout is the API's timestamp format: UTC without a zone.
const TimeLayout = "2006-01-02 15:04:05"

// parseTime reads the API's timestamps: "2026-09-24 20:07:07", with an
// optional fraction (".000"), or RFC 3339. It returns the zero time for
// anything else.
func parseTime(s string) time.Time {
	if s == "" {
		return time.Time{}
	}
	for _, layout := range []string{"2006-01-02 15:04:05.999999999", time.RFC3339Nano, "2006-01-02T15:04:05.999999999"} {
		if t, err := time.ParseInLocation(layout, s, time.UTC); err == nil {
			return t.UTC()
		}
	}
	return time.Time{}
}

// scalarText returns a JSON string's text or a number's digits, else "".
func scalarText(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	if raw[0] == '"' {
		s, _ := jsonscan.String(raw)
		return s
	}
	if n := strings.TrimSpace(string(raw)); n != "" && (n[0] == '-' || (n[0] >= '0' && n[0] <= '9')) {
		if _, err := strconv.ParseFloat(n, 64); err == nil {
			return n
		}
	}
	return ""
}

// ValidJobID reports whether id can be a job id. The API's ids are 19
// digits; any id that is a safe URL path segment and file name (letters,
// digits, '-' and '_', at most 64 bytes) is accepted, so an id from an
// emulator or a future format still works, while a message carrying a path
// ("../x") can never reach a URL or a destination name.
func ValidJobID(id string) bool {
	if id == "" || len(id) > 64 {
		return false
	}
	for _, r := range id {
		ok := r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r == '-' || r == '_'
		if !ok {
			return false
		}
	}
	return true
}
