package payload_test

import (
	"errors"
	"fmt"
	"reflect"
	"testing"

	"github.com/oxypipe/oxypipe/pkg/payload"
)

func TestBatchKey(t *testing.T) {
	t.Parallel()
	a := mustParse(t, `{"source":"universal","url":"https://a.io","parse":true}`)
	b := mustParse(t, `{"parse":true,"url":"https://b.io","source":"universal"}`)
	c := mustParse(t, `{"source":"universal","url":"https://a.io","parse":false}`)
	q := mustParse(t, `{"source":"universal","query":"https://a.io","parse":true}`)
	if a.BatchKey() == "" || a.BatchKey() != b.BatchKey() {
		t.Fatal("payloads differing only in url and key order do not share a key")
	}
	if a.BatchKey() == c.BatchKey() {
		t.Fatal("payloads differing in parse share a key")
	}
	if a.BatchKey() == q.BatchKey() {
		t.Fatal("a url payload and a query payload share a key")
	}
	for _, s := range []string{
		`{"source":"walmart_product","product_id":"1"}`,
		`{"source":"universal"}`,
		`{"source":"universal","url":"a","query":"b"}`,
		`{"source":"universal","url":["a","b"]}`,
		`{"source":"universal","url":"a","parse":true,"parse":false}`,
	} {
		p := mustParse(t, s)
		if p.Batchable() || p.BatchKey() != "" {
			t.Errorf("%s is batchable", s)
		}
	}
	if !mustParse(t, `{"source":"chatgpt","prompt":"p"}`).Batchable() {
		t.Error("a prompt payload is not batchable")
	}
}

func TestBatchBody(t *testing.T) {
	t.Parallel()
	group := []payload.Payload{
		mustParse(t, `{"source":"universal","url":"https://a.io","context":[{"key":"http_method","value":"get"}]}`),
		mustParse(t, `{"context":[{"key":"http_method","value":"get"}],"url":"https://b.io/?x=1&y=2","source":"universal"}`),
		mustParse(t, `{"source":"universal","url":"https://a.io","context":[{"key":"http_method","value":"get"}]}`),
	}
	body, err := payload.BatchBody(group)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"source":"universal","url":["https://a.io","https://b.io/?x=1&y=2","https://a.io"],"context":[{"key":"http_method","value":"get"}]}`
	if string(body) != want {
		t.Fatalf("BatchBody = %s, want %s", body, want)
	}

	mixed := append(group[:1:1], mustParse(t, `{"source":"universal","url":"https://c.io","render":"html"}`))
	if _, err := payload.BatchBody(mixed); !errors.Is(err, payload.ErrNotBatchable) {
		t.Fatalf("BatchBody(mixed) = %v, want ErrNotBatchable", err)
	}
	if _, err := payload.BatchBody(nil); !errors.Is(err, payload.ErrNotBatchable) {
		t.Fatalf("BatchBody(nil) = %v", err)
	}
	big := make([]payload.Payload, payload.MaxBatch+1)
	for i := range big {
		big[i] = payload.New("universal", "url", fmt.Sprintf("https://a.io/%d", i))
	}
	if _, err := payload.BatchBody(big); !errors.Is(err, payload.ErrNotBatchable) {
		t.Fatalf("BatchBody(5001) = %v", err)
	}
	if _, err := payload.BatchBody(big[:payload.MaxBatch]); err != nil {
		t.Fatalf("BatchBody(5000) = %v", err)
	}
}

func TestBatchSize(t *testing.T) {
	t.Parallel()
	one := mustParse(t, `{"source":"google_search","query":"q"}`)
	three := mustParse(t, `{"source":"google_search","query":"q","pages":3}`)
	twenty := mustParse(t, `{"source":"google_search","query":"q","pages":20}`)
	cases := []struct {
		limit int
		group []payload.Payload
		want  int
	}{
		{50, []payload.Payload{one, one}, 50},
		{50, []payload.Payload{one, three}, 16},
		{13, []payload.Payload{twenty}, 1},
		{100000, []payload.Payload{one}, 5000},
		{0, []payload.Payload{three}, 5000},
	}
	for _, tc := range cases {
		if got := payload.BatchSize(tc.limit, tc.group); got != tc.want {
			t.Errorf("BatchSize(%d, %d payloads) = %d, want %d", tc.limit, len(tc.group), got, tc.want)
		}
	}
}

func TestGroupBatches(t *testing.T) {
	t.Parallel()
	ps := []payload.Payload{
		payload.New("universal", "url", "https://a.io"),
		payload.New("google_search", "query", "shoes"),
		payload.New("walmart_product", "product_id", "1"),
		payload.New("universal", "url", "https://b.io"),
		payload.New("google_search", "query", "hats"),
		payload.New("walmart_product", "product_id", "2"),
	}
	got := payload.GroupBatches(ps)
	want := [][]int{{0, 3}, {1, 4}, {2}, {5}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("GroupBatches = %v, want %v", got, want)
	}
}
