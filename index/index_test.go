package index_test

import (
	"encoding/binary"
	"math/rand/v2"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/partlog/partlog/index"
	"github.com/partlog/partlog/vfs"
)

// filesystems runs a test on the OS filesystem (in a temporary directory)
// and on the in-memory one.
func filesystems(t *testing.T, test func(t *testing.T, fsys vfs.FS, dir string)) {
	t.Run("os", func(t *testing.T) { test(t, vfs.Default, t.TempDir()) })
	t.Run("mem", func(t *testing.T) {
		m := vfs.NewMem()
		require.NoError(t, m.MkdirAll("/data", 0o755))
		test(t, m, "/data")
	})
}

func TestOffsetIndexAppendLookup(t *testing.T) {
	filesystems(t, func(t *testing.T, fsys vfs.FS, dir string) {
		idx, err := index.OpenOffsetIndex(fsys, filepath.Join(dir, "00000000000000000100.index"), 100, 80)
		require.NoError(t, err)
		defer idx.Close()
		require.Equal(t, 10, idx.MaxEntries())
		require.Equal(t, index.OffsetPosition{Offset: 100, Pos: 0}, idx.Lookup(150), "empty index answers the base")

		require.NoError(t, idx.Append(104, 0))
		require.NoError(t, idx.Append(110, 4200))
		require.NoError(t, idx.Append(130, 9000))

		for _, tc := range []struct {
			target int64
			want   index.OffsetPosition
		}{
			{99, index.OffsetPosition{Offset: 100, Pos: 0}},
			{103, index.OffsetPosition{Offset: 100, Pos: 0}},
			{104, index.OffsetPosition{Offset: 104, Pos: 0}},
			{109, index.OffsetPosition{Offset: 104, Pos: 0}},
			{110, index.OffsetPosition{Offset: 110, Pos: 4200}},
			{129, index.OffsetPosition{Offset: 110, Pos: 4200}},
			{130, index.OffsetPosition{Offset: 130, Pos: 9000}},
			{1 << 40, index.OffsetPosition{Offset: 130, Pos: 9000}},
		} {
			require.Equal(t, tc.want, idx.Lookup(tc.target), "lookup %d", tc.target)
		}

		require.ErrorIs(t, idx.Append(130, 9500), index.ErrOutOfOrder)
		require.ErrorIs(t, idx.Append(131, 9000), index.ErrOutOfOrder)
		require.ErrorIs(t, idx.Append(99, 9900), index.ErrOutOfOrder)
		require.Equal(t, 3, idx.Len())
	})
}

func TestOffsetIndexFull(t *testing.T) {
	filesystems(t, func(t *testing.T, fsys vfs.FS, dir string) {
		idx, err := index.OpenOffsetIndex(fsys, filepath.Join(dir, "a.index"), 0, 8*4+7)
		require.NoError(t, err)
		defer idx.Close()
		for i := range 4 {
			require.False(t, idx.Full())
			require.NoError(t, idx.Append(int64(i*10), int64(i*100)))
		}
		require.True(t, idx.Full())
		require.ErrorIs(t, idx.Append(100, 1000), index.ErrFull)
	})
}

func TestOffsetIndexTruncate(t *testing.T) {
	filesystems(t, func(t *testing.T, fsys vfs.FS, dir string) {
		idx, err := index.OpenOffsetIndex(fsys, filepath.Join(dir, "a.index"), 0, 1024)
		require.NoError(t, err)
		defer idx.Close()
		for i := range 10 {
			require.NoError(t, idx.Append(int64(i*10+9), int64(i*100)))
		}
		idx.TruncateTo(50) // removes entries 59, 69, ...
		require.Equal(t, 5, idx.Len())
		require.Equal(t, index.OffsetPosition{Offset: 49, Pos: 400}, idx.LastEntry())
		idx.TruncateTo(49)
		require.Equal(t, 4, idx.Len())
		idx.TruncateTo(1000)
		require.Equal(t, 4, idx.Len())
		require.NoError(t, idx.Append(45, 450), "appends continue after truncation")
		idx.Reset()
		require.Equal(t, 0, idx.Len())
		require.Equal(t, index.OffsetPosition{Offset: 0, Pos: 0}, idx.Lookup(45))
	})
}

func TestOffsetIndexCloseTrimsAndReopens(t *testing.T) {
	filesystems(t, func(t *testing.T, fsys vfs.FS, dir string) {
		name := filepath.Join(dir, "00000000000000000000.index")
		idx, err := index.OpenOffsetIndex(fsys, name, 0, 4096)
		require.NoError(t, err)
		fi, err := fsys.Stat(name)
		require.NoError(t, err)
		require.Zero(t, fi.Size(), "a new index grows as entries come")
		for i := range 7 {
			require.NoError(t, idx.Append(int64(i*3+2), int64(i*5000)))
		}
		require.NoError(t, idx.Flush())
		require.NoError(t, idx.Close())
		fi, err = fsys.Stat(name)
		require.NoError(t, err)
		require.EqualValues(t, 7*8, fi.Size(), "close trims to the entries")

		idx, err = index.OpenOffsetIndex(fsys, name, 0, 4096)
		require.NoError(t, err)
		require.Equal(t, 7, idx.Len())
		require.NoError(t, idx.SanityCheck(1<<20))
		require.True(t, idx.Full(), "a reopened index is full until resized")
		require.NoError(t, idx.Resize(4096))
		require.False(t, idx.Full())
		require.NoError(t, idx.Append(100, 40000))
		require.Equal(t, index.OffsetPosition{Offset: 17, Pos: 25000}, idx.Lookup(19))
		require.NoError(t, idx.Trim())
		require.True(t, idx.Full())
		require.NoError(t, idx.Close())
		fi, err = fsys.Stat(name)
		require.NoError(t, err)
		require.EqualValues(t, 8*8, fi.Size())
	})
}

// TestOffsetIndexSearchMatchesLinear checks the binary search, warm tail
// included, against a linear scan.
func TestOffsetIndexSearchMatchesLinear(t *testing.T) {
	fsys := vfs.NewMem()
	require.NoError(t, fsys.MkdirAll("/d", 0o755))
	idx, err := index.OpenOffsetIndex(fsys, "/d/a.index", 1000, 1<<20)
	require.NoError(t, err)
	defer idx.Close()
	rng := rand.New(rand.NewPCG(1, 2))
	var entries []index.OffsetPosition
	off, pos := int64(1000), int64(0)
	for range 5000 {
		off += 1 + rng.Int64N(20)
		pos += 1 + rng.Int64N(5000)
		require.NoError(t, idx.Append(off, pos))
		entries = append(entries, index.OffsetPosition{Offset: off, Pos: pos})
	}
	for range 20000 {
		target := 990 + rng.Int64N(off-980)
		want := index.OffsetPosition{Offset: 1000, Pos: 0}
		for _, e := range entries {
			if e.Offset <= target {
				want = e
			}
		}
		require.Equal(t, want, idx.Lookup(target), "lookup %d", target)
	}
}

func TestOffsetIndexDamage(t *testing.T) {
	filesystems(t, func(t *testing.T, fsys vfs.FS, dir string) {
		name := filepath.Join(dir, "x.index")
		write := func(b []byte) {
			f, err := fsys.Create(name)
			require.NoError(t, err)
			_, err = f.Write(b)
			require.NoError(t, err)
			require.NoError(t, f.Close())
		}
		entries := func(es ...[2]uint32) []byte {
			var b []byte
			for _, e := range es {
				b = binary.BigEndian.AppendUint32(b, e[0])
				b = binary.BigEndian.AppendUint32(b, e[1])
			}
			return b
		}

		write(entries([2]uint32{1, 0}, [2]uint32{5, 100})[:13])
		_, err := index.OpenOffsetIndex(fsys, name, 0, 4096)
		var ce *index.CorruptionError
		require.ErrorAs(t, err, &ce, "odd size")
		require.ErrorIs(t, err, index.ErrCorrupt)
		require.Equal(t, name, ce.Path)

		for _, tc := range []struct {
			name string
			data []byte
		}{
			{"offsets not increasing", entries([2]uint32{5, 0}, [2]uint32{5, 100})},
			{"positions not increasing", entries([2]uint32{5, 100}, [2]uint32{9, 100})},
			{"position past the log", entries([2]uint32{5, 0}, [2]uint32{9, 5000})},
			{"zeroed preallocation", make([]byte, 4096)},
		} {
			write(tc.data)
			idx, err := index.OpenOffsetIndex(fsys, name, 0, 4096)
			require.NoError(t, err, tc.name)
			require.ErrorIs(t, idx.SanityCheck(4096), index.ErrCorrupt, tc.name)
			require.NoError(t, idx.Close())
		}

		idx, err := index.CreateOffsetIndex(fsys, name, 0, 4096)
		require.NoError(t, err)
		require.Equal(t, 0, idx.Len(), "create replaces a damaged index")
		require.NoError(t, idx.Close())
	})
}

func TestTimeIndex(t *testing.T) {
	filesystems(t, func(t *testing.T, fsys vfs.FS, dir string) {
		name := filepath.Join(dir, "00000000000000000050.timeindex")
		ti, err := index.OpenTimeIndex(fsys, name, 50, 12*4)
		require.NoError(t, err)
		require.Equal(t, index.TimestampOffset{Timestamp: -1, Offset: 50}, ti.Lookup(1000))

		added, err := ti.MaybeAppend(1000, 52, false)
		require.NoError(t, err)
		require.True(t, added)
		added, err = ti.MaybeAppend(1000, 55, false)
		require.NoError(t, err)
		require.False(t, added, "a timestamp that does not grow is not indexed")
		added, err = ti.MaybeAppend(2000, 60, false)
		require.NoError(t, err)
		require.True(t, added)
		_, err = ti.MaybeAppend(3000, 59, false)
		require.ErrorIs(t, err, index.ErrOutOfOrder)
		added, err = ti.MaybeAppend(3000, 70, false)
		require.NoError(t, err)
		require.True(t, added)
		require.True(t, ti.Full(), "one slot stays for the sealing entry")
		_, err = ti.MaybeAppend(4000, 80, false)
		require.ErrorIs(t, err, index.ErrFull)
		added, err = ti.MaybeAppend(4000, 80, true)
		require.NoError(t, err)
		require.True(t, added, "the final entry takes the kept slot")

		require.Equal(t, index.TimestampOffset{Timestamp: -1, Offset: 50}, ti.Lookup(999))
		require.Equal(t, index.TimestampOffset{Timestamp: 1000, Offset: 52}, ti.Lookup(1999))
		require.Equal(t, index.TimestampOffset{Timestamp: 2000, Offset: 60}, ti.Lookup(2000))
		require.Equal(t, index.TimestampOffset{Timestamp: 4000, Offset: 80}, ti.Lookup(1<<50))
		require.NoError(t, ti.SanityCheck(81))
		require.ErrorIs(t, ti.SanityCheck(80), index.ErrCorrupt, "an entry past the segment's end")

		ti.TruncateTo(60)
		require.Equal(t, 1, ti.Len())
		require.Equal(t, index.TimestampOffset{Timestamp: 1000, Offset: 52}, ti.LastEntry())

		require.NoError(t, ti.Flush())
		require.NoError(t, ti.Close())
		fi, err := fsys.Stat(name)
		require.NoError(t, err)
		require.EqualValues(t, 12, fi.Size())
		ti, err = index.OpenTimeIndex(fsys, name, 50, 12*4)
		require.NoError(t, err)
		require.Equal(t, []index.TimestampOffset{{1000, 52}}, []index.TimestampOffset{ti.Entry(0)})
		require.NoError(t, ti.Close())
	})
}

func TestTimeIndexDamage(t *testing.T) {
	fsys := vfs.NewMem()
	require.NoError(t, fsys.MkdirAll("/d", 0o755))
	entry := func(ts int64, rel uint32) []byte {
		b := binary.BigEndian.AppendUint64(nil, uint64(ts))
		return binary.BigEndian.AppendUint32(b, rel)
	}
	for _, tc := range []struct {
		name string
		data []byte
	}{
		{"timestamps not increasing", append(entry(10, 1), entry(10, 2)...)},
		{"offsets decreasing", append(entry(10, 5), entry(20, 2)...)},
		{"zeroed preallocation", make([]byte, 120)},
	} {
		f, err := fsys.Create("/d/t.timeindex")
		require.NoError(t, err)
		_, err = f.Write(tc.data)
		require.NoError(t, err)
		require.NoError(t, f.Close())
		ti, err := index.OpenTimeIndex(fsys, "/d/t.timeindex", 0, 4096)
		require.NoError(t, err)
		require.ErrorIs(t, ti.SanityCheck(100), index.ErrCorrupt, tc.name)
		require.NoError(t, ti.Close())
	}
}

// TestIndexGrowsAsEntriesCome: a new index has room for maxBytes of
// entries but its file grows a page at a time as they come, so that an
// idle partition holds a page per index rather than segment.index.bytes
// (50 idle __consumer_offsets partitions used to reserve 1 GB). A full disk
// shows when an entry needs the file to grow — never as a fault on a
// mapped page — and the entry is then not added; with room again it is.
func TestIndexGrowsAsEntriesCome(t *testing.T) {
	t.Run("mem", func(t *testing.T) {
		m := vfs.NewMem()
		require.NoError(t, m.MkdirAll("/d", 0o755))
		m.SetCapacity(4096)
		o, err := index.OpenOffsetIndex(m, "/d/a.index", 0, 10<<20)
		require.NoError(t, err)
		defer o.Close()
		require.Equal(t, (10<<20)/index.OffsetEntrySize, o.MaxEntries())
		for i := range 512 { // one page of entries
			require.NoError(t, o.Append(int64(i), int64(i)*100))
		}
		require.ErrorIs(t, o.Append(512, 51200), syscall.ENOSPC, "the second page does not fit")
		require.Equal(t, 512, o.Len())
		m.SetCapacity(0)
		require.NoError(t, o.Append(512, 51200))
		require.Equal(t, index.OffsetPosition{Offset: 512, Pos: 51200}, o.Lookup(600))
	})
	t.Run("os", func(t *testing.T) {
		dir := t.TempDir()
		o, err := index.OpenOffsetIndex(vfs.Default, dir+"/a.index", 0, 10<<20)
		require.NoError(t, err)
		size := func() int64 {
			fi, err := os.Stat(dir + "/a.index")
			require.NoError(t, err)
			return fi.Size()
		}
		require.Zero(t, size(), "nothing reserved before the first entry")
		for i := range 600 {
			require.NoError(t, o.Append(int64(i), int64(i)*100))
		}
		require.EqualValues(t, 8192, size(), "two pages for 600 entries")
		require.NoError(t, o.Close())
		require.EqualValues(t, 600*index.OffsetEntrySize, size(), "trimmed to its entries on close")
		o, err = index.OpenOffsetIndex(vfs.Default, dir+"/a.index", 0, 10<<20)
		require.NoError(t, err)
		defer o.Close()
		require.NoError(t, o.SanityCheck(1<<20))
		require.Equal(t, index.OffsetPosition{Offset: 599, Pos: 59900}, o.Lookup(1000))
	})
}
