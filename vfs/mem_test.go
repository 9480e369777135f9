package vfs_test

import (
	"bytes"
	"fmt"
	"io/fs"
	"sync"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/partlog/partlog/vfs"
)

func TestMemCapacity(t *testing.T) {
	m := vfs.NewMem()
	m.SetCapacity(100)
	f, err := m.Create("/f")
	require.NoError(t, err)
	requireENOSPC := func(err error) {
		t.Helper()
		require.ErrorIs(t, err, syscall.ENOSPC)
		var pe *fs.PathError
		require.ErrorAs(t, err, &pe)
		require.Equal(t, "/f", pe.Path)
	}
	requireSize := func(want int64) {
		t.Helper()
		size, err := f.Size()
		require.NoError(t, err)
		require.Equal(t, want, size)
	}

	_, err = f.Write(make([]byte, 60))
	require.NoError(t, err)
	n, err := f.Write(make([]byte, 50)) // 10 would fit: nothing is written
	requireENOSPC(err)
	require.Zero(t, n)
	requireSize(60)
	_, err = f.WriteAt([]byte("x"), 100)
	requireENOSPC(err)
	requireENOSPC(f.Truncate(101))
	requireENOSPC(f.Preallocate(200))
	requireSize(60)

	require.NoError(t, f.Preallocate(100))
	_, err = f.WriteAt(bytes.Repeat([]byte("o"), 100), 0) // an overwrite needs no space
	require.NoError(t, err)

	g, err := m.Create("/g")
	require.NoError(t, err)
	_, err = g.Write([]byte("x"))
	require.ErrorIs(t, err, syscall.ENOSPC)
	require.NoError(t, m.Remove("/f"))
	_, err = g.Write(make([]byte, 100))
	require.NoError(t, err, "removing a file frees its bytes")

	m.SetCapacity(0)
	_, err = g.Write(make([]byte, 1000))
	require.NoError(t, err, "0 is unlimited")
}

func TestMemPaths(t *testing.T) {
	m := vfs.NewMem()
	require.NoError(t, m.MkdirAll("a/b", 0o755))
	writeFile(t, m, "a/b/../b/f", "x")
	require.Equal(t, "x", readFile(t, m, "/a/b/f"))
	f, err := m.Open("a//b/./f")
	require.NoError(t, err)
	require.Equal(t, "a//b/./f", f.Name(), "Name is the path as opened")
	require.NoError(t, f.Close())
	names, err := m.List("/")
	require.NoError(t, err)
	require.Equal(t, []string{"a"}, names)
}

// BenchmarkMemAppend appends 1 MiB at a time with a sync after each write:
// the cost per byte must not grow with the file's size.
func BenchmarkMemAppend(b *testing.B) {
	m := vfs.NewMem()
	chunk := bytes.Repeat([]byte("x"), 1<<20)
	b.SetBytes(int64(len(chunk)))
	var f vfs.File
	for i := 0; b.Loop(); i++ {
		if i%256 == 0 { // a new 256 MiB file keeps memory bounded
			var err error
			if f, err = m.Create("/f"); err != nil {
				b.Fatal(err)
			}
		}
		if _, err := f.Write(chunk); err != nil {
			b.Fatal(err)
		}
		if err := f.Sync(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkMemSmallAppendSync appends 4 KiB records with a sync after each,
// as a log with flush.messages=1 does.
func BenchmarkMemSmallAppendSync(b *testing.B) {
	m := vfs.NewMem()
	rec := bytes.Repeat([]byte("r"), 4096)
	b.SetBytes(int64(len(rec)))
	var f vfs.File
	for i := 0; b.Loop(); i++ {
		if i%(1<<16) == 0 { // a new 256 MiB file keeps memory bounded
			var err error
			if f, err = m.Create("/f"); err != nil {
				b.Fatal(err)
			}
		}
		if _, err := f.Write(rec); err != nil {
			b.Fatal(err)
		}
		if err := f.Sync(); err != nil {
			b.Fatal(err)
		}
	}
}

// TestMemConcurrentUse runs writers, readers, syncs and crash clones at
// once; the race detector checks the locking.
func TestMemConcurrentUse(t *testing.T) {
	m := newDurableDir(t)
	fsys := vfs.WithFaults(m, vfs.FailOn(vfs.OpSync, "/d/f3", -1, errIO))
	shared, err := fsys.Create("/d/shared")
	require.NoError(t, err)
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Go(func() {
			name := fmt.Sprintf("/d/f%d", i)
			f, err := fsys.Create(name)
			if err != nil {
				t.Error(err)
				return
			}
			defer f.Close()
			for j := range 200 {
				f.Write([]byte("record"))
				shared.WriteAt([]byte{byte(i)}, int64(j*4+i))
				if j%10 == 0 {
					f.Sync()
					fsys.SyncDir("/d")
				}
				f.ReadAt(make([]byte, 6), int64(j*6))
			}
		})
	}
	wg.Go(func() {
		for range 50 {
			c := m.CrashClone(vfs.CrashOptions{KeepUnsynced: vfs.KeepRandomPrefix, Tear: vfs.TearGarbage})
			if _, err := c.List("/d"); err != nil {
				t.Error(err)
			}
		}
	})
	wg.Wait()
	require.Len(t, readFile(t, m, "/d/f0"), 200*6)
	require.Len(t, readFile(t, m.CrashClone(keepNone), "/d/f0"), 191*6)
	require.Empty(t, readFile(t, m.CrashClone(keepNone), "/d/f3"), "every sync of f3 failed")
}
