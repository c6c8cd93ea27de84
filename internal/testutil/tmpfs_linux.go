package testutil

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// SmallDisk returns a folder on a fresh tmpfs of size bytes, so that a test
// can fill a disk for real (writes then fail with ENOSPC) without filling
// the machine's. It is unmounted when the test ends. Mounting needs
// CAP_SYS_ADMIN (root in a container); without it the test is skipped with
// the reason, never silently passed.
func SmallDisk(t testing.TB, size int64) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "disk")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount("tmpfs", dir, "tmpfs", syscall.MS_NOSUID|syscall.MS_NODEV, fmt.Sprintf("size=%d,mode=0755", size)); err != nil {
		t.Skipf("SKIP: this test fills a small disk and cannot mount a tmpfs here (%v); run it as root or with CAP_SYS_ADMIN", err)
	}
	t.Cleanup(func() {
		// Lazy: a file a stage still holds open must not fail the test.
		if err := syscall.Unmount(dir, syscall.MNT_DETACH); err != nil {
			t.Errorf("unmounting the test's tmpfs %s: %v", dir, err)
		}
	})
	return dir
}
