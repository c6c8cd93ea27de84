package destination

import (
	"errors"
	"strings"
	"syscall"

	"github.com/oxypipe/oxypipe/pkg/destination/internal/core"
)

// Error is the error every destination operation returns: it names the
// location (credentials redacted), the operation (open, probe, put, get,
// list, close) and the file name, and wraps the cause. Use errors.As to read
// its fields and errors.Is with the sentinels below to classify it.
type Error = core.Error

// Sentinels wrapped by destination errors.
var (
	// ErrInvalidName: the name is not a plain file name (see ValidateName).
	// Permanent.
	ErrInvalidName = core.ErrInvalidName
	// ErrNotFound: Get of a file that does not exist.
	ErrNotFound = core.ErrNotFound
	// ErrLocationNotFound: the bucket or container does not exist, or the
	// local folder cannot be created (a path under a regular file).
	// Permanent until someone creates it.
	ErrLocationNotFound = core.ErrLocationNotFound
	// ErrAccessDenied: the store refused the credentials or the operation
	// (HTTP 401/403, or a local permission error). Permanent until someone
	// fixes the credentials.
	ErrAccessDenied = core.ErrAccessDenied
	// ErrNoSpace: the disk, the user's quota or the store is full (ENOSPC,
	// EDQUOT). Permanent until someone frees space.
	ErrNoSpace = core.ErrNoSpace
	// ErrUnknownScheme: the location is a URL whose scheme is none of s3,
	// gs, az and file.
	ErrUnknownScheme = core.ErrUnknownScheme
	// ErrInvalidLocation: the location cannot be parsed (an empty bucket, a
	// ".." segment, credentials or a query in the URL, an invalid Config).
	ErrInvalidLocation = core.ErrInvalidLocation
)

// MaxNameLen is the longest name a destination accepts, in bytes.
const MaxNameLen = core.MaxNameLen

// ValidateName reports whether name is a plain file name a destination
// accepts: not empty, at most MaxNameLen bytes of UTF-8, no "/" or "\", no
// control character, not starting with "." (names starting with a dot are
// reserved for temporary files). The error wraps ErrInvalidName.
func ValidateName(name string) error { return core.ValidateName(name) }

// IsPermanent reports whether err says the destination cannot take the file
// now and that trying again at once will not change that: the disk or quota
// is full, the write is denied (EACCES, EPERM, EROFS, a refused credential),
// the folder, bucket or container does not exist (or a file stands where the
// folder should be), or the name or location is invalid. Such a failure
// needs someone to act (free space, fix a permission, create the bucket);
// a writer stops paying for results that have nowhere to go at the first
// one, instead of after its retries. Any other error (a timeout, a reset
// connection, a 5xx) may pass and is worth a quick retry.
//
// It recognises the sentinels of this package and, for errors that did not
// come through a destination, the operating system's error numbers. Every
// invalid error (IsInvalid) is permanent.
func IsPermanent(err error) bool {
	if err == nil {
		return false
	}
	if IsInvalid(err) {
		return true
	}
	for _, target := range []error{
		ErrNoSpace, ErrAccessDenied, ErrLocationNotFound,
		syscall.ENOSPC, syscall.EDQUOT, syscall.EACCES, syscall.EPERM, syscall.EROFS,
	} {
		if errors.Is(err, target) {
			return true
		}
	}
	return false
}

// IsInvalid reports whether err says the request itself can never succeed,
// whoever acts on the store: the name is not a plain file name, or the
// location cannot be a destination (it does not parse, or names an unknown
// scheme). Unlike the other permanent failures, no one fixing a disk, a
// permission or a bucket cures it, so retrying the same write later is
// pointless too.
func IsInvalid(err error) bool {
	return errors.Is(err, ErrInvalidName) || errors.Is(err, ErrInvalidLocation) || errors.Is(err, ErrUnknownScheme)
}

// ResultName is the file name a done job's results body is written under:
// "<job id>.json". Every writer of results (the pipeline's writer, `oxy get
// -d`, recovery) uses it, so that a job is found under one name wherever it
// was fetched.
func ResultName(jobID string) string { return jobID + ".json" }

// ResultFile is where a job's result file is, for showing to a user: the
// destination's location (as given, credentials already redacted by the
// caller) joined with ResultName, "results/<id>.json" or
// "s3://bucket/prefix/<id>.json"; ResultName alone when location is "".
func ResultFile(location, jobID string) string {
	return JoinFile(location, ResultName(jobID))
}

// JoinFile is the location of the file name in a destination at location:
// location and name joined with exactly one "/", or name alone when location
// is "".
func JoinFile(location, name string) string {
	if location == "" {
		return name
	}
	return strings.TrimSuffix(location, "/") + "/" + name
}
