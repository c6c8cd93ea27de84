package destination_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"os"
	"path/filepath"
	"strings"

	"github.com/oxypipe/oxypipe/pkg/destination"
)

// A writer opens the destination the user named, probes it before anything
// bills, and puts each done job's body under "<job id>.json".
func Example() {
	ctx := context.Background()
	tmp, err := os.MkdirTemp("", "oxypipe-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer func() { _ = os.RemoveAll(tmp) }() // the example's own scratch folder

	d, err := destination.Open(ctx, filepath.Join(tmp, "results"))
	if err != nil {
		log.Fatal(err)
	}
	defer func() { _ = d.Close() }()
	if err := d.Probe(ctx); err != nil {
		log.Fatal(err)
	}
	body := `{"results":[{"status_code":200}],"job":{"id":"7500000000000000001"}}` + "\n"
	if err := d.Put(ctx, "7500000000000000001.json", strings.NewReader(body)); err != nil {
		log.Fatal(err)
	}

	names, err := d.List(ctx, "")
	if err != nil {
		log.Fatal(err)
	}
	rc, err := d.Get(ctx, names[0])
	if err != nil {
		log.Fatal(err)
	}
	defer func() { _ = rc.Close() }()
	content, err := io.ReadAll(rc)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(names)
	fmt.Print(string(content))
	// Output:
	// [7500000000000000001.json]
	// {"results":[{"status_code":200}],"job":{"id":"7500000000000000001"}}
}

// Errors say which location and operation failed, and classify with
// errors.Is.
func ExampleOpen_errors() {
	_, err := destination.Open(context.Background(), "ftp://user:secret@example.com/results")
	fmt.Println(err)
	fmt.Println(errors.Is(err, destination.ErrUnknownScheme))
	// Output:
	// destination ftp://redacted:redacted@example.com/results: open: unknown scheme "ftp": want s3://, gs://, az://, file:// or a local folder path
	// true
}

// Split finds the folder and the name of a run log, for reading it back.
func ExampleSplit() {
	folder, name, err := destination.Split("s3://bucket/logs/20260929T170412.345Z.jsonl")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(folder)
	fmt.Println(name)
	// Output:
	// s3://bucket/logs
	// 20260929T170412.345Z.jsonl
}

// ValidateName refuses anything but a plain file name.
func ExampleValidateName() {
	for _, name := range []string{"7500000000000000001.json", "../etc/passwd", ".hidden"} {
		fmt.Println(name, destination.ValidateName(name) == nil)
	}
	// Output:
	// 7500000000000000001.json true
	// ../etc/passwd false
	// .hidden false
}
