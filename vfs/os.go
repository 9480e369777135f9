package vfs

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// Default is the operating system's filesystem.
var Default FS = OSFS{}

// OSFS is the operating system's filesystem. Its files are *os.File
// underneath: Sync is fdatasync, Preallocate is fallocate, Lock is flock and
// Map is mmap. Files it opens also have an Fd method,
//
//	Fd() uintptr
//
// found by type assertion, for callers that hand the descriptor to the
// kernel (sendfile). Names are used as given, relative to the working
// directory.
type OSFS struct{}

var _ FS = OSFS{}

// Create implements FS.
func (OSFS) Create(name string) (File, error) {
	return openOS(name, os.O_RDWR|os.O_CREATE|os.O_TRUNC)
}

// Open implements FS.
func (OSFS) Open(name string) (File, error) {
	return openOS(name, os.O_RDONLY)
}

// OpenReadWrite implements FS.
func (OSFS) OpenReadWrite(name string) (File, error) {
	return openOS(name, os.O_RDWR)
}

func openOS(name string, flag int) (File, error) {
	f, err := os.OpenFile(name, flag, 0o644)
	if err != nil {
		return nil, err
	}
	return &osFile{f: f}, nil
}

// Remove implements FS.
func (OSFS) Remove(name string) error { return os.Remove(name) }

// RemoveAll implements FS.
func (OSFS) RemoveAll(name string) error { return os.RemoveAll(name) }

// Rename implements FS.
func (OSFS) Rename(oldname, newname string) error { return os.Rename(oldname, newname) }

// List implements FS.
func (OSFS) List(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir) // sorted by name
	if err != nil {
		return nil, err
	}
	names := make([]string, len(entries))
	for i, e := range entries {
		names[i] = e.Name()
	}
	return names, nil
}

// MkdirAll implements FS.
func (OSFS) MkdirAll(dir string, perm os.FileMode) error { return os.MkdirAll(dir, perm) }

// SyncDir implements FS. It opens dir as a directory (so a file fails with
// ENOTDIR) and fsyncs it.
func (OSFS) SyncDir(dir string) error {
	d, err := os.OpenFile(dir, os.O_RDONLY|syscall.O_DIRECTORY, 0)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

// Stat implements FS.
func (OSFS) Stat(name string) (os.FileInfo, error) { return os.Stat(name) }

// Lock implements FS with flock(LOCK_EX|LOCK_NB). A flock belongs to an
// open file description, so a second Lock of the same file fails even from
// the same process. The lock is released when the returned Closer is closed
// or the process exits; the file is left in place.
func (OSFS) Lock(name string) (io.Closer, error) {
	f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	if err := control(f, "lock", func(fd int) error {
		return unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB)
	}); err != nil {
		f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			err = &fs.PathError{Op: "lock", Path: name, Err: ErrLocked}
		}
		return nil, err
	}
	return f, nil
}

// osFile is a File on the OS filesystem.
type osFile struct {
	f *os.File
}

var _ File = (*osFile)(nil)

func (f *osFile) Read(p []byte) (int, error)               { return f.f.Read(p) }
func (f *osFile) ReadAt(p []byte, off int64) (int, error)  { return f.f.ReadAt(p, off) }
func (f *osFile) Write(p []byte) (int, error)              { return f.f.Write(p) }
func (f *osFile) WriteAt(p []byte, off int64) (int, error) { return f.f.WriteAt(p, off) }
func (f *osFile) Close() error                             { return f.f.Close() }
func (f *osFile) Truncate(size int64) error                { return f.f.Truncate(size) }
func (f *osFile) Name() string                             { return f.f.Name() }
func (f *osFile) Fd() uintptr                              { return f.f.Fd() }

func (f *osFile) control(op string, fn func(fd int) error) error {
	return control(f.f, op, fn)
}

// Sync is fdatasync: it writes the data and the metadata needed to read it
// back (the size), but not timestamps.
func (f *osFile) Sync() error {
	return f.control("sync", fdatasync)
}

// Size returns the file's current size.
func (f *osFile) Size() (int64, error) {
	fi, err := f.f.Stat()
	if err != nil {
		return 0, err
	}
	return fi.Size(), nil
}

// Preallocate extends the file to size bytes with fallocate, or with
// ftruncate where the filesystem does not support fallocate (the space is
// then not reserved).
func (f *osFile) Preallocate(size int64) error {
	cur, err := f.Size()
	if err != nil || size <= cur {
		return err
	}
	err = f.control("preallocate", func(fd int) error { return fallocate(fd, size) })
	if errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, unix.ENOSYS) {
		return f.f.Truncate(size)
	}
	return err
}

// control runs fn on f's descriptor, keeping the descriptor open meanwhile,
// retrying on EINTR, and wrapping a failure in an *fs.PathError.
func control(f *os.File, op string, fn func(fd int) error) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return &fs.PathError{Op: op, Path: f.Name(), Err: err}
	}
	var opErr error
	if err := rc.Control(func(fd uintptr) {
		for {
			opErr = fn(int(fd))
			if opErr != unix.EINTR {
				return
			}
		}
	}); err != nil {
		// Control fails only when the file is closed.
		return &fs.PathError{Op: op, Path: f.Name(), Err: fs.ErrClosed}
	}
	if opErr != nil {
		return &fs.PathError{Op: op, Path: f.Name(), Err: opErr}
	}
	return nil
}
