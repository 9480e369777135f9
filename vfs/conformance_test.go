package vfs_test

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"path"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/partlog/partlog/vfs"
)

// fsCase makes a fresh filesystem and an empty directory in it.
type fsCase struct {
	name string
	new  func(t *testing.T) (vfs.FS, string)
}

// noFaults is an Injector that fails nothing.
var noFaults = vfs.InjectorFunc(func(vfs.Op) error { return nil })

// allFS lists every FS implementation: the conformance suite runs on each.
func allFS() []fsCase {
	mem := func(t *testing.T) (vfs.FS, string) {
		m := vfs.NewMem()
		require.NoError(t, m.MkdirAll("/data", 0o755))
		return m, "/data"
	}
	return []fsCase{
		{"OS", func(t *testing.T) (vfs.FS, string) { return vfs.Default, t.TempDir() }},
		{"Mem", mem},
		{"FaultOS", func(t *testing.T) (vfs.FS, string) {
			return vfs.WithFaults(vfs.Default, noFaults), t.TempDir()
		}},
		{"FaultMem", func(t *testing.T) (vfs.FS, string) {
			fsys, dir := mem(t)
			return vfs.WithFaults(fsys, noFaults), dir
		}},
	}
}

func TestConformance(t *testing.T) {
	tests := []struct {
		name string
		fn   func(t *testing.T, fsys vfs.FS, dir string)
	}{
		{"CreateWriteRead", testCreateWriteRead},
		{"ReadAtEOF", testReadAtEOF},
		{"CreateTruncates", testCreateTruncates},
		{"WriteAtPastEnd", testWriteAtPastEnd},
		{"OpenReadOnly", testOpenReadOnly},
		{"OpenReadWrite", testOpenReadWrite},
		{"Missing", testMissing},
		{"TruncatePreallocate", testTruncatePreallocate},
		{"ClosedFile", testClosedFile},
		{"Rename", testRename},
		{"Remove", testRemove},
		{"List", testList},
		{"MkdirAll", testMkdirAll},
		{"SyncDir", testSyncDir},
		{"Stat", testStat},
		{"Lock", testLock},
		{"Map", testMap},
		{"MapEdges", testMapEdges},
	}
	for _, c := range allFS() {
		for _, tc := range tests {
			t.Run(c.name+"/"+tc.name, func(t *testing.T) {
				fsys, dir := c.new(t)
				tc.fn(t, fsys, dir)
			})
		}
	}
}

// writeFile creates name holding data, syncs it and closes it.
func writeFile(t testing.TB, fsys vfs.FS, name, data string) {
	t.Helper()
	f, err := fsys.Create(name)
	require.NoError(t, err)
	_, err = f.Write([]byte(data))
	require.NoError(t, err)
	require.NoError(t, f.Sync())
	require.NoError(t, f.Close())
}

// readFile returns name's contents.
func readFile(t testing.TB, fsys vfs.FS, name string) string {
	t.Helper()
	f, err := fsys.Open(name)
	require.NoError(t, err)
	defer f.Close()
	b, err := io.ReadAll(f)
	require.NoError(t, err)
	return string(b)
}

func testCreateWriteRead(t *testing.T, fsys vfs.FS, dir string) {
	name := path.Join(dir, "f")
	f, err := fsys.Create(name)
	require.NoError(t, err)
	require.Equal(t, name, f.Name())
	for _, s := range []string{"hello ", "world"} {
		n, err := f.Write([]byte(s))
		require.NoError(t, err)
		require.Equal(t, len(s), n)
	}
	require.NoError(t, f.Sync())
	size, err := f.Size()
	require.NoError(t, err)
	require.EqualValues(t, 11, size)
	// Read shares the position Write moved: it is at the end.
	n, err := f.Read(make([]byte, 4))
	require.Equal(t, 0, n)
	require.ErrorIs(t, err, io.EOF)
	require.NoError(t, f.Close())

	f, err = fsys.Open(name)
	require.NoError(t, err)
	buf := make([]byte, 4)
	n, err = f.Read(buf)
	require.NoError(t, err)
	require.Equal(t, "hell", string(buf[:n]))
	rest, err := io.ReadAll(f)
	require.NoError(t, err)
	require.Equal(t, "o world", string(rest))
	n, err = f.Read(buf)
	require.Equal(t, 0, n)
	require.Equal(t, io.EOF, err)
	n, err = f.Read(nil)
	require.Equal(t, 0, n)
	require.NoError(t, err)
	require.NoError(t, f.Close())
}

func testReadAtEOF(t *testing.T, fsys vfs.FS, dir string) {
	name := path.Join(dir, "f")
	writeFile(t, fsys, name, "hello world")
	f, err := fsys.Open(name)
	require.NoError(t, err)
	defer f.Close()

	buf := make([]byte, 5)
	n, err := f.ReadAt(buf, 6)
	require.NoError(t, err)
	require.Equal(t, "world", string(buf[:n]))

	buf = make([]byte, 10)
	n, err = f.ReadAt(buf, 6)
	require.Equal(t, io.EOF, err)
	require.Equal(t, 5, n)
	require.Equal(t, "world", string(buf[:n]))

	for _, off := range []int64{11, 100} {
		n, err = f.ReadAt(buf, off)
		require.Equal(t, io.EOF, err, "offset %d", off)
		require.Equal(t, 0, n)
	}
	n, err = f.ReadAt(nil, 11)
	require.NoError(t, err)
	require.Equal(t, 0, n)
	_, err = f.ReadAt(buf, -1)
	require.Error(t, err)
}

func testCreateTruncates(t *testing.T, fsys vfs.FS, dir string) {
	name := path.Join(dir, "f")
	writeFile(t, fsys, name, "old contents")
	f, err := fsys.Create(name)
	require.NoError(t, err)
	size, err := f.Size()
	require.NoError(t, err)
	require.Zero(t, size)
	require.NoError(t, f.Close())
	require.Empty(t, readFile(t, fsys, name))
}

func testWriteAtPastEnd(t *testing.T, fsys vfs.FS, dir string) {
	name := path.Join(dir, "f")
	f, err := fsys.Create(name)
	require.NoError(t, err)
	n, err := f.WriteAt([]byte("xy"), 10)
	require.NoError(t, err)
	require.Equal(t, 2, n)
	n, err = f.WriteAt([]byte("AB"), 1)
	require.NoError(t, err)
	require.Equal(t, 2, n)
	// WriteAt does not move the position Write uses.
	_, err = f.Write([]byte("w"))
	require.NoError(t, err)
	require.NoError(t, f.Close())
	require.Equal(t, "wAB\x00\x00\x00\x00\x00\x00\x00xy", readFile(t, fsys, name))
}

func testOpenReadOnly(t *testing.T, fsys vfs.FS, dir string) {
	name := path.Join(dir, "f")
	writeFile(t, fsys, name, "data")
	f, err := fsys.Open(name)
	require.NoError(t, err)
	defer f.Close()
	_, err = f.Write([]byte("x"))
	require.Error(t, err)
	_, err = f.WriteAt([]byte("x"), 0)
	require.Error(t, err)
	require.Error(t, f.Truncate(0))
	require.Equal(t, "data", readFile(t, fsys, name))
}

func testOpenReadWrite(t *testing.T, fsys vfs.FS, dir string) {
	name := path.Join(dir, "f")
	writeFile(t, fsys, name, "data")
	f, err := fsys.OpenReadWrite(name)
	require.NoError(t, err)
	_, err = f.Write([]byte("D"))
	require.NoError(t, err)
	_, err = f.WriteAt([]byte("!"), 4)
	require.NoError(t, err)
	require.NoError(t, f.Close())
	require.Equal(t, "Data!", readFile(t, fsys, name))
}

func testMissing(t *testing.T, fsys vfs.FS, dir string) {
	name := path.Join(dir, "missing")
	requireNotExist := func(err error) {
		t.Helper()
		require.ErrorIs(t, err, fs.ErrNotExist)
		var pe *fs.PathError
		require.ErrorAs(t, err, &pe)
	}
	_, err := fsys.Open(name)
	requireNotExist(err)
	_, err = fsys.OpenReadWrite(name)
	requireNotExist(err)
	_, err = fsys.Stat(name)
	requireNotExist(err)
	requireNotExist(fsys.Remove(name))
	_, err = fsys.List(name)
	requireNotExist(err)
	requireNotExist(fsys.SyncDir(name))
	_, err = fsys.Create(path.Join(dir, "nodir", "f"))
	requireNotExist(err)
	err = fsys.Rename(name, path.Join(dir, "other"))
	require.ErrorIs(t, err, fs.ErrNotExist)
	require.NoError(t, fsys.RemoveAll(name))
}

func testTruncatePreallocate(t *testing.T, fsys vfs.FS, dir string) {
	name := path.Join(dir, "f")
	f, err := fsys.Create(name)
	require.NoError(t, err)
	defer f.Close()
	requireSize := func(want int64) {
		t.Helper()
		size, err := f.Size()
		require.NoError(t, err)
		require.Equal(t, want, size)
	}
	_, err = f.Write(bytes.Repeat([]byte("a"), 100))
	require.NoError(t, err)
	require.NoError(t, f.Truncate(10))
	requireSize(10)
	require.NoError(t, f.Truncate(20))
	requireSize(20)
	require.NoError(t, f.Preallocate(4096))
	requireSize(4096)
	require.NoError(t, f.Preallocate(100)) // smaller: nothing changes
	requireSize(4096)
	require.NoError(t, f.Sync())

	want := append(bytes.Repeat([]byte("a"), 10), make([]byte, 4086)...)
	require.Equal(t, string(want), readFile(t, fsys, name))
}

func testClosedFile(t *testing.T, fsys vfs.FS, dir string) {
	f, err := fsys.Create(path.Join(dir, "f"))
	require.NoError(t, err)
	require.NoError(t, f.Close())
	buf := make([]byte, 1)
	_, err = f.Read(buf)
	require.ErrorIs(t, err, fs.ErrClosed)
	_, err = f.ReadAt(buf, 0)
	require.ErrorIs(t, err, fs.ErrClosed)
	_, err = f.Write(buf)
	require.ErrorIs(t, err, fs.ErrClosed)
	_, err = f.WriteAt(buf, 0)
	require.ErrorIs(t, err, fs.ErrClosed)
	require.ErrorIs(t, f.Sync(), fs.ErrClosed)
	require.ErrorIs(t, f.Truncate(0), fs.ErrClosed)
	require.ErrorIs(t, f.Preallocate(10), fs.ErrClosed)
	_, err = f.Size()
	require.ErrorIs(t, err, fs.ErrClosed)
	require.ErrorIs(t, f.Close(), fs.ErrClosed)
}

func testRename(t *testing.T, fsys vfs.FS, dir string) {
	a, b := path.Join(dir, "a"), path.Join(dir, "b")
	writeFile(t, fsys, a, "A")
	writeFile(t, fsys, b, "B")
	require.NoError(t, fsys.Rename(a, b))
	_, err := fsys.Stat(a)
	require.ErrorIs(t, err, fs.ErrNotExist)
	require.Equal(t, "A", readFile(t, fsys, b))

	// A directory moves with its contents.
	require.NoError(t, fsys.MkdirAll(path.Join(dir, "d1"), 0o755))
	require.NoError(t, fsys.Rename(b, path.Join(dir, "d1", "b")))
	require.NoError(t, fsys.Rename(path.Join(dir, "d1"), path.Join(dir, "d2")))
	require.Equal(t, "A", readFile(t, fsys, path.Join(dir, "d2", "b")))
}

func testRemove(t *testing.T, fsys vfs.FS, dir string) {
	name := path.Join(dir, "f")
	writeFile(t, fsys, name, "x")
	require.NoError(t, fsys.Remove(name))
	_, err := fsys.Stat(name)
	require.ErrorIs(t, err, fs.ErrNotExist)

	sub := path.Join(dir, "sub")
	require.NoError(t, fsys.MkdirAll(path.Join(sub, "deeper"), 0o755))
	writeFile(t, fsys, path.Join(sub, "deeper", "f"), "x")
	require.Error(t, fsys.Remove(sub), "a non-empty directory")
	require.NoError(t, fsys.RemoveAll(sub))
	_, err = fsys.Stat(sub)
	require.ErrorIs(t, err, fs.ErrNotExist)

	require.NoError(t, fsys.MkdirAll(sub, 0o755))
	require.NoError(t, fsys.Remove(sub), "an empty directory")
}

func testList(t *testing.T, fsys vfs.FS, dir string) {
	names, err := fsys.List(dir)
	require.NoError(t, err)
	require.Empty(t, names)
	for _, n := range []string{"b", "00000000000000000010.log", "a", "00000000000000000002.log"} {
		writeFile(t, fsys, path.Join(dir, n), "")
	}
	require.NoError(t, fsys.MkdirAll(path.Join(dir, "c", "nested"), 0o755))
	names, err = fsys.List(dir)
	require.NoError(t, err)
	require.Equal(t, []string{"00000000000000000002.log", "00000000000000000010.log", "a", "b", "c"}, names)
	_, err = fsys.List(path.Join(dir, "a"))
	require.Error(t, err, "List of a file")
}

func testMkdirAll(t *testing.T, fsys vfs.FS, dir string) {
	deep := path.Join(dir, "x", "y", "z")
	require.NoError(t, fsys.MkdirAll(deep, 0o755))
	require.NoError(t, fsys.MkdirAll(deep, 0o755), "again")
	fi, err := fsys.Stat(deep)
	require.NoError(t, err)
	require.True(t, fi.IsDir())
	writeFile(t, fsys, path.Join(deep, "f"), "x")
	require.Error(t, fsys.MkdirAll(path.Join(deep, "f", "g"), 0o755), "through a file")
}

func testSyncDir(t *testing.T, fsys vfs.FS, dir string) {
	writeFile(t, fsys, path.Join(dir, "f"), "x")
	require.NoError(t, fsys.SyncDir(dir))
	require.Error(t, fsys.SyncDir(path.Join(dir, "f")), "SyncDir of a file")
}

func testStat(t *testing.T, fsys vfs.FS, dir string) {
	name := path.Join(dir, "f")
	writeFile(t, fsys, name, "12345")
	fi, err := fsys.Stat(name)
	require.NoError(t, err)
	require.Equal(t, "f", fi.Name())
	require.EqualValues(t, 5, fi.Size())
	require.False(t, fi.IsDir())
	require.True(t, fi.Mode().IsRegular())
}

func testLock(t *testing.T, fsys vfs.FS, dir string) {
	name := path.Join(dir, "LOCK")
	l1, err := fsys.Lock(name)
	require.NoError(t, err)
	_, err = fsys.Stat(name)
	require.NoError(t, err, "Lock creates the file")

	_, err = fsys.Lock(name)
	require.ErrorIs(t, err, vfs.ErrLocked)
	require.Contains(t, err.Error(), name)

	require.NoError(t, l1.Close())
	l2, err := fsys.Lock(name)
	require.NoError(t, err, "free again after Close")
	require.NoError(t, l2.Close())
}

func testMap(t *testing.T, fsys vfs.FS, dir string) {
	name := path.Join(dir, "idx")
	f, err := fsys.Create(name)
	require.NoError(t, err)
	const size = 3 * 4096
	require.NoError(t, f.Preallocate(size))
	m, err := vfs.Map(f, size)
	require.NoError(t, err)
	b := m.Bytes()
	require.Len(t, b, size)
	require.Equal(t, make([]byte, size), b)
	copy(b, "first")
	copy(b[5000:], "second")
	require.NoError(t, m.Flush(5006))
	require.NoError(t, m.Close())
	require.Nil(t, m.Bytes())
	require.ErrorIs(t, m.Flush(1), fs.ErrClosed)
	require.NoError(t, f.Close())

	f, err = fsys.OpenReadWrite(name)
	require.NoError(t, err)
	defer f.Close()
	got := make([]byte, size)
	_, err = f.ReadAt(got, 0)
	require.NoError(t, err)
	require.Equal(t, "first", string(got[:5]))
	require.Equal(t, "second", string(got[5000:5006]))

	// The mapping shows what is in the file.
	m, err = vfs.Map(f, 5006)
	require.NoError(t, err)
	require.Equal(t, got[:5006], m.Bytes())
	require.NoError(t, m.Close())
}

func testMapEdges(t *testing.T, fsys vfs.FS, dir string) {
	f, err := fsys.Create(path.Join(dir, "idx"))
	require.NoError(t, err)
	defer f.Close()

	m, err := vfs.Map(f, 0)
	require.NoError(t, err, "size 0")
	require.Empty(t, m.Bytes())
	require.NoError(t, m.Flush(0))
	require.NoError(t, m.Close())

	_, err = vfs.Map(f, 1)
	require.Error(t, err, "larger than the file")

	require.NoError(t, f.Preallocate(100))
	m, err = vfs.Map(f, 100)
	require.NoError(t, err)
	require.Error(t, m.Flush(101))
	require.Error(t, m.Flush(-1))
	require.NoError(t, m.Close())
	require.True(t, errors.Is(m.Close(), fs.ErrClosed))
}
