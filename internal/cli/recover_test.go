package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/oxypipe/oxypipe/pkg/oxytype"
	"github.com/oxypipe/oxypipe/pkg/runlog"
)

// everyStateLog is a run log with a line in each state, plus the two kinds
// of unsubmitted lines recover must not resubmit, and one whose message
// merely reads like the mark (the structured field decides).
const everyStateLog = `{"state":"done","id":"7500000000000000001","payload":{"source":"universal","url":"https://sandbox.oxylabs.io/products/1"},"error":null,"upload":null}
{"state":"unfetched","id":"7500000000000000002","payload":{"source":"universal","url":"https://sandbox.oxylabs.io/products/2"},"error":{"status_code":404,"message":"Not Found","trace_id":"00000001-000000000000000000000000"},"upload":null}
{"state":"faulted","id":"7500000000000000003","payload":{"source":"universal","url":"https://sandbox.oxylabs.io/products/3"},"error":null,"upload":null}
{"state":"rejected","id":null,"payload":{"source":"universal","url":"https://1.2.3.4/"},"error":{"status_code":null,"message":"The hostname cannot be an ip address.","trace_id":""},"upload":null}
{"state":"unsubmitted","id":null,"payload":{"source":"universal","url":"https://sandbox.oxylabs.io/products/5"},"error":{"status_code":403,"message":"Forbidden","trace_id":""},"upload":null}
{"state":"unsubmitted","id":null,"payload":{"source":"universal","url":"https://sandbox.oxylabs.io/products/6"},"error":{"status_code":500,"message":"Internal Server Error","trace_id":"","may_have_billed":true},"upload":null}
{"state":"unsubmitted","id":"7500000000000000007","payload":{"source":"universal","url":"https://sandbox.oxylabs.io/products/7"},"error":null,"upload":null}
{"state":"unsubmitted","id":null,"payload":{"source":"universal","url":"https://sandbox.oxylabs.io/products/8","storage_url":"https://redacted:redacted@minio.example.com/b"},"error":null,"upload":null}
{"state":"unsubmitted","id":null,"payload":{"source":"universal","url":"https://sandbox.oxylabs.io/products/9"},"error":{"status_code":null,"message":"the outcome is unknown: the API may have created (and billed) a job","trace_id":""},"upload":null}
`

func TestRecoverPlan(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "20260929T170412.345Z.jsonl")
	if err := os.WriteFile(path, []byte(everyStateLog), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Run("never resubmits a payload with a job id or one that may have billed", func(t *testing.T) {
		t.Parallel()
		lines, folder, err := readRunLog(t.Context(), path)
		if err != nil {
			t.Fatal(err)
		}
		if filepath.Clean(folder) != dir {
			t.Errorf("folder %q, want %q", folder, dir)
		}
		rc := &recoverer{lines: lines}
		rc.classify()
		p := rc.plan
		if p.done != 1 || !equalInts(p.fetch, 1, 6) || !equalInts(p.resubmit, 2, 4, 8) || !equalInts(p.rejected, 3) ||
			!equalInts(p.unknown, 5) || !equalInts(p.redacted, 7) || len(p.broken) != 0 || p.risky != 0 {
			t.Errorf("plan %+v", p)
		}
		rc = &recoverer{lines: lines, resubmitUnknown: true}
		rc.classify()
		if !equalInts(rc.plan.resubmit, 2, 4, 5, 8) || len(rc.plan.unknown) != 0 || rc.plan.risky != 1 {
			t.Errorf("with --resubmit-unknown: %+v", rc.plan)
		}
	})
	t.Run("--dry-run says what it would do and sends nothing", func(t *testing.T) {
		t.Parallel()
		res := run(t, nil, "recover", "--dry-run", path)
		want := "Recovering " + path + " (9 payloads): 1 done; fetching 2 unfetched jobs by id (free); resubmitting 1 faulted payload; submitting 2 unsubmitted payloads; " +
			"holding back 1 unsubmitted payload that may have billed (its outcome is unknown; --resubmit-unknown resubmits it); leaving 1 rejected payload as it is.\n" +
			"warning: line 6: the submission's outcome is unknown and may have billed; it is not resubmitted (--resubmit-unknown resubmits it)\n" +
			"warning: line 8: the run log redacted the payload's credentials; put them back and run it again\n" +
			"hint: rejected payloads would be refused again: fix them and run them with oxy run\n"
		if res.code != 0 || res.stderr != want || res.stdout != "" {
			t.Errorf("exit %d, stderr:\n%s\nwant:\n%s", res.code, res.stderr, want)
		}
	})
	t.Run("a destination is required when there is work", func(t *testing.T) {
		t.Parallel()
		res := run(t, nil, "recover", path)
		if res.code != 2 || !strings.Contains(res.stderr, "error: -d/--destination is required") {
			t.Errorf("exit %d, stderr %q", res.code, res.stderr)
		}
	})
	t.Run("a file that is not a run log is invalid input", func(t *testing.T) {
		t.Parallel()
		bad := filepath.Join(t.TempDir(), "bad.jsonl")
		if err := os.WriteFile(bad, []byte(`{"state":"done","id":"1","payload":{},"error":null,"upload":null}`+"\n"+`{"state":"lost"}`+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		res := run(t, nil, "recover", bad, "-d", t.TempDir())
		if res.code != 2 || !strings.Contains(res.stderr, "line 2") {
			t.Errorf("exit %d, stderr %q", res.code, res.stderr)
		}
	})
	t.Run("the recovered log writes the lines unchanged where nothing happened", func(t *testing.T) {
		t.Parallel()
		lines, _, err := readRunLog(t.Context(), path)
		if err != nil {
			t.Fatal(err)
		}
		rc := &recoverer{lines: lines}
		var b strings.Builder
		if err := rc.writeLines(&b); err != nil {
			t.Fatal(err)
		}
		again, err := runlog.ReadAll(strings.NewReader(b.String()))
		if err != nil || len(again) != len(lines) {
			t.Fatalf("%d lines, %v", len(again), err)
		}
		for i := range again {
			if again[i].State != lines[i].State || string(again[i].Payload) != string(lines[i].Payload) {
				t.Errorf("line %d: %+v, want %+v", i+1, again[i], lines[i])
			}
		}
	})
}

func equalInts(got []int, want ...int) bool {
	if len(got) != len(want) {
		return false
	}
	for i := range got {
		if got[i] != want[i] {
			return false
		}
	}
	return true
}

func TestMayHaveBilled(t *testing.T) {
	t.Parallel()
	code := 503
	for _, c := range []struct {
		err  *oxytype.ErrorInfo
		want bool
	}{
		{nil, false},
		{&oxytype.ErrorInfo{StatusCode: &code, Message: "Service Unavailable"}, false},
		{&oxytype.ErrorInfo{StatusCode: &code, Message: "Service Unavailable; " + oxytype.MayHaveBilledText, MayHaveBilled: true}, true},
		{&oxytype.ErrorInfo{Message: "the outcome of this payload's submission is unknown; " + oxytype.MayHaveBilledText}, false},
		{&oxytype.ErrorInfo{Message: "Forbidden", MayHaveBilled: true}, true},
	} {
		if got := mayHaveBilled(c.err); got != c.want {
			t.Errorf("mayHaveBilled(%+v) = %t, want %t", c.err, got, c.want)
		}
	}
}
