package log_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	plog "github.com/partlog/partlog/log"
	"github.com/partlog/partlog/record"
	"github.com/partlog/partlog/vfs"
)

// compactOptions makes a compacted log with small segments.
func compactOptions(fsys vfs.FS, c *clock) plog.Options {
	o := smallOptions(fsys)
	o.SegmentBytes = 1024
	o.CleanupPolicy = plog.CleanupCompact
	o.MinCleanableDirtyRatio = -1 // any dirty byte
	if c != nil {
		o.Now = c.Now
	}
	return o
}

// fill appends n records over keys k0..k(keys-1), batches of 1 to 3, and
// returns them.
func fill(t testing.TB, l *plog.Log, h *history, rng *rand.Rand, n, keys int, ts int64) {
	t.Helper()
	for n > 0 {
		var kvs []kv
		for range min(n, 1+rng.IntN(3)) {
			k := fmt.Sprintf("k%d", rng.IntN(keys))
			kvs = append(kvs, put(k, fmt.Sprintf("%s@%d", k, len(*h)+len(kvs))))
		}
		h.appendKV(t, l, ts, kvs...)
		n -= len(kvs)
	}
}

func clean(t testing.TB, l *plog.Log) plog.CleanStats {
	t.Helper()
	st, err := l.Clean(context.Background(), l.LogEndOffset())
	require.NoError(t, err)
	return st
}

// TestCleanKeepsLatestValuePerKey compacts a log twice and compares it,
// record by record, with the model: below where the clean ended, the latest
// record of each key at its original offset; above, everything.
func TestCleanKeepsLatestValuePerKey(t *testing.T) {
	mem := newMem(t)
	opts := compactOptions(mem, nil)
	l := open(t, opts)
	rng := rand.New(rand.NewPCG(1, 2))
	var h history
	fill(t, l, &h, rng, 400, 25, 1000)
	leo := l.LogEndOffset()
	before := len(l.Segments())
	require.Greater(t, before, 8)

	st := clean(t, l)
	require.True(t, st.Cleaned)
	require.Equal(t, int64(0), st.FirstDirtyOffset)
	require.Equal(t, l.Segments()[len(l.Segments())-1].BaseOffset, st.FirstUncleanableOffset)
	require.Equal(t, int64(400), st.RecordsRead+countFrom(h, st.FirstUncleanableOffset))
	require.Equal(t, leo, l.LogEndOffset(), "cleaning changes no offset")
	require.Equal(t, h.compacted(st.FirstUncleanableOffset), readKV(t, l))
	require.Equal(t, st.FirstUncleanableOffset, l.FirstDirtyOffset())
	for _, s := range l.Segments() {
		require.LessOrEqual(t, s.Size, opts.SegmentBytes)
	}

	// Nothing dirty: nothing to do.
	again := clean(t, l)
	require.False(t, again.Cleaned)

	// A second round cleans the new dirty section against the old clean one.
	fill(t, l, &h, rng, 300, 25, 2000)
	st2 := clean(t, l)
	require.True(t, st2.Cleaned)
	require.Equal(t, st.FirstUncleanableOffset, st2.FirstDirtyOffset)
	want := h.compacted(st2.FirstUncleanableOffset)
	require.Equal(t, want, readKV(t, l))
	require.Less(t, st2.SegmentsWritten, st2.SegmentsRead, "small cleaned segments merge")
	require.Less(t, len(l.Segments()), before)

	// Every offset still reads: one that went reads from the next kept.
	for off := l.LogStartOffset(); off < l.LogEndOffset(); off++ {
		b, err := l.Read(nil, off, l.LogEndOffset(), 1)
		require.NoError(t, err)
		hd, err := record.ParseHeader(b)
		require.NoError(t, err)
		require.GreaterOrEqual(t, hd.LastOffset(), off)
	}

	// A reopened log holds the same, with sound indexes.
	require.NoError(t, l.Close())
	l = open(t, opts)
	defer l.Close()
	require.Equal(t, want, readKV(t, l))
	require.Equal(t, leo+300, l.LogEndOffset())
	for _, s := range l.Segments() {
		off, _, found, err := l.FindOffsetByTimestamp(0)
		require.NoError(t, err)
		require.True(t, found)
		require.Equal(t, want[0].offset, off, "segment %d", s.BaseOffset)
	}
}

func countFrom(h history, offset int64) int64 {
	var n int64
	for _, w := range h {
		if w.offset >= offset {
			n++
		}
	}
	return n
}

// TestCleanTombstones checks delete.retention.ms: a tombstone that is the
// latest of its key stays through the cleans before its delete horizon —
// set when a clean first keeps it — and goes at the first clean after.
func TestCleanTombstones(t *testing.T) {
	c := &clock{now: time.UnixMilli(10_000_000)}
	opts := compactOptions(newMem(t), c)
	opts.DeleteRetentionMs = time.Hour
	l := open(t, opts)
	defer l.Close()
	rng := rand.New(rand.NewPCG(3, 4))
	var h history
	h.appendKV(t, l, 1, put("a", "a1"), put("b", "b1"), put("gone", "g1"))
	fill(t, l, &h, rng, 60, 10, 1)
	h.appendKV(t, l, 1, del("a"), del("gone"))
	h.appendKV(t, l, 1, put("gone", "back"))
	fill(t, l, &h, rng, 60, 10, 1)

	st := clean(t, l)
	require.True(t, st.Cleaned)
	got := readKV(t, l)
	require.Equal(t, h.compacted(st.FirstUncleanableOffset), got)
	tomb := findKey(got, "a")
	require.True(t, tomb.tomb, "the tombstone stays: %v", got)
	require.Equal(t, "b1", findKey(got, "b").value)
	require.Equal(t, "back", findKey(got, "gone").value, "a tombstone that is not the latest goes")
	requireHorizon(t, l, tomb.offset, c.now.UnixMilli()+time.Hour.Milliseconds())

	// Before the horizon the tombstone stays.
	c.now = c.now.Add(59 * time.Minute)
	fill(t, l, &h, rng, 60, 10, 1)
	st = clean(t, l)
	require.True(t, st.Cleaned)
	require.Zero(t, st.TombstonesRemoved)
	require.True(t, findKey(readKV(t, l), "a").tomb)

	// After it, the next clean removes it, and the key is gone.
	c.now = c.now.Add(2 * time.Minute)
	fill(t, l, &h, rng, 60, 10, 1)
	st = clean(t, l)
	require.True(t, st.Cleaned)
	require.Equal(t, int64(1), st.TombstonesRemoved)
	got = readKV(t, l)
	require.Equal(t, written{}, findKey(got, "a"), "key a is deleted: %v", got)
	require.Equal(t, "b1", findKey(got, "b").value)
	requireConsistent(t, h, got, "after the horizon")
}

func findKey(ws []written, key string) written {
	var out written
	for _, w := range ws {
		if w.key == key {
			out = w
		}
	}
	return out
}

// requireHorizon checks the delete horizon of the batch holding offset.
func requireHorizon(t *testing.T, l *plog.Log, offset, horizon int64) {
	t.Helper()
	b, err := l.Read(nil, offset, l.LogEndOffset(), 1)
	require.NoError(t, err)
	hd, err := record.ParseHeader(b)
	require.NoError(t, err)
	require.True(t, hd.Attributes.HasDeleteHorizon())
	require.Equal(t, horizon, hd.BaseTimestamp)
}

// TestCleanMinCompactionLag checks min.compaction.lag.ms: segments from the
// first dirty one whose newest record is younger than the lag stay dirty.
func TestCleanMinCompactionLag(t *testing.T) {
	c := &clock{now: time.UnixMilli(100_000_000)}
	opts := compactOptions(newMem(t), c)
	opts.MinCompactionLagMs = time.Hour
	l := open(t, opts)
	defer l.Close()
	rng := rand.New(rand.NewPCG(5, 6))
	var h history
	old := c.now.Add(-2 * time.Hour).UnixMilli()
	young := c.now.Add(-30 * time.Minute).UnixMilli()
	fill(t, l, &h, rng, 100, 10, old)
	boundary := l.LogEndOffset()
	fill(t, l, &h, rng, 100, 10, young)
	fill(t, l, &h, rng, 100, 10, old) // older timestamps after young ones still wait

	st := clean(t, l)
	require.True(t, st.Cleaned)
	require.LessOrEqual(t, st.FirstUncleanableOffset, boundary)
	require.Greater(t, st.FirstUncleanableOffset, int64(0))
	require.Equal(t, h.compacted(st.FirstUncleanableOffset), readKV(t, l))
	for _, w := range readKV(t, l) {
		if w.offset >= boundary {
			require.GreaterOrEqual(t, w.offset, st.FirstUncleanableOffset)
		}
	}

	// Once the lag has passed, the rest (but the active segment) cleans.
	c.now = c.now.Add(time.Hour)
	st = clean(t, l)
	require.True(t, st.Cleaned)
	require.Equal(t, l.Segments()[len(l.Segments())-1].BaseOffset, st.FirstUncleanableOffset)
	require.Equal(t, h.compacted(st.FirstUncleanableOffset), readKV(t, l))
}

// TestCleanDirtyRatio checks min.cleanable.dirty.ratio.
func TestCleanDirtyRatio(t *testing.T) {
	opts := compactOptions(newMem(t), nil)
	opts.MinCleanableDirtyRatio = 0.5
	l := open(t, opts)
	defer l.Close()
	rng := rand.New(rand.NewPCG(7, 8))
	var h history
	// Distinct keys: cleaning removes nothing, so the clean section stays
	// as large as what was written.
	for i := range 300 {
		h.appendKV(t, l, 1, put(fmt.Sprintf("key-%d", i), "v"))
	}
	st := clean(t, l)
	require.True(t, st.Cleaned)
	require.Equal(t, 1.0, st.DirtyRatio)
	cleanEnd := st.FirstUncleanableOffset

	// A little dirt is not enough.
	fill(t, l, &h, rng, 40, 5, 1)
	st = clean(t, l)
	require.False(t, st.Cleaned, "ratio %v", st.DirtyRatio)
	require.Greater(t, st.DirtyRatio, 0.0)
	require.Less(t, st.DirtyRatio, 0.5)
	require.Equal(t, cleanEnd, l.FirstDirtyOffset())
	require.Equal(t, h.compacted(cleanEnd), readKV(t, l))

	// Enough is.
	fill(t, l, &h, rng, 800, 5, 1)
	st = clean(t, l)
	require.True(t, st.Cleaned, "ratio %v", st.DirtyRatio)
	require.GreaterOrEqual(t, st.DirtyRatio, 0.5)
	require.Equal(t, h.compacted(st.FirstUncleanableOffset), readKV(t, l))
}

// TestCleanStopsAtUpTo checks that nothing at or above upTo (a high
// watermark or last stable offset) is touched: the segment holding it and
// all after stay as written.
func TestCleanStopsAtUpTo(t *testing.T) {
	l := open(t, compactOptions(newMem(t), nil))
	defer l.Close()
	rng := rand.New(rand.NewPCG(9, 10))
	var h history
	fill(t, l, &h, rng, 300, 5, 1)
	upTo := int64(150)
	st, err := l.Clean(context.Background(), upTo)
	require.NoError(t, err)
	require.True(t, st.Cleaned)
	require.LessOrEqual(t, st.FirstUncleanableOffset, upTo)
	require.Greater(t, st.FirstUncleanableOffset, int64(0))
	require.Equal(t, h.compacted(st.FirstUncleanableOffset), readKV(t, l))
}

// TestCleanKeepsProducerStateAndMarkers checks that the last batch of each
// producer survives, emptied, with its producer ID, epoch and sequence
// range; that control batches stay; and that other emptied batches go.
func TestCleanKeepsProducerStateAndMarkers(t *testing.T) {
	l := open(t, compactOptions(newMem(t), nil))
	defer l.Close()
	var h history
	producer := func(epoch int16, seq int32) record.BatchOptions {
		o := record.DefaultBatchOptions()
		o.ProducerID, o.ProducerEpoch, o.BaseSequence = 7, epoch, seq
		return o
	}
	first := h.appendWith(t, l, producer(1, 0), 1, put("a", "1"), put("b", "1"))
	tail := h.appendWith(t, l, producer(2, 0), 1, put("a", "2"), put("b", "2"), put("c", "2"))
	marker, err := l.Append(record.ControlBatch(record.ControlCommit, 7, 2, 0, 1))
	require.NoError(t, err)
	for i := range 80 {
		h.appendKV(t, l, 1, put("a", fmt.Sprint("x", i)), put("b", "y"), put("c", "z"))
	}
	st := clean(t, l)
	require.True(t, st.Cleaned)
	require.Greater(t, st.FirstUncleanableOffset, marker.LastOffset)

	var batches []record.Header
	for off := int64(0); off < marker.LastOffset+1; {
		b, err := l.Read(nil, off, l.LogEndOffset(), 1)
		require.NoError(t, err)
		hd, err := record.ParseHeader(b)
		require.NoError(t, err)
		if hd.BaseOffset > marker.LastOffset {
			break
		}
		batches = append(batches, hd)
		off = hd.NextOffset()
	}
	require.Len(t, batches, 2, "the producer's first batch went, its last and the marker stayed")
	got := batches[0]
	require.Equal(t, tail.FirstOffset, got.BaseOffset)
	require.Equal(t, tail.LastOffset, got.LastOffset())
	require.Equal(t, int64(7), got.ProducerID)
	require.Equal(t, int16(2), got.ProducerEpoch)
	require.Equal(t, int32(0), got.BaseSequence)
	require.Equal(t, int32(0), got.NumRecords)
	require.True(t, batches[1].Attributes.IsControl())
	require.Equal(t, marker.FirstOffset, batches[1].BaseOffset)
	require.Equal(t, h.compacted(st.FirstUncleanableOffset), readKV(t, l))
	_ = first
}

// TestCleanPolicy checks that a log without compact is not cleaned and
// that compact alone does not apply time or size retention.
func TestCleanPolicy(t *testing.T) {
	for _, tc := range []struct {
		policy  plog.CleanupPolicy
		cleans  bool
		retains bool
	}{
		{plog.CleanupDelete, false, true},
		{plog.CleanupCompact, true, false},
		{plog.CleanupCompactDelete, true, true},
	} {
		t.Run(tc.policy.String(), func(t *testing.T) {
			p, err := plog.ParseCleanupPolicy(tc.policy.String())
			require.NoError(t, err)
			require.Equal(t, tc.policy, p)
			opts := compactOptions(newMem(t), nil)
			opts.CleanupPolicy = tc.policy
			opts.RetentionBytes = 2048
			l := open(t, opts)
			defer l.Close()
			var h history
			fill(t, l, &h, rand.New(rand.NewPCG(1, 1)), 200, 3, 1)
			st := clean(t, l)
			require.Equal(t, tc.cleans, st.Cleaned)
			n, err := l.DeleteRetained()
			require.NoError(t, err)
			require.Equal(t, tc.retains, n > 0)
		})
	}
	_, err := plog.ParseCleanupPolicy("compact,nope")
	require.Error(t, err)
	p, err := plog.ParseCleanupPolicy("delete, compact")
	require.NoError(t, err)
	require.Equal(t, plog.CleanupCompactDelete, p)
}

// TestCleanOptionsValidation checks the compaction options' checks.
func TestCleanOptionsValidation(t *testing.T) {
	for _, tc := range []struct {
		name string
		set  func(o *plog.Options)
		msg  string
	}{
		{"ratio", func(o *plog.Options) { o.MinCleanableDirtyRatio = 1.5 }, "MinCleanableDirtyRatio"},
		{"lag", func(o *plog.Options) { o.MinCompactionLagMs = -time.Second }, "MinCompactionLagMs"},
		{"policy", func(o *plog.Options) { o.CleanupPolicy = 9 }, "CleanupPolicy"},
		{"first dirty", func(o *plog.Options) { o.FirstDirtyOffset = -1 }, "FirstDirtyOffset"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := compactOptions(newMem(t), nil)
			tc.set(&o)
			_, err := plog.Open(dir, o)
			require.ErrorContains(t, err, tc.msg)
		})
	}
	require.Equal(t, "CleanupPolicy(9)", plog.CleanupPolicy(9).String())
}
