package jobresults

import (
	"testing"
	"time"

	"github.com/oxypipe/oxypipe/pkg/oxytype"
	"go.mongodb.org/mongo-driver/v2/bson"
)

// These tests pin the exact documents the Mongo store sends, as relaxed
// extended JSON, without a server.

func extJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := bson.MarshalExtJSON(v, false, false)
	if err != nil {
		t.Fatalf("MarshalExtJSON: %v", err)
	}
	return string(b)
}

func assertJSON(t *testing.T, what string, v any, want string) {
	t.Helper()
	if got := extJSON(t, v); got != want {
		t.Errorf("%s:\n got: %s\nwant: %s", what, got, want)
	}
}

var buildNow = time.Date(2026, 9, 29, 17, 4, 12, 345_000_000, time.UTC)

func mustPrepare(t *testing.T, en Entry, scope string) *prepared {
	t.Helper()
	p, err := prepare(en, scope, buildNow)
	if err != nil {
		t.Fatalf("prepare: %v", err)
	}
	return &p
}

func TestWriteOpSeedMethods(t *testing.T) {
	t.Parallel()
	origin, consumer := oxytype.Party{Type: "poller", Name: "p-1"}, oxytype.Party{Type: "writer", Name: "w-1"}
	for _, tc := range []struct {
		name        string
		entry       Entry
		scope       string
		filter, upd string
	}{
		{
			name:   "a success sets success and origin and unsets every failure field",
			entry:  Entry{Key: Key{"job-1", "done", "42"}, Outcome: oxytype.Success, Origin: origin},
			filter: `{"job_id":"job-1","data_type":"done","doc_id":"42"}`,
			upd: `{"$set":{"time":{"$date":"2026-09-29T17:04:12.345Z"},"success":true,"origin_type":"poller","origin_name":"p-1"},` +
				`"$unset":{"retry_count":"","soft_failures":"","hard_failure":"","consumer_type":"","consumer_name":"","state":"","error":""},` +
				`"$setOnInsert":{"doc_pos":42}}`,
		},
		{
			name:   "a soft failure pushes its reason, sets the retry count and unsets the hard failure",
			entry:  Entry{Key: Key{"job-1", "done", "42"}, Outcome: oxytype.SoftFailure, Origin: origin, Consumer: consumer, RetryCount: 2, Reason: "503"},
			filter: `{"job_id":"job-1","data_type":"done","doc_id":"42"}`,
			upd: `{"$set":{"time":{"$date":"2026-09-29T17:04:12.345Z"},"success":false,"origin_type":"poller","origin_name":"p-1","consumer_type":"writer","consumer_name":"w-1","retry_count":2},` +
				`"$unset":{"hard_failure":"","state":"","error":""},"$push":{"soft_failures":"503"},"$setOnInsert":{"doc_pos":42}}`,
		},
		{
			name:   "a hard failure sets its error and unsets the soft-failure fields; a non-numeric doc id has no doc_pos",
			entry:  Entry{Key: Key{"job-1", "done", "doc-a"}, Outcome: oxytype.HardFailure, Origin: origin, Consumer: consumer, Reason: "faulted"},
			filter: `{"job_id":"job-1","data_type":"done","doc_id":"doc-a"}`,
			upd: `{"$set":{"time":{"$date":"2026-09-29T17:04:12.345Z"},"success":false,"origin_type":"poller","origin_name":"p-1","consumer_type":"writer","consumer_name":"w-1","hard_failure":"faulted"},` +
				`"$unset":{"retry_count":"","soft_failures":"","state":"","error":""}}`,
		},
		{
			name:   "with scoping the scope is set",
			entry:  Entry{Key: Key{"job-1", "done", "doc-a"}, Outcome: oxytype.Success, Origin: origin},
			scope:  "tenant-a",
			filter: `{"job_id":"job-1","data_type":"done","doc_id":"doc-a"}`,
			upd: `{"$set":{"time":{"$date":"2026-09-29T17:04:12.345Z"},"success":true,"origin_type":"poller","origin_name":"p-1","scope":"tenant-a"},` +
				`"$unset":{"retry_count":"","soft_failures":"","hard_failure":"","consumer_type":"","consumer_name":"","state":"","error":""}}`,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			filter, update := writeOp(mustPrepare(t, tc.entry, tc.scope))
			assertJSON(t, "filter", filter, tc.filter)
			assertJSON(t, "update", update, tc.upd)
		})
	}
}

func TestWriteOpVersionedEntryWithRunLogFields(t *testing.T) {
	t.Parallel()
	code := 403
	p := mustPrepare(t, Entry{
		Key: Key{"job-1", "written", "7"}, Outcome: oxytype.HardFailure,
		Origin: oxytype.Party{Type: "writer", Name: "w"}, Consumer: oxytype.Party{Type: "writer", Name: "w"}, Reason: "403 Forbidden", Version: 9,
		Facts: oxytype.Facts{State: oxytype.Unfetched, APIJobID: "7339524535381539841", Payload: []byte(`{"url":"https://u:p@h/"}`), Error: &oxytype.ErrorInfo{StatusCode: &code, Message: "Forbidden", TraceID: "t-1"}, Upload: &oxytype.Upload{Code: 13001, Message: "upload failed"}},
		Time:  time.Date(2026, 9, 29, 19, 0, 0, 999_999_999, time.FixedZone("CEST", 7200)),
	}, "")
	filter, update := writeOp(p)
	// Only a record with a lower (or no) version matches; otherwise the
	// upsert's insert fails on the unique key, which means "stale".
	assertJSON(t, "filter", filter, `{"job_id":"job-1","data_type":"written","doc_id":"7","version":{"$not":{"$gte":9}}}`)
	assertJSON(t, "update", update,
		`{"$set":{"time":{"$date":"2026-09-29T17:00:00.999Z"},"success":false,"origin_type":"writer","origin_name":"w",`+
			`"consumer_type":"writer","consumer_name":"w","hard_failure":"403 Forbidden","version":9,"state":"unfetched",`+
			`"error":{"status_code":403,"message":"Forbidden","trace_id":"t-1"},"api_job_id":"7339524535381539841",`+
			`"payload":"{\"url\":\"https://redacted:redacted@h/\"}","upload":{"code":13001,"message":"upload failed"}},`+
			`"$unset":{"retry_count":"","soft_failures":""},"$setOnInsert":{"doc_pos":7}}`)

	noCode := mustPrepare(t, Entry{Key: Key{"j", "d", "x"}, Outcome: oxytype.SoftFailure, Reason: "reset", Facts: oxytype.Facts{Error: &oxytype.ErrorInfo{Message: "reset"}}}, "")
	_, update = writeOp(noCode)
	set := update[0].Value.(bson.D)
	assertJSON(t, "an error without a status code stores null", bson.D{set[len(set)-1]},
		`{"error":{"status_code":null,"message":"reset","trace_id":""}}`)

	marked := mustPrepare(t, Entry{Key: Key{"j", "payload", "x"}, Outcome: oxytype.HardFailure, Reason: "500",
		Facts: oxytype.Facts{Error: &oxytype.ErrorInfo{Message: "Internal Server Error", MayHaveBilled: true}}}, "")
	_, update = writeOp(marked)
	set = update[0].Value.(bson.D)
	assertJSON(t, "the may-have-billed mark is stored with the error", bson.D{set[len(set)-1]},
		`{"error":{"status_code":null,"message":"Internal Server Error","trace_id":"","may_have_billed":true}}`)
}

func TestTimeIsStoredAsABSONDate(t *testing.T) {
	t.Parallel()
	// The origin once stored a string: its TTL index then expired nothing.
	_, update := writeOp(mustPrepare(t, Entry{Key: Key{"j", "d", "1"}, Outcome: oxytype.Success}, ""))
	raw, err := bson.Marshal(update[0].Value)
	if err != nil {
		t.Fatal(err)
	}
	if typ := bson.Raw(raw).Lookup("time").Type; typ != bson.TypeDateTime {
		t.Fatalf("time is stored as BSON %s, want a date", typ)
	}
}

func TestQueryDocuments(t *testing.T) {
	t.Parallel()
	pipeline := func(v any) bson.D { return bson.D{{Key: "pipeline", Value: v}} }
	assertJSON(t, "stage counts", pipeline(stageCountsPipeline("job-1")),
		`{"pipeline":[{"$match":{"job_id":"job-1"}},{"$group":{"_id":"$data_type","total":{"$sum":1},`+
			`"succeeded":{"$sum":{"$cond":[{"$eq":["$success",true]},1,0]}},`+
			`"soft_failed":{"$sum":{"$cond":[{"$and":[{"$ne":["$success",true]},{"$eq":[{"$type":"$hard_failure"},"missing"]}]},1,0]}},`+
			`"hard_failed":{"$sum":{"$cond":[{"$and":[{"$ne":["$success",true]},{"$ne":[{"$type":"$hard_failure"},"missing"]}]},1,0]}}}},`+
			`{"$sort":{"_id":1}}]}`)
	assertJSON(t, "unique errors at one stage", pipeline(uniqueErrorsPipeline("job-1", "done")),
		`{"pipeline":[{"$match":{"job_id":"job-1","success":false,"data_type":"done"}},`+
			`{"$project":{"_id":0,"data_type":1,"time":1,"error":{"$ifNull":["$hard_failure",{"$arrayElemAt":["$soft_failures",-1]}]}}},`+
			`{"$match":{"error":{"$type":"string"}}},`+
			`{"$group":{"_id":{"error":"$error","data_type":"$data_type"},"count":{"$sum":1},"first_seen":{"$min":"$time"},"last_seen":{"$max":"$time"}}},`+
			`{"$sort":{"count":-1,"_id.error":1,"_id.data_type":1}}]}`)
	assertJSON(t, "unique errors at every stage: no data_type filter", uniqueErrorsPipeline("job-1", "")[0],
		`{"$match":{"job_id":"job-1","success":false}}`)
	assertJSON(t, "hard-failed docs", pipeline(hardFailedDocsPipeline("job-1")),
		`{"pipeline":[{"$match":{"job_id":"job-1","hard_failure":{"$exists":true}}},{"$group":{"_id":"$doc_id"}},{"$count":"n"}]}`)
	assertJSON(t, "resolved docs", pipeline(resolvedDocsPipeline("job-1", "written")),
		`{"pipeline":[{"$match":{"job_id":"job-1","$or":[{"data_type":"written","success":true},{"hard_failure":{"$exists":true}}]}},`+
			`{"$group":{"_id":"$doc_id"}},{"$count":"n"}]}`)
	assertJSON(t, "completed", completedFilter("job-1", "written"), `{"job_id":"job-1","data_type":"written","success":true}`)
	assertJSON(t, "failures at every stage", failuresFilter("job-1", ""), `{"job_id":"job-1","success":false}`)
	assertJSON(t, "failures at one stage", failuresFilter("job-1", "done"), `{"job_id":"job-1","success":false,"data_type":"done"}`)
	assertJSON(t, "doc status of a numeric id", docStatusFilter("job-1", "12"), `{"job_id":"job-1","doc_pos":12,"doc_id":"12"}`)
	assertJSON(t, "doc status of another id", docStatusFilter("job-1", "x"), `{"job_id":"job-1","doc_pos":null,"doc_id":"x"}`)
	assertJSON(t, "job", jobFilter("job-1"), `{"job_id":"job-1"}`)
	assertJSON(t, "document order", docOrder(), `{"doc_pos":1,"doc_id":1,"data_type":1}`)
	assertJSON(t, "data type order", byDataType(), `{"data_type":1}`)
}

func TestIndexSpecs(t *testing.T) {
	t.Parallel()
	render := func(specs []indexSpec) []string {
		var out []string
		for _, s := range specs {
			r := extJSON(t, s.Keys)
			if s.Unique {
				r += " unique"
			}
			if s.Partial != nil {
				r += " partial " + extJSON(t, s.Partial)
			}
			out = append(out, r)
		}
		return out
	}
	want := []string{
		`{"job_id":1,"data_type":1,"doc_id":1} unique`,
		`{"job_id":1,"data_type":1,"success":1}`,
		`{"job_id":1,"success":1}`,
		`{"job_id":1,"doc_id":1} partial {"hard_failure":{"$exists":true}}`,
		`{"job_id":1,"doc_pos":1,"doc_id":1,"data_type":1}`,
	}
	if got := render(indexSpecs(false)); !equalStrings(got, want) {
		t.Errorf("indexes without scoping:\n got: %q\nwant: %q", got, want)
	}
	if got := render(indexSpecs(true)); !equalStrings(got, append(want, `{"scope":1}`)) {
		t.Errorf("indexes with scoping:\n got: %q", got)
	}
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
