package emulator

import (
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/oxypipe/oxypipe/internal/redact"
)

// never is the finish time of a job that stays pending.
const never = math.MaxInt64

// firstJobID is one less than the first id handed out.
const firstJobID = 7500000000000000000

type jobStatus uint8

const (
	statusPending jobStatus = iota
	statusDone
	statusFaulted
)

func (s jobStatus) String() string {
	return [...]string{"pending", "done", "faulted"}[s]
}

// job is one API job. Its status is not stored: it is computed from the
// clock and finish, so no timer runs per job.
type job struct {
	id      uint64
	spec    *spec
	input   string
	out     *outcome // the matching rule's outcome, or nil
	created int64    // unix nanoseconds
	finish  int64    // unix nanoseconds, or never
	// storage is the resolved, redacted storage_url, or "".
	storage    string
	uploadAt   int64 // when the upload entry appears, or never
	uploadCode int16 // 0 = no entry
	faulted    bool
	// realtime: created by a Realtime call, so the Push-Pull endpoints
	// answer 404 for it, as the API does.
	realtime bool
}

func (j *job) status(now int64) jobStatus {
	switch {
	case now < j.finish:
		return statusPending
	case j.faulted:
		return statusFaulted
	}
	return statusDone
}

// resultsExpired reports whether the job's results are gone at now.
func (j *job) resultsExpired(now int64, ttl time.Duration) bool {
	if j.out != nil && j.out.ResultsTTL > 0 {
		ttl = j.out.ResultsTTL
	}
	return j.finish != never && now-j.finish >= int64(ttl)
}

func (j *job) targetStatus() int {
	if j.out != nil && j.out.TargetStatusCode != 0 {
		return j.out.TargetStatusCode
	}
	return 200
}

func (j *job) faultStatus() int {
	if j.out != nil && j.out.FaultStatusCode != 0 {
		return j.out.FaultStatusCode
	}
	return 613
}

func (j *job) parseStatus() int {
	if j.out != nil && j.out.ParseStatusCode != 0 {
		return j.out.ParseStatusCode
	}
	return 12000
}

// parseJobID parses a path id. ok is false for a non-numeric id (nginx
// answers those); a numeric id too large for any job gives 0, true.
func parseJobID(s string) (id uint64, ok bool) {
	if s == "" {
		return 0, false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
	}
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, true
	}
	return n, true
}

// resolveStorage resolves a storage_url at submission as the API does: a
// name that does not end in `.{{ extension }}` is a folder and gets
// `/{{ job_id }}.{{ extension }}`; only job_id, source, query and extension
// resolve (extension is always json); credentials are redacted.
func resolveStorage(tmpl string, id uint64, sp *spec, input string) string {
	name := tmpl
	if !strings.HasSuffix(name, ".{{ extension }}") {
		name = strings.TrimRight(name, "/") + "/{{ job_id }}.{{ extension }}"
	}
	query := ""
	if sp.inputKey == "query" {
		query = input
	}
	name = strings.NewReplacer(
		"{{ job_id }}", strconv.FormatUint(id, 10),
		"{{ source }}", sp.src.name,
		"{{ query }}", query,
		"{{ extension }}", "json",
	).Replace(name)
	return redact.String(name)
}

// uploadMessage is the message of a cloud-upload status code.
func uploadMessage(code int) string {
	switch code {
	case 10001:
		return "Unexpected Exception"
	case 13000:
		return "Upload Successful"
	case 13001:
		return "Upload Failed"
	case 13102:
		return "No such path"
	case 13103:
		return "Access Denied"
	}
	return ""
}
