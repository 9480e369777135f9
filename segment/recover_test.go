package segment_test

import (
	"math/rand/v2"
	"path"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/partlog/partlog/index"
	"github.com/partlog/partlog/record"
	"github.com/partlog/partlog/segment"
	"github.com/partlog/partlog/vfs"
)

var logPath = path.Join(dir, "00000000000000000000.log")

// written makes a closed segment of n batches and returns them.
func written(t *testing.T, fsys vfs.FS, n int) []appended {
	t.Helper()
	s, err := segment.Create(fsys, dir, 0, 0, segment.Options{IndexIntervalBytes: 256, MaxIndexBytes: 64 << 10})
	require.NoError(t, err)
	batches := appendBatches(t, s, n, 3, 50, 1000)
	require.NoError(t, s.Flush())
	require.NoError(t, s.Close())
	return batches
}

func setSize(t *testing.T, fsys vfs.FS, size int64) {
	t.Helper()
	f, err := fsys.OpenReadWrite(logPath)
	require.NoError(t, err)
	require.NoError(t, f.Truncate(size))
	require.NoError(t, f.Close())
}

func writeAt(t *testing.T, fsys vfs.FS, name string, b []byte, pos int64) {
	t.Helper()
	f, err := fsys.OpenReadWrite(name)
	require.NoError(t, err)
	_, err = f.WriteAt(b, pos)
	require.NoError(t, err)
	require.NoError(t, f.Close())
}

// recovered opens the segment for recovery and recovers it.
func recovered(t *testing.T, fsys vfs.FS) (*segment.Segment, segment.Recovery) {
	t.Helper()
	s, err := segment.OpenForRecovery(fsys, dir, 0, 0, segment.Options{IndexIntervalBytes: 256, MaxIndexBytes: 64 << 10})
	require.NoError(t, err)
	r, err := s.Recover(nil)
	require.NoError(t, err)
	return s, r
}

// requireHolds checks that the segment holds exactly batches, can find
// each offset through its index, and takes the next append at the right
// offset; then that a second recovery changes nothing.
func requireHolds(t *testing.T, fsys vfs.FS, s *segment.Segment, batches []appended) {
	t.Helper()
	got, err := s.Read(nil, 0, 1<<60, 1<<30)
	require.NoError(t, err)
	require.Equal(t, concat(batches), got)
	next := int64(0)
	if n := len(batches); n > 0 {
		next = batches[n-1].h.NextOffset()
	}
	require.Equal(t, next, s.NextOffset())
	for _, b := range batches {
		pos, _, found, err := s.Locate(b.h.LastOffset())
		require.NoError(t, err)
		require.True(t, found)
		require.Equal(t, b.pos, pos)
	}
	require.NoError(t, s.Activate())
	more := appendBatches(t, s, 1, 2, 10, 5000)
	require.Equal(t, next, more[0].h.BaseOffset)
	require.NoError(t, s.Close())

	again, r := recovered(t, fsys)
	defer again.Close()
	require.Zero(t, r.Truncated, "recovering a recovered segment changes nothing")
	require.Equal(t, len(batches)+1, r.Batches)
}

// TestRecoverTornTail cuts the log at every byte of its last batch (test 1a
// of the reliability plan).
func TestRecoverTornTail(t *testing.T) {
	fsys := newFS(t)
	batches := written(t, fsys, 6)
	last := batches[len(batches)-1]
	full := fsys.CrashClone(vfs.CrashOptions{KeepUnsynced: vfs.KeepAll})
	for cut := last.pos; cut < last.pos+int64(len(last.bytes)); cut++ {
		fsys := full.CrashClone(vfs.CrashOptions{KeepUnsynced: vfs.KeepAll})
		setSize(t, fsys, cut)
		s, r := recovered(t, fsys)
		require.Equal(t, 5, r.Batches, "cut at %d", cut)
		require.Equal(t, last.pos, r.ValidBytes)
		require.Equal(t, cut-last.pos, r.Truncated)
		if cut > last.pos {
			require.ErrorIs(t, r.Cause, segment.ErrCorrupt)
			require.ErrorIs(t, r.Cause, record.ErrTruncated)
		}
		requireHolds(t, fsys, s, batches[:5])
	}
}

// TestRecoverBadTails covers garbage, a zero-filled tail and a bit flip.
func TestRecoverBadTails(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	garbage := make([]byte, 3000)
	for i := range garbage {
		garbage[i] = byte(rng.Uint32())
	}
	for _, tc := range []struct {
		name  string
		fault func(t *testing.T, fsys vfs.FS, batches []appended)
		keep  int
	}{
		{"garbage appended", func(t *testing.T, fsys vfs.FS, b []appended) {
			end := b[len(b)-1].pos + int64(len(b[len(b)-1].bytes))
			writeAt(t, fsys, logPath, garbage, end)
		}, 8},
		{"zero-filled tail", func(t *testing.T, fsys vfs.FS, b []appended) {
			end := b[len(b)-1].pos + int64(len(b[len(b)-1].bytes))
			setSize(t, fsys, end+4096)
		}, 8},
		{"last batch torn into zeros", func(t *testing.T, fsys vfs.FS, b []appended) {
			last := b[len(b)-1]
			writeAt(t, fsys, logPath, make([]byte, len(last.bytes)-40), last.pos+40)
		}, 7},
		{"bit flip in batch 4", func(t *testing.T, fsys vfs.FS, b []appended) {
			p := b[4].pos + int64(len(b[4].bytes)) - 5
			writeAt(t, fsys, logPath, []byte{b[4].bytes[len(b[4].bytes)-5] ^ 0x10}, p)
		}, 4},
		{"batch length overwritten", func(t *testing.T, fsys vfs.FS, b []appended) {
			writeAt(t, fsys, logPath, []byte{0x7f, 0xff, 0xff, 0xff}, b[6].pos+8)
		}, 6},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fsys := newFS(t)
			batches := written(t, fsys, 8)
			tc.fault(t, fsys, batches)
			s, r := recovered(t, fsys)
			require.Equal(t, tc.keep, r.Batches)
			require.ErrorIs(t, r.Cause, segment.ErrCorrupt)
			var ce *segment.CorruptionError
			require.ErrorAs(t, r.Cause, &ce)
			require.Equal(t, r.ValidBytes, ce.Pos)
			requireHolds(t, fsys, s, batches[:tc.keep])
		})
	}
}

// TestOpenRebuildsDamagedIndex covers test 3 of the reliability plan: a
// damaged index is noticed on open and rebuilt from the log, and lookups
// answer as before.
func TestOpenRebuildsDamagedIndex(t *testing.T) {
	for _, tc := range []struct {
		name   string
		damage func(t *testing.T, fsys vfs.FS)
	}{
		{"offset index deleted", func(t *testing.T, fsys vfs.FS) {
			require.NoError(t, fsys.Remove(path.Join(dir, "00000000000000000000.index")))
		}},
		{"time index deleted", func(t *testing.T, fsys vfs.FS) {
			require.NoError(t, fsys.Remove(path.Join(dir, "00000000000000000000.timeindex")))
		}},
		{"offset index odd size", func(t *testing.T, fsys vfs.FS) {
			f, err := fsys.OpenReadWrite(path.Join(dir, "00000000000000000000.index"))
			require.NoError(t, err)
			size, _ := f.Size()
			require.NoError(t, f.Truncate(size-3))
			require.NoError(t, f.Close())
		}},
		{"offset index out of order", func(t *testing.T, fsys vfs.FS) {
			writeAt(t, fsys, path.Join(dir, "00000000000000000000.index"), []byte{0, 0, 0, 0, 0, 0, 0, 1}, 8)
		}},
		{"offset index points past the log", func(t *testing.T, fsys vfs.FS) {
			f, err := fsys.OpenReadWrite(path.Join(dir, "00000000000000000000.index"))
			require.NoError(t, err)
			size, _ := f.Size()
			_, err = f.WriteAt([]byte{0, 0, 0x7f, 0xff, 0, 0x7f, 0xff, 0xff}, size-8)
			require.NoError(t, err)
			require.NoError(t, f.Close())
		}},
		{"offset index zeroed", func(t *testing.T, fsys vfs.FS) {
			f, err := fsys.OpenReadWrite(path.Join(dir, "00000000000000000000.index"))
			require.NoError(t, err)
			require.NoError(t, f.Truncate(0))
			require.NoError(t, f.Truncate(4096))
			require.NoError(t, f.Close())
		}},
		{"time index out of order", func(t *testing.T, fsys vfs.FS) {
			writeAt(t, fsys, path.Join(dir, "00000000000000000000.timeindex"), make([]byte, 12), 12)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fsys := newFS(t)
			s, err := segment.Create(fsys, dir, 0, 0, segment.Options{IndexIntervalBytes: 256, MaxIndexBytes: 64 << 10})
			require.NoError(t, err)
			batches := appendBatches(t, s, 40, 3, 50, 1000)
			require.NoError(t, s.Seal())
			wantEntries := entries(s)
			require.NoError(t, s.Flush())
			require.NoError(t, s.Close())

			tc.damage(t, fsys)
			s, err = segment.Open(fsys, dir, 0, 0, segment.Options{IndexIntervalBytes: 256, MaxIndexBytes: 64 << 10})
			require.NoError(t, err)
			defer s.Close()
			got := entries(s)
			require.Equal(t, wantEntries.offsets, got.offsets)
			// The rebuilt time index lacks only the sealing entry.
			require.Equal(t, wantEntries.times[:len(got.times)], got.times)
			requireSame(t, s, batches)
		})
	}
}

type indexEntries struct {
	offsets []index.OffsetPosition
	times   []index.TimestampOffset
}

func entries(s *segment.Segment) indexEntries {
	var e indexEntries
	for i := range s.OffsetIndex().Len() {
		e.offsets = append(e.offsets, s.OffsetIndex().Entry(i))
	}
	for i := range s.TimeIndex().Len() {
		e.times = append(e.times, s.TimeIndex().Entry(i))
	}
	return e
}

func requireSame(t *testing.T, s *segment.Segment, batches []appended) {
	t.Helper()
	for _, b := range batches {
		for off := b.h.BaseOffset; off <= b.h.LastOffset(); off++ {
			pos, _, found, err := s.Locate(off)
			require.NoError(t, err)
			require.True(t, found)
			require.Equal(t, b.pos, pos)
		}
		off, _, found, err := s.FindOffsetByTimestamp(b.h.BaseTimestamp)
		require.NoError(t, err)
		require.True(t, found)
		require.Equal(t, b.h.BaseOffset, off)
	}
	got, err := s.Read(nil, 0, 1<<60, 1<<30)
	require.NoError(t, err)
	require.Equal(t, concat(batches), got)
}

// TestOpenCorruptSealedSegment checks that a segment trusted as sound whose
// index must be rebuilt, and whose log turns out damaged, is reported and
// left as it is: data below the recovery point is never cut silently.
func TestOpenCorruptSealedSegment(t *testing.T) {
	fsys := newFS(t)
	batches := written(t, fsys, 10)
	require.NoError(t, fsys.Remove(path.Join(dir, "00000000000000000000.index")))
	b := batches[3]
	writeAt(t, fsys, logPath, []byte{b.bytes[70] ^ 1}, b.pos+70)
	fi, _ := fsys.Stat(logPath)
	_, err := segment.Open(fsys, dir, 0, 0, segment.Options{IndexIntervalBytes: 256, MaxIndexBytes: 64 << 10})
	var ce *segment.CorruptionError
	require.ErrorAs(t, err, &ce)
	require.Equal(t, b.pos, ce.Pos)
	require.ErrorIs(t, err, record.ErrCorrupt)
	after, _ := fsys.Stat(logPath)
	require.Equal(t, fi.Size(), after.Size(), "the log is not cut")
}
