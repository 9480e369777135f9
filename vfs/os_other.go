//go:build unix && !linux

package vfs

import "golang.org/x/sys/unix"

// fdatasync falls back to fsync where fdatasync is not available.
func fdatasync(fd int) error { return unix.Fsync(fd) }

// fallocate is unsupported here; Preallocate then truncates instead.
func fallocate(fd int, size int64) error { return unix.EOPNOTSUPP }
