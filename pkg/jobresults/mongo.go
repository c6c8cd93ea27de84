package jobresults

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/oxypipe/oxypipe/pkg/oxytype"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// maxDuplicateKeyAttempts bounds the attempts of an unversioned upsert that
// keeps losing the insert race on the unique key (it cannot lose it twice
// unless records are being deleted meanwhile).
const maxDuplicateKeyAttempts = 3

// applyChunk is the number of entries Apply sends per bulk write, so that the
// number applied before a failure is known exactly.
const applyChunk = 1000

// MongoStore is the ledger in a MongoDB collection: one document per key,
// written by upserts on a unique index, counted by aggregation pipelines.
// Errors are *StoreError values; transient ones match ErrTransient. It is
// safe for concurrent use, by any number of processes.
type MongoStore struct {
	cfg  MongoConfig
	coll *mongo.Collection
}

var _ Ledger = (*MongoStore)(nil)

// NewMongoStore returns a store on cfg's collection. It does not contact the
// server: call Setup before use.
func NewMongoStore(client *mongo.Client, cfg MongoConfig) (*MongoStore, error) {
	if client == nil {
		return nil, fmt.Errorf("%w: nil MongoDB client", ErrInvalidConfig)
	}
	cfg = cfg.WithDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	return &MongoStore{cfg: cfg, coll: client.Database(cfg.Database).Collection(cfg.Collection)}, nil
}

// Name returns the store's name.
func (s *MongoStore) Name() string { return s.cfg.Name }

// Setup creates the indexes (unique key, progress, failures, hard-failed
// documents, document order, and scope when scoping is on) and applies the
// TTL rule to the index on finished_at (the job's end, see Finisher): a
// positive TTL keeps an identical TTL index, changes the expiry of a TTL
// index in place, or replaces another index on that field, and drops a TTL
// index on the record time (which earlier versions made, and which removes
// the records of open jobs); a zero TTL leaves every index alone. Setup is
// idempotent and may run concurrently in several processes.
func (s *MongoStore) Setup(ctx context.Context) error {
	if _, err := s.coll.Indexes().CreateMany(ctx, indexModels(indexSpecs(s.cfg.Scoping))); err != nil {
		return fail("Setup", err)
	}
	if s.cfg.TTL > 0 {
		return fail("Setup", s.ensureTTL(ctx, int64(s.cfg.TTL.Seconds())))
	}
	return nil
}

// RecordSuccess implements Store.
func (s *MongoStore) RecordSuccess(ctx context.Context, k Key, origin oxytype.Party) error {
	return s.writeOne(ctx, "RecordSuccess", Entry{Key: k, Outcome: oxytype.Success, Origin: origin})
}

// RecordSoftFailure implements Store.
func (s *MongoStore) RecordSoftFailure(ctx context.Context, k Key, origin, consumer oxytype.Party, retryCount int, reason string) error {
	return s.writeOne(ctx, "RecordSoftFailure", Entry{Key: k, Outcome: oxytype.SoftFailure, Origin: origin, Consumer: consumer, RetryCount: retryCount, Reason: reason})
}

// RecordHardFailure implements Store.
func (s *MongoStore) RecordHardFailure(ctx context.Context, k Key, origin, consumer oxytype.Party, err string) error {
	return s.writeOne(ctx, "RecordHardFailure", Entry{Key: k, Outcome: oxytype.HardFailure, Origin: origin, Consumer: consumer, Reason: err})
}

func (s *MongoStore) writeOne(ctx context.Context, op string, en Entry) error {
	var now time.Time
	p, err := s.prepare(ctx, en, &now)
	if err != nil {
		return err
	}
	_, err = s.upsert(ctx, op, &p, 0)
	return err
}

// prepare validates and normalises one entry; now is the write time for an
// entry without an event time, read from the clock when zero.
func (s *MongoStore) prepare(ctx context.Context, en Entry, now *time.Time) (prepared, error) {
	scope := ""
	if s.cfg.Scoping {
		var err error
		if scope, err = writeScope(ctx, en.Scope); err != nil {
			return prepared{}, err
		}
	}
	if en.Time.IsZero() && now.IsZero() {
		*now = s.cfg.Now()
	}
	return prepare(en, scope, *now)
}

// upsert writes one entry and reports whether it applied; see upsertLoop.
func (s *MongoStore) upsert(ctx context.Context, op string, p *prepared, dupsSeen int) (bool, error) {
	filter, update := writeOp(p)
	applied, err := upsertLoop(p.Version > 0, dupsSeen, func() error {
		_, err := s.coll.UpdateOne(ctx, filter, update, options.UpdateOne().SetUpsert(true))
		return err
	})
	return applied, fail(op, err)
}

// upsertLoop runs one upsert (do) until it applies, and reports whether it
// did. dupsSeen is the number of duplicate-key errors the entry has already
// met (in a bulk write). A duplicate-key error is either a lost insert race
// with a concurrent writer of the same new record (retry: the record now
// exists and the update matches it) or, for a versioned entry, a stored
// version at least as high: then the retry meets the error again, and the
// entry is stale and skipped without an error.
func upsertLoop(versioned bool, dupsSeen int, do func() error) (bool, error) {
	for {
		err := do()
		if err == nil {
			return true, nil
		}
		if !mongo.IsDuplicateKeyError(err) {
			return false, err
		}
		dupsSeen++
		if versioned && dupsSeen >= 2 {
			return false, nil
		}
		if dupsSeen >= maxDuplicateKeyAttempts {
			return false, err
		}
	}
}

// Apply implements BatchWriter with ordered bulk writes of conditional
// upserts; see applyOrdered.
func (s *MongoStore) Apply(ctx context.Context, entries []Entry) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	ps := make([]prepared, len(entries))
	models := make([]mongo.WriteModel, len(entries))
	var now time.Time // one clock reading for the batch
	for i, en := range entries {
		p, err := s.prepare(ctx, en, &now)
		if err != nil {
			return 0, err
		}
		ps[i] = p
		filter, update := writeOp(&ps[i])
		models[i] = mongo.NewUpdateOneModel().SetFilter(filter).SetUpdate(update).SetUpsert(true)
	}
	applied, err := applyOrdered(len(models),
		func(start, end int) error {
			_, err := s.coll.BulkWrite(ctx, models[start:end], options.BulkWrite().SetOrdered(true))
			return err
		},
		func(i int) (bool, error) {
			filter, update := writeOp(&ps[i])
			return upsertLoop(ps[i].Version > 0, 1, func() error {
				_, err := s.coll.UpdateOne(ctx, filter, update, options.UpdateOne().SetUpsert(true))
				return err
			})
		})
	return applied, fail("Apply", err)
}

// applyOrdered writes n entries with ordered bulk writes of at most
// applyChunk entries (bulk writes entries [start, end)), and returns how many
// applied. In an ordered bulk write that fails on entry i, the entries
// before i applied and none after ran. A duplicate-key failure is settled on
// its own by settle(i) (an insert race to retry, or a stale versioned entry
// to skip) and the writes resume after it; any other failure ends Apply.
func applyOrdered(n int, bulk func(start, end int) error, settle func(i int) (bool, error)) (int, error) {
	applied := 0
	for start := 0; start < n; {
		end := min(start+applyChunk, n)
		err := bulk(start, end)
		if err == nil {
			applied += end - start
			start = end
			continue
		}
		var bwe mongo.BulkWriteException
		if !errors.As(err, &bwe) || len(bwe.WriteErrors) == 0 {
			return applied, err
		}
		failed := start + bwe.WriteErrors[0].Index
		applied += failed - start
		if bwe.WriteConcernError != nil || !mongo.IsDuplicateKeyError(bwe.WriteErrors[0].WriteError) {
			return applied, err
		}
		ok, err := settle(failed)
		if err != nil {
			return applied, err
		}
		if ok {
			applied++
		}
		start = failed + 1
	}
	return applied, nil
}

// CountCompletedDocs implements Store.
func (s *MongoStore) CountCompletedDocs(ctx context.Context, jobID, finalDataType string) (int, error) {
	if err := readArgs(ctx, jobID, finalDataType, true); err != nil {
		return 0, err
	}
	n, err := s.coll.CountDocuments(ctx, completedFilter(jobID, finalDataType))
	if err != nil {
		return 0, fail("CountCompletedDocs", err)
	}
	return int(n), nil
}

// CountHardFailedDocs implements Store.
func (s *MongoStore) CountHardFailedDocs(ctx context.Context, jobID string) (int, error) {
	if err := readArgs(ctx, jobID, "", false); err != nil {
		return 0, err
	}
	return s.count(ctx, "CountHardFailedDocs", hardFailedDocsPipeline(jobID))
}

// CountResolvedDocs implements RecordReader.
func (s *MongoStore) CountResolvedDocs(ctx context.Context, jobID, finalDataType string) (int, error) {
	if err := readArgs(ctx, jobID, finalDataType, true); err != nil {
		return 0, err
	}
	return s.count(ctx, "CountResolvedDocs", resolvedDocsPipeline(jobID, finalDataType))
}

// count runs a pipeline ending in {$count: "n"}.
func (s *MongoStore) count(ctx context.Context, op string, pipeline mongo.Pipeline) (int, error) {
	var out []struct {
		N int `bson:"n"`
	}
	if err := s.aggregate(ctx, pipeline, &out); err != nil {
		return 0, fail(op, err)
	}
	if len(out) == 0 {
		return 0, nil
	}
	return out[0].N, nil
}

func (s *MongoStore) aggregate(ctx context.Context, pipeline mongo.Pipeline, out any) error {
	cur, err := s.coll.Aggregate(ctx, pipeline, options.Aggregate().SetAllowDiskUse(true))
	if err != nil {
		return err
	}
	return cur.All(ctx, out)
}

// GetStageCounts implements Store.
func (s *MongoStore) GetStageCounts(ctx context.Context, jobID string) ([]StageCount, error) {
	if err := readArgs(ctx, jobID, "", false); err != nil {
		return nil, err
	}
	var rows []struct {
		DataType   string `bson:"_id"`
		Total      int    `bson:"total"`
		Succeeded  int    `bson:"succeeded"`
		SoftFailed int    `bson:"soft_failed"`
		HardFailed int    `bson:"hard_failed"`
	}
	if err := s.aggregate(ctx, stageCountsPipeline(jobID), &rows); err != nil {
		return nil, fail("GetStageCounts", err)
	}
	out := make([]StageCount, len(rows))
	for i, r := range rows {
		out[i] = StageCount{DataType: r.DataType, Total: r.Total, Succeeded: r.Succeeded, SoftFailed: r.SoftFailed, HardFailed: r.HardFailed}
	}
	return out, nil
}

// GetDocStatus implements Store.
func (s *MongoStore) GetDocStatus(ctx context.Context, jobID, docID string) ([]Record, error) {
	if err := readArgs(ctx, jobID, "", false); err != nil {
		return nil, err
	}
	if err := validateDocID(docID); err != nil {
		return nil, err
	}
	return s.find(ctx, "GetDocStatus", docStatusFilter(jobID, docID), options.Find().SetSort(byDataType()))
}

// GetFailures implements Store.
func (s *MongoStore) GetFailures(ctx context.Context, jobID, dataType string) ([]Record, error) {
	if err := readArgs(ctx, jobID, dataType, false); err != nil {
		return nil, err
	}
	return s.find(ctx, "GetFailures", failuresFilter(jobID, dataType), options.Find().SetSort(docOrder()))
}

func (s *MongoStore) find(ctx context.Context, op string, filter any, opts *options.FindOptionsBuilder) ([]Record, error) {
	out := []Record{}
	err := s.stream(ctx, filter, opts, func(r Record) error {
		out = append(out, r)
		return nil
	})
	if err != nil {
		return nil, fail(op, err)
	}
	return out, nil
}

// stream decodes the documents of a find one at a time. Errors of fn are
// returned wrapped in fnError so that callers can tell them apart.
func (s *MongoStore) stream(ctx context.Context, filter any, opts *options.FindOptionsBuilder, fn func(Record) error) (err error) {
	cur, err := s.coll.Find(ctx, filter, opts)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := cur.Close(context.WithoutCancel(ctx)); err == nil && cerr != nil {
			err = cerr
		}
	}()
	for cur.Next(ctx) {
		var m mongoRecord
		if err := cur.Decode(&m); err != nil {
			return err
		}
		if err := fn(m.toRecord()); err != nil {
			return fnError{err}
		}
	}
	return cur.Err()
}

// fnError carries an error returned by a ForEachRecord callback.
type fnError struct{ err error }

func (f fnError) Error() string { return f.err.Error() }
func (f fnError) Unwrap() error { return f.err }

// ForEachRecord implements RecordReader with one cursor in document order,
// served by the (job_id, doc_pos, doc_id, data_type) index.
func (s *MongoStore) ForEachRecord(ctx context.Context, jobID string, fn func(Record) error) error {
	if err := readArgs(ctx, jobID, "", false); err != nil {
		return err
	}
	err := s.stream(ctx, jobFilter(jobID), options.Find().SetSort(docOrder()), fn)
	var fe fnError
	if errors.As(err, &fe) {
		return fe.err
	}
	return fail("ForEachRecord", err)
}

// FinishJob implements Finisher with one update of the job's unstamped
// records, served by the indexes that lead with job_id. With a TTL, the
// server removes each stamped record TTL after its stamp (its TTL monitor
// runs about once a minute).
func (s *MongoStore) FinishJob(ctx context.Context, jobID string, at time.Time) error {
	if err := finishArgs(ctx, jobID, at); err != nil {
		return err
	}
	filter, update := finishOp(jobID, at)
	_, err := s.coll.UpdateMany(ctx, filter, update)
	return fail("FinishJob", err)
}

// GetUniqueErrors implements Store.
func (s *MongoStore) GetUniqueErrors(ctx context.Context, jobID, dataType string) ([]UniqueError, error) {
	if err := readArgs(ctx, jobID, dataType, false); err != nil {
		return nil, err
	}
	var rows []struct {
		ID struct {
			Error    string `bson:"error"`
			DataType string `bson:"data_type"`
		} `bson:"_id"`
		Count     int       `bson:"count"`
		FirstSeen time.Time `bson:"first_seen"`
		LastSeen  time.Time `bson:"last_seen"`
	}
	if err := s.aggregate(ctx, uniqueErrorsPipeline(jobID, dataType), &rows); err != nil {
		return nil, fail("GetUniqueErrors", err)
	}
	out := make([]UniqueError, len(rows))
	for i, r := range rows {
		out[i] = UniqueError{Error: r.ID.Error, DataType: r.ID.DataType, Count: r.Count,
			FirstSeen: r.FirstSeen.UTC(), LastSeen: r.LastSeen.UTC()}
	}
	return out, nil
}
