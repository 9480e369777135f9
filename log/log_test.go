package log_test

import (
	"bytes"
	"path"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/partlog/partlog/internal/batchtest"
	plog "github.com/partlog/partlog/log"
	"github.com/partlog/partlog/record"
	"github.com/partlog/partlog/vfs"
)

const dir = "/data/study-0"

// clock is a settable time source.
type clock struct{ now time.Time }

func (c *clock) Now() time.Time { return c.now }

func newMem(t testing.TB) *vfs.MemFS {
	t.Helper()
	m := vfs.NewMem()
	require.NoError(t, m.MkdirAll("/data", 0o755))
	require.NoError(t, m.SyncDir("/"))
	return m
}

// smallOptions keeps files small so tests roll segments and stay fast.
func smallOptions(fsys vfs.FS) plog.Options {
	return plog.Options{FS: fsys, SegmentBytes: 4096, IndexIntervalBytes: 256, MaxIndexBytes: 4096}
}

func open(t testing.TB, opts plog.Options) *plog.Log {
	t.Helper()
	l, err := plog.Open(dir, opts)
	require.NoError(t, err)
	return l
}

// appendN appends a batch of n records tagged tag and returns its info and
// the batch as stored.
func appendN(t testing.TB, l *plog.Log, n int, tag string, ts int64) (plog.AppendInfo, []byte) {
	t.Helper()
	b := batchtest.Build(batchtest.Spec{Records: n, ValueSize: 30, Timestamp: ts, Tag: tag, Epoch: -1})
	info, err := l.Append(b)
	require.NoError(t, err)
	return info, b
}

// readAll decodes every record of the log from offset from.
func readAll(t testing.TB, l *plog.Log, from int64) []record.Record {
	t.Helper()
	var out []record.Record
	for off := from; off < l.LogEndOffset(); {
		b, err := l.Read(nil, off, l.LogEndOffset(), 1<<20)
		require.NoError(t, err)
		require.NotEmpty(t, b)
		for len(b) > 0 {
			h, err := record.ParseHeader(b)
			require.NoError(t, err)
			batch, err := record.Decode(b[:h.Size()])
			require.NoError(t, err)
			for _, r := range batch.Records {
				if r.Offset >= off {
					out = append(out, r)
				}
			}
			off = h.NextOffset()
			b = b[h.Size():]
		}
	}
	return out
}

func TestAppendAssignsOffsets(t *testing.T) {
	l := open(t, smallOptions(newMem(t)))
	defer l.Close()
	require.EqualValues(t, 0, l.LogEndOffset())
	for i := range 50 {
		info, b := appendN(t, l, 3, "a", int64(1000+i))
		require.EqualValues(t, i*3, info.FirstOffset)
		require.EqualValues(t, i*3+2, info.LastOffset)
		require.Equal(t, 3, info.Records)
		h, err := record.ParseHeader(b)
		require.NoError(t, err)
		require.EqualValues(t, i*3, h.BaseOffset, "the batch's base offset is rewritten in place")
		_, err = record.Validate(b)
		require.NoError(t, err, "and its CRC stays valid")
	}
	require.EqualValues(t, 150, l.LogEndOffset())
	require.Greater(t, len(l.Segments()), 2, "4 KiB segments roll")
	recs := readAll(t, l, 0)
	require.Len(t, recs, 150)
	for i, r := range recs {
		require.EqualValues(t, i, r.Offset)
		require.Equal(t, batchtest.Value("a", i%3, 30), r.Value)
	}
	// Segments are contiguous.
	segs := l.Segments()
	for i := 1; i < len(segs); i++ {
		require.Equal(t, segs[i-1].NextOffset, segs[i].BaseOffset)
	}
	require.Equal(t, "/data/study-0/00000000000000000000.log", segs[0].Path)
}

func TestReadBounds(t *testing.T) {
	l := open(t, smallOptions(newMem(t)))
	defer l.Close()
	var batches [][]byte
	for range 10 {
		_, b := appendN(t, l, 2, "b", 0)
		batches = append(batches, b)
	}
	got, err := l.Read(nil, 5, 1<<60, 1)
	require.NoError(t, err)
	require.Equal(t, batches[2], got, "the batch holding offset 5, even past maxBytes")
	got, err = l.Read(nil, 5, 8, 1<<20)
	require.NoError(t, err)
	require.Equal(t, bytes.Join(batches[2:4], nil), got, "stops below maxOffset")
	got, err = l.Read(nil, 20, 1<<60, 1<<20)
	require.NoError(t, err)
	require.Empty(t, got, "reading at the log end offset returns nothing")

	_, err = l.Read(nil, 21, 1<<60, 1<<20)
	var oor *plog.OffsetOutOfRangeError
	require.ErrorAs(t, err, &oor)
	require.ErrorIs(t, err, plog.ErrOffsetOutOfRange)
	require.Equal(t, plog.OffsetOutOfRangeError{Offset: 21, LogStartOffset: 0, LogEndOffset: 20}, *oor)
	_, err = l.Read(nil, -1, 1<<60, 1<<20)
	require.ErrorIs(t, err, plog.ErrOffsetOutOfRange)
}

func TestAppendRejectsBadBatches(t *testing.T) {
	opts := smallOptions(newMem(t))
	opts.MaxMessageBytes = 500
	l := open(t, opts)
	defer l.Close()
	_, err := l.Append(batchtest.Build(batchtest.Spec{Records: 20, ValueSize: 100, Epoch: -1}))
	require.ErrorIs(t, err, plog.ErrRecordTooLarge)
	b := batchtest.Simple(2, 0)
	b[len(b)-1] ^= 1
	_, err = l.Append(b)
	require.ErrorIs(t, err, record.ErrCorrupt)
	_, err = l.Append(batchtest.Simple(2, 0)[:40])
	require.Error(t, err)
	require.EqualValues(t, 0, l.LogEndOffset(), "nothing was appended")
	_, err = l.Append(batchtest.Simple(2, 0))
	require.NoError(t, err)
	require.EqualValues(t, 2, l.LogEndOffset())
}

func TestAppendAsFollower(t *testing.T) {
	leader := open(t, smallOptions(newMem(t)))
	defer leader.Close()
	for range 6 {
		appendN(t, leader, 4, "f", 0)
	}
	fetched, err := leader.Read(nil, 0, 1<<60, 1<<20)
	require.NoError(t, err)

	follower, err := plog.Open("/data/study-1", smallOptions(newMem(t)))
	require.NoError(t, err)
	defer follower.Close()
	info, err := follower.AppendAsFollower(fetched)
	require.NoError(t, err)
	require.EqualValues(t, 0, info.FirstOffset)
	require.EqualValues(t, leader.LogEndOffset()-1, info.LastOffset)
	require.Equal(t, leader.LogEndOffset(), follower.LogEndOffset())
	require.Equal(t, readAll(t, leader, 0), readAll(t, follower, 0))

	first, err := record.ParseHeader(fetched)
	require.NoError(t, err)
	_, err = follower.AppendAsFollower(fetched[:first.Size()])
	require.ErrorIs(t, err, plog.ErrUnexpectedAppendOffset, "offsets below the log end offset")
	_, err = follower.AppendAsFollower(fetched[:50])
	require.ErrorIs(t, err, record.ErrTruncated)

	// A gap (a compacted leader) is allowed.
	b := batchtest.Simple(1, 0)
	record.SetBaseOffset(b, 100)
	_, err = follower.AppendAsFollower(b)
	require.NoError(t, err)
	require.EqualValues(t, 101, follower.LogEndOffset())
}

func TestRetention(t *testing.T) {
	c := &clock{now: time.UnixMilli(1_000_000)}
	opts := smallOptions(newMem(t))
	opts.Now = c.Now
	opts.RetentionMs = time.Hour
	l := open(t, opts)
	defer l.Close()
	for i := range 100 {
		appendN(t, l, 5, "r", 1_000_000+int64(i)*60_000) // a minute apart
	}
	segs := l.Segments()
	require.Greater(t, len(segs), 5)

	n, err := l.DeleteRetained()
	require.NoError(t, err)
	require.Zero(t, n, "nothing is an hour old yet")

	c.now = time.UnixMilli(1_000_000 + 60*60_000 + 30*60_000) // 90 minutes on
	n, err = l.DeleteRetained()
	require.NoError(t, err)
	require.Positive(t, n)
	left := l.Segments()
	require.Equal(t, left[0].BaseOffset, l.LogStartOffset())
	for _, s := range segs[:n] {
		require.Less(t, s.MaxTimestamp, c.now.UnixMilli()-time.Hour.Milliseconds())
	}
	require.GreaterOrEqual(t, left[0].MaxTimestamp, c.now.UnixMilli()-time.Hour.Milliseconds())
	_, err = l.Read(nil, 0, 1<<60, 100)
	require.ErrorIs(t, err, plog.ErrOffsetOutOfRange)
	for _, s := range segs[:n] {
		_, err := opts.FS.Stat(s.Path)
		require.ErrorIs(t, err, errNotExist, "deleted segment files are gone")
	}
}

func TestRetentionBytes(t *testing.T) {
	opts := smallOptions(newMem(t))
	opts.RetentionBytes = 10_000
	opts.RetentionMs = -1
	l := open(t, opts)
	defer l.Close()
	for range 150 {
		appendN(t, l, 5, "s", 0) // timestamps 0: time never deletes
	}
	require.Greater(t, l.Size(), int64(20_000))
	_, err := l.DeleteRetained()
	require.NoError(t, err)
	require.LessOrEqual(t, l.Size(), int64(10_000)+4096)
	require.Greater(t, l.Size(), int64(10_000)-4096)
	recs := readAll(t, l, l.LogStartOffset())
	require.EqualValues(t, l.LogEndOffset()-l.LogStartOffset(), len(recs))
}

func TestDeleteRecordsBefore(t *testing.T) {
	l := open(t, smallOptions(newMem(t)))
	defer l.Close()
	for range 40 {
		appendN(t, l, 5, "d", 0)
	}
	segs := l.Segments()
	mid := segs[2].BaseOffset + 3
	require.NoError(t, l.DeleteRecordsBefore(mid))
	require.Equal(t, mid, l.LogStartOffset())
	require.Equal(t, segs[2].BaseOffset, l.Segments()[0].BaseOffset)
	_, err := l.Read(nil, mid-1, 1<<60, 100)
	require.ErrorIs(t, err, plog.ErrOffsetOutOfRange)
	recs := readAll(t, l, mid)
	require.Equal(t, mid, recs[0].Offset)
	require.ErrorIs(t, l.DeleteRecordsBefore(1000), plog.ErrOffsetOutOfRange)
	require.NoError(t, l.DeleteRecordsBefore(5), "a lower offset changes nothing")
	require.Equal(t, mid, l.LogStartOffset())
}

func TestTruncateTo(t *testing.T) {
	l := open(t, smallOptions(newMem(t)))
	defer l.Close()
	for range 40 {
		appendN(t, l, 5, "t", 0)
	}
	segs := l.Segments()
	require.NoError(t, l.TruncateTo(segs[1].BaseOffset+7)) // mid-batch: the batch goes
	want := segs[1].BaseOffset + 5
	require.Equal(t, want, l.LogEndOffset())
	require.Len(t, l.Segments(), 2)
	require.LessOrEqual(t, l.RecoveryPoint(), want)
	info, _ := appendN(t, l, 5, "u", 0)
	require.Equal(t, want, info.FirstOffset)
	recs := readAll(t, l, 0)
	require.Len(t, recs, int(want)+5)
	require.Equal(t, batchtest.Value("u", 0, 30), recs[want].Value)

	require.NoError(t, l.TruncateFullyAndStartAt(1000))
	require.EqualValues(t, 1000, l.LogStartOffset())
	require.EqualValues(t, 1000, l.LogEndOffset())
	require.Len(t, l.Segments(), 1)
	require.EqualValues(t, 1000, l.Segments()[0].BaseOffset)
	info, _ = appendN(t, l, 2, "v", 0)
	require.EqualValues(t, 1000, info.FirstOffset)
	names, err := l.Segments(), error(nil)
	require.NoError(t, err)
	require.Equal(t, path.Join(dir, "00000000000000001000.log"), names[0].Path)

	require.NoError(t, l.TruncateTo(500), "below the log start offset empties the log")
	require.EqualValues(t, 500, l.LogEndOffset())
	require.EqualValues(t, 500, l.LogStartOffset())

	require.Error(t, l.TruncateTo(-3), "no log starts at a negative offset")
	require.EqualValues(t, 500, l.LogEndOffset())
	require.EqualValues(t, 500, l.LogStartOffset())
}

func TestFindOffsetByTimestamp(t *testing.T) {
	l := open(t, smallOptions(newMem(t)))
	defer l.Close()
	for i := range 30 {
		appendN(t, l, 4, "ts", int64(10_000+i*10)) // record j of batch i: 10000+10i+j
	}
	off, ts, found, err := l.FindOffsetByTimestamp(10_052)
	require.NoError(t, err)
	require.True(t, found)
	require.EqualValues(t, 5*4+2, off)
	require.EqualValues(t, 10_052, ts)
	off, _, found, err = l.FindOffsetByTimestamp(10_055)
	require.NoError(t, err)
	require.True(t, found)
	require.EqualValues(t, 6*4, off)
	_, _, found, err = l.FindOffsetByTimestamp(20_000)
	require.NoError(t, err)
	require.False(t, found)
}

func TestReopenKeepsEverything(t *testing.T) {
	fsys := newMem(t)
	l := open(t, smallOptions(fsys))
	for range 30 {
		appendN(t, l, 3, "k", 5)
	}
	want := readAll(t, l, 0)
	segs := l.Segments()
	require.NoError(t, l.Close())
	_, err := l.Append(batchtest.Simple(1, 0))
	require.ErrorIs(t, err, plog.ErrClosed)

	l = open(t, smallOptions(fsys))
	defer l.Close()
	require.Equal(t, want, readAll(t, l, 0))
	require.Equal(t, segs, l.Segments())
	info, _ := appendN(t, l, 1, "k", 5)
	require.EqualValues(t, 90, info.FirstOffset)
}

func TestSecondOpenIsLocked(t *testing.T) {
	for _, fsys := range []vfs.FS{newMem(t), vfs.Default} {
		d := dir
		if fsys == vfs.Default {
			d = path.Join(t.TempDir(), "study-0")
		}
		l, err := plog.Open(d, plog.Options{FS: fsys})
		require.NoError(t, err)
		_, err = plog.Open(d, plog.Options{FS: fsys})
		require.ErrorIs(t, err, plog.ErrLocked)
		require.ErrorContains(t, err, d)
		require.NoError(t, l.Close())
		l, err = plog.Open(d, plog.Options{FS: fsys})
		require.NoError(t, err, "the lock goes with Close")
		require.NoError(t, l.Close())
	}
}
