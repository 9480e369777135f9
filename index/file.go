package index

import (
	"errors"
	"fmt"
	"io/fs"
	"sync/atomic"

	"github.com/partlog/partlog/vfs"
)

// DefaultMaxBytes is segment.index.bytes' default: 10 MiB.
const DefaultMaxBytes = 10 << 20

// warmBytes is the tail of an index searched first. Appends and most lookups
// touch only the newest entries; keeping searches inside the last few pages
// keeps the rest of a large mapped index cold (Kafka does the same).
const warmBytes = 8192

// growStep is how much an index file grows at a time: a page, so that the
// file covers whole pages of its mapping.
const growStep = 4096

// file is what both indexes share: a file of fixed-size entries, mapped into
// memory. The mapping has room for maxEntries of them; the file itself
// grows a page at a time as entries come (Kafka's index files are sparse to
// the same end), so an idle partition holds a page per index, not
// segment.index.bytes, and a full disk shows up as an error from the
// growth, never as a fault on a mapped page.
type file struct {
	fs        vfs.FS
	path      string
	base      int64
	entrySize int

	f vfs.File
	m vfs.Mapping
	b []byte // m.Bytes(), len = maxEntries*entrySize
	// covered is the file's size: the mapped bytes below it are backed by
	// the file; those above it must not be touched until it grows.
	covered int

	// entries counts the valid entries. It is atomic so that lookups can run
	// beside Append: Append writes an entry, then publishes the new count.
	entries    atomic.Int64
	maxEntries int
	closed     bool
}

// openFile opens the index at path, creating it if it is missing. A new file
// has room for maxBytes of entries and grows as they come; an existing one
// is mapped at its size, every whole entry in it counted, and it is full
// until resized.
func openFile(fsys vfs.FS, path string, base int64, entrySize, maxBytes int) (*file, error) {
	x := &file{fs: fsys, path: path, base: base, entrySize: entrySize}
	f, err := fsys.OpenReadWrite(path)
	created := false
	if errors.Is(err, fs.ErrNotExist) {
		f, err = fsys.Create(path)
		created = true
	}
	if err != nil {
		return nil, fmt.Errorf("index: open %s: %w", path, err)
	}
	x.f = f
	size, err := f.Size()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("index: size of %s: %w", path, err)
	}
	if size%int64(entrySize) != 0 {
		f.Close()
		return nil, corruptf(path, "size %d is not a multiple of the entry size %d", size, entrySize)
	}
	if size > int64(maxInt32) {
		f.Close()
		return nil, corruptf(path, "size %d is too large", size)
	}
	x.entries.Store(size / int64(entrySize))
	if created {
		if err := x.resize(maxBytes); err != nil {
			f.Close()
			return nil, err
		}
		return x, nil
	}
	if err := x.remap(int(size)); err != nil {
		f.Close()
		return nil, err
	}
	return x, nil
}

const maxInt32 = 1<<31 - 1

// remap maps size bytes over the file, which may be shorter (see covered).
func (x *file) remap(size int) error {
	if x.m != nil {
		if err := x.m.Close(); err != nil {
			return fmt.Errorf("index: unmap %s: %w", x.path, err)
		}
		x.m, x.b = nil, nil
	}
	cur, err := x.f.Size()
	if err != nil {
		return fmt.Errorf("index: size of %s: %w", x.path, err)
	}
	m, err := vfs.MapAhead(x.f, size)
	if err != nil {
		return fmt.Errorf("index: map %s: %w", x.path, err)
	}
	x.m, x.b = m, m.Bytes()
	x.maxEntries = size / x.entrySize
	x.covered = int(min(cur, int64(size)))
	return nil
}

// resize makes room for maxBytes/entrySize entries, at least the current
// ones. Growing changes the mapping only: the file grows as entries come
// (grow). Shrinking cuts the file.
func (x *file) resize(maxBytes int) error {
	if x.closed {
		return ErrClosed
	}
	n := int(x.entries.Load())
	size := maxBytes / x.entrySize * x.entrySize
	if size < n*x.entrySize {
		size = n * x.entrySize
	}
	if size == len(x.b) && x.m != nil {
		return nil
	}
	// Write entries living in a heap copy back before the file changes size.
	if err := x.flush(); err != nil {
		return err
	}
	cur, err := x.f.Size()
	if err != nil {
		return fmt.Errorf("index: size of %s: %w", x.path, err)
	}
	if x.m != nil {
		if err := x.m.Close(); err != nil {
			return fmt.Errorf("index: unmap %s: %w", x.path, err)
		}
		x.m, x.b = nil, nil
	}
	if int64(size) < cur {
		if err := x.f.Truncate(int64(size)); err != nil {
			return fmt.Errorf("index: truncate %s to %d bytes: %w", x.path, size, err)
		}
	}
	return x.remap(size)
}

// grow makes the file cover the first n bytes of the mapping, a page at a
// time, allocating the disk space (Preallocate): the mapped bytes written
// next are backed by the file.
func (x *file) grow(n int) error {
	if n <= x.covered {
		return nil
	}
	size := min((n+growStep-1)/growStep*growStep, len(x.b))
	if err := x.f.Preallocate(int64(size)); err != nil {
		return fmt.Errorf("index: grow %s to %d bytes: %w", x.path, size, err)
	}
	x.covered = size
	return nil
}

// flush makes the valid entries durable.
func (x *file) flush() error {
	if x.m == nil {
		return nil
	}
	if err := x.m.Flush(int(x.entries.Load()) * x.entrySize); err != nil {
		return fmt.Errorf("index: flush %s: %w", x.path, err)
	}
	return nil
}

// entry returns the bytes of entry i.
func (x *file) entry(i int) []byte {
	off := i * x.entrySize
	return x.b[off : off+x.entrySize]
}

// slot returns where the next entry goes, growing the file to cover it:
// ErrFull when the index has no room, the growth's error (a full disk)
// when the file cannot grow.
func (x *file) slot() ([]byte, error) {
	if x.closed {
		return nil, ErrClosed
	}
	n := int(x.entries.Load())
	if n >= x.maxEntries {
		return nil, ErrFull
	}
	if err := x.grow((n + 1) * x.entrySize); err != nil {
		return nil, err
	}
	return x.entry(n), nil
}

// publish makes the entry written into slot() visible.
func (x *file) publish() { x.entries.Add(1) }

// search returns the index of the greatest entry whose key is at or below
// target among the first n entries, or -1 when there is none. key must be
// increasing over the entries.
func (x *file) search(n int, target int64, key func(i int) int64) int {
	if n == 0 || key(0) > target {
		return -1
	}
	lo, hi := 0, n-1
	// Search the warm tail first: it is where nearly all lookups land.
	if warm := n - warmBytes/x.entrySize; warm > 0 && key(warm) <= target {
		lo = warm
	}
	// Invariant: key(lo) <= target; the answer is in [lo, hi].
	for lo < hi {
		mid := int(uint(lo+hi+1) >> 1)
		if key(mid) <= target {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	return lo
}

// truncateEntries keeps the first n entries and zeroes the rest of the
// mapped bytes, so that a later crash cannot resurrect them.
func (x *file) truncateEntries(n int) {
	old := int(x.entries.Load())
	if n >= old {
		return
	}
	clear(x.b[n*x.entrySize : old*x.entrySize])
	x.entries.Store(int64(n))
}

// close trims the file to its entries and closes it.
func (x *file) close() error {
	if x.closed {
		return nil
	}
	err := x.resize(int(x.entries.Load()) * x.entrySize)
	if x.m != nil {
		if cerr := x.m.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("index: unmap %s: %w", x.path, cerr)
		}
		x.m, x.b = nil, nil
	}
	if cerr := x.f.Close(); cerr != nil && err == nil {
		err = fmt.Errorf("index: close %s: %w", x.path, cerr)
	}
	x.closed = true
	return err
}

func isNotExist(err error) bool { return errors.Is(err, fs.ErrNotExist) }
