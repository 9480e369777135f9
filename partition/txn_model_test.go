package partition_test

import (
	"path"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/log"
	"github.com/partlog/partlog/partition"
	"github.com/partlog/partlog/record"
	"github.com/partlog/partlog/segment"
	"github.com/partlog/partlog/vfs"
)

// txnMachine drives a partition with transactional and idempotent
// producers, markers (commits, aborts, epoch bumps of transaction version
// 2), plain batches, truncations, snapshots, checkpoints, clean restarts,
// crashes and damaged .txnindex files, and checks after every step the
// last stable offset, the open transactions, the .txnindex and the
// aborted transactions of read_committed fetches against a model that
// replays the batches the log holds.
//
// As a leader it appends with Append and AppendMarker, its high watermark
// following the log end offset; as a replica it appends as package
// replica's driver does, CheckAppend then AppendAsFollower, and the
// machine moves the high watermark, so that markers are not yet below it.
type txnMachine struct {
	replica bool
	fs      *vfs.MemFS
	d       *log.Dir
	l       *log.Log
	p       *partition.Partition
	hw      int64 // the replica's high watermark
	batches []modelBatch
}

// modelBatch is a batch the log holds, as the machine appended it.
type modelBatch struct {
	base, next int64
	producer   int64 // -1 for a plain batch
	epoch      int16
	seq        int32
	txn        bool
	marker     record.ControlType
	control    bool
}

var modelTP = kafka.TopicPartition{Topic: "t", Partition: 0}

func (m *txnMachine) open(t *rapid.T) {
	d, err := log.OpenDir("/data", log.DirOptions{FS: m.fs})
	require.NoError(t, err)
	l, err := d.Open(modelTP, log.Options{SyncBeforeAck: true, SegmentBytes: 1024, MaxIndexBytes: 4096})
	require.NoError(t, err)
	m.d, m.l = d, l
	popts := partition.Options{Now: clock, Replicated: m.replica, HighWatermark: l.LogEndOffset()}
	m.p = partition.New("t", 0, 1, 0, l, popts)
	m.hw = l.LogEndOffset()
}

func (m *txnMachine) close() {
	m.p.Close()
	m.d.Close()
}

// producerModel is what the model knows of a producer.
type producerModel struct {
	epoch   int16
	nextSeq int32
}

// replay derives from the batches what the partition must know: the open
// transactions, the completed ones (marker offsets), the aborted ones as
// .txnindex entries, and each producer's epoch and next sequence.
func (m *txnMachine) replay() (open map[int64]int64, completed [][3]int64, aborted []segment.AbortedTxn, prods map[int64]producerModel) {
	open, prods = map[int64]int64{}, map[int64]producerModel{}
	for _, b := range m.batches {
		if b.producer < 0 {
			continue
		}
		p := prods[b.producer]
		if p.epoch != b.epoch {
			p = producerModel{epoch: b.epoch}
		}
		if !b.control {
			p.nextSeq = b.seq + int32(b.next-b.base)
			prods[b.producer] = p
			if _, ok := open[b.producer]; b.txn && !ok {
				open[b.producer] = b.base
			}
			continue
		}
		prods[b.producer] = p
		first, ok := open[b.producer]
		if !ok {
			continue
		}
		delete(open, b.producer)
		completed = append(completed, [3]int64{b.producer, first, b.base})
		if b.marker == record.ControlAbort {
			lso := b.base + 1
			for _, f := range open {
				lso = min(lso, f)
			}
			aborted = append(aborted, segment.AbortedTxn{ProducerID: b.producer, FirstOffset: first, LastOffset: b.base, LastStableOffset: lso})
		}
	}
	return open, completed, aborted, prods
}

// appendBatch appends b as the leader or the replica's driver would, and
// records it if it went in.
func (m *txnMachine) appendBatch(b []byte, mb modelBatch) error {
	base := m.l.LogEndOffset()
	if m.replica {
		if err := m.p.CheckAppend(b, base); err != nil {
			return err
		}
		record.SetBaseOffset(b, base)
		if _, err := m.p.AppendAsFollower(b); err != nil {
			return err
		}
	} else {
		var err error
		if mb.control {
			_, err = m.p.AppendMarker(mb.producer, mb.epoch, 0, mb.marker)
		} else {
			_, err = m.p.Append(b, kafka.AcksAll)
		}
		if err != nil {
			return err
		}
	}
	mb.base, mb.next = base, m.l.LogEndOffset()
	m.batches = append(m.batches, mb)
	return nil
}

// Data appends a producer's next batch, in or out of a transaction; out of
// an open one it must be refused.
func (m *txnMachine) Data(t *rapid.T) {
	id := rapid.Int64Range(0, 3).Draw(t, "producer")
	txn := rapid.Float64().Draw(t, "txn") < 0.8
	n := rapid.IntRange(1, 4).Draw(t, "records")
	open, _, _, prods := m.replay()
	p := prods[id]
	b := idemBatch(id, p.epoch, p.nextSeq, n, 1000)
	if txn {
		b = txnData(id, p.epoch, p.nextSeq, n)
	}
	err := m.appendBatch(b, modelBatch{producer: id, epoch: p.epoch, seq: p.nextSeq, txn: txn})
	if _, isOpen := open[id]; isOpen && !txn {
		require.ErrorIs(t, err, kafka.ErrInvalidTxnState)
		return
	}
	require.NoError(t, err)
}

// Stale appends a batch at an epoch older than its producer's: fenced.
func (m *txnMachine) Stale(t *rapid.T) {
	id := rapid.Int64Range(0, 3).Draw(t, "producer")
	_, _, _, prods := m.replay()
	p, known := prods[id]
	if !known || p.epoch == 0 {
		t.Skip("no older epoch")
	}
	err := m.appendBatch(txnData(id, p.epoch-1, 0, 1), modelBatch{producer: id, epoch: p.epoch - 1, txn: true})
	require.ErrorIs(t, err, kafka.ErrInvalidProducerEpoch)
	if rapid.Bool().Draw(t, "stale marker") {
		err = m.appendBatch(record.ControlBatch(record.ControlCommit, id, p.epoch-1, 0, 2000),
			modelBatch{producer: id, epoch: p.epoch - 1, control: true, marker: record.ControlCommit})
		require.ErrorIs(t, err, kafka.ErrInvalidProducerEpoch)
	}
}

// Marker ends a producer's transaction, if any, with a commit or an
// abort, at its epoch or, as transaction version 2 does, one above.
func (m *txnMachine) Marker(t *rapid.T) {
	id := rapid.Int64Range(0, 3).Draw(t, "producer")
	typ := rapid.SampledFrom([]record.ControlType{record.ControlAbort, record.ControlCommit}).Draw(t, "type")
	_, _, _, prods := m.replay()
	epoch := prods[id].epoch
	if rapid.Float64().Draw(t, "bump") < 0.3 {
		epoch++
	}
	err := m.appendBatch(record.ControlBatch(typ, id, epoch, 0, 2000), modelBatch{producer: id, epoch: epoch, control: true, marker: typ})
	require.NoError(t, err)
}

// Plain appends a batch of no producer.
func (m *txnMachine) Plain(t *rapid.T) {
	require.NoError(t, m.appendBatch(batch(1000, "plain"), modelBatch{producer: -1}))
}

// HighWatermark moves a replica's high watermark up, towards the log end.
func (m *txnMachine) HighWatermark(t *rapid.T) {
	if !m.replica {
		t.Skip("a leader's follows its log")
	}
	m.hw = rapid.Int64Range(m.hw, m.l.LogEndOffset()).Draw(t, "high watermark")
	m.p.SetHighWatermark(m.hw)
}

// catchUp puts the high watermark at the log end, as replication catching
// up does, before the steps after which a reload forgets the transactions
// whose markers it had seen below the high watermark.
func (m *txnMachine) catchUp() {
	m.hw = m.l.LogEndOffset()
	m.p.SetHighWatermark(m.hw)
}

// Truncate cuts the log at a batch boundary, as a follower does.
func (m *txnMachine) Truncate(t *rapid.T) {
	if len(m.batches) == 0 {
		t.Skip("empty")
	}
	i := rapid.IntRange(0, len(m.batches)-1).Draw(t, "first batch cut")
	m.catchUp()
	to := m.batches[i].base
	require.NoError(t, m.p.TruncateTo(to))
	m.batches = m.batches[:i]
	m.hw = to
	m.p.SetHighWatermark(to)
}

// Snapshot writes a producer state snapshot now.
func (m *txnMachine) Snapshot(t *rapid.T) {
	require.NoError(t, m.p.SnapshotProducerState())
}

// Checkpoint writes the directory's recovery points now.
func (m *txnMachine) Checkpoint(t *rapid.T) {
	require.NoError(t, m.d.Checkpoint())
}

// Restart closes cleanly, crashes (keeping the synced bytes, a torn
// random part of the rest, or everything), or closes and damages an
// entry of a .txnindex, and reopens: the producer state must be as it
// was.
func (m *txnMachine) Restart(t *rapid.T) {
	m.catchUp()
	before, err := m.p.ProducerStates()
	require.NoError(t, err)
	switch kind := rapid.SampledFrom([]string{"clean", "crash", "damage"}).Draw(t, "restart"); kind {
	case "crash":
		opts := rapid.SampledFrom([]vfs.CrashOptions{
			{KeepUnsynced: vfs.KeepNone},
			{KeepUnsynced: vfs.KeepRandomPrefix, Tear: vfs.TearGarbage},
			{KeepUnsynced: vfs.KeepAll},
		}).Draw(t, "crash")
		opts.Seed = rapid.Int64().Draw(t, "seed")
		m.fs = m.fs.CrashClone(opts)
	default:
		m.close()
		if kind == "damage" {
			m.damage(t)
		}
	}
	m.open(t)
	after, err := m.p.ProducerStates()
	require.NoError(t, err)
	require.Equal(t, before, after)
}

// damage makes an entry of a .txnindex unreadable (a version no reader
// knows), if there is one.
func (m *txnMachine) damage(t *rapid.T) {
	dir := "/data/t-0"
	names, err := m.fs.List(dir)
	require.NoError(t, err)
	var files []string
	for _, n := range names {
		if path.Ext(n) == segment.TxnIndexSuffix {
			if info, err := m.fs.Stat(path.Join(dir, n)); err == nil && info.Size() >= segment.TxnIndexEntrySize {
				files = append(files, n)
			}
		}
	}
	if len(files) == 0 {
		return
	}
	name := path.Join(dir, rapid.SampledFrom(files).Draw(t, "damaged"))
	info, err := m.fs.Stat(name)
	require.NoError(t, err)
	entry := rapid.Int64Range(0, info.Size()/segment.TxnIndexEntrySize-1).Draw(t, "entry")
	f, err := m.fs.OpenReadWrite(name)
	require.NoError(t, err)
	_, err = f.WriteAt([]byte{0x7f, 0xff}, entry*segment.TxnIndexEntrySize)
	require.NoError(t, err)
	require.NoError(t, f.Sync())
	require.NoError(t, f.Close())
}

// Check compares the partition with the model.
func (m *txnMachine) Check(t *rapid.T) {
	open, completed, aborted, _ := m.replay()
	hw := m.p.HighWatermark()
	if m.replica {
		require.Equal(t, m.hw, hw)
	} else {
		require.Equal(t, m.l.LogEndOffset(), hw)
	}
	lso := hw
	for _, f := range open {
		lso = min(lso, f)
	}
	for _, c := range completed {
		if c[2] >= hw {
			lso = min(lso, c[1])
		}
	}
	got, err := m.p.LastStableOffset()
	require.NoError(t, err)
	require.Equal(t, lso, got, "last stable offset")

	states, err := m.p.ProducerStates()
	require.NoError(t, err)
	for _, s := range states {
		want, ok := open[s.ProducerID]
		if !ok {
			want = -1
		}
		require.Equal(t, want, s.CurrentTxnFirstOffset, "producer %d's open transaction", s.ProducerID)
	}
	txns, err := m.p.AbortedTxns()
	require.NoError(t, err)
	require.Equal(t, aborted, append([]segment.AbortedTxn(nil), txns...), "the .txnindex")

	// A read_committed fetch from an offset of the log reads the batches
	// from it below the last stable offset, to the end of the segment the
	// first is in, with every aborted transaction they overlap.
	leo := m.l.LogEndOffset()
	from := rapid.Int64Range(0, leo).Draw(t, "fetch from")
	res, err := m.p.FetchIsolated(nil, from, 1<<20, kafka.ReadCommitted)
	require.NoError(t, err)
	var want []fetched
	upper, segEnd := from, int64(-1)
	for _, b := range m.batches {
		if b.next > from && b.next <= lso && (segEnd < 0 || b.next <= segEnd) {
			if segEnd < 0 {
				for _, s := range m.l.Segments() {
					if b.base >= s.BaseOffset && b.base < s.NextOffset {
						segEnd = s.NextOffset
					}
				}
			}
			want = append(want, fetched{b.base, b.next - 1, b.producer, b.control})
			upper = b.next
		}
	}
	require.Equal(t, want, batchesOf(t, res.Records))
	wantAborted := []partition.AbortedTransaction{}
	if len(want) > 0 {
		for _, a := range aborted {
			if a.LastOffset >= from && a.FirstOffset < upper {
				wantAborted = append(wantAborted, partition.AbortedTransaction{ProducerID: a.ProducerID, FirstOffset: a.FirstOffset})
			}
		}
	}
	require.Equal(t, wantAborted, res.AbortedTransactions)
	require.True(t, slices.IsSortedFunc(txns, func(a, b segment.AbortedTxn) int { return int(a.LastOffset - b.LastOffset) }))
}

func TestTransactionModel(t *testing.T) {
	for _, replica := range []bool{false, true} {
		name := map[bool]string{false: "leader", true: "replica"}[replica]
		t.Run(name, func(t *testing.T) {
			rapid.Check(t, func(t *rapid.T) {
				m := &txnMachine{replica: replica, fs: vfs.NewMem()}
				m.open(t)
				defer func() { m.close() }()
				t.Repeat(rapid.StateMachineActions(m))
			})
		})
	}
}
