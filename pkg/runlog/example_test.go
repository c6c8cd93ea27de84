package runlog_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"github.com/oxypipe/oxypipe/pkg/oxytype"
	"github.com/oxypipe/oxypipe/pkg/runlog"
)

// A run log is derived from the ledger's records of a run, one line per
// payload in input order, and read back for recovery.
func ExampleBuild() {
	recs := []runlog.Record{
		{Doc: "0", DataType: "payload", Success: true, Facts: oxytype.Facts{Payload: json.RawMessage(`{"source":"universal","url":"https://example.com/a"}`)}},
		{Doc: "0", DataType: "written", Success: true, Facts: oxytype.Facts{APIJobID: "7500000000000000001"}},
		// doc 1 has no record at all: it still gets a line.
	}
	src := func(_ context.Context, fn func(runlog.Record) error) error {
		for _, r := range recs {
			if err := fn(r); err != nil {
				return err
			}
		}
		return nil
	}
	var sb strings.Builder
	sum, err := runlog.Build(context.Background(), &sb, runlog.Spec{Total: 2, FinalDataType: "written"}, src)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Print(sb.String())
	fmt.Printf("%d done, %d unsubmitted\n", sum.Done, sum.Unsubmitted)

	lines, err := runlog.ReadAll(strings.NewReader(sb.String()))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return
	}
	fmt.Println(lines[0].State, *lines[0].ID)
	// Output:
	// {"state":"done","id":"7500000000000000001","payload":{"source":"universal","url":"https://example.com/a"},"error":null,"upload":null}
	// {"state":"unsubmitted","id":null,"payload":null,"error":{"status_code":null,"message":"no record of this payload was found in the ledger","trace_id":""},"upload":null}
	// 1 done, 1 unsubmitted
	// done 7500000000000000001
}
