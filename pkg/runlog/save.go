package runlog

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/oxypipe/oxypipe/pkg/destination"
)

// Ext is the run log's file extension.
const Ext = ".jsonl"

// FileName is the run log's file name: the run id (its UTC start, such as
// "20260929T170412.345Z") with Ext.
func FileName(run string) string { return run + Ext }

// Putter is the part of a destination a run log is written through
// (destination.Destination implements it).
type Putter interface {
	Put(ctx context.Context, name string, body io.Reader) error
}

// errPutReturned tells the filling goroutine that nobody reads any more.
var errPutReturned = errors.New("runlog: the destination stopped reading")

// Put writes the run log of run to dst as FileName(run), streaming what
// fill writes (nil writes the empty run log). Nothing is held in memory
// beyond a buffer: fill writes into a pipe that dst.Put reads, so a
// million-line log costs what one line does. Because destination puts are
// atomic, a failure of fill or of the store leaves any previous file of that
// name as it was. The error is fill's when fill failed, else the store's.
func Put(ctx context.Context, dst Putter, run string, fill func(w io.Writer) error) error {
	if fill == nil {
		fill = func(io.Writer) error { return nil }
	}
	pr, pw := io.Pipe()
	fillErr := make(chan error, 1)
	go func() {
		err := fill(pw)
		_ = pw.CloseWithError(err) // nil closes with io.EOF
		fillErr <- err
	}()
	putErr := dst.Put(ctx, FileName(run), pr)
	_ = pr.CloseWithError(errPutReturned) // unblock fill if Put stopped early
	if err := <-fillErr; err != nil && !errors.Is(err, errPutReturned) {
		return fmt.Errorf("runlog: run %s: %w", run, err)
	}
	if putErr != nil {
		return fmt.Errorf("runlog: run %s: %w", run, putErr)
	}
	return nil
}

// Save opens location (a folder or an object-store URL, see
// pkg/destination), writes the run log of run there with Put, and returns
// where the file is (the location as destination.Destination.String
// renders it, credentials redacted, joined with the file name).
func Save(ctx context.Context, location, run string, fill func(w io.Writer) error, opts ...destination.Option) (string, error) {
	dst, err := destination.Open(ctx, location, opts...)
	if err != nil {
		return "", fmt.Errorf("runlog: run %s: %w", run, err)
	}
	defer func() { _ = dst.Close() }()
	if err := Put(ctx, dst, run, fill); err != nil {
		return "", err
	}
	return Location(dst.String(), run), nil
}

// Location joins a destination's location and the run log's file name.
func Location(folder, run string) string {
	return strings.TrimRight(folder, "/") + "/" + FileName(run)
}
