package vfs

import "golang.org/x/sys/unix"

func fdatasync(fd int) error { return unix.Fdatasync(fd) }

// fallocate allocates [0, size) with mode 0, which also extends the file.
func fallocate(fd int, size int64) error { return unix.Fallocate(fd, 0, 0, size) }
