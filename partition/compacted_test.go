package partition_test

import (
	"bytes"
	"fmt"
	"path"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/log"
	"github.com/partlog/partlog/partition"
	"github.com/partlog/partlog/record"
	"github.com/partlog/partlog/vfs"
)

// compactedPartition is a partition of a compacted topic with small
// segments, on fsys, with clock as the time of both the log (delete
// horizons) and the partition (marker timestamps, producer expiration).
type compactedPartition struct {
	t     *testing.T
	fsys  vfs.FS
	clock *time.Time
	l     *log.Log
	p     *partition.Partition
	seqs  map[int64]int32 // the next sequence of each producer
}

func compactedLogOptions(fsys vfs.FS, clock *time.Time) log.Options {
	return log.Options{FS: fsys, SegmentBytes: 1024, MaxIndexBytes: 4096, CleanupPolicy: log.CleanupCompact,
		MinCleanableDirtyRatio: -1, DeleteRetentionMs: time.Hour, Now: func() time.Time { return *clock }}
}

func newCompactedPartition(t *testing.T) *compactedPartition {
	t.Helper()
	clock := time.UnixMilli(30_000_000)
	c := &compactedPartition{t: t, fsys: vfs.NewMem(), clock: &clock, seqs: map[int64]int32{}}
	c.open(true)
	t.Cleanup(func() { c.l.Close() })
	return c
}

// open opens the log and a partition over it; clean says the log was
// closed cleanly.
func (c *compactedPartition) open(clean bool) {
	c.t.Helper()
	opts := compactedLogOptions(c.fsys, c.clock)
	opts.CleanShutdown = clean
	l, err := log.Open("/data/t-0", opts)
	require.NoError(c.t, err)
	c.l = l
	c.p = partition.New("t", 0, 1, 0, l, partition.Options{Compacted: true, Now: func() time.Time { return *c.clock }})
}

// reopen closes the log, leaving the partition without its closing
// snapshot, and opens both again: the cleaner's first dirty offset starts
// over at 0, so the next clean rewrites every segment it may.
func (c *compactedPartition) reopen() {
	c.t.Helper()
	require.NoError(c.t, c.l.Close())
	c.open(true)
}

// keyed returns a batch of key=value records (each "key=value"), from
// producer pid (-1 for none), transactional or not.
func (c *compactedPartition) keyed(pid int64, transactional bool, kvs ...string) []byte {
	o := record.DefaultBatchOptions()
	if pid >= 0 {
		o.ProducerID, o.ProducerEpoch, o.BaseSequence, o.Transactional = pid, 0, c.seqs[pid], transactional
		c.seqs[pid] += int32(len(kvs))
	}
	b := record.NewBuilder(o)
	for _, s := range kvs {
		k, v, _ := bytes.Cut([]byte(s), []byte("="))
		b.Append(record.Record{Timestamp: c.clock.UnixMilli(), Key: k, Value: v})
	}
	return b.Build()
}

func (c *compactedPartition) append(b []byte) int64 {
	c.t.Helper()
	res, err := c.p.Append(b, kafka.AcksAll)
	require.NoError(c.t, err)
	return res.FirstOffset
}

func (c *compactedPartition) plain(kvs ...string) int64 { return c.append(c.keyed(-1, false, kvs...)) }
func (c *compactedPartition) txn(pid int64, kvs ...string) int64 {
	return c.append(c.keyed(pid, true, kvs...))
}

func (c *compactedPartition) end(pid int64, typ record.ControlType) int64 {
	c.t.Helper()
	res, err := c.p.AppendMarker(pid, 0, 0, typ)
	require.NoError(c.t, err)
	return res.FirstOffset
}

// fill appends n plain records over keys x0..x4, which supersede one
// another.
func (c *compactedPartition) fill(n int) {
	for i := 0; i < n; i += 2 {
		c.plain(fmt.Sprintf("x%d=filler-%d", i%5, i), fmt.Sprintf("x%d=filler-%d", (i+1)%5, i+1))
	}
}

func (c *compactedPartition) lso() int64 {
	c.t.Helper()
	o, err := c.p.LastStableOffset()
	require.NoError(c.t, err)
	return o
}

// kvRecord is a record as a consumer reads it.
type kvRecord struct {
	offset     int64
	key, value string
}

func (r kvRecord) String() string { return fmt.Sprintf("%d:%s=%s", r.offset, r.key, r.value) }

// consume reads the partition from its start at isolation, as Kafka's
// consumer does: a read_committed one skips a producer's transactional
// batches from the first offset of each aborted transaction the fetch
// answers until the producer's ABORT marker.
func (c *compactedPartition) consume(isolation kafka.IsolationLevel) []kvRecord {
	c.t.Helper()
	out := []kvRecord{}
	skipping := map[int64]bool{}
	for off := c.l.LogStartOffset(); ; {
		res, err := c.p.FetchIsolated(nil, off, 1<<20, isolation)
		require.NoError(c.t, err)
		if len(res.Records) == 0 {
			return out
		}
		aborted := slices.Clone(res.AbortedTransactions)
		slices.SortFunc(aborted, func(a, b partition.AbortedTransaction) int { return int(a.FirstOffset - b.FirstOffset) })
		for data := res.Records; len(data) > 0; {
			h, err := record.ParseHeader(data)
			require.NoError(c.t, err)
			b, err := record.Decode(data[:h.Size()])
			require.NoError(c.t, err)
			data, off = data[h.Size():], h.NextOffset()
			for len(aborted) > 0 && aborted[0].FirstOffset <= h.LastOffset() {
				skipping[aborted[0].ProducerID] = true
				aborted = aborted[1:]
			}
			if h.Attributes.IsControl() {
				if len(b.Records) > 0 {
					m, err := record.ParseControlRecord(b.Records[0])
					require.NoError(c.t, err)
					if m.Type == record.ControlAbort {
						delete(skipping, h.ProducerID)
					}
				}
				continue
			}
			if h.Attributes.IsTransactional() && skipping[h.ProducerID] {
				continue
			}
			for _, r := range b.Records {
				out = append(out, kvRecord{r.Offset, string(r.Key), string(r.Value)})
			}
		}
	}
}

// rawFrom returns the log's bytes from the batch holding offset to its
// end.
func (c *compactedPartition) rawFrom(offset int64) []byte {
	c.t.Helper()
	var out []byte
	for off := offset; off < c.l.LogEndOffset(); {
		data, err := c.l.Read(nil, off, c.l.LogEndOffset(), 1<<20)
		require.NoError(c.t, err)
		out = append(out, data...)
		for len(data) > 0 {
			h, err := record.ParseHeader(data)
			require.NoError(c.t, err)
			data, off = data[h.Size():], h.NextOffset()
		}
	}
	return out
}

// openTxnScenario writes plain records, then producer 7's transaction,
// left open, with a record of key x0, then plain records that supersede
// every key before them.
func openTxnScenario(t *testing.T) (*compactedPartition, int64) {
	c := newCompactedPartition(t)
	c.fill(60)
	first := c.txn(7, "x0=open-transaction")
	c.fill(100)
	require.Equal(t, first, c.lso())
	require.Greater(t, len(c.l.Segments()), 6)
	return c, first
}

// TestCleanStopsAtLastStableOffset: Partition.Clean cleans up to the last
// stable offset — the first offset of producer 7's open transaction —
// and leaves every byte from there on as written; once the transaction
// commits, the next clean goes on past it. The negative control cleans as
// the broker did before, up to the high watermark: the records after the
// open transaction's first offset are rewritten.
func TestCleanStopsAtLastStableOffset(t *testing.T) {
	c, first := openTxnScenario(t)
	before := c.rawFrom(first)
	st, err := c.p.Clean(t.Context())
	require.NoError(t, err)
	require.True(t, st.Cleaned)
	require.LessOrEqual(t, st.FirstUncleanableOffset, first)
	require.Positive(t, st.FirstUncleanableOffset)
	require.Equal(t, before, c.rawFrom(first), "nothing from the open transaction's first offset on changed")
	require.Less(t, len(c.consume(kafka.ReadUncommitted)), 161, "below it, the clean removed superseded records")

	c.end(7, record.ControlCommit)
	c.fill(20)
	st, err = c.p.Clean(t.Context())
	require.NoError(t, err)
	require.Greater(t, st.FirstUncleanableOffset, first)
	for _, r := range c.consume(kafka.ReadCommitted) {
		require.NotEqual(t, "open-transaction", r.value, "once committed, the record is compacted as any")
	}

	t.Run("cleaning up to the high watermark", func(t *testing.T) {
		c, first := openTxnScenario(t)
		before := c.rawFrom(first)
		st, err := c.l.Clean(t.Context(), c.p.HighWatermark())
		require.NoError(t, err)
		require.Greater(t, st.FirstUncleanableOffset, first)
		require.NotEqual(t, before, c.rawFrom(first), "without the bound, records after the open transaction's first offset are cleaned")
	})
}

// TestCleanReadCommitted cleans a partition with producers committing,
// aborting and leaving a transaction open (until the second clean) among
// plain records, through cleans as the clock passes the delete horizons:
// after each, a
// read_committed consumer reads what it read before but the records
// compaction removed by key (each key's latest below the clean's end
// stays), a read_uncommitted one no aborted record below it; and the
// partition, reloaded from its log alone, has the same last stable
// offset, producers and reads.
func TestCleanReadCommitted(t *testing.T) {
	c := newCompactedPartition(t)
	c.plain("a=a1", "b=b1")
	c.txn(1, "a=aborted-1", "c=aborted-1")
	c.txn(2, "b=committed-2")
	c.fill(20)
	c.txn(1, "e=aborted-1")
	c.end(1, record.ControlAbort)
	c.txn(3, "f=committed-3")
	c.end(2, record.ControlCommit)
	c.fill(20)
	c.end(3, record.ControlCommit)
	c.txn(1, "g=committed-1")
	c.end(1, record.ControlCommit)
	c.txn(4, "a=aborted-4")
	c.fill(20)
	c.end(4, record.ControlAbort)
	c.fill(40)
	c.txn(5, "b=open-5")
	c.fill(40)

	start := *c.clock
	for i, ahead := range []time.Duration{0, time.Minute, 2 * time.Hour} {
		*c.clock = start.Add(ahead)
		if i == 1 {
			c.end(5, record.ControlCommit) // the cleans go on past it
		}
		c.fill(20)
		before := c.consume(kafka.ReadCommitted)
		st, err := c.p.Clean(t.Context())
		require.NoError(t, err)
		require.True(t, st.Cleaned)
		end := st.FirstUncleanableOffset
		latest := map[string]int64{}
		for _, r := range before {
			if r.offset < end {
				latest[r.key] = r.offset
			}
		}
		var want []kvRecord
		for _, r := range before {
			if r.offset >= end || latest[r.key] == r.offset {
				want = append(want, r)
			}
		}
		require.Equal(t, want, c.consume(kafka.ReadCommitted), "clean %d: read_committed", i)
		for _, r := range c.consume(kafka.ReadUncommitted) {
			require.False(t, r.offset < end && bytes.Contains([]byte(r.value), []byte("aborted")), "clean %d: %v", i, r)
		}
		if i == 2 {
			require.Positive(t, st.MarkersRemoved, "the markers of the emptied transactions went")
		}
	}
	got := c.consume(kafka.ReadCommitted)
	require.Equal(t, "a1", findValue(got, "a"), "the aborted records of key a did not supersede a1")
	require.Equal(t, "open-5", findValue(got, "b"), "committed at last")
	lso, states := c.lso(), statesOf(t, c.p)

	// Reloaded from the log alone: no snapshot, an unclean open.
	require.NoError(t, c.l.Close())
	names, err := c.fsys.List("/data/t-0")
	require.NoError(t, err)
	for _, n := range names {
		if path.Ext(n) == partition.SnapshotSuffix {
			require.NoError(t, c.fsys.Remove(path.Join("/data/t-0", n)))
		}
	}
	c.open(false)
	require.Equal(t, lso, c.lso())
	require.Equal(t, got, c.consume(kafka.ReadCommitted))
	require.Equal(t, producersAndEpochs(states), producersAndEpochs(statesOf(t, c.p)))
}

func findValue(rs []kvRecord, key string) string {
	v := ""
	for _, r := range rs {
		if r.key == key {
			v = r.value
		}
	}
	return v
}

func statesOf(t *testing.T, p *partition.Partition) []partition.ProducerStateEntry {
	t.Helper()
	s, err := p.ProducerStates()
	require.NoError(t, err)
	return s
}

// producersAndEpochs keeps of producer states what a rebuild from a
// cleaned log must keep: each producer, its epoch, its open transaction,
// and its last sequence.
func producersAndEpochs(s []partition.ProducerStateEntry) []string {
	var out []string
	for _, e := range s {
		out = append(out, fmt.Sprintf("%d epoch %d txn %d last sequence %d", e.ProducerID, e.ProducerEpoch, e.CurrentTxnFirstOffset, e.LastSequence()))
	}
	return out
}

// TestCleanKeepsMarkersForSnapshots: producer 1's transaction is open
// when the log rolls, so that the producer state snapshot of the roll
// has it open; it aborts, the next roll snapshots the state again, and
// the producer goes on outside transactions.
// Three cleans remove its records, stamp its marker, and — the clock past
// the horizon — would remove the marker; Partition.Clean keeps it, since
// it lies above the oldest snapshot. A load from that snapshot (the newest
// one damaged) then finds the transaction closed, and the last stable
// offset is the high watermark. The negative control removes the marker
// (a clean without the snapshot bound): the same load finds the
// transaction open for good, and the last stable offset stuck at its
// first offset.
func TestCleanKeepsMarkersForSnapshots(t *testing.T) {
	scenario := func(t *testing.T, lastClean func(c *compactedPartition) log.CleanStats) (*compactedPartition, int64) {
		c := newCompactedPartition(t)
		c.fill(10)
		first := c.txn(1, "a=aborted")
		for base := c.l.ActiveSegmentBaseOffset(); c.l.ActiveSegmentBaseOffset() == base; {
			c.fill(2)
		}
		snaps := snapshots(t, c.fsys)
		require.Len(t, snaps, 1, "the roll snapshots the state, the transaction open")
		c.fill(4)
		c.end(1, record.ControlAbort)
		for base := c.l.ActiveSegmentBaseOffset(); c.l.ActiveSegmentBaseOffset() == base; {
			c.fill(2)
		}
		// Producer 1 goes on, outside transactions, in the active
		// segment: its aborted batch no longer holds its state, and goes.
		c.append(c.keyed(1, false, "b=later"))
		require.Len(t, snapshots(t, c.fsys), 2)
		require.Equal(t, c.p.HighWatermark(), c.lso())

		start := *c.clock
		st, err := c.p.Clean(t.Context())
		require.NoError(t, err)
		require.Equal(t, int64(1), st.AbortedRecordsRemoved)
		c.reopen()
		*c.clock = start.Add(time.Minute)
		st, err = c.p.Clean(t.Context())
		require.NoError(t, err)
		require.True(t, st.Cleaned)
		c.reopen()
		*c.clock = start.Add(2 * time.Hour)
		st = lastClean(c)
		require.Len(t, snapshots(t, c.fsys), 2, "no snapshot came or went")

		// The newest snapshot is damaged: a load falls back on the older.
		newest := path.Join("/data/t-0", snapshots(t, c.fsys)[1])
		f, err := c.fsys.Create(newest)
		require.NoError(t, err)
		_, err = f.Write([]byte("damaged"))
		require.NoError(t, err)
		require.NoError(t, f.Close())
		c.p.ResetProducerState()
		return c, first
	}

	c, _ := scenario(t, func(c *compactedPartition) log.CleanStats {
		st, err := c.p.Clean(t.Context())
		require.NoError(t, err)
		require.True(t, st.Cleaned)
		require.Zero(t, st.MarkersRemoved, "the marker above the oldest snapshot stays")
		return st
	})
	require.Equal(t, c.p.HighWatermark(), c.lso())

	t.Run("without the snapshot bound", func(t *testing.T) {
		c, first := scenario(t, func(c *compactedPartition) log.CleanStats {
			st, err := c.l.Clean(t.Context(), c.lso())
			require.NoError(t, err)
			require.Equal(t, int64(1), st.MarkersRemoved)
			return st
		})
		require.Equal(t, first, c.lso(), "the transaction hangs")
	})
}
