package emulator

import (
	"regexp"
	"testing"
	"time"
)

func TestStorage(t *testing.T) {
	t.Parallel()
	f := setup(t, Config{Rules: []Rule{
		{Pattern: regexp.MustCompile(`missing`), Outcome: Outcome{UploadCode: 13102}},
		{Pattern: regexp.MustCompile(`exists`), Outcome: Outcome{UploadCode: 10001}},
		{Pattern: regexp.MustCompile(`faulty`), Outcome: Outcome{Fault: true, UploadDelay: 500 * time.Millisecond}},
	}})
	t.Run("storage_url is resolved at submission and redacted", func(t *testing.T) {
		cases := []struct{ payload, want string }{
			{`{"source":"universal","url":"https://shop.com/a","storage_type":"gcs","storage_url":"bucket/run/"}`,
				"bucket/run/7500000000000000001.json"},
			{`{"source":"google_search","query":"shoes","storage_type":"s3","storage_url":"s3://b/{{ source }}/{{ query }}_{{ job_id }}.{{ extension }}"}`,
				"s3://b/google_search/shoes_7500000000000000002.json"},
			{`{"source":"universal","url":"https://shop.com/b","storage_type":"s3_compatible","storage_url":"https://KEY:SECRET@minio.local/bucket/{{ created_at }}"}`,
				"https://redacted:redacted@minio.local/bucket/{{ created_at }}/7500000000000000003.json"},
		}
		for _, c := range cases {
			if got := f.submit(c.payload)["storage_url"]; got != c.want {
				t.Errorf("storage_url = %v, want %v", got, c.want)
			}
		}
		r := f.do("POST", "/v1/queries", `{"source":"universal","url":"https://shop.com/","storage_type":"s3_compatible","storage_url":"https://minio.local/bucket"}`).expect(t, 400)
		if r.message(t) != "Parameter `storage_url` must contain a valid user info." {
			t.Fatalf("%s", r.body)
		}
	})

	t.Run("the upload entry appears later and leaves updated_at alone", func(t *testing.T) {
		ok := f.submit(`{"source":"universal","url":"https://shop.com/ok","storage_type":"gcs","storage_url":"b"}`)["id"].(string)
		missing := f.submit(`{"source":"universal","url":"https://shop.com/missing","storage_type":"gcs","storage_url":"nope"}`)["id"].(string)
		exists := f.submit(`{"source":"universal","url":"https://shop.com/exists","storage_type":"gcs","storage_url":"b"}`)["id"].(string)
		faulty := f.submit(`{"source":"universal","url":"https://shop.com/faulty","storage_type":"gcs","storage_url":"b"}`)["id"].(string)
		statuses := func(id string) ([]any, string) {
			job := f.do("GET", jobPath(id), "").expect(t, 200).object(t)
			return job["statuses"].([]any), job["updated_at"].(string)
		}
		f.clock.Advance(2 * time.Second)
		if s, _ := statuses(ok); len(s) != 0 {
			t.Fatal("no entry at the final status")
		}
		f.clock.Advance(500 * time.Millisecond)
		s, _ := statuses(faulty)
		if len(s) != 1 || s[0].(map[string]any)["code"] != 13000.0 {
			t.Fatalf("a faulted job uploads too: %v", s)
		}
		f.clock.Advance(2500 * time.Millisecond) // 3 s after done: every 1–3 s delay has passed
		for id, want := range map[string]float64{ok: 13000, missing: 13102} {
			s, updated := statuses(id)
			if len(s) != 1 {
				t.Fatalf("job %s: statuses %v", id, s)
			}
			e := s[0].(map[string]any)
			if e["event"] != "GCS_STORAGE_UPLOAD" || e["code"] != want || updated != "2026-01-01 00:00:02" {
				t.Fatalf("job %s: %v updated %s", id, e, updated)
			}
		}
		if s, _ := statuses(ok); s[0].(map[string]any)["message"] != "Upload Successful" {
			t.Fatalf("%v", s)
		}
		if s, _ := statuses(exists); len(s) != 0 {
			t.Fatal("10001 takes about 20 s")
		}
		f.clock.Advance(17 * time.Second)
		if s, _ := statuses(exists); len(s) != 1 || s[0].(map[string]any)["message"] != "Unexpected Exception" {
			t.Fatalf("%v", s)
		}
		f.do("GET", jobPath(ok)+"/results", "").expect(t, 200)
	})
}
