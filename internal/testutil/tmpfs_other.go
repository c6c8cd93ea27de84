//go:build !linux

package testutil

import (
	"errors"
	"fmt"
	"runtime"
	"testing"
)

// SmallDisk returns a folder on a fresh tmpfs of size bytes. Only Linux
// mounts one here: elsewhere the test is skipped with the reason.
func SmallDisk(t testing.TB, size int64) string {
	t.Helper()
	t.Skipf("SKIP: this test fills a small disk, and mounting a tmpfs is only done on Linux (this is %s)", runtime.GOOS)
	return ""
}

// ReplaceWithFile puts a regular file where the folder dir is, in one step.
// Only Linux can: elsewhere it fails with errors.ErrUnsupported.
func ReplaceWithFile(dir string) (string, error) {
	return "", fmt.Errorf("swapping %s for a file on %s: %w", dir, runtime.GOOS, errors.ErrUnsupported)
}
