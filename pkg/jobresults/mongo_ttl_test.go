package jobresults

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

func spec(t *testing.T, d bson.D) bson.Raw {
	t.Helper()
	b, err := bson.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestPlanTTL(t *testing.T) {
	t.Parallel()
	idIndex := bson.D{{Key: "v", Value: 2}, {Key: "key", Value: bson.D{{Key: "_id", Value: 1}}}, {Key: "name", Value: "_id_"}}
	unique := bson.D{{Key: "v", Value: 2}, {Key: "key", Value: bson.D{{Key: "job_id", Value: 1}, {Key: "data_type", Value: 1}, {Key: "doc_id", Value: 1}}},
		{Key: "name", Value: "job_id_1_data_type_1_doc_id_1"}, {Key: "unique", Value: true}}
	finIndex := func(name string, extra ...bson.E) bson.D {
		return append(bson.D{{Key: "v", Value: 2}, {Key: "key", Value: bson.D{{Key: "finished_at", Value: 1}}}, {Key: "name", Value: name}}, extra...)
	}
	timeIndex := func(name string, extra ...bson.E) bson.D {
		return append(bson.D{{Key: "v", Value: 2}, {Key: "key", Value: bson.D{{Key: "time", Value: 1}}}, {Key: "name", Value: name}}, extra...)
	}
	expire := func(n any) bson.E { return bson.E{Key: "expireAfterSeconds", Value: n} }
	for _, tc := range []struct {
		name     string
		existing []bson.D
		want     ttlPlan
	}{
		{"no index on finished_at: create one", []bson.D{idIndex, unique}, ttlPlan{Action: ttlCreate}},
		{"a TTL on the record time is not the TTL index", []bson.D{timeIndex("time_1", expire(int32(3600)))}, ttlPlan{Action: ttlCreate}},
		{"the same TTL is kept", []bson.D{idIndex, finIndex("finished_at_1", expire(int32(3600)))}, ttlPlan{Action: ttlKeep, Index: "finished_at_1"}},
		{"the same TTL under another name is kept", []bson.D{finIndex("retention", expire(int64(3600)))}, ttlPlan{Action: ttlKeep, Index: "retention"}},
		{"the same TTL stored as a double is kept", []bson.D{finIndex("finished_at_1", expire(3600.0))}, ttlPlan{Action: ttlKeep, Index: "finished_at_1"}},
		{"another TTL is changed in place", []bson.D{finIndex("finished_at_1", expire(int32(60)))}, ttlPlan{Action: ttlCollMod, Index: "finished_at_1"}},
		{"a plain index on finished_at is replaced", []bson.D{finIndex("finished_at_1")}, ttlPlan{Action: ttlReplace, Index: "finished_at_1"}},
		{"a TTL index with other options is replaced", []bson.D{finIndex("t", expire(int32(3600)), bson.E{Key: "sparse", Value: true})}, ttlPlan{Action: ttlReplace, Index: "t"}},
		{"an index on finished_at descending is not the TTL index", []bson.D{{{Key: "v", Value: 2}, {Key: "key", Value: bson.D{{Key: "finished_at", Value: -1}}}, {Key: "name", Value: "finished_at_-1"}}}, ttlPlan{Action: ttlCreate}},
		{"a compound index starting with finished_at is not the TTL index", []bson.D{{{Key: "v", Value: 2}, {Key: "key", Value: bson.D{{Key: "finished_at", Value: 1}, {Key: "job_id", Value: 1}}}, {Key: "name", Value: "c"}}}, ttlPlan{Action: ttlCreate}},
		{"an exact match wins over an earlier candidate", []bson.D{finIndex("old", expire(int32(60)), bson.E{Key: "partialFilterExpression", Value: bson.D{{Key: "success", Value: true}}}), finIndex("exact", expire(int32(3600)))}, ttlPlan{Action: ttlKeep, Index: "exact"}},
		{"the ns field of old servers is not an option", []bson.D{finIndex("finished_at_1", expire(int32(3600)), bson.E{Key: "ns", Value: "db.job_results"})}, ttlPlan{Action: ttlKeep, Index: "finished_at_1"}},
	} {
		var raws []bson.Raw
		for _, d := range tc.existing {
			raws = append(raws, spec(t, d))
		}
		if got := planTTL(raws, 3600); got != tc.want {
			t.Errorf("%s: plan = %+v, want %+v", tc.name, got, tc.want)
		}
	}
}

// An earlier version's TTL index on the record time removes the records of
// open jobs; Setup drops it (and only TTL indexes on exactly {time: 1}).
func TestRecordTimeTTLIsFoundToBeDropped(t *testing.T) {
	t.Parallel()
	index := func(name string, key bson.D, extra ...bson.E) bson.Raw {
		return spec(t, append(bson.D{{Key: "v", Value: 2}, {Key: "key", Value: key}, {Key: "name", Value: name}}, extra...))
	}
	expire := bson.E{Key: "expireAfterSeconds", Value: int32(3600)}
	got := recordTimeTTL([]bson.Raw{
		index("time_1", bson.D{{Key: "time", Value: 1}}, expire),
		index("retention", bson.D{{Key: "time", Value: 1}}, bson.E{Key: "expireAfterSeconds", Value: 60.0}),
		index("plain", bson.D{{Key: "time", Value: 1}}),
		index("finished_at_1", bson.D{{Key: "finished_at", Value: 1}}, expire),
		index("c", bson.D{{Key: "time", Value: 1}, {Key: "job_id", Value: 1}}, expire),
	})
	if !equalStrings(got, []string{"time_1", "retention"}) {
		t.Fatalf("record-time TTL indexes = %q, want time_1 and retention", got)
	}
}

func TestFinishOp(t *testing.T) {
	t.Parallel()
	filter, update := finishOp("job-1", time.Date(2026, 9, 29, 17, 4, 12, 345_678_000, time.FixedZone("x", 3600)))
	assertJSON(t, "filter", filter, `{"job_id":"job-1","finished_at":{"$exists":false}}`)
	assertJSON(t, "update", update, `{"$set":{"finished_at":{"$date":"2026-09-29T16:04:12.345Z"}}}`)
}

func TestTTLCommands(t *testing.T) {
	t.Parallel()
	assertJSON(t, "collMod", collModCommand("job_results", "finished_at_1", 86400),
		`{"collMod":"job_results","index":{"name":"finished_at_1","expireAfterSeconds":86400}}`)
	m := ttlIndexModel(86400)
	assertJSON(t, "TTL index keys", m.Keys, `{"finished_at":1}`)
	var o options.IndexOptions
	for _, set := range m.Options.List() {
		if err := set(&o); err != nil {
			t.Fatal(err)
		}
	}
	if o.Name == nil || *o.Name != "finished_at_1" || o.ExpireAfterSeconds == nil || *o.ExpireAfterSeconds != 86400 || o.Unique != nil || o.PartialFilterExpression != nil {
		t.Fatalf("TTL index options = %+v, want name finished_at_1 and expireAfterSeconds 86400 only", o)
	}
}

func TestIndexModels(t *testing.T) {
	t.Parallel()
	models := indexModels(indexSpecs(false))
	var got []string
	for _, m := range models {
		var o options.IndexOptions
		for _, set := range m.Options.List() {
			if err := set(&o); err != nil {
				t.Fatal(err)
			}
		}
		s := extJSON(t, m.Keys)
		if o.Unique != nil {
			s += fmt.Sprintf(" unique=%v", *o.Unique)
		}
		if o.PartialFilterExpression != nil {
			s += " partial=" + extJSON(t, o.PartialFilterExpression)
		}
		if o.Name != nil || o.ExpireAfterSeconds != nil {
			s += " unexpected name or TTL"
		}
		got = append(got, s)
	}
	want := []string{
		`{"job_id":1,"data_type":1,"doc_id":1} unique=true`,
		`{"job_id":1,"data_type":1,"success":1}`,
		`{"job_id":1,"success":1}`,
		`{"job_id":1,"doc_id":1} partial={"hard_failure":{"$exists":true}}`,
		`{"job_id":1,"doc_pos":1,"doc_id":1,"data_type":1}`,
	}
	if !equalStrings(got, want) {
		t.Fatalf("index models:\n got: %q\nwant: %q", got, want)
	}
}

func TestIsIndexNotFound(t *testing.T) {
	t.Parallel()
	if !isIndexNotFound(fmt.Errorf("drop: %w", mongo.CommandError{Code: 27, Name: "IndexNotFound"})) {
		t.Error("code 27 must be IndexNotFound")
	}
	if isIndexNotFound(mongo.CommandError{Code: 85}) || isIndexNotFound(errors.New("27")) {
		t.Error("only code 27 is IndexNotFound")
	}
}
