package jobresults

import (
	"context"
	"errors"
	"net"

	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/x/mongo/driver/topology"
)

// transientCodes are server error codes that mean "the server cannot serve
// this right now" rather than "this request is wrong": connection trouble,
// a primary stepping down or shutting down, time limits. They are the codes
// of the drivers' retryable-writes specification plus time-limit and
// write-concern-timeout codes. Treating only the driver's connection
// failures as transient would fail a write for good during a failover.
var transientCodes = map[int]bool{
	6:     true, // HostUnreachable
	7:     true, // HostNotFound
	50:    true, // MaxTimeMSExpired
	64:    true, // WriteConcernFailed (write concern timeout)
	89:    true, // NetworkTimeout
	91:    true, // ShutdownInProgress
	133:   true, // FailedToSatisfyReadPreference
	134:   true, // ReadConcernMajorityNotAvailableYet
	189:   true, // PrimarySteppedDown
	262:   true, // ExceededTimeLimit
	9001:  true, // SocketException
	10107: true, // NotWritablePrimary
	11600: true, // InterruptedAtShutdown
	11602: true, // InterruptedDueToReplStateChange
	13435: true, // NotPrimaryNoSecondaryOk
	13436: true, // NotPrimaryOrSecondary
}

// transientLabels are error labels the server or driver attaches to errors
// that a retry may overcome.
var transientLabels = []string{"RetryableWriteError", "TransientTransactionError", "NetworkError"}

// isTransient classifies a driver error: true for network errors, timeouts,
// server-selection failures, not-primary and shutdown codes and the
// retryable labels; false for everything else, including a cancelled
// context (the caller gave up; retrying would not help).
func isTransient(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) {
		return false
	}
	if mongo.IsTimeout(err) || mongo.IsNetworkError(err) {
		return true
	}
	var sse topology.ServerSelectionError
	if errors.As(err, &sse) {
		return true
	}
	var ce topology.ConnectionError
	if errors.As(err, &ce) {
		return true
	}
	var le mongo.LabeledError
	if errors.As(err, &le) {
		for _, l := range transientLabels {
			if le.HasErrorLabel(l) {
				return true
			}
		}
	}
	var se mongo.ServerError
	if errors.As(err, &se) {
		for _, c := range se.ErrorCodes() {
			if transientCodes[c] {
				return true
			}
		}
	}
	var ne net.Error
	return errors.As(err, &ne)
}

// fail wraps a backend error of operation op as a *StoreError, classified.
func fail(op string, err error) error {
	if err == nil {
		return nil
	}
	return &StoreError{Op: op, Transient: isTransient(err), Err: err}
}
