package destination

import "github.com/oxypipe/oxypipe/pkg/destination/internal/core"

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
