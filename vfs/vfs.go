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
//
// The OS filesystem targets Linux; on other Unix systems Sync falls back to
// fsync and Preallocate to ftruncate.
package vfs

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path"
)

var (
	// ErrLocked is returned by Lock when the file is already locked, by
	// this process or another. The error Lock returns is an *fs.PathError
	// naming the locked path and wrapping ErrLocked.
	ErrLocked = errors.New("vfs: file already locked")
)

// File is an open file. Its methods have the meanings of *os.File's: Read and
// Write move a position shared by both, ReadAt and WriteAt do not, ReadAt
// returns io.EOF with n < len(p) at the end of the file, and every method
// but Name fails with an error matching fs.ErrClosed after Close. Errors are
// *fs.PathError values, as os returns.
//
// Sync makes the file's data and size durable (fdatasync on the OS).
// Preallocate extends the file to at least size bytes of zeros and reserves
// the space on disk, so that later writes inside it cannot fail for lack of
// space; a file already size bytes or longer is left alone. Name returns the
// path the file was opened with.
//
// A File may be used from several goroutines, but Read and Write share one
// position, so concurrent callers should use ReadAt and WriteAt.
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
// become durable only after SyncDir on it, as on Linux. A new file, a
// rename and a removal survive a crash only once the directory holding the
// entry (both directories, for a rename across directories) is synced, and a
// new directory only once its parent is synced.
//
// Errors are *fs.PathError (or *os.LinkError for Rename) values whose Err is
// the errno the OS would give, so errors.Is(err, fs.ErrNotExist) and
// errors.Is(err, syscall.ENOSPC) work on every implementation.
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

// Mapping is the first bytes of a file held in memory for reading and
// writing: an mmap on the OS filesystem, a heap copy on any other (see Map).
// Bytes written into the slice reach the file no later than Flush; readers
// of the file must not rely on seeing them earlier. A Mapping is not safe
// for concurrent use, though the bytes may be read concurrently as long as
// no one writes them.
type Mapping interface {
	// Bytes returns the mapped bytes. The slice is valid until Close.
	Bytes() []byte
	// Flush makes the first n mapped bytes durable in the file. n must be
	// between 0 and len(Bytes()); Flush(0) does nothing.
	Flush(n int) error
	// Close releases the mapping; it does not flush, and it does not close
	// the file. After Close, Bytes returns nil and Flush fails with an error
	// matching fs.ErrClosed.
	Close() error
}

// MkdirAllDurable creates dir and any missing parents, syncing each new
// directory's parent so that the whole path survives a crash.
func MkdirAllDurable(fsys FS, dir string, perm os.FileMode) error {
	dir = path.Clean(dir)
	var missing []string
	for d := dir; ; d = path.Dir(d) {
		if _, err := fsys.Stat(d); err == nil {
			break
		} else if !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		missing = append(missing, d)
		if d == path.Dir(d) {
			break
		}
	}
	if len(missing) == 0 {
		return nil
	}
	if err := fsys.MkdirAll(dir, perm); err != nil {
		return err
	}
	for i := len(missing) - 1; i >= 0; i-- {
		if err := fsys.SyncDir(path.Dir(missing[i])); err != nil {
			return err
		}
	}
	return nil
}

// WriteFileAtomic replaces name with data so that a crash leaves either the
// old file or the new one, whole: it writes a temporary file (name.tmp),
// syncs it, renames it over name and syncs the directory.
func WriteFileAtomic(fsys FS, name string, data []byte) error {
	tmp := name + ".tmp"
	f, err := fsys.Create(tmp)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = fsys.Rename(tmp, name)
	}
	if err == nil {
		err = fsys.SyncDir(path.Dir(name))
	}
	return err
}
