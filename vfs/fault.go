package vfs

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sync/atomic"
)

// OpKind is the kind of a filesystem operation, as FaultFS reports it to an
// Injector.
type OpKind uint8

// The kinds of operations. Each comment names the methods of that kind.
const (
	OpCreate        OpKind = iota // FS.Create
	OpOpen                        // FS.Open
	OpOpenReadWrite               // FS.OpenReadWrite
	OpRemove                      // FS.Remove
	OpRemoveAll                   // FS.RemoveAll
	OpRename                      // FS.Rename; Op.Path is the old name
	OpList                        // FS.List
	OpMkdirAll                    // FS.MkdirAll
	OpSyncDir                     // FS.SyncDir
	OpStat                        // FS.Stat and File.Size
	OpLock                        // FS.Lock
	OpRead                        // File.Read and File.ReadAt
	OpWrite                       // File.Write and File.WriteAt
	OpSync                        // File.Sync
	OpTruncate                    // File.Truncate
	OpPreallocate                 // File.Preallocate
)

var opKindNames = [...]string{
	OpCreate:        "create",
	OpOpen:          "open",
	OpOpenReadWrite: "open-read-write",
	OpRemove:        "remove",
	OpRemoveAll:     "remove-all",
	OpRename:        "rename",
	OpList:          "list",
	OpMkdirAll:      "mkdir-all",
	OpSyncDir:       "sync-dir",
	OpStat:          "stat",
	OpLock:          "lock",
	OpRead:          "read",
	OpWrite:         "write",
	OpSync:          "sync",
	OpTruncate:      "truncate",
	OpPreallocate:   "preallocate",
}

// String returns the kind's name, such as "write" or "sync-dir".
func (k OpKind) String() string {
	if int(k) < len(opKindNames) {
		return opKindNames[k]
	}
	return fmt.Sprintf("OpKind(%d)", k)
}

// Op is one operation through a FaultFS.
type Op struct {
	// Kind is what the operation was: which FS or File method.
	Kind OpKind
	// Path is the name the operation was given, or for a File method the
	// name the file was opened with.
	Path string
	// Seq is the 0-based index of the operation among all operations
	// through the FaultFS, failed ones included: running a workload once
	// and reading Ops gives the range of Seq to fail one by one.
	Seq int64
}

// String returns the op as "#seq kind path".
func (op Op) String() string { return fmt.Sprintf("#%d %s %s", op.Seq, op.Kind, op.Path) }

// Injector chooses which operations fail. Inject is called before each
// operation, possibly from several goroutines at once; a non-nil error is
// returned in place of doing the operation.
type Injector interface {
	Inject(op Op) error
}

// InjectorFunc is an Injector made from a function.
type InjectorFunc func(Op) error

// Inject calls f(op).
func (f InjectorFunc) Inject(op Op) error { return f(op) }

// FaultFS is an FS whose operations an Injector can fail. Close is never
// failed and is not counted as an operation.
//
// An injected error is returned as it is, so errors.Is matches it. A
// ShortWrite error on a write writes part of the data first. A failed Sync
// on a MemFS file also marks the bytes written since its last sync clean
// without making them durable, as Linux does after a writeback error (see
// fsyncgate): reads still return them, but no later Sync writes them, so a
// crash loses them unless they are written again. On an OS file the error is
// only returned.
type FaultFS struct {
	fs  FS
	inj Injector
	seq atomic.Int64
}

var _ FS = (*FaultFS)(nil)

// WithFaults wraps fs so that inj can fail its operations and its files'.
func WithFaults(fs FS, inj Injector) *FaultFS {
	return &FaultFS{fs: fs, inj: inj}
}

// Ops returns how many operations have gone through f, failed ones
// included: the Seq the next operation will get.
func (f *FaultFS) Ops() int64 { return f.seq.Load() }

// inject numbers an operation and asks the injector about it.
func (f *FaultFS) inject(kind OpKind, path string) error {
	op := Op{Kind: kind, Path: path, Seq: f.seq.Add(1) - 1}
	return f.inj.Inject(op)
}

// injectPlain is inject for an operation that is not a write: a ShortWrite
// error stands for the error it carries.
func (f *FaultFS) injectPlain(kind OpKind, path string) error {
	return plain(f.inject(kind, path))
}

func (f *FaultFS) openWith(kind OpKind, name string, open func(string) (File, error)) (File, error) {
	if err := f.injectPlain(kind, name); err != nil {
		return nil, err
	}
	file, err := open(name)
	if err != nil {
		return nil, err
	}
	return &faultFile{fs: f, f: file}, nil
}

// Create implements FS.
func (f *FaultFS) Create(name string) (File, error) { return f.openWith(OpCreate, name, f.fs.Create) }

// Open implements FS.
func (f *FaultFS) Open(name string) (File, error) { return f.openWith(OpOpen, name, f.fs.Open) }

// OpenReadWrite implements FS.
func (f *FaultFS) OpenReadWrite(name string) (File, error) {
	return f.openWith(OpOpenReadWrite, name, f.fs.OpenReadWrite)
}

// Remove implements FS.
func (f *FaultFS) Remove(name string) error {
	if err := f.injectPlain(OpRemove, name); err != nil {
		return err
	}
	return f.fs.Remove(name)
}

// RemoveAll implements FS.
func (f *FaultFS) RemoveAll(name string) error {
	if err := f.injectPlain(OpRemoveAll, name); err != nil {
		return err
	}
	return f.fs.RemoveAll(name)
}

// Rename implements FS. The Op's Path is oldname.
func (f *FaultFS) Rename(oldname, newname string) error {
	if err := f.injectPlain(OpRename, oldname); err != nil {
		return err
	}
	return f.fs.Rename(oldname, newname)
}

// List implements FS.
func (f *FaultFS) List(dir string) ([]string, error) {
	if err := f.injectPlain(OpList, dir); err != nil {
		return nil, err
	}
	return f.fs.List(dir)
}

// MkdirAll implements FS.
func (f *FaultFS) MkdirAll(dir string, perm os.FileMode) error {
	if err := f.injectPlain(OpMkdirAll, dir); err != nil {
		return err
	}
	return f.fs.MkdirAll(dir, perm)
}

// SyncDir implements FS.
func (f *FaultFS) SyncDir(dir string) error {
	if err := f.injectPlain(OpSyncDir, dir); err != nil {
		return err
	}
	return f.fs.SyncDir(dir)
}

// Stat implements FS.
func (f *FaultFS) Stat(name string) (os.FileInfo, error) {
	if err := f.injectPlain(OpStat, name); err != nil {
		return nil, err
	}
	return f.fs.Stat(name)
}

// Lock implements FS.
func (f *FaultFS) Lock(name string) (io.Closer, error) {
	if err := f.injectPlain(OpLock, name); err != nil {
		return nil, err
	}
	return f.fs.Lock(name)
}

// syncFailer is a File that can model a failed sync: *memFile, or a
// faultFile over one.
type syncFailer interface {
	failSync()
}

// faultFile is a File opened through a FaultFS.
type faultFile struct {
	fs *FaultFS
	f  File
}

var _ File = (*faultFile)(nil)

func (f *faultFile) Read(p []byte) (int, error) {
	if err := f.fs.injectPlain(OpRead, f.f.Name()); err != nil {
		return 0, err
	}
	return f.f.Read(p)
}

func (f *faultFile) ReadAt(p []byte, off int64) (int, error) {
	if err := f.fs.injectPlain(OpRead, f.f.Name()); err != nil {
		return 0, err
	}
	return f.f.ReadAt(p, off)
}

func (f *faultFile) Write(p []byte) (int, error) {
	return f.write(p, f.f.Write)
}

func (f *faultFile) WriteAt(p []byte, off int64) (int, error) {
	return f.write(p, func(p []byte) (int, error) { return f.f.WriteAt(p, off) })
}

// write asks the injector about a write of p and carries it out with fn:
// all of it, the prefix a ShortWrite allows, or none.
func (f *faultFile) write(p []byte, fn func([]byte) (int, error)) (int, error) {
	err := f.fs.inject(OpWrite, f.f.Name())
	if err == nil {
		return fn(p)
	}
	var sw *shortWriteError
	if !errors.As(err, &sw) {
		return 0, err
	}
	n, werr := fn(p[:min(max(sw.n, 0), len(p))])
	if werr != nil {
		return n, werr
	}
	return n, sw.cause()
}

func (f *faultFile) Sync() error {
	if err := f.fs.injectPlain(OpSync, f.f.Name()); err != nil {
		f.failSync()
		return err
	}
	return f.f.Sync()
}

// failSync passes a failed sync on to a MemFS file underneath.
func (f *faultFile) failSync() {
	if sf, ok := f.f.(syncFailer); ok {
		sf.failSync()
	}
}

func (f *faultFile) Truncate(size int64) error {
	if err := f.fs.injectPlain(OpTruncate, f.f.Name()); err != nil {
		return err
	}
	return f.f.Truncate(size)
}

func (f *faultFile) Preallocate(size int64) error {
	if err := f.fs.injectPlain(OpPreallocate, f.f.Name()); err != nil {
		return err
	}
	return f.f.Preallocate(size)
}

func (f *faultFile) Size() (int64, error) {
	if err := f.fs.injectPlain(OpStat, f.f.Name()); err != nil {
		return 0, err
	}
	return f.f.Size()
}

func (f *faultFile) Name() string { return f.f.Name() }

func (f *faultFile) Close() error { return f.f.Close() }
