package vfs

import (
	"io"
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"
)

// MemFS is an in-memory filesystem that remembers what a crash would keep.
// It is safe for concurrent use.
//
// Per file it keeps the current bytes and the durable ones: writes and
// truncates are unsynced until a successful File.Sync makes the file's
// current bytes and size durable. Per directory it keeps the current entries
// and the durable ones: Create, Rename, Remove, RemoveAll, MkdirAll and Lock
// (when it creates its file) change the current entries, and SyncDir makes
// a directory's current entries durable. A new directory is an entry of its
// parent, so it survives a crash only once its parent is synced. The root
// always exists. CrashClone builds a state a crash could leave.
//
// Paths are slash-separated and cleaned with path.Clean; a relative path is
// taken from the root, so "a/b" and "/a/b" are the same file. Errors are
// *fs.PathError values (*os.LinkError for Rename) wrapping the errno Linux
// gives: ENOENT (matching fs.ErrNotExist), ENOTDIR, EISDIR, ENOTEMPTY, EBADF
// for a write to a file opened read-only, ENOSPC (see SetCapacity).
// Operations on a closed File fail with fs.ErrClosed, as os's do. Unlike
// the OS, Open of a directory fails with EISDIR, and FileInfo.ModTime is
// always the zero time.
//
// A removed or replaced file stays in memory until its directory is synced,
// since a crash could bring it back.
type MemFS struct {
	mu       sync.Mutex
	root     *node
	seq      int64           // numbers directory changes, for CrashClone
	locks    map[string]bool // cleaned paths held by Lock
	capacity int64           // 0: unlimited
	used     int64           // bytes in files that have a name
}

var _ FS = (*MemFS)(nil)

// NewMem returns an empty MemFS holding only the root directory.
func NewMem() *MemFS {
	return &MemFS{root: newDirNode(0o755), locks: map[string]bool{}}
}

// SetCapacity sets a quota on the total size of all files that have a name
// (a removed file's bytes are freed at once, even if it is still open).
// Zero, the default, means no limit. A Write, WriteAt, Truncate or
// Preallocate that would take the total past the quota writes nothing and
// fails with an error matching syscall.ENOSPC, even if part of it would fit.
// Lowering the quota below what is in use deletes nothing; it only makes
// growth fail.
func (m *MemFS) SetCapacity(bytes int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.capacity = bytes
}

// clean turns name into a cleaned absolute path.
func clean(name string) string { return path.Clean("/" + name) }

// lookupLocked returns the node at p, a cleaned path.
func (m *MemFS) lookupLocked(p string) (*node, error) {
	n := m.root
	if p == "/" {
		return n, nil
	}
	for _, elem := range strings.Split(p[1:], "/") {
		if n.dir == nil {
			return nil, syscall.ENOTDIR
		}
		n = n.dir.entries[elem]
		if n == nil {
			return nil, syscall.ENOENT
		}
	}
	return n, nil
}

// parentLocked returns the directory holding p, a cleaned path other than
// the root, and p's last element.
func (m *MemFS) parentLocked(p string) (*node, string, error) {
	if p == "/" {
		return nil, "", syscall.EBUSY
	}
	dir, base := path.Split(p)
	parent, err := m.lookupLocked(path.Clean(dir))
	if err != nil {
		return nil, "", err
	}
	if parent.dir == nil {
		return nil, "", syscall.ENOTDIR
	}
	return parent, base, nil
}

// setEntryLocked points dir's entry name at n (nil removes it) as part of
// the directory change numbered seq, keeping link counts and capacity use.
func (m *MemFS) setEntryLocked(dir *node, name string, n *node, seq int64) {
	d := dir.dir
	if n != nil {
		m.linkLocked(n, 1)
	}
	if old := d.entries[name]; old != nil {
		m.linkLocked(old, -1)
	}
	if n == nil {
		delete(d.entries, name)
	} else {
		d.entries[name] = n
	}
	d.pending = append(d.pending, dirChange{seq: seq, name: name, node: n})
}

// linkLocked adds delta to the names of n and, for a directory, of
// everything in it.
func (m *MemFS) linkLocked(n *node, delta int) {
	if n.dir != nil {
		for _, child := range n.dir.entries {
			m.linkLocked(child, delta)
		}
		return
	}
	f := n.file
	was := f.nlink > 0
	f.nlink += delta
	if now := f.nlink > 0; now != was {
		if now {
			m.used += f.size()
		} else {
			m.used -= f.size()
		}
	}
}

// nextSeqLocked numbers a directory change.
func (m *MemFS) nextSeqLocked() int64 {
	m.seq++
	return m.seq
}

// Create implements FS.
func (m *MemFS) Create(name string) (File, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n, err := m.createLocked(clean(name), true)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: name, Err: err}
	}
	return &memFile{fs: m, node: n, name: name, writable: true}, nil
}

// createLocked returns the file at p, creating it if missing and emptying it
// if truncate is set.
func (m *MemFS) createLocked(p string, truncate bool) (*node, error) {
	dir, base, err := m.parentLocked(p)
	if err != nil {
		if err == syscall.EBUSY {
			err = syscall.EISDIR
		}
		return nil, err
	}
	n := dir.dir.entries[base]
	switch {
	case n == nil:
		n = newFileNode()
		m.setEntryLocked(dir, base, n, m.nextSeqLocked())
	case n.dir != nil:
		return nil, syscall.EISDIR
	case truncate:
		m.resizeLocked(n, 0)
	}
	return n, nil
}

// Open implements FS.
func (m *MemFS) Open(name string) (File, error) { return m.open(name, false) }

// OpenReadWrite implements FS.
func (m *MemFS) OpenReadWrite(name string) (File, error) { return m.open(name, true) }

func (m *MemFS) open(name string, writable bool) (File, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n, err := m.lookupLocked(clean(name))
	if err == nil && n.dir != nil {
		err = syscall.EISDIR
	}
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: name, Err: err}
	}
	return &memFile{fs: m, node: n, name: name, writable: writable}, nil
}

// Remove implements FS.
func (m *MemFS) Remove(name string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.removeLocked(clean(name), false); err != nil {
		return &fs.PathError{Op: "remove", Path: name, Err: err}
	}
	return nil
}

// RemoveAll implements FS. Like os.RemoveAll, it returns nil if name does
// not exist.
func (m *MemFS) RemoveAll(name string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	err := m.removeLocked(clean(name), true)
	if err == syscall.ENOENT {
		return nil
	}
	if err != nil {
		return &fs.PathError{Op: "unlinkat", Path: name, Err: err}
	}
	return nil
}

func (m *MemFS) removeLocked(p string, all bool) error {
	dir, base, err := m.parentLocked(p)
	if err != nil {
		return err
	}
	n := dir.dir.entries[base]
	if n == nil {
		return syscall.ENOENT
	}
	if !all && n.dir != nil && len(n.dir.entries) > 0 {
		return syscall.ENOTEMPTY
	}
	m.setEntryLocked(dir, base, nil, m.nextSeqLocked())
	return nil
}

// Rename implements FS. Like rename(2) it replaces a file with a file or a
// directory with an empty directory. Both halves of the rename belong to one
// directory change, so a crash keeps all of it or none.
func (m *MemFS) Rename(oldname, newname string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.renameLocked(clean(oldname), clean(newname)); err != nil {
		return &os.LinkError{Op: "rename", Old: oldname, New: newname, Err: err}
	}
	return nil
}

func (m *MemFS) renameLocked(oldp, newp string) error {
	odir, obase, err := m.parentLocked(oldp)
	if err != nil {
		return err
	}
	n := odir.dir.entries[obase]
	if n == nil {
		return syscall.ENOENT
	}
	ndir, nbase, err := m.parentLocked(newp)
	if err != nil {
		return err
	}
	if oldp == newp {
		return nil
	}
	if n.dir != nil && strings.HasPrefix(newp, oldp+"/") {
		return syscall.EINVAL // into itself
	}
	if target := ndir.dir.entries[nbase]; target != nil {
		switch {
		case n.dir == nil && target.dir != nil:
			return syscall.EISDIR
		case n.dir != nil && target.dir == nil:
			return syscall.ENOTDIR
		case target.dir != nil && len(target.dir.entries) > 0:
			return syscall.ENOTEMPTY
		}
	}
	seq := m.nextSeqLocked()
	m.setEntryLocked(ndir, nbase, n, seq)
	m.setEntryLocked(odir, obase, nil, seq)
	return nil
}

// List implements FS.
func (m *MemFS) List(dir string) ([]string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n, err := m.lookupLocked(clean(dir))
	if err == nil && n.dir == nil {
		err = syscall.ENOTDIR
	}
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: dir, Err: err}
	}
	names := make([]string, 0, len(n.dir.entries))
	for name := range n.dir.entries {
		names = append(names, name)
	}
	slices.Sort(names)
	return names, nil
}

// MkdirAll implements FS.
func (m *MemFS) MkdirAll(dir string, perm os.FileMode) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	p := clean(dir)
	n := m.root
	if p == "/" {
		return nil
	}
	for _, elem := range strings.Split(p[1:], "/") {
		child := n.dir.entries[elem]
		if child == nil {
			child = newDirNode(perm)
			m.setEntryLocked(n, elem, child, m.nextSeqLocked())
		}
		if child.dir == nil {
			return &fs.PathError{Op: "mkdir", Path: dir, Err: syscall.ENOTDIR}
		}
		n = child
	}
	return nil
}

// SyncDir implements FS. It fails with ENOTDIR on a file.
func (m *MemFS) SyncDir(dir string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	n, err := m.lookupLocked(clean(dir))
	if err == nil && n.dir == nil {
		err = syscall.ENOTDIR
	}
	if err != nil {
		return &fs.PathError{Op: "open", Path: dir, Err: err}
	}
	d := n.dir
	clear(d.durable)
	for name, child := range d.entries {
		d.durable[name] = child
	}
	d.pending = nil
	return nil
}

// Stat implements FS.
func (m *MemFS) Stat(name string) (os.FileInfo, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	p := clean(name)
	n, err := m.lookupLocked(p)
	if err != nil {
		return nil, &fs.PathError{Op: "stat", Path: name, Err: err}
	}
	return fileInfoLocked(path.Base(p), n), nil
}

func fileInfoLocked(name string, n *node) fileInfo {
	fi := fileInfo{name: name, mode: n.mode}
	if n.file != nil {
		fi.size = n.file.size()
	}
	return fi
}

// Lock implements FS with a lock table in the MemFS: the lock is held by
// path, and a second Lock of a held path fails with ErrLocked. It creates
// the file if it is missing. Locks do not survive CrashClone.
func (m *MemFS) Lock(name string) (io.Closer, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	p := clean(name)
	if m.locks[p] {
		return nil, &fs.PathError{Op: "lock", Path: name, Err: ErrLocked}
	}
	if _, err := m.createLocked(p, false); err != nil {
		return nil, &fs.PathError{Op: "open", Path: name, Err: err}
	}
	m.locks[p] = true
	return &memLock{fs: m, path: p, name: name}, nil
}

// memLock is a held MemFS lock.
type memLock struct {
	fs       *MemFS
	path     string
	name     string
	released bool // guarded by fs.mu
}

func (l *memLock) Close() error {
	l.fs.mu.Lock()
	defer l.fs.mu.Unlock()
	if l.released {
		return &fs.PathError{Op: "close", Path: l.name, Err: fs.ErrClosed}
	}
	l.released = true
	delete(l.fs.locks, l.path)
	return nil
}

// fileInfo describes a MemFS file or directory.
type fileInfo struct {
	name string
	size int64
	mode fs.FileMode
}

func (fi fileInfo) Name() string       { return fi.name }
func (fi fileInfo) Size() int64        { return fi.size }
func (fi fileInfo) Mode() fs.FileMode  { return fi.mode }
func (fi fileInfo) ModTime() time.Time { return time.Time{} }
func (fi fileInfo) IsDir() bool        { return fi.mode.IsDir() }
func (fi fileInfo) Sys() any           { return nil }
