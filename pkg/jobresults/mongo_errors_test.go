package jobresults

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"reflect"
	"strings"
	"syscall"
	"testing"

	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/x/mongo/driver/topology"
)

func TestTransientClassification(t *testing.T) {
	t.Parallel()
	transient := map[string]error{
		"context deadline":                context.DeadlineExceeded,
		"wrapped context deadline":        fmt.Errorf("find: %w", context.DeadlineExceeded),
		"network error label":             mongo.CommandError{Message: "connection reset", Labels: []string{"NetworkError"}},
		"RetryableWriteError label":       mongo.CommandError{Code: 1, Labels: []string{"RetryableWriteError"}},
		"TransientTransactionError label": mongo.CommandError{Code: 251, Labels: []string{"TransientTransactionError"}},
		"labels on a bulk write":          mongo.BulkWriteException{Labels: []string{"RetryableWriteError"}},
		"server selection":                topology.ServerSelectionError{Wrapped: errors.New("server selection timeout")},
		"connection error":                topology.ConnectionError{ConnectionID: "c-1", Wrapped: io.EOF},
		"connection refused":              &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED},
		"i/o timeout":                     &net.OpError{Op: "read", Net: "tcp", Err: os.ErrDeadlineExceeded},
		"wait queue timeout":              topology.WaitQueueTimeoutError{Wrapped: context.DeadlineExceeded},
		"write concern timeout":           mongo.WriteException{WriteConcernError: &mongo.WriteConcernError{Code: 64, Message: "waiting for replication timed out"}},
		"not primary in a write error":    mongo.WriteException{WriteErrors: []mongo.WriteError{{Code: 10107}}},
		"not primary in a bulk write":     mongo.BulkWriteException{WriteErrors: []mongo.BulkWriteError{{WriteError: mongo.WriteError{Code: 11602}}}},
	}
	for _, code := range []int32{91, 189, 11600, 10107, 13435, 13436, 11602, 6, 7, 89, 9001, 262, 50, 134, 133} {
		transient[fmt.Sprintf("code %d", code)] = mongo.CommandError{Code: code}
	}
	permanent := map[string]error{
		"nil":                   nil,
		"cancelled context":     context.Canceled,
		"cancelled and labeled": mongo.CommandError{Labels: []string{"NetworkError"}, Wrapped: context.Canceled},
		"duplicate key":         mongo.WriteException{WriteErrors: []mongo.WriteError{{Code: 11000, Message: "E11000 duplicate key"}}},
		"bad value":             mongo.CommandError{Code: 2, Name: "BadValue"},
		"unauthorized":          mongo.CommandError{Code: 13, Name: "Unauthorized"},
		"index options":         mongo.CommandError{Code: 85, Name: "IndexOptionsConflict"},
		"document too large":    mongo.WriteException{WriteErrors: []mongo.WriteError{{Code: 10334}}},
		"client disconnected":   mongo.ErrClientDisconnected,
		"no documents":          mongo.ErrNoDocuments,
		"plain error":           errors.New("decode: unexpected type"),
	}
	for name, err := range transient {
		if !isTransient(err) {
			t.Errorf("%s (%v) classified permanent, want transient", name, err)
		}
		if se := fail("Op", err); !errors.Is(se, ErrTransient) || !reflect.DeepEqual(errors.Unwrap(se), err) {
			t.Errorf("%s: fail() = %v, want ErrTransient wrapping the cause", name, se)
		}
	}
	for name, err := range permanent {
		if isTransient(err) {
			t.Errorf("%s (%v) classified transient, want permanent", name, err)
		}
		if errors.Is(fail("Op", err), ErrTransient) {
			t.Errorf("%s: fail() matches ErrTransient", name)
		}
	}
	if fail("Op", nil) != nil {
		t.Error("fail(nil) must be nil")
	}
}

func TestStoreErrorMessageRedactsCredentials(t *testing.T) {
	t.Parallel()
	err := fail("Setup", errors.New("auth failed for mongodb://admin:hunter2@db.internal:27017"))
	var se *StoreError
	if !errors.As(err, &se) || se.Op != "Setup" || se.Transient {
		t.Fatalf("err = %#v, want a permanent *StoreError for Setup", err)
	}
	msg := err.Error()
	if strings.Contains(msg, "hunter2") || !strings.Contains(msg, "mongodb://redacted:redacted@db.internal") {
		t.Fatalf("message %q leaks or lost the URL", msg)
	}
	if want := "jobresults: Setup: permanent store error: auth failed for mongodb://redacted:redacted@db.internal:27017"; msg != want {
		t.Fatalf("message = %q, want %q", msg, want)
	}
}
