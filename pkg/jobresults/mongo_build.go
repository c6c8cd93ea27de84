package jobresults

import (
	"time"

	"github.com/oxypipe/oxypipe/pkg/oxytype"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// Field names of a job_results document. The fields of the [Store] API keep
// the names the Python pipeline framework's ledger uses, so that its
// collections and queries carry over.
const (
	fieldJobID        = "job_id"
	fieldDataType     = "data_type"
	fieldDocID        = "doc_id"
	fieldDocPos       = "doc_pos"
	fieldTime         = "time"
	fieldSuccess      = "success"
	fieldOriginType   = "origin_type"
	fieldOriginName   = "origin_name"
	fieldConsumerType = "consumer_type"
	fieldConsumerName = "consumer_name"
	fieldRetryCount   = "retry_count"
	fieldSoftFailures = "soft_failures"
	fieldHardFailure  = "hard_failure"
	fieldScope        = "scope"
	fieldVersion      = "version"
	fieldState        = "state"
	fieldAPIJobID     = "api_job_id"
	fieldPayload      = "payload"
	fieldError        = "error"
	fieldUpload       = "upload"
	fieldFinishedAt   = "finished_at"
)

// This file builds every filter, update, pipeline and index the Mongo store
// sends, as pure functions, so that tests assert them exactly without a
// server.

func e(key string, value any) bson.E { return bson.E{Key: key, Value: value} }

// keyFilter selects the record of a key (the unique index).
func keyFilter(k Key) bson.D {
	return bson.D{e(fieldJobID, k.Run), e(fieldDataType, k.DataType), e(fieldDocID, k.DocID)}
}

// writeOp returns the upsert filter and update of one prepared entry.
//
// A versioned entry matches only a record whose version is missing or lower;
// when a record with a version at least as high exists, the upsert tries to
// insert a second document with the same key and fails on the unique index:
// that duplicate-key error means "stale", see MongoStore.upsert.
func writeOp(p *prepared) (filter, update bson.D) {
	filter = keyFilter(p.Key)
	if p.Version > 0 {
		filter = append(filter, e(fieldVersion, bson.D{e("$not", bson.D{e("$gte", int64(p.Version))})}))
	}

	set := bson.D{
		e(fieldTime, p.Time),
		e(fieldSuccess, p.Outcome == oxytype.Success),
		e(fieldOriginType, p.Origin.Type),
		e(fieldOriginName, p.Origin.Name),
	}
	var unset bson.D
	var push bson.D
	switch p.Outcome {
	case oxytype.Success:
		unset = bson.D{
			e(fieldRetryCount, ""), e(fieldSoftFailures, ""), e(fieldHardFailure, ""),
			e(fieldConsumerType, ""), e(fieldConsumerName, ""),
		}
	case oxytype.SoftFailure:
		set = append(set,
			e(fieldConsumerType, p.Consumer.Type), e(fieldConsumerName, p.Consumer.Name),
			e(fieldRetryCount, int64(p.RetryCount)))
		push = bson.D{e(fieldSoftFailures, p.Reason)}
		unset = bson.D{e(fieldHardFailure, "")}
	case oxytype.HardFailure:
		set = append(set,
			e(fieldConsumerType, p.Consumer.Type), e(fieldConsumerName, p.Consumer.Name),
			e(fieldHardFailure, p.Reason))
		unset = bson.D{e(fieldRetryCount, ""), e(fieldSoftFailures, "")}
	}
	if p.Version > 0 {
		set = append(set, e(fieldVersion, int64(p.Version)))
	}
	if p.scope != "" {
		set = append(set, e(fieldScope, p.scope))
	}
	if p.State != "" {
		set = append(set, e(fieldState, string(p.State)))
	} else {
		unset = append(unset, e(fieldState, ""))
	}
	if p.Error != nil {
		var code any // null when the error is not an HTTP answer
		if p.Error.StatusCode != nil {
			code = int64(*p.Error.StatusCode)
		}
		ei := bson.D{e("status_code", code), e("message", p.Error.Message), e("trace_id", p.Error.TraceID)}
		if p.Error.MayHaveBilled {
			ei = append(ei, e("may_have_billed", true))
		}
		set = append(set, e(fieldError, ei))
	} else {
		unset = append(unset, e(fieldError, ""))
	}
	if p.APIJobID != "" {
		set = append(set, e(fieldAPIJobID, p.APIJobID))
	}
	if len(p.Payload) > 0 {
		// Stored as text: the run log reproduces the payload byte for byte.
		set = append(set, e(fieldPayload, string(p.Payload)))
	}
	if p.Upload != nil {
		set = append(set, e(fieldUpload, bson.D{e("code", int64(p.Upload.Code)), e("message", p.Upload.Message)}))
	}

	update = bson.D{e("$set", set)}
	if len(unset) > 0 {
		update = append(update, e("$unset", unset))
	}
	if len(push) > 0 {
		update = append(update, e("$push", push))
	}
	if pos, ok := docPosition(p.DocID); ok {
		update = append(update, e("$setOnInsert", bson.D{e(fieldDocPos, pos)}))
	}
	return filter, update
}

// docOrder sorts records in document order; the (job_id, doc_pos, doc_id,
// data_type) index serves it. Missing doc_pos (ids that are not decimal
// integers) sorts first.
func docOrder() bson.D {
	return bson.D{e(fieldDocPos, 1), e(fieldDocID, 1), e(fieldDataType, 1)}
}

// byDataType sorts the records of one document by stage.
func byDataType() bson.D { return bson.D{e(fieldDataType, 1)} }

// completedFilter selects the successes of a job at its final stage; the
// (job_id, data_type, success) index serves it.
func completedFilter(jobID, finalDataType string) bson.D {
	return bson.D{e(fieldJobID, jobID), e(fieldDataType, finalDataType), e(fieldSuccess, true)}
}

// hardFailedExists is the predicate of the partial (job_id, doc_id) index;
// a query must repeat it to use that index.
func hardFailedExists() bson.D {
	return bson.D{e(fieldHardFailure, bson.D{e("$exists", true)})}
}

// hardFailedDocsPipeline counts the distinct documents of a job with a hard
// failure.
func hardFailedDocsPipeline(jobID string) mongo.Pipeline {
	return mongo.Pipeline{
		{e("$match", bson.D{e(fieldJobID, jobID), e(fieldHardFailure, bson.D{e("$exists", true)})})},
		{e("$group", bson.D{e("_id", "$"+fieldDocID)})},
		{e("$count", "n")},
	}
}

// resolvedDocsPipeline counts the distinct documents of a job that
// succeeded at the final stage or hard-failed at any stage.
func resolvedDocsPipeline(jobID, finalDataType string) mongo.Pipeline {
	return mongo.Pipeline{
		{e("$match", bson.D{
			e(fieldJobID, jobID),
			e("$or", bson.A{
				bson.D{e(fieldDataType, finalDataType), e(fieldSuccess, true)},
				hardFailedExists(),
			}),
		})},
		{e("$group", bson.D{e("_id", "$"+fieldDocID)})},
		{e("$count", "n")},
	}
}

// stageCountsPipeline counts the records of every stage of a job by
// outcome. Each record falls in exactly one of succeeded, soft_failed and
// hard_failed. Soft failures are counted as "not a success and no hard
// failure", never by testing the type of the soft_failures array: a `$type`
// test of an array field looks at its elements, so comparing it with
// "missing" counts 0 soft failures for every stage.
func stageCountsPipeline(jobID string) mongo.Pipeline {
	notSuccess := bson.D{e("$ne", bson.A{"$" + fieldSuccess, true})}
	hardMissing := bson.D{e("$eq", bson.A{bson.D{e("$type", "$"+fieldHardFailure)}, "missing"})}
	hardPresent := bson.D{e("$ne", bson.A{bson.D{e("$type", "$"+fieldHardFailure)}, "missing"})}
	countIf := func(cond any) bson.D {
		return bson.D{e("$sum", bson.D{e("$cond", bson.A{cond, 1, 0})})}
	}
	return mongo.Pipeline{
		{e("$match", bson.D{e(fieldJobID, jobID)})},
		{e("$group", bson.D{
			e("_id", "$"+fieldDataType),
			e("total", bson.D{e("$sum", 1)}),
			e("succeeded", countIf(bson.D{e("$eq", bson.A{"$" + fieldSuccess, true})})),
			e("soft_failed", countIf(bson.D{e("$and", bson.A{notSuccess, hardMissing})})),
			e("hard_failed", countIf(bson.D{e("$and", bson.A{notSuccess, hardPresent})})),
		})},
		{e("$sort", bson.D{e("_id", 1)})},
	}
}

// failuresFilter selects the failed records of a job, at one stage or all
// ("").
func failuresFilter(jobID, dataType string) bson.D {
	f := bson.D{e(fieldJobID, jobID), e(fieldSuccess, false)}
	if dataType != "" {
		f = append(f, e(fieldDataType, dataType))
	}
	return f
}

// uniqueErrorsPipeline groups the failed records of a job by current error
// (the hard failure, else the last soft-failure reason) and data type.
func uniqueErrorsPipeline(jobID, dataType string) mongo.Pipeline {
	return mongo.Pipeline{
		{e("$match", failuresFilter(jobID, dataType))},
		{e("$project", bson.D{
			e("_id", 0),
			e(fieldDataType, 1),
			e(fieldTime, 1),
			e("error", bson.D{e("$ifNull", bson.A{
				"$" + fieldHardFailure,
				bson.D{e("$arrayElemAt", bson.A{"$" + fieldSoftFailures, -1})},
			})}),
		})},
		{e("$match", bson.D{e("error", bson.D{e("$type", "string")})})},
		{e("$group", bson.D{
			e("_id", bson.D{e("error", "$error"), e(fieldDataType, "$"+fieldDataType)}),
			e("count", bson.D{e("$sum", 1)}),
			e("first_seen", bson.D{e("$min", "$"+fieldTime)}),
			e("last_seen", bson.D{e("$max", "$"+fieldTime)}),
		})},
		{e("$sort", bson.D{e("count", -1), e("_id.error", 1), e("_id."+fieldDataType, 1)})},
	}
}

// docStatusFilter selects the records of one document. It names doc_pos (a
// number, or null for ids that are not decimal integers, which matches the
// missing field) so that the (job_id, doc_pos, doc_id, data_type) index
// serves it.
func docStatusFilter(jobID, docID string) bson.D {
	var pos any
	if n, ok := docPosition(docID); ok {
		pos = n
	}
	return bson.D{e(fieldJobID, jobID), e(fieldDocPos, pos), e(fieldDocID, docID)}
}

// jobFilter selects every record of a job.
func jobFilter(jobID string) bson.D { return bson.D{e(fieldJobID, jobID)} }

// finishOp stamps the records of a job that have no finish time yet (a
// stamp is never moved); the TTL index on finished_at counts from it.
func finishOp(jobID string, at time.Time) (filter, update bson.D) {
	filter = bson.D{e(fieldJobID, jobID), e(fieldFinishedAt, bson.D{e("$exists", false)})}
	update = bson.D{e("$set", bson.D{e(fieldFinishedAt, at.UTC().Truncate(time.Millisecond))})}
	return filter, update
}

// indexSpec is one index the store creates in Setup.
type indexSpec struct {
	Keys    bson.D
	Unique  bool
	Partial bson.D // partialFilterExpression; nil for none
}

// indexSpecs lists the indexes of the collection, without the TTL index.
// Names are the server's defaults, the names any driver gives an index
// created without one, so that an existing collection is taken over
// without conflicts.
func indexSpecs(scoping bool) []indexSpec {
	specs := []indexSpec{
		// One record per key; upserts rely on it.
		{Keys: bson.D{e(fieldJobID, 1), e(fieldDataType, 1), e(fieldDocID, 1)}, Unique: true},
		// Progress: CountCompletedDocs, GetStageCounts by stage.
		{Keys: bson.D{e(fieldJobID, 1), e(fieldDataType, 1), e(fieldSuccess, 1)}},
		// Failures: GetFailures, GetUniqueErrors.
		{Keys: bson.D{e(fieldJobID, 1), e(fieldSuccess, 1)}},
		// CountHardFailedDocs: distinct documents with a hard failure.
		{Keys: bson.D{e(fieldJobID, 1), e(fieldDocID, 1)}, Partial: hardFailedExists()},
		// ForEachRecord and GetDocStatus: document order.
		{Keys: bson.D{e(fieldJobID, 1), e(fieldDocPos, 1), e(fieldDocID, 1), e(fieldDataType, 1)}},
	}
	if scoping {
		specs = append(specs, indexSpec{Keys: bson.D{e(fieldScope, 1)}})
	}
	return specs
}

// indexModels turns index specs into the driver's index models.
func indexModels(specs []indexSpec) []mongo.IndexModel {
	models := make([]mongo.IndexModel, len(specs))
	for i, spec := range specs {
		o := options.Index()
		if spec.Unique {
			o.SetUnique(true)
		}
		if spec.Partial != nil {
			o.SetPartialFilterExpression(spec.Partial)
		}
		models[i] = mongo.IndexModel{Keys: spec.Keys, Options: o}
	}
	return models
}
