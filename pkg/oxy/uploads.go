package oxy

import (
	"errors"
	"fmt"

	"github.com/oxypipe/oxypipe/pkg/oxytype"
)

var (
	// ErrStorageWithDestination: the payloads have a storage_url, so the API
	// uploads their results itself; a destination would fetch and write
	// every result a second time (one results request per job).
	ErrStorageWithDestination = errors.New("oxy: the payloads have a storage_url, so the API uploads their results: a run of them takes no destination")
	// ErrMixedStorage: some payloads have a storage_url and others do not.
	// A run either writes its results to a destination or has the API
	// upload them, so such an input is split into two runs.
	ErrMixedStorage = errors.New("oxy: some payloads have a storage_url and others do not: run them separately (with a destination for those without)")
)

// Uploads reports whether the API uploads the results of src's payloads to
// cloud storage: true when every payload has a storage_url, false when none
// has; a mix is ErrMixedStorage, naming the first payload that differs.
//
// A run of uploads is watched through its jobs' statuses, never fetched: it
// is complete once each job is done (or faulted) and its upload entry came,
// and it takes no destination.
func Uploads(src Source) (bool, error) {
	first, doc := false, 0
	for p, err := range src.All() {
		if err != nil {
			return false, fmt.Errorf("oxy: %w", err)
		}
		_, has := p.StorageURL()
		if doc == 0 {
			first = has
		} else if has != first {
			return false, fmt.Errorf("%w (payload %d %s one, payload 0 %s)", ErrMixedStorage, doc, hasOrNot(has), hasOrNot(first))
		}
		doc++
	}
	return first, nil
}

func hasOrNot(has bool) string {
	if has {
		return "has"
	}
	return "has not"
}

// finalDataType is where a run's docs are complete: at done for uploads
// (nothing is written), at the writer's data type otherwise.
func finalDataType(uploads bool) oxytype.DataType {
	if uploads {
		return oxytype.DataDone
	}
	return oxytype.FinalDataType
}
