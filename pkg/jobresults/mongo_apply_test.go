package jobresults

import (
	"errors"
	"testing"

	"go.mongodb.org/mongo-driver/v2/mongo"
)

func duplicateKey() error {
	return mongo.WriteException{WriteErrors: []mongo.WriteError{{Code: 11000, Message: "E11000 duplicate key error"}}}
}

func bulkFailure(index, code int) error {
	return mongo.BulkWriteException{WriteErrors: []mongo.BulkWriteError{{WriteError: mongo.WriteError{Index: index, Code: code}}}}
}

func TestUpsertLoop(t *testing.T) {
	t.Parallel()
	errNetwork := mongo.CommandError{Labels: []string{"NetworkError"}}
	for _, tc := range []struct {
		name      string
		versioned bool
		dupsSeen  int
		results   []error
		wantCalls int
		wantOK    bool
		wantErrIs error
	}{
		{name: "applies at once", results: []error{nil}, wantCalls: 1, wantOK: true},
		{name: "an unversioned upsert that lost the insert race is retried", results: []error{duplicateKey(), nil}, wantCalls: 2, wantOK: true},
		{name: "an unversioned upsert gives up after three duplicate-key errors", results: []error{duplicateKey(), duplicateKey(), duplicateKey()}, wantCalls: 3, wantErrIs: duplicateKey()},
		{name: "a versioned upsert that lost the insert race is retried", versioned: true, results: []error{duplicateKey(), nil}, wantCalls: 2, wantOK: true},
		{name: "a versioned upsert meeting the unique key twice is stale", versioned: true, results: []error{duplicateKey(), duplicateKey()}, wantCalls: 2},
		{name: "after a duplicate in a bulk write, one more is stale", versioned: true, dupsSeen: 1, results: []error{duplicateKey()}, wantCalls: 1},
		{name: "after a duplicate in a bulk write, the retry may apply", versioned: true, dupsSeen: 1, results: []error{nil}, wantCalls: 1, wantOK: true},
		{name: "other errors are returned at once", versioned: true, results: []error{errNetwork}, wantCalls: 1, wantErrIs: errNetwork},
	} {
		calls := 0
		ok, err := upsertLoop(tc.versioned, tc.dupsSeen, func() error {
			calls++
			return tc.results[calls-1]
		})
		if ok != tc.wantOK || calls != tc.wantCalls || (tc.wantErrIs == nil) != (err == nil) {
			t.Errorf("%s: applied=%v calls=%d err=%v; want applied=%v calls=%d err=%v", tc.name, ok, calls, err, tc.wantOK, tc.wantCalls, tc.wantErrIs)
		}
		if tc.wantErrIs != nil && err != nil && err.Error() != tc.wantErrIs.Error() {
			t.Errorf("%s: err = %v, want %v", tc.name, err, tc.wantErrIs)
		}
	}
}

func TestApplyOrdered(t *testing.T) {
	t.Parallel()
	type call struct{ start, end int }
	errNetwork := mongo.CommandError{Labels: []string{"NetworkError"}}

	t.Run("every entry applies", func(t *testing.T) {
		var calls []call
		n, err := applyOrdered(2500, func(s, e int) error { calls = append(calls, call{s, e}); return nil },
			func(int) (bool, error) { t.Fatal("nothing to settle"); return false, nil })
		if n != 2500 || err != nil || len(calls) != 3 || calls[0] != (call{0, 1000}) || calls[2] != (call{2000, 2500}) {
			t.Fatalf("applied %d, err %v, bulk calls %v", n, err, calls)
		}
	})

	t.Run("a duplicate key is settled on its own and the writes resume after it", func(t *testing.T) {
		var calls []call
		var settled []int
		n, err := applyOrdered(10,
			func(s, e int) error {
				calls = append(calls, call{s, e})
				switch s {
				case 0:
					return bulkFailure(3, 11000) // entries 0..2 applied, 3 failed
				case 4:
					return bulkFailure(2, 11000) // entries 4, 5 applied, 6 failed
				}
				return nil
			},
			func(i int) (bool, error) {
				settled = append(settled, i)
				return i == 3, nil // 3 lost a race and applied on retry; 6 is stale
			})
		if err != nil || n != 9 {
			t.Fatalf("applied %d, err %v; want 9 (entry 6 stale)", n, err)
		}
		if want := []call{{0, 10}, {4, 10}, {7, 10}}; len(calls) != 3 || calls[0] != want[0] || calls[1] != want[1] || calls[2] != want[2] {
			t.Fatalf("bulk calls %v, want %v", calls, want)
		}
		if len(settled) != 2 || settled[0] != 3 || settled[1] != 6 {
			t.Fatalf("settled %v, want [3 6]", settled)
		}
	})

	t.Run("a duplicate key on the last entry ends the batch", func(t *testing.T) {
		n, err := applyOrdered(3, func(s, e int) error {
			if s == 0 {
				return bulkFailure(2, 11000)
			}
			t.Fatalf("unexpected bulk call [%d,%d)", s, e)
			return nil
		}, func(int) (bool, error) { return false, nil })
		if n != 2 || err != nil {
			t.Fatalf("applied %d, err %v; want 2, nil", n, err)
		}
	})

	t.Run("another write error stops with the entries before it applied", func(t *testing.T) {
		n, err := applyOrdered(10, func(int, int) error { return bulkFailure(4, 10334) },
			func(int) (bool, error) { t.Fatal("only duplicate keys are settled"); return false, nil })
		var bwe mongo.BulkWriteException
		if n != 4 || !errors.As(err, &bwe) {
			t.Fatalf("applied %d, err %v; want 4 and the bulk write error", n, err)
		}
	})

	t.Run("a command error stops with the earlier chunks applied", func(t *testing.T) {
		n, err := applyOrdered(2500, func(s, _ int) error {
			if s == 1000 {
				return errNetwork
			}
			return nil
		}, nil)
		if n != 1000 || !isTransient(err) {
			t.Fatalf("applied %d, err %v; want 1000 and a transient error", n, err)
		}
	})

	t.Run("an error while settling stops the batch", func(t *testing.T) {
		n, err := applyOrdered(5, func(int, int) error { return bulkFailure(1, 11000) },
			func(int) (bool, error) { return false, errNetwork })
		if n != 1 || err == nil {
			t.Fatalf("applied %d, err %v; want 1 and the error", n, err)
		}
	})

	t.Run("a write concern error is not settled as a duplicate", func(t *testing.T) {
		bwe := mongo.BulkWriteException{
			WriteErrors:       []mongo.BulkWriteError{{WriteError: mongo.WriteError{Index: 0, Code: 11000}}},
			WriteConcernError: &mongo.WriteConcernError{Code: 64},
		}
		n, err := applyOrdered(2, func(int, int) error { return bwe },
			func(int) (bool, error) { t.Fatal("must not settle"); return false, nil })
		if n != 0 || !isTransient(err) {
			t.Fatalf("applied %d, err %v; want 0 and a transient error", n, err)
		}
	})
}
