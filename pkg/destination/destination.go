package destination

import (
	"context"
	"io"
)

// Destination is a folder of named files, local or in an object store.
// Implementations are safe for concurrent use.
//
// The writer stage uses Probe and Put; the run log uses Probe, Put and Get;
// List serves tests and tools that look for run logs. A consumer that needs
// less should declare its own smaller interface.
type Destination interface {
	// Probe checks that the location exists (a local folder is created) and
	// that it may be listed or written, before anything bills. It leaves
	// nothing behind.
	Probe(ctx context.Context) error

	// Put stores body under name, replacing any file of that name. The new
	// file appears whole or not at all. Put reads body to its end but does
	// not close it; once ctx ends, Put fails at its next read of body or
	// request, with an error that wraps ctx.Err().
	Put(ctx context.Context, name string, body io.Reader) error

	// Get opens the file name for reading; the caller closes the reader. A
	// missing file fails with ErrNotFound.
	Get(ctx context.Context, name string) (io.ReadCloser, error)

	// List returns the sorted names of the files directly in the location
	// whose names start with prefix ("" for all). It holds every name in
	// memory: it is meant for run-log folders and tests, not for listing a
	// million results.
	List(ctx context.Context, prefix string) ([]string, error)

	// String returns the location for logs, with credentials redacted.
	String() string

	// Close releases the client's resources. The destination must not be
	// used afterwards.
	Close() error
}
