package vfs

import (
	"fmt"
	"io"
	"io/fs"
	"os"

	"golang.org/x/sys/unix"
)

// Map maps the first size bytes of f, which must be open for reading and
// writing and at least size bytes long (Preallocate it first); a shorter
// file is an error rather than a later SIGBUS. Map does not take ownership
// of f: close the Mapping before the file.
//
// A file opened by OSFS is mapped with mmap(MAP_SHARED): bytes written into
// the mapping are in the page cache at once, and Flush(n) is msync(MS_SYNC)
// over the pages holding the first n bytes. Any other File (a MemFS file, or
// an OS file behind WithFaults) gets a heap copy: Map reads the bytes with
// ReadAt, and Flush(n) writes the first n back with WriteAt at offset 0 and
// then calls Sync, so those calls (and their injected faults) are what a
// test sees. Size 0 gives an empty Mapping without mapping anything.
func Map(f File, size int) (Mapping, error) {
	have, err := f.Size()
	if err != nil {
		return nil, err
	}
	if int64(size) > have {
		return nil, fmt.Errorf("vfs: map %d bytes of %s: the file has only %d", size, f.Name(), have)
	}
	return MapAhead(f, size)
}

// MapAhead is Map for a file that grows into its mapping: the file may be
// shorter than size. Mapped bytes past the file's end stand for bytes the
// file does not have yet: on the OS filesystem touching them faults
// (SIGBUS) until the file grows to cover them (Preallocate, Truncate), and
// in a heap copy they read as zeros. Grow the file first, then write; Flush
// only bytes the file covers.
func MapAhead(f File, size int) (Mapping, error) {
	if size < 0 {
		return nil, fmt.Errorf("vfs: map %s: negative size %d", f.Name(), size)
	}
	if of, ok := f.(*osFile); ok {
		return mapOS(of, size)
	}
	have, err := f.Size()
	if err != nil {
		return nil, err
	}
	return mapHeap(f, size, int(min(have, int64(size))))
}

// mmapMapping is a Mapping made by mmap.
type mmapMapping struct {
	f      *osFile
	b      []byte // nil for size 0
	closed bool
}

func mapOS(f *osFile, size int) (*mmapMapping, error) {
	m := &mmapMapping{f: f}
	if size == 0 {
		return m, nil
	}
	err := f.control("mmap", func(fd int) error {
		b, err := unix.Mmap(fd, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
		m.b = b
		return err
	})
	if err != nil {
		return nil, err
	}
	return m, nil
}

func (m *mmapMapping) Bytes() []byte { return m.b }

func (m *mmapMapping) Flush(n int) error {
	if err := checkFlush(m.closed, m.f.Name(), n, len(m.b)); err != nil || n == 0 {
		return err
	}
	// The mapping starts at offset 0, so rounding n up to a page boundary
	// covers exactly the pages that hold the first n bytes.
	page := os.Getpagesize()
	end := min((n+page-1)/page*page, len(m.b))
	if err := unix.Msync(m.b[:end], unix.MS_SYNC); err != nil {
		return &fs.PathError{Op: "msync", Path: m.f.Name(), Err: err}
	}
	return nil
}

func (m *mmapMapping) Close() error {
	if m.closed {
		return &fs.PathError{Op: "munmap", Path: m.f.Name(), Err: fs.ErrClosed}
	}
	m.closed = true
	b := m.b
	m.b = nil
	if b == nil {
		return nil
	}
	if err := unix.Munmap(b); err != nil {
		return &fs.PathError{Op: "munmap", Path: m.f.Name(), Err: err}
	}
	return nil
}

// heapMapping is a Mapping held in a heap buffer and written back through
// the File's own methods.
type heapMapping struct {
	f      File
	b      []byte
	closed bool
}

// mapHeap reads the first have of size bytes into a heap copy; the rest
// are zeros.
func mapHeap(f File, size, have int) (*heapMapping, error) {
	b := make([]byte, size)
	if have > 0 {
		n, err := f.ReadAt(b[:have], 0)
		if n < have {
			if err == nil || err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return nil, fmt.Errorf("vfs: map %s: %w", f.Name(), err)
		}
	}
	return &heapMapping{f: f, b: b}, nil
}

func (m *heapMapping) Bytes() []byte { return m.b }

func (m *heapMapping) Flush(n int) error {
	if err := checkFlush(m.closed, m.f.Name(), n, len(m.b)); err != nil || n == 0 {
		return err
	}
	if _, err := m.f.WriteAt(m.b[:n], 0); err != nil {
		return err
	}
	return m.f.Sync()
}

func (m *heapMapping) Close() error {
	if m.closed {
		return &fs.PathError{Op: "unmap", Path: m.f.Name(), Err: fs.ErrClosed}
	}
	m.closed = true
	m.b = nil
	return nil
}

func checkFlush(closed bool, name string, n, size int) error {
	if closed {
		return &fs.PathError{Op: "flush", Path: name, Err: fs.ErrClosed}
	}
	if n < 0 || n > size {
		return fmt.Errorf("vfs: flush %d bytes of a %d-byte mapping of %s", n, size, name)
	}
	return nil
}
