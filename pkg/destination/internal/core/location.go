package core

import (
	"fmt"
	"strings"

	"github.com/oxypipe/oxypipe/internal/redact"
)

// OpenObjectStore does what every object store's New does first: it checks
// the bucket (or container) name and the prefix, and returns the key prefix
// and the store's location for messages (scheme://bucket/prefix, redacted).
// Its error is already the "open" Error naming that location.
func OpenObjectStore(scheme, bucket, prefix string) (keyPrefix, location string, err error) {
	keyPrefix, err = KeyPrefix(prefix)
	location = redact.String(ObjectURL(scheme, bucket, keyPrefix))
	if err == nil {
		err = ValidateBucket(bucket)
	}
	if err != nil {
		return "", location, Fail("open", location, "", err)
	}
	return keyPrefix, location, nil
}

// KeyPrefix turns the path part of an object-store URL into the prefix of
// every key below it: "" for the bucket's root, else the cleaned segments
// joined by "/" with a trailing "/", so that "results" never matches the
// keys of a sibling "results-old". Empty segments are dropped; "." and ".."
// are refused, because an object store would keep them literally and a
// folder would not.
func KeyPrefix(p string) (string, error) {
	var segs []string
	for seg := range strings.SplitSeq(p, "/") {
		switch seg {
		case "":
			continue
		case ".", "..":
			return "", fmt.Errorf("%w: path segment %q", ErrInvalidLocation, seg)
		}
		segs = append(segs, seg)
	}
	if len(segs) == 0 {
		return "", nil
	}
	return strings.Join(segs, "/") + "/", nil
}

// ObjectURL renders scheme://bucket/prefix for logs.
func ObjectURL(scheme, bucket, keyPrefix string) string {
	return scheme + "://" + bucket + "/" + keyPrefix
}

// ValidateBucket checks a bucket or container name loosely: the store has the
// final word, but an empty name or one holding a separator is a typo worth
// reporting before any request.
func ValidateBucket(bucket string) error {
	if bucket == "" {
		return fmt.Errorf("%w: no bucket", ErrInvalidLocation)
	}
	if strings.ContainsAny(bucket, "/\\?#@ ") {
		return fmt.Errorf("%w: bucket %q", ErrInvalidLocation, bucket)
	}
	return nil
}
