// Package s3dest stores destination files in an S3 bucket or an S3-compatible
// store (MinIO, Ceph, R2, a gateway) under a key prefix.
//
// It is the implementation behind s3:// locations in package destination,
// kept in its own package so that a program that needs only S3 does not link
// the other clouds' SDKs. Credentials, region and endpoint come from the AWS
// SDK's default chain (environment, shared config, container and instance
// roles), which reads the same AWS_* variables as Polars and the AWS CLI;
// Config overrides them per store.
//
// Put streams the body through the SDK's transfer manager: a body up to
// Config.PartSize bytes goes up in one PUT, a longer one as a multipart upload
// whose parts are buffered one at a time (Config.Concurrency in flight), so
// memory stays bounded whatever the body's length. S3 makes an object visible
// only when its PUT or its multipart completion succeeds, so a reader never
// sees a partial file; a failed multipart upload is aborted.
package s3dest
