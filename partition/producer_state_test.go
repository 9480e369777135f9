package partition_test

import (
	"fmt"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/log"
	"github.com/partlog/partlog/partition"
	"github.com/partlog/partlog/record"
	"github.com/partlog/partlog/vfs"
)

// idemBatch builds a batch of n records from producer id with epoch and
// base sequence seq, timestamped ts.
func idemBatch(id int64, epoch int16, seq int32, n int, ts int64) []byte {
	opts := record.DefaultBatchOptions()
	opts.ProducerID, opts.ProducerEpoch, opts.BaseSequence = id, epoch, seq
	b := record.NewBuilder(opts)
	for i := range n {
		b.Append(record.Record{Timestamp: ts, Value: fmt.Appendf(nil, "p%d-e%d-s%d", id, epoch, int64(seq)+int64(i))})
	}
	return b.Build()
}

// openPartition opens the log in dir on fsys and a partition over it; the
// test closes both when it ends unless it closes them first.
func openPartition(t *testing.T, fsys vfs.FS, opts log.Options, popts partition.Options) (*partition.Partition, *log.Log) {
	t.Helper()
	opts.FS = fsys
	if opts.MaxIndexBytes == 0 {
		opts.MaxIndexBytes = 64 << 10 // small preallocated indexes keep the in-memory filesystem light
	}
	if popts.Now == nil {
		// Batches are stamped 1000: a real clock would expire them.
		popts.Now = func() time.Time { return time.UnixMilli(2000) }
	}
	l, err := log.Open("/data/t-0", opts)
	require.NoError(t, err)
	p := partition.New("t", 0, 1, 0, l, popts)
	t.Cleanup(func() { p.Close(); l.Close() })
	return p, l
}

// logModes are the two append paths: one batch at a time, and the write
// groups of sync-before-ack.
var logModes = []struct {
	name string
	opts log.Options
}{{"plain", log.Options{}}, {"sync-before-ack", log.Options{SyncBeforeAck: true}}}

func TestIdempotentSequences(t *testing.T) {
	for _, mode := range logModes {
		t.Run(mode.name, func(t *testing.T) {
			p, l := openPartition(t, vfs.NewMem(), mode.opts, partition.Options{})
			appendOK := func(b []byte, first int64) partition.AppendResult {
				t.Helper()
				res, err := p.Append(b, kafka.AcksAll)
				require.NoError(t, err)
				require.EqualValues(t, first, res.FirstOffset)
				return res
			}
			// Seven batches of 2 records: sequences 0, 2, ..., 12.
			for i := range 7 {
				res := appendOK(idemBatch(7, 0, int32(2*i), 2, 1000), int64(2*i))
				require.False(t, res.Duplicate)
			}
			require.EqualValues(t, 14, l.LogEndOffset())

			// A retry of each of the last five is answered with its offsets
			// and not appended.
			for i := 2; i < 7; i++ {
				res := appendOK(idemBatch(7, 0, int32(2*i), 2, 1000), int64(2*i))
				require.True(t, res.Duplicate)
				require.EqualValues(t, 2*i+1, res.LastOffset)
			}
			require.EqualValues(t, 14, l.LogEndOffset(), "duplicates are not appended")

			// Older than the last five, a gap, a different range at a known
			// start: all out of order.
			for _, seq := range []int32{0, 2, 15, 16, 100} {
				_, err := p.Append(idemBatch(7, 0, seq, 2, 1000), kafka.AcksAll)
				require.ErrorIs(t, err, kafka.ErrOutOfOrderSequence, "seq %d", seq)
			}
			_, err := p.Append(idemBatch(7, 0, 12, 1, 1000), kafka.AcksAll)
			require.ErrorIs(t, err, kafka.ErrOutOfOrderSequence, "a batch overlapping the last one is no duplicate")
			require.EqualValues(t, 14, l.LogEndOffset())

			// A new epoch starts at 0; the old epoch is fenced from then on.
			_, err = p.Append(idemBatch(7, 1, 5, 1, 1000), kafka.AcksAll)
			require.ErrorIs(t, err, kafka.ErrOutOfOrderSequence, "a new epoch starts at sequence 0")
			appendOK(idemBatch(7, 1, 0, 1, 1000), 14)
			_, err = p.Append(idemBatch(7, 0, 14, 1, 1000), kafka.AcksAll)
			require.ErrorIs(t, err, kafka.ErrInvalidProducerEpoch)
			_, err = p.Append(idemBatch(7, 0, 12, 2, 1000), kafka.AcksAll)
			require.ErrorIs(t, err, kafka.ErrInvalidProducerEpoch, "a retry from the fenced epoch is refused, not answered")

			// A producer the partition does not know starts at 0.
			_, err = p.Append(idemBatch(9, 3, math.MaxInt32-1, 2, 1000), kafka.AcksAll)
			require.ErrorIs(t, err, kafka.ErrUnknownProducerID)

			appendOK(idemBatch(9, 3, 0, 2, 1000), 15)
			appendOK(idemBatch(9, 3, 2, 3, 1000), 17)
			res := appendOK(idemBatch(9, 3, 0, 2, 1000), 15)
			require.True(t, res.Duplicate)
			appendOK(idemBatch(11, 0, 0, 4, 1000), 20)
			appendOK(idemBatch(11, 0, 4, 1, 1000), 24)

			// Batches without a producer id are never checked.
			appendOK(batch(1000, "x"), 25)
			appendOK(batch(1000, "x"), 26)

			states, err := p.ProducerStates()
			require.NoError(t, err)
			require.Equal(t, []partition.ProducerStateEntry{
				{ProducerID: 7, ProducerEpoch: 1, LastTimestamp: 1000, CoordinatorEpoch: -1, CurrentTxnFirstOffset: -1, Batches: []partition.BatchMetadata{
					{FirstSequence: 0, LastSequence: 0, FirstOffset: 14, LastOffset: 14, Timestamp: 1000}}},
				{ProducerID: 9, ProducerEpoch: 3, LastTimestamp: 1000, CoordinatorEpoch: -1, CurrentTxnFirstOffset: -1, Batches: []partition.BatchMetadata{
					{FirstSequence: 0, LastSequence: 1, FirstOffset: 15, LastOffset: 16, Timestamp: 1000},
					{FirstSequence: 2, LastSequence: 4, FirstOffset: 17, LastOffset: 19, Timestamp: 1000}}},
				{ProducerID: 11, ProducerEpoch: 0, LastTimestamp: 1000, CoordinatorEpoch: -1, CurrentTxnFirstOffset: -1, Batches: []partition.BatchMetadata{
					{FirstSequence: 0, LastSequence: 3, FirstOffset: 20, LastOffset: 23, Timestamp: 1000},
					{FirstSequence: 4, LastSequence: 4, FirstOffset: 24, LastOffset: 24, Timestamp: 1000}}},
			}, states)
		})
	}
}

// states returns the partition's producer state.
func states(t *testing.T, p *partition.Partition) []partition.ProducerStateEntry {
	t.Helper()
	s, err := p.ProducerStates()
	require.NoError(t, err)
	return s
}

// snapshots lists the snapshot files of the partition directory.
func snapshots(t *testing.T, fsys vfs.FS) []string {
	t.Helper()
	names, err := fsys.List("/data/t-0")
	require.NoError(t, err)
	var out []string
	for _, n := range names {
		if strings.HasSuffix(n, partition.SnapshotSuffix) {
			out = append(out, n)
		}
	}
	return out
}

// TestProducerStateAfterRestart: a clean close snapshots the state at the
// log end offset, and a restart, clean or after a crash, finds the same
// state — duplicates are still answered with their original offsets.
func TestProducerStateAfterRestart(t *testing.T) {
	for _, crash := range []bool{false, true} {
		t.Run(fmt.Sprintf("crash=%v", crash), func(t *testing.T) {
			fsys := vfs.NewMem()
			opts := log.Options{SyncBeforeAck: true}
			p, l := openPartition(t, fsys, opts, partition.Options{})
			for i := range 8 {
				_, err := p.Append(idemBatch(int64(i%3), 0, int32(i/3*2), 2, 1000), kafka.AcksAll)
				require.NoError(t, err)
				_, err = p.Append(batch(1000, "plain"), kafka.AcksAll)
				require.NoError(t, err)
			}
			before := states(t, p)
			if crash {
				fsys = fsys.CrashClone(vfs.CrashOptions{KeepUnsynced: vfs.KeepNone})
				require.Empty(t, snapshots(t, fsys), "nothing snapshotted before the crash: recovery scans the log")
			} else {
				p.Close()
				require.NoError(t, l.Close())
				require.Equal(t, []string{partition.SnapshotFileName(24)}, snapshots(t, fsys), "Close snapshots at the log end offset")
			}
			p2, l2 := openPartition(t, fsys, opts, partition.Options{})
			require.EqualValues(t, 24, l2.LogEndOffset())
			require.Equal(t, before, states(t, p2))
			res, err := p2.Append(idemBatch(1, 0, 2, 2, 1000), kafka.AcksAll)
			require.NoError(t, err)
			require.True(t, res.Duplicate)
			require.EqualValues(t, 12, res.FirstOffset, "the original offsets of producer 1's second batch")
			_, err = p2.Append(idemBatch(1, 0, 8, 2, 1000), kafka.AcksAll)
			require.ErrorIs(t, err, kafka.ErrOutOfOrderSequence)
			require.EqualValues(t, 24, l2.LogEndOffset())
		})
	}
}

// TestSnapshotAboveLogEndIsDeleted: a snapshot taken of records that a
// crash then took from the log is deleted on recovery, and the state comes
// from the log that is left.
func TestSnapshotAboveLogEndIsDeleted(t *testing.T) {
	fsys := vfs.NewMem()
	p, l := openPartition(t, fsys, log.Options{}, partition.Options{})
	_, err := p.Append(idemBatch(5, 0, 0, 3, 1000), kafka.AcksAll)
	require.NoError(t, err)
	require.NoError(t, l.Flush())
	kept := states(t, p)
	_, err = p.Append(idemBatch(5, 0, 3, 3, 1000), kafka.AcksAll)
	require.NoError(t, err)
	require.NoError(t, p.SnapshotProducerState())
	require.Equal(t, []string{partition.SnapshotFileName(6)}, snapshots(t, fsys))

	crashed := fsys.CrashClone(vfs.CrashOptions{KeepUnsynced: vfs.KeepNone}) // the second batch was never synced
	p2, l2 := openPartition(t, crashed, log.Options{}, partition.Options{})
	require.EqualValues(t, 3, l2.LogEndOffset())
	require.Equal(t, kept, states(t, p2))
	require.Empty(t, snapshots(t, crashed))
	res, err := p2.Append(idemBatch(5, 0, 3, 3, 1000), kafka.AcksAll)
	require.NoError(t, err)
	require.False(t, res.Duplicate, "the batch the crash took is appended again, not answered from the lost snapshot")
	require.EqualValues(t, 3, res.FirstOffset)
}

// TestTruncateToRebuildsProducerState: cutting the log drops the batches
// above the cut from the producer state and deletes the snapshots above it.
func TestTruncateToRebuildsProducerState(t *testing.T) {
	fsys := vfs.NewMem()
	p, _ := openPartition(t, fsys, log.Options{}, partition.Options{})
	for i := range 4 {
		_, err := p.Append(idemBatch(5, 0, int32(i), 1, 1000), kafka.AcksAll)
		require.NoError(t, err)
		if i == 1 {
			require.NoError(t, p.SnapshotProducerState())
		}
	}
	require.NoError(t, p.SnapshotProducerState())
	require.Equal(t, []string{partition.SnapshotFileName(2), partition.SnapshotFileName(4)}, snapshots(t, fsys))
	require.NoError(t, p.TruncateTo(3))
	require.Equal(t, []string{partition.SnapshotFileName(2)}, snapshots(t, fsys))
	s := states(t, p)
	require.Len(t, s, 1)
	require.Len(t, s[0].Batches, 3)
	require.EqualValues(t, 2, s[0].Batches[2].LastSequence)
	res, err := p.Append(idemBatch(5, 0, 3, 1, 1000), kafka.AcksAll)
	require.NoError(t, err)
	require.False(t, res.Duplicate)
	require.EqualValues(t, 3, res.FirstOffset)
}

// TestConcurrentDuplicates: the same batch sent by many goroutines at once
// is appended once; every other answer is a duplicate with its offsets.
func TestConcurrentDuplicates(t *testing.T) {
	for _, mode := range logModes {
		t.Run(mode.name, func(t *testing.T) {
			p, l := openPartition(t, vfs.NewMem(), mode.opts, partition.Options{})
			for seq := range int32(20) {
				var (
					wg      sync.WaitGroup
					mu      sync.Mutex
					fresh   int
					offsets = map[int64]int{}
				)
				for range 8 {
					wg.Go(func() {
						res, err := p.Append(idemBatch(1, 0, seq*3, 3, 1000), kafka.AcksAll)
						require.NoError(t, err)
						mu.Lock()
						defer mu.Unlock()
						offsets[res.FirstOffset]++
						if !res.Duplicate {
							fresh++
						}
					})
				}
				wg.Wait()
				require.Equal(t, 1, fresh)
				require.Equal(t, map[int64]int{int64(seq) * 3: 8}, offsets)
			}
			require.EqualValues(t, 60, l.LogEndOffset())
		})
	}
}

// TestFailedWriteForgetsTheBatch: a batch whose write fails (disk full) is
// not remembered: its retry is appended, not answered as a duplicate.
func TestFailedWriteForgetsTheBatch(t *testing.T) {
	for _, mode := range logModes {
		t.Run(mode.name, func(t *testing.T) {
			var fail atomic.Bool
			fsys := vfs.WithFaults(vfs.NewMem(), vfs.InjectorFunc(func(op vfs.Op) error {
				if op.Kind == vfs.OpWrite && strings.HasSuffix(op.Path, ".log") && fail.Load() {
					return syscall.ENOSPC
				}
				return nil
			}))
			p, l := openPartition(t, fsys, mode.opts, partition.Options{})
			_, err := p.Append(idemBatch(1, 0, 0, 2, 1000), kafka.AcksAll)
			require.NoError(t, err)
			fail.Store(true)
			_, err = p.Append(idemBatch(1, 0, 2, 2, 1000), kafka.AcksAll)
			require.ErrorIs(t, err, kafka.ErrKafkaStorage)
			require.ErrorIs(t, err, log.ErrDiskFull)
			fail.Store(false)
			res, err := p.Append(idemBatch(1, 0, 2, 2, 1000), kafka.AcksAll)
			require.NoError(t, err)
			require.False(t, res.Duplicate)
			require.EqualValues(t, 2, res.FirstOffset)
			require.EqualValues(t, 4, l.LogEndOffset())
		})
	}
}

// TestProducerExpiration: a producer silent for producer.id.expiration.ms
// is forgotten — by RemoveExpiredProducers, and by recovery — and may then
// start at any sequence.
func TestProducerExpiration(t *testing.T) {
	fsys := vfs.NewMem()
	now := time.UnixMilli(10_000)
	clock := func() time.Time { return now }
	popts := partition.Options{Now: clock, ProducerIDExpiration: time.Second}
	p, l := openPartition(t, fsys, log.Options{}, popts)
	_, err := p.Append(idemBatch(1, 0, 0, 1, 9_500), kafka.AcksAll)
	require.NoError(t, err)
	_, err = p.Append(idemBatch(2, 0, 0, 1, 9_900), kafka.AcksAll)
	require.NoError(t, err)
	now = time.UnixMilli(10_600)
	require.Equal(t, 1, p.RemoveExpiredProducers(now))
	s := states(t, p)
	require.Len(t, s, 1)
	require.EqualValues(t, 2, s[0].ProducerID)
	_, err = p.Append(idemBatch(1, 0, 1, 1, 10_600), kafka.AcksAll)
	require.ErrorIs(t, err, kafka.ErrUnknownProducerID, "a forgotten producer's next batch is not recognised")
	_, err = p.Append(idemBatch(1, 0, 0, 1, 10_600), kafka.AcksAll)
	require.NoError(t, err, "a forgotten producer starts over at 0")

	p.Close()
	require.NoError(t, l.Close())
	require.NoError(t, fsys.Remove("/data/t-0/"+partition.SnapshotFileName(3)))
	now = time.UnixMilli(11_000)
	p2, _ := openPartition(t, fsys, log.Options{}, popts)
	s = states(t, p2)
	require.Len(t, s, 1, "rebuilt from the log, without producer 2, expired")
	require.EqualValues(t, 1, s[0].ProducerID)
	require.EqualValues(t, 0, s[0].Batches[len(s[0].Batches)-1].FirstSequence)
	require.EqualValues(t, 2, s[0].Batches[len(s[0].Batches)-1].FirstOffset)
}

// TestFollowerKeepsProducerState: batches a follower replicates enter its
// producer state, so that as leader it answers a retry of one of them as a
// duplicate — whether its state was loaded before they came or after.
func TestFollowerKeepsProducerState(t *testing.T) {
	leader, ll := openPartition(t, vfs.NewMem(), log.Options{}, partition.Options{})
	for i := range 3 {
		_, err := leader.Append(idemBatch(4, 0, int32(2*i), 2, 1000), kafka.AcksAll)
		require.NoError(t, err)
	}
	replicated, err := ll.Read(nil, 0, ll.LogEndOffset(), 1<<20)
	require.NoError(t, err)
	for _, loadedFirst := range []bool{false, true} {
		f, _ := openPartition(t, vfs.NewMem(), log.Options{}, partition.Options{})
		if loadedFirst {
			require.Empty(t, states(t, f))
		}
		_, err := f.AppendAsFollower(replicated)
		require.NoError(t, err)
		require.Equal(t, states(t, leader), states(t, f))
		res, err := f.Append(idemBatch(4, 0, 2, 2, 1000), kafka.AcksAll)
		require.NoError(t, err)
		require.True(t, res.Duplicate)
		require.EqualValues(t, 2, res.FirstOffset)
	}
}

// TestSnapshotOnRoll: when the log rolls a segment the partition snapshots
// its producer state, so recovery after a crash scans only from there. The
// snapshot covers the batch that began the segment (Kafka's is as of the
// segment's base offset, just before it).
func TestSnapshotOnRoll(t *testing.T) {
	fsys := vfs.NewMem()
	p, l := openPartition(t, fsys, log.Options{SegmentBytes: 1024, MaxIndexBytes: 4096}, partition.Options{})
	seq := int32(0)
	for len(l.Segments()) < 3 {
		_, err := p.Append(idemBatch(3, 0, seq, 4, 1000), kafka.AcksAll)
		require.NoError(t, err)
		seq += 4
	}
	segs := l.Segments()
	active := segs[len(segs)-1].BaseOffset
	require.Equal(t, []string{partition.SnapshotFileName(segs[1].BaseOffset + 4), partition.SnapshotFileName(active + 4)}, snapshots(t, fsys),
		"a snapshot at each roll, as of the end of the batch that began the new segment")
}
