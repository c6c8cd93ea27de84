package wsa_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/oxypipe/oxypipe/pkg/wsa"
)

// resultsJSON is a done job's body, written with odd spacing and key order
// so that any re-encoding would show.
const resultsJSON = `{"results":[{"content":"<!doctype html>\u003chtml\u003e…","type":"raw","page":1,
  "url":"https://sandbox.oxylabs.io/","job_id":"7508980357849459714","status_code":200,
  "is_render_forced":false,"created_at":"2026-09-24 20:07:07","updated_at":"2026-09-24 20:07:09"},
 {"type":"parsed","page":1,"status_code":200,"content":{"parse_status_code":12000,"title":"Shop","price":1.50},"parser_type":"x"},
 {"type":"xhr","page":"2","status_code":"200","content":[{"url":"https://a.io/api"}]},
 {"type":"png","page":1,"status_code":200,"content":"iVBORw0KGgo="}],
 "job":{"id":"7508980357849459714","status":"done","source":"universal","created_at":"2026-09-24 20:07:07","updated_at":"2026-09-24 20:07:09","statuses":[{"event":"GCS_STORAGE_UPLOAD","code":13000,"message":"Upload Successful"}]}}`

func TestResultsStreamsTheBodyUnchanged(t *testing.T) {
	t.Parallel()
	c, rec := setup(t, always(answer{status: 200, body: resultsJSON, header: map[string]string{
		"x-oxylabs-job-status": "done", "x-oxylabs-job-id": "7508980357849459714", "Content-Type": "application/json"}}))
	rr, err := c.Results(context.Background(), "7508980357849459714", "raw", "parsed", "xhr", "png")
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(rr.Body)
	if err != nil {
		t.Fatal(err)
	}
	if err := rr.Body.Close(); err != nil {
		t.Fatal(err)
	}
	if string(body) != resultsJSON {
		t.Fatal("the body changed on its way through")
	}
	if rr.StatusCode != 200 || rr.JobStatus != wsa.JobDone || rr.JobID != "7508980357849459714" || rr.ContentLength != int64(len(resultsJSON)) {
		t.Fatalf("response = %+v", rr)
	}
	r := rec.all()[0]
	if r.Method != "GET" || r.Path != "/v1/queries/7508980357849459714/results" || r.RawQuery != "type=raw,parsed,xhr,png" {
		t.Fatalf("request = %s %s?%s", r.Method, r.Path, r.RawQuery)
	}
	if r.Header.Get("Content-Type") != "" || r.Header.Get("Authorization") == "" {
		t.Fatalf("GET headers = %v", r.Header)
	}
}

func TestResultsDecoded(t *testing.T) {
	t.Parallel()
	c, rec := setup(t, always(answer{status: 200, body: resultsJSON}))
	res, err := c.ResultsDecoded(context.Background(), "7508980357849459714")
	if err != nil {
		t.Fatal(err)
	}
	if rec.all()[0].RawQuery != "" {
		t.Fatalf("query = %q without types", rec.all()[0].RawQuery)
	}
	if len(res.Results) != 4 || res.Job.Status != wsa.JobDone {
		t.Fatalf("decoded %d results, job %+v", len(res.Results), res.Job)
	}
	raw, parsed, xhr, png := res.Results[0], res.Results[1], res.Results[2], res.Results[3]
	if text, err := raw.Text(); err != nil || text != "<!doctype html><html>…" || raw.Kind() != wsa.ContentString || raw.Page != 1 || raw.StatusCode != 200 || raw.URL != "https://sandbox.oxylabs.io/" {
		t.Fatalf("raw = %+v, %q, %v", raw, text, err)
	}
	if _, err := raw.Object(); !errors.Is(err, wsa.ErrContentKind) {
		t.Fatalf("Object() of a string = %v", err)
	}
	if obj, err := parsed.Object(); err != nil || string(obj["price"]) != "1.50" || parsed.Kind() != wsa.ContentObject {
		t.Fatalf("parsed = %v, %v", obj, err)
	}
	if code, ok := parsed.ParseStatusCode(); !ok || code != 12000 {
		t.Fatalf("ParseStatusCode = %d, %v", code, ok)
	}
	if arr, err := xhr.Array(); err != nil || len(arr) != 1 || xhr.Page != 2 || xhr.StatusCode != 200 {
		t.Fatalf("xhr = %+v, %v", xhr, err)
	}
	if img, err := png.PNG(); err != nil || !bytes.Equal(img, []byte("\x89PNG\r\n\x1a\n")) {
		t.Fatalf("PNG() = %q, %v", img, err)
	}
	if up, ok := res.Job.Upload(); !ok || up.Code != wsa.UploadOK {
		t.Fatalf("Upload() = %+v, %v", up, ok)
	}
}

func TestResultsFaultedJob(t *testing.T) {
	t.Parallel()
	body := `{"results":[{"content":"","status_code":613,"page":1,"type":"raw"}],"job":{"id":"1","status":"faulted","statuses":[]}}`
	c, _ := setup(t, always(answer{status: 200, body: body, header: map[string]string{"x-oxylabs-job-status": "faulted"}}))
	res, err := c.ResultsDecoded(context.Background(), "1")
	if err != nil {
		t.Fatal(err)
	}
	if res.Job.Status != wsa.JobFaulted || res.Results[0].StatusCode != 613 || !res.Results[0].Empty() {
		t.Fatalf("faulted results = %+v", res)
	}
}

func TestResultsNoContent(t *testing.T) {
	t.Parallel()
	cases := []struct {
		header   string
		pending  bool
		expired  bool
		text     string
		hasValue bool
	}{
		{"pending", true, false, "job 42: no results yet: the job is pending", true},
		{"done", false, true, "job 42: no results: the job is done and its results are gone", true},
		{"faulted", false, true, "job 42: no results: the job is faulted and its results are gone", true},
		{"", false, false, "job 42: no results, and no job status", false},
	}
	for _, tc := range cases {
		t.Run("status "+tc.header, func(t *testing.T) {
			t.Parallel()
			h := map[string]string{}
			if tc.hasValue {
				h["x-oxylabs-job-status"] = tc.header
			}
			c, _ := setup(t, always(answer{status: 204, header: h}))
			for _, call := range []func() error{
				func() error { _, err := c.Results(context.Background(), "42"); return err },
				func() error { _, err := c.ResultsDecoded(context.Background(), "42"); return err },
			} {
				err := call()
				var nc *wsa.NoContentError
				if !errors.As(err, &nc) || nc.JobStatus != wsa.JobStatus(tc.header) || nc.JobID != "42" {
					t.Fatalf("err = %v, want a *NoContentError", err)
				}
				if !errors.Is(err, wsa.ErrNoContent) || errors.Is(err, wsa.ErrPending) != tc.pending || errors.Is(err, wsa.ErrExpired) != tc.expired {
					t.Fatalf("errors.Is mismatch for %v", err)
				}
				if err.Error() != tc.text || wsa.Classify(err) != wsa.None {
					t.Fatalf("err = %q (%v)", err, wsa.Classify(err))
				}
			}
		})
	}
}

func TestResultsAndStatusNotFound(t *testing.T) {
	t.Parallel()
	c, _ := setup(t, always(answer{status: 404, body: `{"message":"Query not found.","instance":"/v1/queries/1/results","timestamp":"2026-09-24T20:02:06.41Z","trace_id":"tr"}`}))
	_, err := c.Results(context.Background(), "1")
	if err == nil || err.Error() != "404 Query not found." || !errors.Is(err, wsa.ErrNotFound) || wsa.Classify(err) != wsa.Stop {
		t.Fatalf("Results: %v", err)
	}
	_, err = c.Status(context.Background(), "1")
	if err == nil || err.Error() != "404 Query not found." || !errors.Is(err, wsa.ErrNotFound) {
		t.Fatalf("Status: %v", err)
	}
	if _, err := c.Status(context.Background(), ""); err == nil {
		t.Fatal("Status accepted an empty id")
	}
}

func TestStatus(t *testing.T) {
	t.Parallel()
	done := `{"id":"7508980357849459714","status":"done","source":"universal","created_at":"2026-09-24 20:07:07","updated_at":"2026-09-24 20:07:09","statuses":[],"future_field":{"a":1}}`
	c, rec := setup(t, always(answer{status: 200, body: done}))
	job, err := c.Status(context.Background(), "7508980357849459714")
	if err != nil {
		t.Fatal(err)
	}
	if job.Status != wsa.JobDone || !job.Status.Final() || job.UpdatedAt.Sub(job.CreatedAt).Seconds() != 2 {
		t.Fatalf("job = %+v", job)
	}
	if b, _ := job.MarshalJSON(); string(b) != done {
		t.Fatalf("MarshalJSON = %s", b)
	}
	if p := rec.all()[0].Path; p != "/v1/queries/7508980357849459714" {
		t.Fatalf("path = %s", p)
	}
}

// TestResultsStreamsWithoutBuffering proves that Results returns while the
// server is still writing: the server sends 1 MiB, then waits for the test
// to have read it before sending the other 19 MiB.
func TestResultsStreamsWithoutBuffering(t *testing.T) {
	t.Parallel()
	const first, total = 1 << 20, 20 << 20
	chunk := bytes.Repeat([]byte("0123456789abcdef"), 4096) // 64 KiB
	readFirst := make(chan struct{})
	sum := sha256.New()
	for n := 0; n < total; n += len(chunk) {
		sum.Write(chunk)
	}
	want := sum.Sum(nil)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(200)
		for n := 0; n < total; n += len(chunk) {
			if n == first {
				w.(http.Flusher).Flush()
				<-readFirst
			}
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	}))
	t.Cleanup(srv.Close)
	c := newClient(t, srv.URL)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second) // a buffering client would stall here
	defer cancel()
	rr, err := c.Results(ctx, "1")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = rr.Body.Close() }()
	if _, err := io.ReadFull(rr.Body, make([]byte, first)); err != nil {
		t.Fatal(err)
	}
	close(readFirst)
	got := sha256.New()
	got.Write(bytes.Repeat([]byte("0123456789abcdef"), first/16))
	n, err := io.Copy(got, rr.Body)
	if err != nil || n != total-first || !bytes.Equal(got.Sum(nil), want) {
		t.Fatalf("copied %d bytes, err %v, hash match %v", n, err, bytes.Equal(got.Sum(nil), want))
	}
}
