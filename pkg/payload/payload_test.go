package payload_test

import (
	"encoding/json"
	"testing"

	"github.com/oxypipe/oxypipe/pkg/payload"
)

func mustParse(t testing.TB, s string) payload.Payload {
	t.Helper()
	p, err := payload.Parse([]byte(s), 1)
	if err != nil {
		t.Fatalf("Parse(%s): %v", s, err)
	}
	return p
}

func TestAccessors(t *testing.T) {
	t.Parallel()
	p := mustParse(t, `{"source":"google_search","geo":"x","query":"adidas","pages":"3","render":"html"}`)
	if p.Source() != "google_search" {
		t.Fatalf("Source() = %q", p.Source())
	}
	if k, v := p.Input(); k != "query" || v != "adidas" {
		t.Fatalf("Input() = %q, %q", k, v)
	}
	if p.Pages() != 3 {
		t.Fatalf("Pages() = %d, want 3 from a numeric string", p.Pages())
	}
	if !p.Rendered() {
		t.Fatal("Rendered() = false with render:html")
	}
	if got := p.Keys(); len(got) != 5 || got[1] != "geo" {
		t.Fatalf("Keys() = %v", got)
	}
}

func TestPagesAndRenderedDefaults(t *testing.T) {
	t.Parallel()
	cases := []struct {
		in       string
		pages    int
		rendered bool
	}{
		{`{"source":"universal","url":"https://a.io"}`, 1, false},
		{`{"source":"universal","url":"https://a.io","pages":5}`, 5, false},
		{`{"source":"universal","url":"https://a.io","pages":0}`, 1, false},
		{`{"source":"universal","url":"https://a.io","pages":null,"render":""}`, 1, false},
		{`{"source":"universal","url":"https://a.io","render":null,"xhr":true}`, 1, true},
		{`{"source":"universal","url":"https://a.io","xhr":"true"}`, 1, true},
		{`{"source":"chatgpt","prompt":"hi"}`, 1, true},
		{`{"source":"universal","url":"https://a.io","render":"png"}`, 1, true},
	}
	for _, tc := range cases {
		p := mustParse(t, tc.in)
		if p.Pages() != tc.pages || p.Rendered() != tc.rendered {
			t.Errorf("%s: Pages()=%d Rendered()=%v, want %d %v", tc.in, p.Pages(), p.Rendered(), tc.pages, tc.rendered)
		}
	}
}

func TestSetKeepsPositionAndCopiesAreIndependent(t *testing.T) {
	t.Parallel()
	p := mustParse(t, `{"source":"universal","url":"https://a.io","parse":false}`)
	q := p
	if err := q.Set("url", "https://b.io/?a=1&b=2"); err != nil {
		t.Fatal(err)
	}
	if err := q.Set("callback_url", "https://cb.io"); err != nil {
		t.Fatal(err)
	}
	if got, want := string(q.JSON()), `{"source":"universal","url":"https://b.io/?a=1&b=2","parse":false,"callback_url":"https://cb.io"}`; got != want {
		t.Fatalf("after Set: %s, want %s", got, want)
	}
	if got, want := string(p.JSON()), `{"source":"universal","url":"https://a.io","parse":false}`; got != want {
		t.Fatalf("the original changed: %s", got)
	}
	q.Delete("parse")
	if q.Has("parse") || !p.Has("parse") {
		t.Fatal("Delete changed the wrong copy")
	}
	if err := q.SetRaw("pages", json.RawMessage(`{ bad`)); err == nil {
		t.Fatal("SetRaw accepted invalid JSON")
	}
}

func TestSetOnDuplicateKeyLeavesOne(t *testing.T) {
	t.Parallel()
	p := mustParse(t, `{"url":"a","source":"x","url":"b"}`)
	if raw, _ := p.Get("url"); string(raw) != `"b"` {
		t.Fatalf("Get returns %s, want the last value as encoding/json does", raw)
	}
	if err := p.SetRaw("url", json.RawMessage(`"c"`)); err != nil {
		t.Fatal(err)
	}
	if got := string(p.JSON()); got != `{"url":"c","source":"x"}` {
		t.Fatalf("JSON() = %s", got)
	}
}

func TestUnmarshalInsideAnotherDocument(t *testing.T) {
	t.Parallel()
	var doc struct {
		Payload payload.Payload `json:"payload"`
	}
	if err := json.Unmarshal([]byte(`{"payload":{"source":"x","query":"q","z":[1, 2]}}`), &doc); err != nil {
		t.Fatal(err)
	}
	if got := string(doc.Payload.JSON()); got != `{"source":"x","query":"q","z":[1,2]}` {
		t.Fatalf("JSON() = %s", got)
	}
	if err := json.Unmarshal([]byte(`{"payload":[1]}`), &doc); err == nil {
		t.Fatal("a list unmarshalled into a Payload")
	}
}

func TestRedactedAndString(t *testing.T) {
	t.Parallel()
	p := mustParse(t, `{"source":"universal","url":"https://u:p@a.io/x","storage_type":"s3_compatible","storage_url":"https://KEY:SECRET@s3.io/b"}`)
	want := `{"source":"universal","url":"https://redacted:redacted@a.io/x","storage_type":"s3_compatible","storage_url":"https://redacted:redacted@s3.io/b"}`
	if got := string(p.Redacted()); got != want {
		t.Fatalf("Redacted() = %s", got)
	}
	if p.String() != want {
		t.Fatalf("String() = %s", p.String())
	}
	if _, v := p.Input(); v != "https://u:p@a.io/x" {
		t.Fatal("Redacted changed the payload itself")
	}
}

func TestNewAndClone(t *testing.T) {
	t.Parallel()
	p := payload.New("universal", "url", `https://a.io/"q"`)
	if got := string(p.JSON()); got != `{"source":"universal","url":"https://a.io/\"q\""}` {
		t.Fatalf("New: %s", got)
	}
	c := p.Clone()
	if err := c.Set("render", "html"); err != nil {
		t.Fatal(err)
	}
	if p.Has("render") {
		t.Fatal("Clone shares fields")
	}
	if len(payload.InputKeys()) != 7 || !payload.IsInputKey("video_id") || payload.IsInputKey("source") {
		t.Fatal("InputKeys/IsInputKey disagree with the seven input keys of the API")
	}
}
