package jobresults

import (
	"time"

	"github.com/oxypipe/oxypipe/pkg/oxytype"
)

// mongoRecord is a job_results document as read back.
type mongoRecord struct {
	JobID        string           `bson:"job_id"`
	DataType     string           `bson:"data_type"`
	DocID        string           `bson:"doc_id"`
	Time         time.Time        `bson:"time"`
	Success      bool             `bson:"success"`
	OriginType   string           `bson:"origin_type"`
	OriginName   string           `bson:"origin_name"`
	ConsumerType string           `bson:"consumer_type"`
	ConsumerName string           `bson:"consumer_name"`
	RetryCount   int              `bson:"retry_count"`
	SoftFailures []string         `bson:"soft_failures"`
	HardFailure  string           `bson:"hard_failure"`
	Scope        string           `bson:"scope"`
	Version      int64            `bson:"version"`
	State        string           `bson:"state"`
	APIJobID     string           `bson:"api_job_id"`
	Payload      string           `bson:"payload"`
	Error        *mongoErrorInfo  `bson:"error"`
	Upload       *mongoUploadInfo `bson:"upload"`
	FinishedAt   time.Time        `bson:"finished_at"`
}

type mongoErrorInfo struct {
	StatusCode    *int64 `bson:"status_code"`
	Message       string `bson:"message"`
	TraceID       string `bson:"trace_id"`
	MayHaveBilled bool   `bson:"may_have_billed"`
}

type mongoUploadInfo struct {
	Code    int64  `bson:"code"`
	Message string `bson:"message"`
}

func (m *mongoRecord) toRecord() Record {
	r := Record{
		Key:          Key{Run: m.JobID, DataType: m.DataType, DocID: m.DocID},
		Success:      m.Success,
		Origin:       oxytype.Party{Type: m.OriginType, Name: m.OriginName},
		Consumer:     oxytype.Party{Type: m.ConsumerType, Name: m.ConsumerName},
		RetryCount:   m.RetryCount,
		SoftFailures: m.SoftFailures,
		HardFailure:  m.HardFailure,
		Time:         m.Time.UTC(),
		Scope:        m.Scope,
		Version:      uint64(max(m.Version, 0)),
		Facts:        oxytype.Facts{State: oxytype.State(m.State), APIJobID: m.APIJobID},
	}
	if len(r.SoftFailures) == 0 {
		r.SoftFailures = nil
	}
	if m.Payload != "" {
		r.Payload = []byte(m.Payload)
	}
	if m.Error != nil {
		ei := &oxytype.ErrorInfo{Message: m.Error.Message, TraceID: m.Error.TraceID, MayHaveBilled: m.Error.MayHaveBilled}
		if m.Error.StatusCode != nil {
			code := int(*m.Error.StatusCode)
			ei.StatusCode = &code
		}
		r.Error = ei
	}
	if m.Upload != nil {
		r.Upload = &oxytype.Upload{Code: int(m.Upload.Code), Message: m.Upload.Message}
	}
	if !m.FinishedAt.IsZero() {
		r.FinishedAt = m.FinishedAt.UTC()
	}
	return r
}
