package vfs_test

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"sync"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/partlog/partlog/vfs"
)

var (
	errIO      = &fs.PathError{Op: "injected", Path: "disk", Err: syscall.EIO}
	errNoSpace = &fs.PathError{Op: "injected", Path: "disk", Err: syscall.ENOSPC}
)

// recorder is an Injector that records every op and fails none.
type recorder struct {
	mu  sync.Mutex
	ops []vfs.Op
}

func (r *recorder) Inject(op vfs.Op) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ops = append(r.ops, op)
	return nil
}

func TestFaultSeqNumbering(t *testing.T) {
	rec := &recorder{}
	fsys := vfs.WithFaults(vfs.NewMem(), rec)
	must := func(err error) {
		t.Helper()
		require.NoError(t, err)
	}
	must(fsys.MkdirAll("/d", 0o755))
	f, err := fsys.Create("/d/a")
	must(err)
	_, err = f.Write([]byte("abc"))
	must(err)
	_, err = f.WriteAt([]byte("d"), 3)
	must(err)
	must(f.Sync())
	must(f.Truncate(4))
	must(f.Preallocate(8))
	_, err = f.Size()
	must(err)
	must(f.Close())
	must(fsys.Rename("/d/a", "/d/b"))
	must(fsys.SyncDir("/d"))
	_, err = fsys.Stat("/d/b")
	must(err)
	_, err = fsys.List("/d")
	must(err)
	f, err = fsys.Open("/d/b")
	must(err)
	_, err = f.Read(make([]byte, 1))
	must(err)
	_, err = f.ReadAt(make([]byte, 1), 1)
	must(err)
	must(f.Close())
	f, err = fsys.OpenReadWrite("/d/b")
	must(err)
	must(f.Close())
	l, err := fsys.Lock("/d/LOCK")
	must(err)
	must(l.Close())
	must(fsys.Remove("/d/b"))
	must(fsys.RemoveAll("/d"))

	want := []string{
		"#0 mkdir-all /d",
		"#1 create /d/a",
		"#2 write /d/a",
		"#3 write /d/a",
		"#4 sync /d/a",
		"#5 truncate /d/a",
		"#6 preallocate /d/a",
		"#7 stat /d/a",
		"#8 rename /d/a",
		"#9 sync-dir /d",
		"#10 stat /d/b",
		"#11 list /d",
		"#12 open /d/b",
		"#13 read /d/b",
		"#14 read /d/b",
		"#15 open-read-write /d/b",
		"#16 lock /d/LOCK",
		"#17 remove /d/b",
		"#18 remove-all /d",
	}
	var got []string
	for _, op := range rec.ops {
		got = append(got, op.String())
	}
	require.Equal(t, want, got)
	require.EqualValues(t, len(want), fsys.Ops(), "Close is not an op")
}

func TestFailOnNth(t *testing.T) {
	fsys := vfs.WithFaults(vfs.NewMem(), vfs.FailOn(vfs.OpWrite, "*.log", 1, errIO))
	log, err := fsys.Create("/0.log")
	require.NoError(t, err)
	idx, err := fsys.Create("/0.index")
	require.NoError(t, err)

	_, err = log.Write([]byte("a"))
	require.NoError(t, err, "write 0 of a .log")
	_, err = idx.Write([]byte("i"))
	require.NoError(t, err, "not a .log: not counted")
	n, err := log.Write([]byte("b"))
	require.ErrorIs(t, err, syscall.EIO, "write 1 of a .log")
	require.Same(t, errIO, err, "the injected error is returned as it is")
	require.Zero(t, n)
	_, err = log.Write([]byte("c"))
	require.NoError(t, err, "only once")
	require.Equal(t, "ac", readFile(t, fsys, "/0.log"))
}

func TestFailOnEvery(t *testing.T) {
	fsys := vfs.WithFaults(vfs.NewMem(), vfs.FailOn(vfs.OpCreate, "/d/*", -1, errNoSpace))
	require.NoError(t, fsys.MkdirAll("/d", 0o755))
	for range 3 {
		_, err := fsys.Create("/d/f")
		require.ErrorIs(t, err, syscall.ENOSPC)
	}
	f, err := fsys.Create("/f")
	require.NoError(t, err, "the pattern holds a slash: whole paths are matched")
	require.NoError(t, f.Close())
}

func TestOnceAnyFailFrom(t *testing.T) {
	fsys := vfs.WithFaults(vfs.NewMem(), vfs.Once(vfs.FailOn(vfs.OpSync, "", -1, errIO)))
	f, err := fsys.Create("/f")
	require.NoError(t, err)
	require.ErrorIs(t, f.Sync(), syscall.EIO)
	require.NoError(t, f.Sync(), "Once fails once")

	fsys = vfs.WithFaults(vfs.NewMem(), vfs.Any(
		vfs.FailOn(vfs.OpSync, "", 0, errIO),
		vfs.FailOn(vfs.OpStat, "", -1, errNoSpace),
	))
	f, err = fsys.Create("/f")
	require.NoError(t, err)
	require.ErrorIs(t, f.Sync(), syscall.EIO)
	_, err = f.Size()
	require.ErrorIs(t, err, syscall.ENOSPC)
	require.NoError(t, f.Sync())

	fsys = vfs.WithFaults(vfs.NewMem(), vfs.FailFrom(2, errIO))
	require.NoError(t, fsys.MkdirAll("/d", 0o755))
	require.NoError(t, fsys.SyncDir("/"))
	for range 3 {
		require.ErrorIs(t, fsys.SyncDir("/"), syscall.EIO)
	}
}

// workload is a small sequence of filesystem operations, stopping at the
// first error.
func workload(fsys vfs.FS) error {
	if err := fsys.MkdirAll("/d", 0o755); err != nil {
		return err
	}
	f, err := fsys.Create("/d/f.tmp")
	if err != nil {
		return err
	}
	defer f.Close()
	if _, err := f.Write([]byte("checkpoint")); err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		return err
	}
	if err := fsys.Rename("/d/f.tmp", "/d/f"); err != nil {
		return err
	}
	return fsys.SyncDir("/d")
}

// TestFailAtEveryOp fails each operation of a workload in turn, as a
// recovery test would, and checks the workload stops with that error.
func TestFailAtEveryOp(t *testing.T) {
	clean := vfs.WithFaults(vfs.NewMem(), noFaults)
	require.NoError(t, workload(clean))
	n := clean.Ops()
	require.EqualValues(t, 6, n)
	for i := range n {
		rec := &recorder{}
		fsys := vfs.WithFaults(vfs.NewMem(), vfs.Any(rec, vfs.FailAt(i, errIO)))
		err := workload(fsys)
		require.ErrorIs(t, err, syscall.EIO, "op %d", i)
		require.EqualValues(t, i+1, fsys.Ops(), "the workload stops at the failed op")
		require.Equal(t, i, rec.ops[len(rec.ops)-1].Seq)
	}
}

func TestShortWrite(t *testing.T) {
	fsys := vfs.WithFaults(vfs.NewMem(), vfs.Any(
		vfs.FailOn(vfs.OpWrite, "", 0, vfs.ShortWrite(3, errIO)),
		vfs.FailOn(vfs.OpWrite, "", 2, vfs.ShortWrite(2, nil)),
		vfs.FailOn(vfs.OpSync, "", 0, vfs.ShortWrite(2, errNoSpace)),
	))
	f, err := fsys.Create("/f")
	require.NoError(t, err)
	n, err := f.Write([]byte("abcdef"))
	require.Equal(t, 3, n)
	require.ErrorIs(t, err, syscall.EIO)
	require.Same(t, errIO, err)
	// The position moved past the bytes written.
	n, err = f.Write([]byte("XYZ"))
	require.NoError(t, err)
	require.Equal(t, 3, n)
	n, err = f.WriteAt([]byte("123456"), 10)
	require.Equal(t, 2, n)
	require.Equal(t, io.ErrShortWrite, err)

	size, err := f.Size()
	require.NoError(t, err)
	require.EqualValues(t, 12, size)
	require.Equal(t, "abcXYZ\x00\x00\x00\x0012", readFile(t, fsys, "/f"))

	err = f.Sync()
	require.Same(t, errNoSpace, err, "on other ops a ShortWrite is its error")
	require.True(t, errors.Is(vfs.ShortWrite(1, errIO), syscall.EIO))
}

// TestFailedSyncLosesData pins down Linux's behaviour after a failed fsync:
// the dirty bytes stay readable but never become durable, while bytes
// written afterwards do.
func TestFailedSyncLosesData(t *testing.T) {
	m := newDurableDir(t)
	fsys := vfs.WithFaults(m, vfs.FailOn(vfs.OpSync, "/d/f", 1, errIO))
	f, err := fsys.Create("/d/f")
	require.NoError(t, err)
	require.NoError(t, fsys.SyncDir("/d"))
	_, err = f.Write([]byte("AAAA"))
	require.NoError(t, err)
	require.NoError(t, f.Sync()) // sync 0

	_, err = f.Write([]byte("BBBB"))
	require.NoError(t, err)
	_, err = f.WriteAt([]byte("xx"), 0) // over durable bytes
	require.NoError(t, err)
	require.ErrorIs(t, f.Sync(), syscall.EIO) // sync 1

	require.Equal(t, "xxAABBBB", readFile(t, fsys, "/d/f"), "still readable")
	require.Equal(t, "xxAABBBB", readFile(t, m.CrashClone(keepAll), "/d/f"), "the page cache survives a kill")
	require.Equal(t, "AAAA", readFile(t, m.CrashClone(keepNone), "/d/f"))

	require.NoError(t, f.Sync()) // the retry "succeeds"
	require.Equal(t, "AAAA\x00\x00\x00\x00", readFile(t, m.CrashClone(keepNone), "/d/f"),
		"a later sync does not resurrect the lost bytes")

	_, err = f.Write([]byte("CCCC"))
	require.NoError(t, err)
	require.NoError(t, f.Sync())
	require.Equal(t, "AAAA\x00\x00\x00\x00CCCC", readFile(t, m.CrashClone(keepNone), "/d/f"),
		"bytes written after the failed sync are durable")

	_, err = f.WriteAt([]byte("xxAABBBB"), 0) // written again: durable this time
	require.NoError(t, err)
	require.NoError(t, f.Sync())
	require.Equal(t, "xxAABBBBCCCC", readFile(t, m.CrashClone(keepNone), "/d/f"))
}

func TestFailedSyncOnOSFile(t *testing.T) {
	dir := t.TempDir()
	fsys := vfs.WithFaults(vfs.Default, vfs.FailOn(vfs.OpSync, "", 0, errIO))
	f, err := fsys.Create(path.Join(dir, "f"))
	require.NoError(t, err)
	_, err = f.Write([]byte("data"))
	require.NoError(t, err)
	require.ErrorIs(t, f.Sync(), syscall.EIO)
	require.NoError(t, f.Sync())
	require.NoError(t, f.Close())
	require.Equal(t, "data", readFile(t, vfs.Default, path.Join(dir, "f")))
}

func TestMapThroughFaults(t *testing.T) {
	m := vfs.NewMem()
	fsys := vfs.WithFaults(m, vfs.FailOn(vfs.OpSync, "", 0, errIO))
	f, err := fsys.Create("/idx")
	require.NoError(t, err)
	require.NoError(t, f.Preallocate(64))
	mp, err := vfs.Map(f, 64)
	require.NoError(t, err)
	copy(mp.Bytes(), "entry")
	require.ErrorIs(t, mp.Flush(5), syscall.EIO)
	require.NoError(t, mp.Flush(5))
	require.NoError(t, mp.Close())
	require.Equal(t, "entry", readFile(t, m, "/idx")[:5])
}

func TestOSFileFd(t *testing.T) {
	f, err := vfs.Default.Create(path.Join(t.TempDir(), "f"))
	require.NoError(t, err)
	defer f.Close()
	fd, ok := f.(interface{ Fd() uintptr })
	require.True(t, ok, "OS files expose Fd")
	require.NotEqual(t, ^uintptr(0), fd.Fd())
}

func TestOpKindString(t *testing.T) {
	require.Equal(t, "open-read-write", vfs.OpOpenReadWrite.String())
	require.Equal(t, "preallocate", vfs.OpPreallocate.String())
	require.Equal(t, "OpKind(200)", vfs.OpKind(200).String())
	require.Equal(t, "#3 sync /a", fmt.Sprint(vfs.Op{Kind: vfs.OpSync, Path: "/a", Seq: 3}))
}
