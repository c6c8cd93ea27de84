// Package destination stores named files — a run's results as
// "<job id>.json", its run log as "<start>.jsonl" — in a local folder or an
// object store, behind one small interface.
//
// A location is what a user types after --destination or --run-log:
//
//	results                     a local folder, created when probed
//	file:///var/lib/oxy/out     the same, as a URL
//	s3://bucket/prefix          Amazon S3 or an S3-compatible store (package s3dest)
//	gs://bucket/prefix          Google Cloud Storage (package gcsdest)
//	az://container/prefix       Azure Blob Storage (package azuredest)
//
// Object stores read the same AWS_*, GOOGLE_* and AZURE_* environment
// variables as their official SDKs (and Polars); Config overrides them.
//
// The contract every implementation keeps (and package destinationtest
// checks):
//
//   - Probe fails before anything bills when the location is missing or may
//     not be written, and leaves nothing behind.
//   - Put is atomic: a reader sees the previous file or the whole new one,
//     never a part; a failed or cancelled Put leaves the previous file as it
//     was. Put replaces a file of the same name. Nothing ever deletes a file.
//   - Bodies are streamed: memory per Put is bounded by a part size, not by
//     the body's length.
//   - Names are plain file names (see ValidateName); anything with a path
//     separator, or starting with ".", is refused with ErrInvalidName.
//   - Errors are *Error values naming the location (credentials redacted),
//     the operation and the name, wrapping ErrNotFound, ErrLocationNotFound,
//     ErrAccessDenied, ErrNoSpace or ErrInvalidName where the cause is known.
//     IsPermanent says which failures no quick retry can cure (a full disk,
//     a denied write, a missing bucket, an invalid name or location): the
//     one rule the writer and the run log's writer both use.
package destination
