package jobresults

import (
	"errors"
	"fmt"
	"testing"

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
	timeIndex := func(name string, extra ...bson.E) bson.D {
		return append(bson.D{{Key: "v", Value: 2}, {Key: "key", Value: bson.D{{Key: "time", Value: 1}}}, {Key: "name", Value: name}}, extra...)
	}
	expire := func(n any) bson.E { return bson.E{Key: "expireAfterSeconds", Value: n} }
	for _, tc := range []struct {
		name     string
		existing []bson.D
		want     ttlPlan
	}{
		{"no index on time: create one", []bson.D{idIndex, unique}, ttlPlan{Action: ttlCreate}},
		{"the same TTL is kept", []bson.D{idIndex, timeIndex("time_1", expire(int32(3600)))}, ttlPlan{Action: ttlKeep, Index: "time_1"}},
		{"the same TTL under another name is kept", []bson.D{timeIndex("retention", expire(int64(3600)))}, ttlPlan{Action: ttlKeep, Index: "retention"}},
		{"the same TTL stored as a double is kept", []bson.D{timeIndex("time_1", expire(3600.0))}, ttlPlan{Action: ttlKeep, Index: "time_1"}},
		{"another TTL is changed in place", []bson.D{timeIndex("time_1", expire(int32(60)))}, ttlPlan{Action: ttlCollMod, Index: "time_1"}},
		{"a plain index on time is replaced", []bson.D{timeIndex("time_1")}, ttlPlan{Action: ttlReplace, Index: "time_1"}},
		{"a TTL index with other options is replaced", []bson.D{timeIndex("t", expire(int32(3600)), bson.E{Key: "sparse", Value: true})}, ttlPlan{Action: ttlReplace, Index: "t"}},
		{"an index on time descending is not the TTL index", []bson.D{{{Key: "v", Value: 2}, {Key: "key", Value: bson.D{{Key: "time", Value: -1}}}, {Key: "name", Value: "time_-1"}}}, ttlPlan{Action: ttlCreate}},
		{"a compound index starting with time is not the TTL index", []bson.D{{{Key: "v", Value: 2}, {Key: "key", Value: bson.D{{Key: "time", Value: 1}, {Key: "job_id", Value: 1}}}, {Key: "name", Value: "c"}}}, ttlPlan{Action: ttlCreate}},
		{"an exact match wins over an earlier candidate", []bson.D{timeIndex("old", expire(int32(60)), bson.E{Key: "partialFilterExpression", Value: bson.D{{Key: "success", Value: true}}}), timeIndex("exact", expire(int32(3600)))}, ttlPlan{Action: ttlKeep, Index: "exact"}},
		{"the ns field of old servers is not an option", []bson.D{timeIndex("time_1", expire(int32(3600)), bson.E{Key: "ns", Value: "db.job_results"})}, ttlPlan{Action: ttlKeep, Index: "time_1"}},
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

func TestTTLCommands(t *testing.T) {
	t.Parallel()
	assertJSON(t, "collMod", collModCommand("job_results", "time_1", 86400),
		`{"collMod":"job_results","index":{"name":"time_1","expireAfterSeconds":86400}}`)
	m := ttlIndexModel(86400)
	assertJSON(t, "TTL index keys", m.Keys, `{"time":1}`)
	var o options.IndexOptions
	for _, set := range m.Options.List() {
		if err := set(&o); err != nil {
			t.Fatal(err)
		}
	}
	if o.Name == nil || *o.Name != "time_1" || o.ExpireAfterSeconds == nil || *o.ExpireAfterSeconds != 86400 || o.Unique != nil || o.PartialFilterExpression != nil {
		t.Fatalf("TTL index options = %+v, want name time_1 and expireAfterSeconds 86400 only", o)
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
