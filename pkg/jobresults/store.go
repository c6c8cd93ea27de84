package jobresults

import (
	"context"
	"time"

	"github.com/oxypipe/oxypipe/pkg/oxytype"
)

// Store is the job-results ledger API. Every write upserts the record of its key;
// reads return records and counts of one job.
type Store interface {
	// Setup prepares the store (indexes, retention). It is idempotent and is
	// called once before use.
	Setup(ctx context.Context) error
	// RecordSuccess records a success: the record's failure fields are
	// cleared.
	RecordSuccess(ctx context.Context, k Key, origin oxytype.Party) error
	// RecordSoftFailure records a soft (retryable) failure: reason is
	// appended to the record's soft failures, retryCount replaces its retry
	// count and any hard failure is cleared.
	RecordSoftFailure(ctx context.Context, k Key, origin, consumer oxytype.Party, retryCount int, reason string) error
	// RecordHardFailure records a hard (final) failure with its error text:
	// the soft-failure fields are cleared.
	RecordHardFailure(ctx context.Context, k Key, origin, consumer oxytype.Party, err string) error
	// CountCompletedDocs counts the documents of a job whose record at
	// finalDataType is a success.
	CountCompletedDocs(ctx context.Context, jobID, finalDataType string) (int, error)
	// CountHardFailedDocs counts the distinct documents of a job with a hard
	// failure at any stage.
	CountHardFailedDocs(ctx context.Context, jobID string) (int, error)
	// GetStageCounts returns the progress of every stage of a job, ordered
	// by data type.
	GetStageCounts(ctx context.Context, jobID string) ([]StageCount, error)
	// GetDocStatus returns the records of one document at every stage,
	// ordered by data type.
	GetDocStatus(ctx context.Context, jobID, docID string) ([]Record, error)
	// GetFailures returns the failed records of a job at dataType ("" =
	// every stage), in document order (see RecordReader.ForEachRecord).
	GetFailures(ctx context.Context, jobID, dataType string) ([]Record, error)
	// GetUniqueErrors groups the failed records of a job at dataType ("" =
	// every stage) by current error and data type, ordered by count
	// descending, then error, then data type.
	GetUniqueErrors(ctx context.Context, jobID, dataType string) ([]UniqueError, error)
}

// BatchWriter writes batches of versioned entries: the status worker's path,
// where events for one record can arrive twice or out of order.
type BatchWriter interface {
	// Apply writes entries in order. Each applies only if its Version is
	// greater than the stored record's version (Version 0 always applies,
	// like the Store methods); a stale entry is skipped, not an error.
	// Applied counts the entries that applied. Invalid input in any entry
	// rejects the whole batch before anything is written. On a backend
	// error, the entries before the failure may have applied: retrying the
	// batch is safe for versioned entries (those that applied are now
	// stale), not for unversioned ones.
	Apply(ctx context.Context, entries []Entry) (applied int, err error)
}

// RecordReader reads a job the way the run log and the completion check
// need.
type RecordReader interface {
	// ForEachRecord calls fn with every record of a job in document order:
	// documents with decimal integer ids by numeric value, after the others
	// (ordered by id), and the records of one document by data type. The
	// records are streamed, not loaded at once. An error from fn stops the
	// iteration and is returned as is.
	ForEachRecord(ctx context.Context, jobID string, fn func(Record) error) error
	// CountResolvedDocs counts the distinct documents of a job that
	// succeeded at finalDataType or hard-failed at some stage; a document
	// that did both counts once (unlike CountCompletedDocs +
	// CountHardFailedDocs). The completion check uses it to confirm a run is
	// finished once the two cheaper counts say it may be.
	CountResolvedDocs(ctx context.Context, jobID, finalDataType string) (int, error)
}

// Finisher marks a job finished, which is what retention counts from.
//
// A TTL counted from a record's last write would remove the records of a
// job still open (a long run, or one paused and resumed later), and the job
// could then never complete; so the TTL counts from the job's end. Records
// of a job never marked finished are never removed.
type Finisher interface {
	// FinishJob stamps every record of the job that has no finish time yet
	// with at (see Record.FinishedAt); a stamp is never moved. Records
	// written afterwards are not stamped until FinishJob runs again, so a
	// caller calls it again when late writes may have happened. A job
	// without records is not an error.
	FinishJob(ctx context.Context, jobID string, at time.Time) error
}

// Ledger is everything a store offers: the Store API, versioned batch writes,
// the run-log reads and the finish mark. MemoryStore and MongoStore
// implement it.
type Ledger interface {
	Store
	BatchWriter
	RecordReader
	Finisher
}
