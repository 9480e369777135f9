// Package vfs is partlog's filesystem seam. Every file the storage engine
// (segment, index, log) reads or writes goes through an FS, so that tests can
// swap the operating system for an in-memory filesystem that can crash and
// can fail chosen operations.
//
// Three implementations live here:
//
//   - Default (OS) is the real filesystem: Sync is fdatasync, Lock is flock,
//     Map is mmap.
//   - NewMem returns a MemFS. It remembers, per file, which bytes were synced
//     and, per directory, which entries were made durable by SyncDir, and
//     CrashClone returns the filesystem a crash at that instant could leave.
//   - WithFaults wraps any FS and fails the operations an Injector chooses
//     (ENOSPC, EIO on write or sync, short writes).
package vfs

import (
	"io"
	"os"
)

// File is an open file. Its methods have the meanings of *os.File's.
//
// Sync makes the file's data durable (fdatasync on the OS). Preallocate
// extends the file to at least size bytes of zeros and reserves the space on
// disk, so that later writes inside it cannot fail for lack of space.
type File interface {
	io.Reader
	io.ReaderAt
	io.Writer
	io.WriterAt
	io.Closer
	Sync() error
	Truncate(size int64) error
	Preallocate(size int64) error
	Size() (int64, error)
	Name() string
}

// FS is a filesystem. Names are slash-separated paths; a directory's entries
// become durable only after SyncDir on it, as on Linux.
type FS interface {
	// Create creates the named file, or truncates it, opened for reading
	// and writing.
	Create(name string) (File, error)
	// Open opens an existing file for reading.
	Open(name string) (File, error)
	// OpenReadWrite opens an existing file for reading and writing.
	OpenReadWrite(name string) (File, error)
	// Remove removes a file or an empty directory.
	Remove(name string) error
	// RemoveAll removes a directory and everything in it.
	RemoveAll(name string) error
	// Rename renames a file, replacing the target if it exists.
	Rename(oldname, newname string) error
	// List returns the names (not paths) of a directory's entries, sorted.
	List(dir string) ([]string, error)
	// MkdirAll creates a directory and its parents.
	MkdirAll(dir string, perm os.FileMode) error
	// SyncDir makes the directory's entries durable.
	SyncDir(dir string) error
	// Stat describes a file; a missing file is an error that matches
	// fs.ErrNotExist.
	Stat(name string) (os.FileInfo, error)
	// Lock takes an exclusive lock on the named file, creating it if
	// needed. A second Lock of the same file, from this process or another,
	// fails with ErrLocked until the returned Closer is closed.
	Lock(name string) (io.Closer, error)
}

// Mapping is the first Len bytes of a file held in memory for reading and
// writing: an mmap on the OS filesystem, a heap copy on any other. Bytes
// written into the slice reach the file no later than Flush.
type Mapping interface {
	// Bytes returns the mapped bytes. The slice is valid until Close.
	Bytes() []byte
	// Flush makes the first n mapped bytes durable in the file.
	Flush(n int) error
	// Close releases the mapping; it does not flush.
	Close() error
}
