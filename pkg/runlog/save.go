package runlog

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
)

// Ext is the run log's file extension.
const Ext = ".jsonl"

// FileName is the run log's file name: the run id (its UTC start, such as
// "20260929T170412.345Z") with Ext.
func FileName(run string) string { return run + Ext }

// Putter is the part of a destination a run log is written through
// (pkg/destination's Destination implements it). runlog does not open
// destinations itself, so that a program that only reads or derives run logs
// does not link the object-store SDKs.
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

// Location joins a destination's location and the run log's file name.
func Location(folder, run string) string {
	return strings.TrimRight(folder, "/") + "/" + FileName(run)
}
