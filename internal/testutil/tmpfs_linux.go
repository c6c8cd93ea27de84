package testutil

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
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

// ReplaceWithFile puts a regular file where the folder dir is, in one step
// (renameat2 RENAME_EXCHANGE), as an operator's mistake or an unmounted
// volume would: a writer that recreates a missing folder cannot slip in
// between. It returns where the folder, with its files, now is. It may be
// called from any goroutine. (Only Linux can; elsewhere it fails with
// errors.ErrUnsupported.)
func ReplaceWithFile(dir string) (string, error) {
	moved := dir + ".moved"
	if err := os.WriteFile(moved, []byte("not a folder\n"), 0o644); err != nil {
		return "", err
	}
	if err := unix.Renameat2(unix.AT_FDCWD, moved, unix.AT_FDCWD, dir, unix.RENAME_EXCHANGE); err != nil {
		return "", fmt.Errorf("swapping %s for a file: %w", dir, err)
	}
	return moved, nil
}
