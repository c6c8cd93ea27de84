package jsonvalid_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"slices"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/oxypipe/oxypipe/internal/jsonvalid"
)

var corpus = []string{
	`{}`, `[]`, `""`, `0`, `-0`, `1.5e+10`, `-12.25E-3`, `true`, `false`, `null`, ` {"a" : [1, 2, {"b":null}], "c":"\u00e9\n\"x\""} `,
	`{"results":[{"content":"<html>\u003cp\u003e</html>","status_code":200}],"job":{"id":"7500000000000000001"}}`,
	`[[[[[]]]]]`, `"\/\\\b\f\r\t"`, "\n\t 42 \r\n",
	// Not JSON.
	``, ` `, `{`, `[`, `"abc`, `{"a"}`, `{"a":}`, `{"a":1,}`, `[1,]`, `[1 2]`, `{1:2}`, `01`, `1.`, `.5`, `1e`, `1e+`, `-`, `+1`,
	`tru`, `truex`, `nul`, `"\x"`, `"\u12g4"`, "\"a\tb\"", `{} {}`, `1 2`, `<!DOCTYPE html><html>Bad gateway</html>`,
	`{"a":1}]`, `]`, `}`, `{"a":[1}`, `[{"a":1]`, `NaN`, `Infinity`, `"abc"x`, `{"a" 1}`, `{,}`, `[,1]`,
}

// Every way of cutting the input into reads gives json.Valid's verdict.
func TestTheValidatorAgreesWithEncodingJSON(t *testing.T) {
	t.Parallel()
	for _, in := range corpus {
		want := json.Valid([]byte(in))
		for _, chunk := range []int{1, 2, 3, 7, 1 << 20} {
			if got := check([]byte(in), chunk); (got == nil) != want {
				t.Errorf("%q in chunks of %d: %v, json.Valid says %v", in, chunk, got, want)
			}
		}
	}
}

func check(in []byte, chunk int) error {
	var v jsonvalid.Validator
	for len(in) > 0 {
		n := min(chunk, len(in))
		if _, err := v.Write(in[:n]); err != nil {
			return err
		}
		in = in[n:]
	}
	return v.Close()
}

func TestTheReaderFailsInPlaceOfTheEnd(t *testing.T) {
	t.Parallel()
	t.Run("a JSON body passes unchanged", func(t *testing.T) {
		body := `{"results":[{"content":"x"}]}` + "\n"
		got, err := io.ReadAll(jsonvalid.NewReader(iotest.OneByteReader(strings.NewReader(body))))
		if err != nil || string(got) != body {
			t.Fatalf("ReadAll = %q, %v", got, err)
		}
	})
	t.Run("a body cut short fails at its end", func(t *testing.T) {
		_, err := io.ReadAll(jsonvalid.NewReader(strings.NewReader(`{"results":[{"content":"x`)))
		var se *jsonvalid.SyntaxError
		if !errors.As(err, &se) || !errors.Is(err, jsonvalid.ErrNotJSON) || se.Offset != 25 || se.Msg != "unexpected end of input" {
			t.Fatalf("ReadAll = %v, want the end of input at byte 25", err)
		}
	})
	t.Run("an HTML page fails at its first byte", func(t *testing.T) {
		_, err := io.ReadAll(jsonvalid.NewReader(strings.NewReader(`<html>502 Bad Gateway</html>`)))
		if err == nil || err.Error() != `not JSON: expected a value, found '<' at byte 0` {
			t.Fatalf("ReadAll = %v", err)
		}
	})
	t.Run("the source's own error passes as it is", func(t *testing.T) {
		boom := errors.New("connection reset")
		_, err := io.ReadAll(jsonvalid.NewReader(io.MultiReader(strings.NewReader(`{"a":`), iotest.ErrReader(boom))))
		if !errors.Is(err, boom) {
			t.Fatalf("ReadAll = %v, want the source's error", err)
		}
	})
	t.Run("nesting deeper than MaxDepth fails", func(t *testing.T) {
		deep := strings.Repeat("[", jsonvalid.MaxDepth+1)
		if _, err := io.ReadAll(jsonvalid.NewReader(strings.NewReader(deep))); err == nil || !strings.Contains(err.Error(), "nested too deep") {
			t.Fatalf("ReadAll = %v", err)
		}
	})
}

func FuzzValidator(f *testing.F) {
	for _, in := range corpus {
		f.Add([]byte(in), uint8(3))
	}
	f.Fuzz(func(t *testing.T, in []byte, chunk uint8) {
		want := json.Valid(in)
		if got := check(in, int(chunk)+1); (got == nil) != want {
			t.Fatalf("%q in chunks of %d: %v, json.Valid says %v", in, int(chunk)+1, got, want)
		}
		if got := jsonvalid.Valid(in); got != want {
			t.Fatalf("Valid(%q) = %v, json.Valid says %v", in, got, want)
		}
	})
}

// resultsBody is a 20 MB results body as the API sends one: a job whose
// content is a long escaped HTML string.
func resultsBody() []byte {
	var b bytes.Buffer
	b.WriteString(`{"results":[{"content":"`)
	page := `<div class=\"product\"><a href=\"https:\/\/sandbox.oxylabs.io\/products\/1\">Item \u00e9<\/a><\/div>\n`
	for b.Len() < 20<<20 {
		b.WriteString(page)
	}
	b.WriteString(`","status_code":200,"page":1}],"job":{"id":"7500000000000000001","status":"done"}}`)
	return b.Bytes()
}

func BenchmarkValidator(b *testing.B) {
	body := resultsBody()
	if !json.Valid(body) {
		b.Fatal("the benchmark's body is not JSON")
	}
	b.Run("stream 32KB reads", func(b *testing.B) {
		b.SetBytes(int64(len(body)))
		for b.Loop() {
			if err := check(body, 32<<10); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encoding/json.Valid whole", func(b *testing.B) {
		b.SetBytes(int64(len(body)))
		for b.Loop() {
			if !json.Valid(body) {
				b.Fatal("invalid")
			}
		}
	})
}

// Valid gives json.Valid's verdict on every input of the corpus and on
// deeply nested values.
func TestValidAgreesWithEncodingJSON(t *testing.T) {
	t.Parallel()
	deep := strings.Repeat(`{"a":[`, 20) + "1" + strings.Repeat("]}", 20)
	for _, in := range append(slices.Clone(corpus), deep, deep[:len(deep)-1]) {
		if got, want := jsonvalid.Valid([]byte(in)), json.Valid([]byte(in)); got != want {
			t.Errorf("Valid(%q) = %v, json.Valid says %v", in, got, want)
		}
	}
}

// statusAnswer is a job's status answer as the API sends one, about 1 KB.
const statusAnswer = `{"callback_url":null,"client_id":12345,"context":[{"key":"force_headers","value":false},` +
	`{"key":"force_cookies","value":false},{"key":"session_id","value":null}],"created_at":"2026-12-07 12:00:00",` +
	`"domain":"com","geo_location":null,"id":"7500000000000000001","limit":10,"locale":null,"pages":1,` +
	`"parse":false,"parser_type":null,"render":null,"url":"https://sandbox.oxylabs.io/products/1",` +
	`"query":"","source":"universal","start_page":1,"status":"done","storage_type":null,"storage_url":null,` +
	`"subdomain":"www","content_encoding":"utf-8","updated_at":"2026-12-07 12:00:01","user_agent_type":"desktop",` +
	`"session_info":null,"statuses":[],"client_notes":null,"_links":[{"rel":"self",` +
	`"href":"http://data.oxylabs.io/v1/queries/7500000000000000001","method":"GET"},{"rel":"results",` +
	`"href":"http://data.oxylabs.io/v1/queries/7500000000000000001/results","method":"GET"}]}`

func BenchmarkValid(b *testing.B) {
	in := []byte(statusAnswer)
	if !json.Valid(in) {
		b.Fatal("the benchmark's answer is not JSON")
	}
	b.Run("jsonvalid.Valid", func(b *testing.B) {
		b.SetBytes(int64(len(in)))
		b.ReportAllocs()
		for b.Loop() {
			if !jsonvalid.Valid(in) {
				b.Fatal("not valid")
			}
		}
	})
	b.Run("encoding/json.Valid", func(b *testing.B) {
		b.SetBytes(int64(len(in)))
		b.ReportAllocs()
		for b.Loop() {
			if !json.Valid(in) {
				b.Fatal("not valid")
			}
		}
	})
}
