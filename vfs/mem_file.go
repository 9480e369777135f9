package vfs

import (
	"errors"
	"io"
	"io/fs"
	"syscall"
)

// memFile is an open MemFS file. All its state is guarded by fs.mu.
type memFile struct {
	fs       *MemFS
	node     *node
	name     string // as opened, returned by Name
	writable bool
	pos      int64 // for Read and Write
	closed   bool
}

var _ File = (*memFile)(nil)

// checkLocked returns the error for op on f, if f is closed or op writes to
// a file opened read-only.
func (f *memFile) checkLocked(op string, write bool) error {
	switch {
	case f.closed:
		return &fs.PathError{Op: op, Path: f.name, Err: fs.ErrClosed}
	case write && !f.writable:
		return &fs.PathError{Op: op, Path: f.name, Err: syscall.EBADF}
	}
	return nil
}

func (f *memFile) Read(p []byte) (int, error) {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if err := f.checkLocked("read", false); err != nil {
		return 0, err
	}
	if len(p) == 0 {
		return 0, nil
	}
	n, err := f.readAtLocked(p, f.pos)
	f.pos += int64(n)
	if n > 0 {
		err = nil // io.Reader: io.EOF comes on the next call
	}
	return n, err
}

func (f *memFile) ReadAt(p []byte, off int64) (int, error) {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if err := f.checkLocked("read", false); err != nil {
		return 0, err
	}
	if off < 0 {
		return 0, &fs.PathError{Op: "readat", Path: f.name, Err: errors.New("negative offset")}
	}
	return f.readAtLocked(p, off)
}

// readAtLocked reads like ReadAt: n < len(p) only with io.EOF.
func (f *memFile) readAtLocked(p []byte, off int64) (int, error) {
	data := f.node.file.data
	if off >= int64(len(data)) {
		if len(p) == 0 {
			return 0, nil
		}
		return 0, io.EOF
	}
	n := copy(p, data[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

func (f *memFile) Write(p []byte) (int, error) {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if err := f.checkLocked("write", true); err != nil {
		return 0, err
	}
	if err := f.writeAtLocked(p, f.pos); err != nil {
		return 0, err
	}
	f.pos += int64(len(p))
	return len(p), nil
}

func (f *memFile) WriteAt(p []byte, off int64) (int, error) {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if err := f.checkLocked("write", true); err != nil {
		return 0, err
	}
	if off < 0 {
		return 0, &fs.PathError{Op: "writeat", Path: f.name, Err: errors.New("negative offset")}
	}
	if err := f.writeAtLocked(p, off); err != nil {
		return 0, err
	}
	return len(p), nil
}

// writeAtLocked writes all of p at off, or nothing if the capacity does not
// allow it.
func (f *memFile) writeAtLocked(p []byte, off int64) error {
	if len(p) == 0 {
		return nil
	}
	d := f.node.file
	end := off + int64(len(p))
	if err := f.fs.growLocked(d, end); err != nil {
		return &fs.PathError{Op: "write", Path: f.name, Err: err}
	}
	if d.nlink > 0 {
		f.fs.used += max(0, end-d.size())
	}
	d.writeAt(p, off)
	return nil
}

func (f *memFile) Truncate(size int64) error {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if err := f.checkLocked("truncate", true); err != nil {
		return err
	}
	if size < 0 {
		return &fs.PathError{Op: "truncate", Path: f.name, Err: syscall.EINVAL}
	}
	if err := f.fs.growLocked(f.node.file, size); err != nil {
		return &fs.PathError{Op: "truncate", Path: f.name, Err: err}
	}
	f.fs.resizeLocked(f.node, size)
	return nil
}

func (f *memFile) Preallocate(size int64) error {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if err := f.checkLocked("preallocate", true); err != nil {
		return err
	}
	if size <= f.node.file.size() {
		return nil
	}
	if err := f.fs.growLocked(f.node.file, size); err != nil {
		return &fs.PathError{Op: "preallocate", Path: f.name, Err: err}
	}
	f.fs.resizeLocked(f.node, size)
	return nil
}

func (f *memFile) Sync() error {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if err := f.checkLocked("sync", false); err != nil {
		return err
	}
	f.node.file.sync()
	return nil
}

// failSync marks the bytes written since the last sync clean without making
// them durable, as Linux does when writeback fails. FaultFS calls it when
// it fails a Sync.
func (f *memFile) failSync() {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	f.node.file.failSync()
}

func (f *memFile) Size() (int64, error) {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if err := f.checkLocked("stat", false); err != nil {
		return 0, err
	}
	return f.node.file.size(), nil
}

func (f *memFile) Name() string { return f.name }

func (f *memFile) Close() error {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if err := f.checkLocked("close", false); err != nil {
		return err
	}
	f.closed = true
	return nil
}

// growLocked returns ENOSPC if growing d to size bytes would pass the
// capacity. Files without a name are not counted.
func (m *MemFS) growLocked(d *fileData, size int64) error {
	grow := size - d.size()
	if grow > 0 && d.nlink > 0 && m.capacity > 0 && m.used+grow > m.capacity {
		return syscall.ENOSPC
	}
	return nil
}

// resizeLocked truncates or zero-extends n to size, keeping the capacity
// count; the caller has checked the capacity.
func (m *MemFS) resizeLocked(n *node, size int64) {
	d := n.file
	if d.nlink > 0 {
		m.used += size - d.size()
	}
	d.truncate(size)
}
