package segment_test

import (
	"bytes"
	"encoding/binary"
	"path"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/partlog/partlog/internal/batchtest"
	"github.com/partlog/partlog/record"
	"github.com/partlog/partlog/segment"
	"github.com/partlog/partlog/vfs"
)

const dir = "/data/study-0"

func newFS(t *testing.T) *vfs.MemFS {
	t.Helper()
	m := vfs.NewMem()
	require.NoError(t, m.MkdirAll(dir, 0o755))
	return m
}

// appended is a batch as written: its offsets and position.
type appended struct {
	h     record.Header
	pos   int64
	bytes []byte
}

// appendBatches appends n batches of recs records each, with growing
// timestamps, starting at the segment's end.
func appendBatches(t *testing.T, s *segment.Segment, n, recs, valueSize int, ts int64) []appended {
	t.Helper()
	var out []appended
	for i := range n {
		b := batchtest.Build(batchtest.Spec{Records: recs, ValueSize: valueSize, Timestamp: ts + int64(i*recs), Epoch: -1})
		record.SetBaseOffset(b, s.NextOffset())
		h, err := record.Validate(b)
		require.NoError(t, err)
		pos := s.Size()
		require.NoError(t, s.Append(h, b))
		out = append(out, appended{h: h, pos: pos, bytes: b})
	}
	return out
}

func TestAppendAndRead(t *testing.T) {
	fsys := newFS(t)
	s, err := segment.Create(fsys, dir, 100, 0, segment.Options{IndexIntervalBytes: 500})
	require.NoError(t, err)
	defer s.Close()
	require.Equal(t, "/data/study-0/00000000000000000100.log", s.Path(segment.LogSuffix))
	require.EqualValues(t, 100, s.NextOffset())

	batches := appendBatches(t, s, 20, 5, 40, 1000)
	require.EqualValues(t, 200, s.NextOffset())
	var all []byte
	for i, b := range batches {
		require.EqualValues(t, 100+i*5, b.h.BaseOffset)
		all = append(all, b.bytes...)
	}
	require.EqualValues(t, len(all), s.Size())
	require.Greater(t, s.OffsetIndex().Len(), 2, "a sparse index entry every 500 bytes")

	// Every offset locates the batch holding it.
	for off := int64(100); off < 200; off++ {
		pos, h, found, err := s.Locate(off)
		require.NoError(t, err)
		require.True(t, found)
		want := batches[(off-100)/5]
		require.Equal(t, want.pos, pos, "offset %d", off)
		require.Equal(t, want.h.BaseOffset, h.BaseOffset)
	}
	_, _, found, err := s.Locate(200)
	require.NoError(t, err)
	require.False(t, found)

	// Reads return whole batches from the one holding the offset.
	size := len(batches[0].bytes)
	got, err := s.Read(nil, 112, 1<<60, 3*size+size/2)
	require.NoError(t, err)
	require.Equal(t, concat(batches[2:5]), got, "three whole batches fit, the fourth does not")
	got, err = s.Read(nil, 112, 1<<60, 10)
	require.NoError(t, err)
	require.Equal(t, batches[2].bytes, got, "at least one batch, however small maxBytes")
	got, err = s.Read(nil, 112, 125, 1<<20)
	require.NoError(t, err)
	require.Equal(t, concat(batches[2:5]), got, "nothing at or above maxOffset")
	got, err = s.Read(nil, 112, 114, 1<<20)
	require.NoError(t, err)
	require.Empty(t, got, "the first batch does not end below maxOffset")
	got, err = s.Read([]byte("prefix"), 195, 1<<60, 1<<20)
	require.NoError(t, err)
	require.Equal(t, append([]byte("prefix"), batches[19].bytes...), got, "Read appends to dst")
	got, err = s.Read(nil, 0, 1<<60, 1<<20)
	require.NoError(t, err)
	require.Equal(t, all, got, "an offset below the base reads from the start")
}

func concat(bs []appended) []byte {
	var out []byte
	for _, b := range bs {
		out = append(out, b.bytes...)
	}
	return out
}

func TestAppendRejectsOffsetsOutOfOrder(t *testing.T) {
	fsys := newFS(t)
	s, err := segment.Create(fsys, dir, 10, 0, segment.Options{})
	require.NoError(t, err)
	defer s.Close()
	appendBatches(t, s, 1, 3, 10, 0)
	b := batchtest.Simple(2, 0)
	record.SetBaseOffset(b, 12)
	h, err := record.Validate(b)
	require.NoError(t, err)
	require.ErrorIs(t, s.Append(h, b), segment.ErrOffsetOrder)
	record.SetBaseOffset(b, 5)
	h, _ = record.Validate(b)
	require.ErrorIs(t, s.Append(h, b), segment.ErrOffsetOrder)
	require.EqualValues(t, 13, s.NextOffset())
}

func TestFindOffsetByTimestamp(t *testing.T) {
	fsys := newFS(t)
	s, err := segment.Create(fsys, dir, 0, 0, segment.Options{IndexIntervalBytes: 200})
	require.NoError(t, err)
	defer s.Close()
	// 30 batches of 4 records: record i has timestamp 10000 + 10*i.
	for i := range 30 {
		opts := record.DefaultBatchOptions()
		bld := record.NewBuilder(opts)
		for j := range 4 {
			n := i*4 + j
			bld.Append(record.Record{Timestamp: 10000 + 10*int64(n), Value: []byte("v")})
		}
		b := bld.Build()
		record.SetBaseOffset(b, s.NextOffset())
		h, _ := record.Validate(b)
		require.NoError(t, s.Append(h, b))
	}
	require.EqualValues(t, 10000+10*119, s.MaxTimestamp())
	for _, tc := range []struct {
		ts     int64
		offset int64
		found  bool
	}{
		{0, 0, true}, {10000, 0, true}, {10001, 1, true}, {10010, 1, true},
		{10555, 56, true}, {11190, 119, true}, {11191, 0, false},
	} {
		off, ts, found, err := s.FindOffsetByTimestamp(tc.ts)
		require.NoError(t, err)
		require.Equal(t, tc.found, found, "timestamp %d", tc.ts)
		if found {
			require.Equal(t, tc.offset, off, "timestamp %d", tc.ts)
			require.Equal(t, 10000+10*off, ts)
		}
	}
}

func TestTruncateTo(t *testing.T) {
	fsys := newFS(t)
	s, err := segment.Create(fsys, dir, 0, 0, segment.Options{IndexIntervalBytes: 300})
	require.NoError(t, err)
	defer s.Close()
	batches := appendBatches(t, s, 20, 5, 30, 500)

	removed, err := s.TruncateTo(52) // batch 50..54 straddles: it goes too
	require.NoError(t, err)
	require.EqualValues(t, 50, s.NextOffset())
	require.Equal(t, batches[10].pos, s.Size())
	require.EqualValues(t, len(concat(batches[10:])), removed)
	require.EqualValues(t, 500+49, s.MaxTimestamp())
	for i := range s.OffsetIndex().Len() {
		require.Less(t, s.OffsetIndex().Entry(i).Offset, int64(50))
	}
	got, err := s.Read(nil, 0, 1<<60, 1<<20)
	require.NoError(t, err)
	require.Equal(t, concat(batches[:10]), got)

	removed, err = s.TruncateTo(50)
	require.NoError(t, err)
	require.Zero(t, removed, "nothing at or above the end")

	again := appendBatches(t, s, 3, 5, 30, 900)
	require.EqualValues(t, 50, again[0].h.BaseOffset, "appends continue at the new end")
	require.EqualValues(t, 65, s.NextOffset())
	_, err = s.TruncateTo(0)
	require.NoError(t, err)
	require.Zero(t, s.Size())
	require.EqualValues(t, 0, s.NextOffset())
	require.EqualValues(t, -1, s.MaxTimestamp())
}

func TestShouldRoll(t *testing.T) {
	fsys := newFS(t)
	s, err := segment.Create(fsys, dir, 0, 5_000, segment.Options{MaxIndexBytes: 8 * 3})
	require.NoError(t, err)
	defer s.Close()
	b := batchtest.Simple(1, 1_000_000)
	h, _ := record.Validate(b)
	require.Empty(t, s.ShouldRoll(h, 0, 0, 1<<30, 1<<40), "an empty segment takes anything")
	appendBatches(t, s, 1, 1, 10, 1_000_000)
	h.BaseOffset = 1
	require.Equal(t, segment.RollSize, s.ShouldRoll(h, 0, 0, s.Size()+int64(h.Size())-1, 1<<40))
	require.Empty(t, s.ShouldRoll(h, 0, 0, s.Size()+int64(h.Size()), 1<<40))
	late := h
	late.MaxTimestamp = 1_000_000 + 3_600_001
	require.Equal(t, segment.RollTime, s.ShouldRoll(late, 0, 0, 1<<30, 3_600_000), "segment.ms counts from the first batch's timestamp")
	require.Empty(t, s.ShouldRoll(late, 0, 0, 1<<30, 3_600_001))
	far := h
	far.BaseOffset = 1 << 32
	require.Equal(t, segment.RollOffsetRange, s.ShouldRoll(far, 0, 0, 1<<30, 1<<40))
}

func TestSealCloseOpen(t *testing.T) {
	fsys := newFS(t)
	s, err := segment.Create(fsys, dir, 0, 0, segment.Options{IndexIntervalBytes: 100})
	require.NoError(t, err)
	batches := appendBatches(t, s, 50, 3, 20, 7000)
	entries := s.OffsetIndex().Len()
	require.NoError(t, s.Seal())
	require.NoError(t, s.Flush())
	require.NoError(t, s.Close())
	fi, err := fsys.Stat(path.Join(dir, "00000000000000000000.index"))
	require.NoError(t, err)
	require.EqualValues(t, entries*8, fi.Size(), "sealed index is trimmed")
	fi, err = fsys.Stat(path.Join(dir, "00000000000000000000.timeindex"))
	require.NoError(t, err)
	require.NotZero(t, fi.Size())

	// Count the reads Open makes of the log: only its tail.
	var reads int
	counting := vfs.WithFaults(fsys, vfs.InjectorFunc(func(op vfs.Op) error {
		if op.Kind == vfs.OpRead && path.Ext(op.Path) == ".log" {
			reads++
		}
		return nil
	}))
	s, err = segment.Open(counting, dir, 0, 0, segment.Options{IndexIntervalBytes: 100})
	require.NoError(t, err)
	defer s.Close()
	require.LessOrEqual(t, reads, 2, "a sound segment is not scanned")
	require.EqualValues(t, 150, s.NextOffset())
	require.EqualValues(t, 7000+149, s.MaxTimestamp())
	require.Equal(t, entries, s.OffsetIndex().Len())
	got, err := s.Read(nil, 0, 1<<60, 1<<20)
	require.NoError(t, err)
	require.Equal(t, concat(batches), got)

	require.NoError(t, s.Activate())
	more := appendBatches(t, s, 2, 3, 20, 9000)
	require.EqualValues(t, 150, more[0].h.BaseOffset)
}

func TestDeleteRemovesFiles(t *testing.T) {
	fsys := newFS(t)
	s, err := segment.Create(fsys, dir, 42, 0, segment.Options{})
	require.NoError(t, err)
	appendBatches(t, s, 1, 1, 1, 0)
	require.NoError(t, s.Delete())
	names, err := fsys.List(dir)
	require.NoError(t, err)
	require.Empty(t, names)
}

func TestFileNames(t *testing.T) {
	require.Equal(t, "00000000000000000042.log", segment.FileName(42, segment.LogSuffix))
	base, suffix, ok := segment.ParseFileName("/x/00000000000000000042.timeindex")
	require.True(t, ok)
	require.EqualValues(t, 42, base)
	require.Equal(t, ".timeindex", suffix)
	for _, bad := range []string{"42.log", "0000000000000000004x.log", "00000000000000000042log", "leader-epoch-checkpoint"} {
		_, _, ok := segment.ParseFileName(bad)
		require.False(t, ok, bad)
	}
}

func TestScannerReportsTornTail(t *testing.T) {
	fsys := newFS(t)
	s, err := segment.Create(fsys, dir, 0, 0, segment.Options{})
	require.NoError(t, err)
	batches := appendBatches(t, s, 3, 2, 10, 0)
	require.NoError(t, s.Close())
	f, err := fsys.OpenReadWrite(path.Join(dir, "00000000000000000000.log"))
	require.NoError(t, err)
	defer f.Close()
	end := batches[2].pos + 30
	sc := segment.NewScanner(f, 0, end, segment.ScanVerified)
	var n int
	for sc.Next() {
		require.True(t, bytes.Equal(batches[n].bytes, sc.Batch()))
		n++
	}
	require.Equal(t, 2, n)
	require.ErrorIs(t, sc.Err(), segment.ErrCorrupt)
	require.ErrorIs(t, sc.Err(), record.ErrTruncated)
	require.Equal(t, batches[2].pos, sc.Pos())
}

// TestReadPastAMisplacedIndexEntry: an offset index entry damaged so that
// it still passes the sanity check (increasing) but names another batch's
// position — a valid batch further on, or the middle of one — used to make
// a read skip the batches in between, or fail. The scan checks the entry
// against the batch it finds there, and starts from the segment's first
// batch when they disagree: every read returns what the log holds.
func TestReadPastAMisplacedIndexEntry(t *testing.T) {
	for _, shift := range []string{"to the next batch", "into a batch"} {
		t.Run(shift, func(t *testing.T) {
			fsys := newFS(t)
			opts := segment.Options{IndexIntervalBytes: 200}
			s, err := segment.Create(fsys, dir, 0, 0, opts)
			require.NoError(t, err)
			batches := appendBatches(t, s, 20, 2, 40, 1000)
			entries := s.OffsetIndex().Len()
			require.Greater(t, entries, 3)
			e := s.OffsetIndex().Entry(1)
			require.NoError(t, s.Close())

			// Entry 1 names the batch at e.Pos; move it forward, keeping
			// the index increasing.
			var next int64
			for i, b := range batches {
				if b.pos == e.Pos {
					next = batches[i+1].pos
				}
			}
			newPos := next
			if shift == "into a batch" {
				newPos = e.Pos + 7
			}
			name := path.Join(dir, "00000000000000000000.index")
			f, err := fsys.OpenReadWrite(name)
			require.NoError(t, err)
			var pos [4]byte
			binary.BigEndian.PutUint32(pos[:], uint32(newPos))
			_, err = f.WriteAt(pos[:], 1*8+4)
			require.NoError(t, err)
			require.NoError(t, f.Close())

			s, err = segment.Open(fsys, dir, 0, 0, opts)
			require.NoError(t, err)
			defer s.Close()
			for i, b := range batches {
				for off := b.h.BaseOffset; off <= b.h.LastOffset(); off++ {
					got, err := s.Read(nil, off, 1<<60, 1)
					require.NoError(t, err, "batch %d", i)
					require.Equal(t, b.bytes, got, "batch %d at offset %d", i, off)
				}
			}
		})
	}
}
