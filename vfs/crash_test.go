package vfs_test

import (
	"bytes"
	"fmt"
	"io/fs"
	"maps"
	"path"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/partlog/partlog/vfs"
)

var (
	keepNone = vfs.CrashOptions{KeepUnsynced: vfs.KeepNone}
	keepAll  = vfs.CrashOptions{KeepUnsynced: vfs.KeepAll}
)

// newDurableDir returns a MemFS with a directory /d whose entry is durable.
func newDurableDir(t *testing.T) *vfs.MemFS {
	t.Helper()
	m := vfs.NewMem()
	require.NoError(t, m.MkdirAll("/d", 0o755))
	require.NoError(t, m.SyncDir("/"))
	return m
}

// exists reports whether name is in fsys.
func exists(t testing.TB, fsys vfs.FS, name string) bool {
	t.Helper()
	_, err := fsys.Stat(name)
	if err != nil {
		require.ErrorIs(t, err, fs.ErrNotExist)
		return false
	}
	return true
}

// dump returns every file in fsys by path, and every directory as "dir".
func dump(t testing.TB, fsys vfs.FS) map[string]string {
	t.Helper()
	out := map[string]string{}
	var walk func(dir string)
	walk = func(dir string) {
		names, err := fsys.List(dir)
		require.NoError(t, err)
		for _, n := range names {
			p := path.Join(dir, n)
			fi, err := fsys.Stat(p)
			require.NoError(t, err)
			if fi.IsDir() {
				out[p] = "dir"
				walk(p)
			} else {
				out[p] = readFile(t, fsys, p)
			}
		}
	}
	walk("/")
	return out
}

func TestCrashUnsyncedAppend(t *testing.T) {
	m := newDurableDir(t)
	f, err := m.Create("/d/f")
	require.NoError(t, err)
	require.NoError(t, m.SyncDir("/d"))
	_, err = f.Write([]byte("synced"))
	require.NoError(t, err)
	require.NoError(t, f.Sync())
	_, err = f.Write([]byte("+unsynced"))
	require.NoError(t, err)

	require.Equal(t, "synced", readFile(t, m.CrashClone(keepNone), "/d/f"))
	require.Equal(t, "synced+unsynced", readFile(t, m.CrashClone(keepAll), "/d/f"))
	require.Equal(t, "synced+unsynced", readFile(t, m, "/d/f"), "the original is untouched")
}

func TestCrashCreateWithoutSyncDir(t *testing.T) {
	m := newDurableDir(t)
	writeFile(t, m, "/d/f", "synced data") // file synced, directory not

	require.False(t, exists(t, m.CrashClone(keepNone), "/d/f"))
	require.Equal(t, "synced data", readFile(t, m.CrashClone(keepAll), "/d/f"))

	require.NoError(t, m.SyncDir("/d"))
	require.Equal(t, "synced data", readFile(t, m.CrashClone(keepNone), "/d/f"))
}

func TestCrashNewDirectoryNeedsParentSync(t *testing.T) {
	m := vfs.NewMem()
	require.NoError(t, m.MkdirAll("/d/e", 0o755))
	writeFile(t, m, "/d/e/f", "x")
	require.NoError(t, m.SyncDir("/d/e"))
	require.NoError(t, m.SyncDir("/d"))

	c := m.CrashClone(keepNone)
	require.False(t, exists(t, c, "/d"), "the root was never synced")
	require.True(t, exists(t, c, "/"), "the root always exists")

	require.NoError(t, m.SyncDir("/"))
	require.Equal(t, "x", readFile(t, m.CrashClone(keepNone), "/d/e/f"))
}

func TestCrashRenameWithoutSyncDir(t *testing.T) {
	m := newDurableDir(t)
	writeFile(t, m, "/d/a", "A")
	require.NoError(t, m.SyncDir("/d"))
	require.NoError(t, m.Rename("/d/a", "/d/b"))

	c := m.CrashClone(keepNone)
	require.Equal(t, "A", readFile(t, c, "/d/a"))
	require.False(t, exists(t, c, "/d/b"))
	c = m.CrashClone(keepAll)
	require.False(t, exists(t, c, "/d/a"))
	require.Equal(t, "A", readFile(t, c, "/d/b"))

	require.NoError(t, m.SyncDir("/d"))
	c = m.CrashClone(keepNone)
	require.False(t, exists(t, c, "/d/a"))
	require.Equal(t, "A", readFile(t, c, "/d/b"))
}

// TestCrashRenameIsAtomic checks the checkpoint pattern (write a temp file,
// sync it, rename it over the old one): whatever a crash keeps, the target
// is the old or the new version, and a moved file is never lost.
func TestCrashRenameIsAtomic(t *testing.T) {
	m := newDurableDir(t)
	writeFile(t, m, "/d/checkpoint", "v1")
	writeFile(t, m, "/d/seg", "segment")
	require.NoError(t, m.SyncDir("/d"))
	writeFile(t, m, "/d/checkpoint.tmp", "v2")
	require.NoError(t, m.Rename("/d/checkpoint.tmp", "/d/checkpoint"))
	require.NoError(t, m.Rename("/d/seg", "/d/seg.deleted"))

	require.Equal(t, "v1", readFile(t, m.CrashClone(keepNone), "/d/checkpoint"))
	seen := map[string]bool{}
	for seed := range int64(64) {
		c := m.CrashClone(vfs.CrashOptions{Seed: seed, KeepUnsynced: vfs.KeepRandomPrefix})
		cp := readFile(t, c, "/d/checkpoint")
		require.Contains(t, []string{"v1", "v2"}, cp)
		seen[cp] = true
		require.NotEqual(t, exists(t, c, "/d/seg"), exists(t, c, "/d/seg.deleted"),
			"seed %d: a rename is kept whole or not at all", seed)
	}
	require.Len(t, seen, 2, "both outcomes occur")
}

func TestCrashRemoveWithoutSyncDir(t *testing.T) {
	m := newDurableDir(t)
	writeFile(t, m, "/d/f", "data")
	require.NoError(t, m.SyncDir("/d"))
	require.NoError(t, m.Remove("/d/f"))

	require.Equal(t, "data", readFile(t, m.CrashClone(keepNone), "/d/f"))
	require.False(t, exists(t, m.CrashClone(keepAll), "/d/f"))
	require.NoError(t, m.SyncDir("/d"))
	require.False(t, exists(t, m.CrashClone(keepNone), "/d/f"))

	// RemoveAll of a directory is undone the same way.
	require.NoError(t, m.RemoveAll("/d"))
	require.True(t, exists(t, m.CrashClone(keepNone), "/d"))
}

func TestCrashOverwriteKeepsDurableBytes(t *testing.T) {
	m := newDurableDir(t)
	f, err := m.Create("/d/f")
	require.NoError(t, err)
	require.NoError(t, m.SyncDir("/d"))
	_, err = f.Write([]byte("hello"))
	require.NoError(t, err)
	require.NoError(t, f.Sync())
	_, err = f.WriteAt([]byte("HE"), 0)
	require.NoError(t, err)
	_, err = f.Write([]byte(" world"))
	require.NoError(t, err)

	require.Equal(t, "hello", readFile(t, m.CrashClone(keepNone), "/d/f"))
	require.Equal(t, "HEllo world", readFile(t, m.CrashClone(keepAll), "/d/f"))
	for seed := range int64(32) {
		got := readFile(t, m.CrashClone(vfs.CrashOptions{Seed: seed, KeepUnsynced: vfs.KeepRandomPrefix}), "/d/f")
		require.True(t, len(got) >= 5 && got == "hello world"[:len(got)], "seed %d: %q", seed, got)
	}
}

func TestCrashUnsyncedTruncate(t *testing.T) {
	m := newDurableDir(t)
	f, err := m.Create("/d/f")
	require.NoError(t, err)
	require.NoError(t, m.SyncDir("/d"))
	_, err = f.Write([]byte("0123456789"))
	require.NoError(t, err)
	require.NoError(t, f.Sync())
	require.NoError(t, f.Truncate(3))

	require.Equal(t, "0123456789", readFile(t, m.CrashClone(keepNone), "/d/f"))
	require.Equal(t, "012", readFile(t, m.CrashClone(keepAll), "/d/f"))

	// Extending again writes zeros over the cut bytes, but only in memory.
	require.NoError(t, f.Truncate(6))
	require.Equal(t, "0123456789", readFile(t, m.CrashClone(keepNone), "/d/f"))
	require.NoError(t, f.Sync())
	require.Equal(t, "012\x00\x00\x00", readFile(t, m.CrashClone(keepNone), "/d/f"))
}

// tornFile makes /d/f with durable bytes of 'a' and then unsynced bytes of
// 'b' appended.
func tornFile(t *testing.T, durable, unsynced int) *vfs.MemFS {
	t.Helper()
	m := newDurableDir(t)
	f, err := m.Create("/d/f")
	require.NoError(t, err)
	require.NoError(t, m.SyncDir("/d"))
	_, err = f.Write(bytes.Repeat([]byte("a"), durable))
	require.NoError(t, err)
	require.NoError(t, f.Sync())
	_, err = f.Write(bytes.Repeat([]byte("b"), unsynced))
	require.NoError(t, err)
	return m
}

func TestCrashTearTouchesOnlyTheLastUnsyncedSector(t *testing.T) {
	for _, tc := range []struct {
		durable, unsynced int
		sector            int // where the last sector's unsynced bytes start
	}{
		{durable: 1000, unsynced: 1500, sector: 2048},
		{durable: 1000, unsynced: 20, sector: 1000}, // shares a sector with durable bytes
		{durable: 0, unsynced: 512, sector: 0},
	} {
		end := tc.durable + tc.unsynced
		for _, tear := range []vfs.TearPolicy{vfs.TearZero, vfs.TearGarbage} {
			changed := false
			for seed := range int64(32) {
				name := fmt.Sprintf("%d+%d/%v/seed=%d", tc.durable, tc.unsynced, tear, seed)
				m := tornFile(t, tc.durable, tc.unsynced)
				got := readFile(t, m.CrashClone(vfs.CrashOptions{Seed: seed, KeepUnsynced: vfs.KeepAll, Tear: tear}), "/d/f")
				require.Len(t, got, end, name)
				want := string(bytes.Repeat([]byte("a"), tc.durable)) + string(bytes.Repeat([]byte("b"), tc.unsynced))
				require.Equal(t, want[:tc.sector], got[:tc.sector], "%s: bytes before the last sector", name)
				if tear == vfs.TearZero {
					tail := got[tc.sector:]
					i := len(bytes.TrimRight([]byte(tail), "\x00"))
					require.Less(t, i, len(tail), "%s: something is torn", name)
					require.Equal(t, want[tc.sector:tc.sector+i], tail[:i], "%s: a prefix is kept", name)
				}
				changed = changed || got != want
			}
			require.True(t, changed, "%d+%d/%v never tore", tc.durable, tc.unsynced, tear)
		}
	}
}

func TestCrashKeepRandomPrefix(t *testing.T) {
	const durable, unsynced = 1000, 3000
	want := string(bytes.Repeat([]byte("a"), durable)) + string(bytes.Repeat([]byte("b"), unsynced))
	lengths := map[int]bool{}
	for seed := range int64(64) {
		m := tornFile(t, durable, unsynced)
		for _, tear := range []vfs.TearPolicy{vfs.TearNone, vfs.TearZero} {
			got := readFile(t, m.CrashClone(vfs.CrashOptions{Seed: seed, KeepUnsynced: vfs.KeepRandomPrefix, Tear: tear}), "/d/f")
			require.GreaterOrEqual(t, len(got), durable)
			require.LessOrEqual(t, len(got), len(want))
			if tear == vfs.TearNone {
				require.Equal(t, want[:len(got)], got, "seed %d", seed)
				lengths[len(got)] = true
				continue
			}
			intact := max(durable, (len(got)-1)/512*512)
			require.Equal(t, want[:intact], got[:intact], "seed %d: torn outside the last sector", seed)
		}
	}
	require.Greater(t, len(lengths), 10, "prefix lengths vary with the seed")
}

func TestCrashCloneSameSeedSameState(t *testing.T) {
	m := vfs.NewMem()
	require.NoError(t, m.MkdirAll("/d", 0o755))
	for i := range 20 {
		name := fmt.Sprintf("/d/%02d", i)
		f, err := m.Create(name)
		require.NoError(t, err)
		_, err = f.Write(bytes.Repeat([]byte{byte('a' + i)}, 100*i))
		require.NoError(t, err)
		if i%3 == 0 {
			require.NoError(t, f.Sync())
		}
		_, err = f.Write(bytes.Repeat([]byte{'z'}, 700))
		require.NoError(t, err)
		if i%5 == 0 {
			require.NoError(t, m.SyncDir("/d"))
		}
		if i%7 == 0 {
			require.NoError(t, m.SyncDir("/"))
		}
	}
	opts := vfs.CrashOptions{Seed: 42, KeepUnsynced: vfs.KeepRandomPrefix, Tear: vfs.TearGarbage}
	first := dump(t, m.CrashClone(opts))
	require.Equal(t, first, dump(t, m.CrashClone(opts)))

	differs := false
	for seed := range int64(8) {
		opts.Seed = seed
		differs = differs || !maps.Equal(first, dump(t, m.CrashClone(opts)))
	}
	require.True(t, differs, "other seeds give other states")
}

func TestCrashCloneIsIndependent(t *testing.T) {
	m := newDurableDir(t)
	f, err := m.Create("/d/f")
	require.NoError(t, err)
	require.NoError(t, m.SyncDir("/d"))
	_, err = f.Write([]byte("one"))
	require.NoError(t, err)
	require.NoError(t, f.Sync())
	lock, err := m.Lock("/d/LOCK")
	require.NoError(t, err)
	require.NoError(t, m.SyncDir("/d"))

	c := m.CrashClone(keepAll)
	require.Equal(t, dump(t, c), dump(t, c.CrashClone(keepNone)), "everything in a clone is durable")
	_, err = f.Write([]byte(" two")) // through a handle of the original
	require.NoError(t, err)
	writeFile(t, c, "/d/g", "clone only")
	require.Equal(t, "one", readFile(t, c, "/d/f"))
	require.False(t, exists(t, m, "/d/g"))

	cl, err := c.Lock("/d/LOCK")
	require.NoError(t, err, "locks do not carry over")
	require.NoError(t, cl.Close())
	require.NoError(t, lock.Close())
}
