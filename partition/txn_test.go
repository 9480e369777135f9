package partition_test

import (
	"bytes"
	"cmp"
	"encoding/hex"
	"errors"
	"fmt"
	"path"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/log"
	"github.com/partlog/partlog/partition"
	"github.com/partlog/partlog/record"
	"github.com/partlog/partlog/segment"
	"github.com/partlog/partlog/vfs"
)

// txnData builds a transactional batch of n records from producer id at
// epoch, from sequence seq; its values name the producer, epoch and
// sequence.
func txnData(id int64, epoch int16, seq int32, n int) []byte {
	opts := record.DefaultBatchOptions()
	opts.ProducerID, opts.ProducerEpoch, opts.BaseSequence, opts.Transactional = id, epoch, seq, true
	b := record.NewBuilder(opts)
	for i := range n {
		b.Append(record.Record{Timestamp: 1000, Value: fmt.Appendf(nil, "p%d-e%d-s%d", id, epoch, int64(seq)+int64(i))})
	}
	return b.Build()
}

// fetched is a batch a fetch returned: its offsets, producer, and whether
// it is a marker.
type fetched struct {
	first, last int64
	producer    int64
	control     bool
}

func (f fetched) String() string {
	kind := "data"
	if f.control {
		kind = "marker"
	}
	return fmt.Sprintf("%s %d-%d of %d", kind, f.first, f.last, f.producer)
}

// batchesOf lists the batches of fetched records.
func batchesOf(t require.TestingT, records []byte) []fetched {
	var out []fetched
	for len(records) > 0 {
		h, err := record.ParseHeader(records)
		require.NoError(t, err)
		out = append(out, fetched{h.BaseOffset, h.LastOffset(), h.ProducerID, h.Attributes.IsControl()})
		records = records[h.Size():]
	}
	return out
}

// fetchAt reads from offset at isolation with room for everything.
func fetchAt(t *testing.T, p *partition.Partition, offset int64, isolation kafka.IsolationLevel) ([]fetched, partition.FetchResult) {
	t.Helper()
	res, err := p.FetchIsolated(nil, offset, 1<<20, isolation)
	require.NoError(t, err)
	return batchesOf(t, res.Records), res
}

func lso(t *testing.T, p *partition.Partition) int64 {
	t.Helper()
	o, err := p.LastStableOffset()
	require.NoError(t, err)
	return o
}

func appendAt(t *testing.T, p *partition.Partition, b []byte, first int64) {
	t.Helper()
	res, err := p.Append(b, kafka.AcksAll)
	require.NoError(t, err)
	require.Equal(t, first, res.FirstOffset)
}

func markerAt(t *testing.T, p *partition.Partition, id int64, epoch int16, coordinator int32, typ record.ControlType, at int64) {
	t.Helper()
	res, err := p.AppendMarker(id, epoch, coordinator, typ)
	require.NoError(t, err)
	require.Equal(t, at, res.FirstOffset)
}

// TestTransactionCommitAndAbort: a transaction is invisible to
// read_committed until its marker; a committed one then reads whole, an
// aborted one reads with its entry in AbortedTransactions; the .txnindex
// holds the aborted one in Kafka's layout.
func TestTransactionCommitAndAbort(t *testing.T) {
	for _, mode := range logModes {
		t.Run(mode.name, func(t *testing.T) {
			fsys := vfs.NewMem()
			p, l := openPartition(t, fsys, mode.opts, partition.Options{})
			appendAt(t, p, txnData(1, 0, 0, 3), 0) // 0..2, open
			require.EqualValues(t, 3, p.HighWatermark())
			require.EqualValues(t, 0, lso(t, p))
			got, res := fetchAt(t, p, 0, kafka.ReadCommitted)
			require.Empty(t, got, "an open transaction is not read_committed")
			require.EqualValues(t, 0, res.LastStableOffset)
			require.EqualValues(t, 3, res.HighWatermark)
			require.NotNil(t, res.AbortedTransactions, "read_committed answers a list, empty")
			require.Empty(t, res.AbortedTransactions)
			// The control: without the last stable offset's bound, the
			// same fetch reads the open transaction.
			got, res = fetchAt(t, p, 0, kafka.ReadUncommitted)
			require.Equal(t, []fetched{{0, 2, 1, false}}, got)
			require.EqualValues(t, 0, res.LastStableOffset)
			off, _, err := p.ListOffsetIsolated(kafka.LatestTimestamp, kafka.ReadCommitted)
			require.NoError(t, err)
			require.EqualValues(t, 0, off)
			off, _, err = p.ListOffsetIsolated(kafka.LatestTimestamp, kafka.ReadUncommitted)
			require.NoError(t, err)
			require.EqualValues(t, 3, off)

			markerAt(t, p, 1, 0, 5, record.ControlCommit, 3)
			require.EqualValues(t, 4, lso(t, p))
			got, res = fetchAt(t, p, 0, kafka.ReadCommitted)
			require.Equal(t, []fetched{{0, 2, 1, false}, {3, 3, 1, true}}, got)
			require.Empty(t, res.AbortedTransactions)

			appendAt(t, p, txnData(2, 0, 0, 2), 4) // 4..5
			appendAt(t, p, batch(1000, "plain"), 6)
			require.EqualValues(t, 4, lso(t, p))
			markerAt(t, p, 2, 0, 5, record.ControlAbort, 7)
			require.EqualValues(t, 8, lso(t, p))
			got, res = fetchAt(t, p, 0, kafka.ReadCommitted)
			require.Equal(t, []fetched{{0, 2, 1, false}, {3, 3, 1, true}, {4, 5, 2, false}, {6, 6, -1, false}, {7, 7, 2, true}}, got)
			require.Equal(t, []partition.AbortedTransaction{{ProducerID: 2, FirstOffset: 4}}, res.AbortedTransactions)
			got, res = fetchAt(t, p, 3, kafka.ReadCommitted)
			require.Equal(t, []fetched{{3, 3, 1, true}, {4, 5, 2, false}, {6, 6, -1, false}, {7, 7, 2, true}}, got)
			require.Equal(t, []partition.AbortedTransaction{{ProducerID: 2, FirstOffset: 4}}, res.AbortedTransactions)
			_, res = fetchAt(t, p, 7, kafka.ReadCommitted)
			require.Equal(t, []partition.AbortedTransaction{{ProducerID: 2, FirstOffset: 4}}, res.AbortedTransactions,
				"a fetch of the marker alone overlaps the transaction it ends, as in Kafka")
			_, res = fetchAt(t, p, 8, kafka.ReadCommitted)
			require.Empty(t, res.AbortedTransactions)
			_, res = fetchAt(t, p, 0, kafka.ReadUncommitted)
			require.Nil(t, res.AbortedTransactions, "read_uncommitted gets none")

			// The .txnindex, byte for byte: version 0, producer 2, first 4,
			// last 7, last stable offset 8.
			var raw bytes.Buffer
			f, err := fsys.Open(path.Join("/data/t-0", segment.FileName(0, segment.TxnIndexSuffix)))
			require.NoError(t, err)
			_, err = raw.ReadFrom(f)
			require.NoError(t, errors.Join(err, f.Close()))
			require.Equal(t, "0000"+"0000000000000002"+"0000000000000004"+"0000000000000007"+"0000000000000008", hex.EncodeToString(raw.Bytes()))

			require.Equal(t, []partition.ProducerStateEntry{
				{ProducerID: 1, ProducerEpoch: 0, LastTimestamp: 2000, CoordinatorEpoch: 5, CurrentTxnFirstOffset: -1,
					Batches: []partition.BatchMetadata{{FirstSequence: 0, LastSequence: 2, FirstOffset: 0, LastOffset: 2, Timestamp: 1000}}},
				{ProducerID: 2, ProducerEpoch: 0, LastTimestamp: 2000, CoordinatorEpoch: 5, CurrentTxnFirstOffset: -1,
					Batches: []partition.BatchMetadata{{FirstSequence: 0, LastSequence: 1, FirstOffset: 4, LastOffset: 5, Timestamp: 1000}}},
			}, states(t, p), "a marker's timestamp is its producer's last")
			require.EqualValues(t, 8, l.LogEndOffset())
		})
	}
}

// TestInterleavedTransactions: two producers' transactions overlap; the
// last stable offset waits for the older, and a read_committed fetch
// answers each aborted transaction its records overlap, however far its
// marker is.
func TestInterleavedTransactions(t *testing.T) {
	p, _ := openPartition(t, vfs.NewMem(), log.Options{}, partition.Options{})
	appendAt(t, p, txnData(1, 0, 0, 2), 0) // A: 0..1
	appendAt(t, p, txnData(2, 0, 0, 2), 2) // B: 2..3
	appendAt(t, p, txnData(1, 0, 2, 1), 4) // A goes on
	appendAt(t, p, batch(1000, "plain"), 5)
	require.EqualValues(t, 0, lso(t, p))
	markerAt(t, p, 1, 0, 0, record.ControlAbort, 6) // A aborts while B is open
	require.EqualValues(t, 2, lso(t, p), "B is open from 2")

	got, res := fetchAt(t, p, 0, kafka.ReadCommitted)
	require.Equal(t, []fetched{{0, 1, 1, false}}, got)
	require.Equal(t, []partition.AbortedTransaction{{ProducerID: 1, FirstOffset: 0}}, res.AbortedTransactions,
		"the records read belong to A, whose marker lies past them")
	require.EqualValues(t, 2, res.LastStableOffset)

	markerAt(t, p, 2, 0, 0, record.ControlCommit, 7)
	require.EqualValues(t, 8, lso(t, p))
	got, res = fetchAt(t, p, 0, kafka.ReadCommitted)
	require.Len(t, got, 6)
	require.Equal(t, []partition.AbortedTransaction{{ProducerID: 1, FirstOffset: 0}}, res.AbortedTransactions)
	got, res = fetchAt(t, p, 2, kafka.ReadCommitted)
	require.Equal(t, []fetched{{2, 3, 2, false}, {4, 4, 1, false}, {5, 5, -1, false}, {6, 6, 1, true}, {7, 7, 2, true}}, got)
	require.Equal(t, []partition.AbortedTransaction{{ProducerID: 1, FirstOffset: 0}}, res.AbortedTransactions,
		"batch 4 is A's: the consumer needs A's entry, though A began before the fetch")
	_, res = fetchAt(t, p, 7, kafka.ReadCommitted)
	require.Empty(t, res.AbortedTransactions)

	// A new transaction of producer 1 after its abort opens at its first
	// batch.
	appendAt(t, p, txnData(1, 0, 3, 1), 8)
	require.EqualValues(t, 8, lso(t, p))
	require.EqualValues(t, 8, states(t, p)[0].CurrentTxnFirstOffset)
}

// TestMarkerFencing: a marker at an older producer epoch, or from an older
// coordinator, is refused; under transaction version 2 the marker's epoch
// is one above the data's and becomes the producer's, which fences the
// transaction's late writes. The controls: the same markers at the
// current epochs pass.
func TestMarkerFencing(t *testing.T) {
	p, l := openPartition(t, vfs.NewMem(), log.Options{}, partition.Options{})
	appendAt(t, p, txnData(1, 3, 0, 2), 0)
	_, err := p.AppendMarker(1, 2, 0, record.ControlCommit)
	require.ErrorIs(t, err, kafka.ErrInvalidProducerEpoch)
	markerAt(t, p, 1, 3, 7, record.ControlCommit, 2)
	appendAt(t, p, txnData(1, 3, 2, 1), 3)
	_, err = p.AppendMarker(1, 3, 6, record.ControlAbort)
	require.ErrorIs(t, err, kafka.ErrTransactionCoordinatorFenced)
	require.EqualValues(t, 3, lso(t, p), "refused markers close nothing")
	require.EqualValues(t, 4, l.LogEndOffset(), "nor are they written")

	// A write outside the open transaction is refused.
	_, err = p.Append(idemBatch(1, 3, 3, 1, 1000), kafka.AcksAll)
	require.ErrorIs(t, err, kafka.ErrInvalidTxnState)

	// Transaction version 2: the marker carries epoch 4.
	markerAt(t, p, 1, 4, 7, record.ControlAbort, 4)
	require.EqualValues(t, 5, lso(t, p))
	e := states(t, p)[0]
	require.EqualValues(t, 4, e.ProducerEpoch)
	require.Empty(t, e.Batches, "a new epoch drops the old one's batches")
	_, err = p.Append(txnData(1, 3, 3, 1), kafka.AcksAll)
	require.ErrorIs(t, err, kafka.ErrInvalidProducerEpoch, "a late write of the aborted transaction is fenced")
	_, err = p.Append(txnData(1, 4, 5, 1), kafka.AcksAll)
	require.ErrorIs(t, err, kafka.ErrOutOfOrderSequence, "the new epoch starts at sequence 0")
	appendAt(t, p, txnData(1, 4, 0, 1), 5)
	require.EqualValues(t, 5, lso(t, p))

	// A marker for a producer the partition does not know closes nothing
	// and is taken.
	markerAt(t, p, 9, 0, 0, record.ControlCommit, 6)
	require.EqualValues(t, 5, lso(t, p))
	_, err = p.AppendMarker(9, 0, 0, record.ControlType(3))
	require.ErrorIs(t, err, kafka.ErrInvalidRequest)
}

// verifier is a TxnVerifier that refuses the producers in refuse and
// counts its calls.
type verifier struct {
	mu     sync.Mutex
	calls  []int64
	refuse map[int64]bool
}

func (v *verifier) VerifyTransaction(tp kafka.TopicPartition, producerID int64, producerEpoch int16, _ partition.VerificationGuard) error {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.calls = append(v.calls, producerID)
	if v.refuse[producerID] {
		return fmt.Errorf("%w: %s is not in producer %d's transaction", kafka.ErrTransactionAbortable, tp, producerID)
	}
	return nil
}

// TestTxnVerifier: KIP-890 part 1 — the verifier is asked only when a
// transactional batch would open a transaction, and its refusal refuses
// the batch; without a verifier the batch opens a transaction unasked.
func TestTxnVerifier(t *testing.T) {
	v := &verifier{refuse: map[int64]bool{9: true}}
	p, _ := openPartition(t, vfs.NewMem(), log.Options{}, partition.Options{TxnVerifier: v})
	appendAt(t, p, txnData(1, 0, 0, 1), 0)
	appendAt(t, p, txnData(1, 0, 1, 1), 1)
	appendAt(t, p, idemBatch(2, 0, 0, 1, 1000), 2)
	_, err := p.Append(txnData(9, 0, 0, 1), kafka.AcksAll)
	require.ErrorIs(t, err, kafka.ErrTransactionAbortable)
	markerAt(t, p, 1, 0, 0, record.ControlCommit, 3)
	appendAt(t, p, txnData(1, 0, 2, 1), 4)
	require.Equal(t, []int64{1, 9, 1}, v.calls, "asked when a transaction would open, never for its later batches")
	require.EqualValues(t, 4, lso(t, p), "the refused batch opened nothing")

	// The replica's check asks too.
	rv := &verifier{refuse: map[int64]bool{9: true}}
	r, _ := openPartition(t, vfs.NewMem(), log.Options{}, partition.Options{Replicated: true, TxnVerifier: rv})
	require.ErrorIs(t, r.CheckAppend(txnData(9, 0, 0, 1), 0), kafka.ErrTransactionAbortable)
	require.Equal(t, []int64{9}, rv.calls)

	// The control: without a verifier, producer 9's batch opens a
	// transaction.
	q, _ := openPartition(t, vfs.NewMem(), log.Options{}, partition.Options{})
	appendAt(t, q, txnData(9, 0, 0, 1), 0)
	require.EqualValues(t, 0, lso(t, q))
}

// guardVerifier is a TxnVerifier that admits a producer only under the
// guard it was given, as a broker admits one only under the guard its
// coordinator's answer came with.
type guardVerifier struct {
	mu    sync.Mutex
	admit map[int64]partition.VerificationGuard
	seen  []partition.VerificationGuard
}

func (v *guardVerifier) VerifyTransaction(tp kafka.TopicPartition, producerID int64, producerEpoch int16, guard partition.VerificationGuard) error {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.seen = append(v.seen, guard)
	if g, ok := v.admit[producerID]; !ok || g == 0 || g != guard {
		return fmt.Errorf("%w: guard %d", kafka.ErrInvalidTxnState, guard)
	}
	return nil
}

// TestVerificationGuard: StartVerification hands a producer one guard
// until its next marker withdraws it, the verifier is given the guard of
// the moment, and so a coordinator's answer obtained before the marker
// admits nothing after it — the race KIP-890's guard closes. A new guard
// is never an old one, even after the state is loaded anew.
func TestVerificationGuard(t *testing.T) {
	v := &guardVerifier{admit: map[int64]partition.VerificationGuard{}}
	fsys := vfs.NewMem()
	p, _ := openPartition(t, fsys, log.Options{}, partition.Options{TxnVerifier: v})
	g1, err := p.StartVerification(1)
	require.NoError(t, err)
	again, err := p.StartVerification(1)
	require.NoError(t, err)
	require.Equal(t, g1, again, "one guard until a marker")
	v.admit[1] = g1
	appendAt(t, p, txnData(1, 0, 0, 1), 0)

	// The coordinator answered under g2; then the transaction's ABORT
	// marker lands; the batch that answer was for comes after.
	g2, err := p.StartVerification(1)
	require.NoError(t, err)
	require.Equal(t, g1, g2, "the transaction is still open")
	markerAt(t, p, 1, 0, 0, record.ControlAbort, 1)
	v.admit[1] = g2
	_, err = p.Append(txnData(1, 0, 1, 1), kafka.AcksAll)
	require.ErrorIs(t, err, kafka.ErrInvalidTxnState, "the marker withdrew the guard")
	require.Equal(t, []partition.VerificationGuard{g1, 0}, v.seen)

	g3, err := p.StartVerification(1)
	require.NoError(t, err)
	require.NotEqual(t, g1, g3)
	v.admit[1] = g3
	appendAt(t, p, txnData(1, 0, 1, 1), 2)
}

// TestTxnIndexRebuiltAfterCrash: a crash that keeps the log but not the
// .txnindex entries (never synced), or tears them, is followed by a
// rebuild: the entries, the producer state and the last stable offset
// are what they were. The control: the log alone, opened without the
// partition, lacks the entries.
func TestTxnIndexRebuiltAfterCrash(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts vfs.CrashOptions
		// checkpointed opens the log with the recovery point it had, as a
		// log.Dir's checkpoint gives it, rather than scanning it all.
		checkpointed bool
	}{
		{"synced bytes only", vfs.CrashOptions{KeepUnsynced: vfs.KeepNone}, false},
		{"synced bytes only, recovery point checkpointed", vfs.CrashOptions{KeepUnsynced: vfs.KeepNone}, true},
		{"torn unsynced bytes", vfs.CrashOptions{KeepUnsynced: vfs.KeepRandomPrefix, Tear: vfs.TearGarbage, Seed: 3}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fsys := vfs.NewMem()
			lopts := log.Options{SyncBeforeAck: true, SegmentBytes: 1024}
			p, l := openPartition(t, fsys, lopts, partition.Options{})
			var seq [4]int32
			for i := 0; len(l.Segments()) < 4; i++ {
				id := int64(i % 3)
				appendAt(t, p, txnData(id, 0, seq[id], 3), l.LogEndOffset())
				seq[id] += 3
				if i%4 == 3 {
					typ := record.ControlAbort
					if i%8 == 7 {
						typ = record.ControlCommit
					}
					markerAt(t, p, id, 0, 0, typ, l.LogEndOffset())
				}
			}
			// An aborted transaction after the last roll's snapshot, whose
			// entry nothing synced, and one open at the crash.
			appendAt(t, p, txnData(0, 0, seq[0], 1), l.LogEndOffset())
			markerAt(t, p, 0, 0, 0, record.ControlAbort, l.LogEndOffset())
			appendAt(t, p, txnData(3, 0, 0, 1), l.LogEndOffset())
			want, err := p.AbortedTxns()
			require.NoError(t, err)
			require.GreaterOrEqual(t, len(want), 3)
			wantStates, wantLSO := states(t, p), lso(t, p)
			_, wantFetch := fetchAt(t, p, 0, kafka.ReadCommitted)
			if tc.checkpointed {
				lopts.RecoveryPoint = l.RecoveryPoint()
			}

			crashed := fsys.CrashClone(tc.opts)
			if tc.opts.KeepUnsynced == vfs.KeepNone {
				// The control: the log alone has lost entries.
				copied := crashed.CrashClone(vfs.CrashOptions{KeepUnsynced: vfs.KeepAll})
				control, err := log.Open("/data/t-0", log.Options{FS: copied, RecoveryPoint: lopts.RecoveryPoint})
				require.NoError(t, err)
				lost, _ := control.AbortedTxns()
				require.NotEqual(t, want, lost, "the crash took entries")
				require.NoError(t, control.Close())
			}

			p2, l2 := openPartition(t, crashed, lopts, partition.Options{})
			require.Equal(t, l.LogEndOffset(), l2.LogEndOffset(), "synced before acknowledged")
			got, err := p2.AbortedTxns()
			require.NoError(t, err)
			require.Equal(t, want, got)
			require.Equal(t, wantStates, states(t, p2))
			require.Equal(t, wantLSO, lso(t, p2))
			_, res := fetchAt(t, p2, 0, kafka.ReadCommitted)
			require.Equal(t, wantFetch.AbortedTransactions, res.AbortedTransactions)
			require.Equal(t, wantFetch.Records, res.Records)
		})
	}
}

// TestDamagedTxnIndexRebuilt: a .txnindex found damaged at a clean open is
// rebuilt from the log by the partition, below the newest snapshot too.
func TestDamagedTxnIndexRebuilt(t *testing.T) {
	fsys := vfs.NewMem()
	lopts := log.Options{SegmentBytes: 1024}
	p, l := openPartition(t, fsys, lopts, partition.Options{})
	for i := int64(0); len(l.Segments()) < 3; i++ {
		appendAt(t, p, txnData(i, 0, 0, 10), l.LogEndOffset())
		markerAt(t, p, i, 0, 0, record.ControlAbort, l.LogEndOffset())
	}
	want, err := p.AbortedTxns()
	require.NoError(t, err)
	p.Close()
	require.NoError(t, l.Close())
	name := path.Join("/data/t-0", segment.FileName(0, segment.TxnIndexSuffix))
	f, err := fsys.OpenReadWrite(name)
	require.NoError(t, err)
	_, err = f.WriteAt([]byte{0xff, 0xff}, segment.TxnIndexEntrySize) // the second entry's version
	require.NoError(t, err)
	require.NoError(t, f.Close())

	lopts.CleanShutdown = true
	p2, l2 := openPartition(t, fsys, lopts, partition.Options{})
	require.Equal(t, []int64{0}, l2.LoadReport().DamagedTxnIndexes)
	got, err := p2.AbortedTxns()
	require.NoError(t, err)
	require.Equal(t, want, got)
}

// TestTruncateAcrossMarker: a follower truncating below an ABORT marker
// loses its entry and reopens the transaction: the last stable offset
// falls back to its first offset; a COMMIT marker then closes it.
func TestTruncateAcrossMarker(t *testing.T) {
	p, l := openPartition(t, vfs.NewMem(), log.Options{}, partition.Options{})
	appendAt(t, p, txnData(1, 0, 0, 3), 0)
	appendAt(t, p, batch(1000, "plain"), 3)
	markerAt(t, p, 1, 0, 0, record.ControlAbort, 4)
	require.EqualValues(t, 5, lso(t, p))
	txns, err := p.AbortedTxns()
	require.NoError(t, err)
	require.Equal(t, []segment.AbortedTxn{{ProducerID: 1, FirstOffset: 0, LastOffset: 4, LastStableOffset: 5}}, txns)

	require.NoError(t, p.TruncateTo(4))
	p.SetHighWatermark(4) // what a follower's replica sets after truncating
	txns, err = p.AbortedTxns()
	require.NoError(t, err)
	require.Empty(t, txns)
	require.EqualValues(t, 0, lso(t, p), "the transaction is open again")
	require.EqualValues(t, 0, states(t, p)[0].CurrentTxnFirstOffset)

	markerAt(t, p, 1, 0, 0, record.ControlCommit, 4)
	txns, err = p.AbortedTxns()
	require.NoError(t, err)
	require.Empty(t, txns)
	got, res := fetchAt(t, p, 0, kafka.ReadCommitted)
	require.Equal(t, []fetched{{0, 2, 1, false}, {3, 3, -1, false}, {4, 4, 1, true}}, got)
	require.Empty(t, res.AbortedTransactions)
	require.EqualValues(t, 5, l.LogEndOffset())
}

// TestFollowerTracksTransactions: a follower given the leader's batches
// has the leader's producer state, .txnindex and, with the leader's high
// watermark, last stable offset; an unreplicated marker keeps its
// transaction unstable until the high watermark passes it.
func TestFollowerTracksTransactions(t *testing.T) {
	leader, ll := openPartition(t, vfs.NewMem(), log.Options{}, partition.Options{})
	appendAt(t, leader, txnData(1, 0, 0, 2), 0)
	appendAt(t, leader, txnData(2, 0, 0, 2), 2)
	markerAt(t, leader, 1, 0, 3, record.ControlAbort, 4)
	appendAt(t, leader, txnData(3, 0, 0, 1), 5)
	markerAt(t, leader, 2, 0, 3, record.ControlCommit, 6)

	f, _ := openPartition(t, vfs.NewMem(), log.Options{}, partition.Options{Replicated: true})
	for off := int64(0); off < ll.LogEndOffset(); {
		b, err := ll.Read(nil, off, ll.LogEndOffset(), 1) // a batch at a time
		require.NoError(t, err)
		info, err := f.AppendAsFollower(b)
		require.NoError(t, err)
		off = info.LastOffset + 1
	}
	require.Equal(t, states(t, leader), states(t, f))
	lt, err := leader.AbortedTxns()
	require.NoError(t, err)
	ft, err := f.AbortedTxns()
	require.NoError(t, err)
	require.Equal(t, lt, ft)
	require.Equal(t, []segment.AbortedTxn{{ProducerID: 1, FirstOffset: 0, LastOffset: 4, LastStableOffset: 2}}, ft)

	// The follower's high watermark lags: the marker at 4 is not below
	// it, so producer 1's transaction from 0 is still unstable.
	f.SetHighWatermark(4)
	require.EqualValues(t, 0, lso(t, f))
	f.SetHighWatermark(5)
	require.EqualValues(t, 2, lso(t, f), "producer 2's transaction, its marker at 6 above the high watermark")
	f.SetHighWatermark(7)
	require.EqualValues(t, 5, lso(t, f), "producer 3's is open")
	require.EqualValues(t, 5, lso(t, leader))
}

// TestReplicatedMarker: a marker proposed through a replica passes
// CheckAppend's checks — fenced epochs refused — and its entry is written
// when the driver writes the batch.
func TestReplicatedMarker(t *testing.T) {
	p, l := openPartition(t, vfs.NewMem(), log.Options{}, partition.Options{Replicated: true})
	write := func(b []byte) {
		t.Helper()
		base := l.LogEndOffset()
		require.NoError(t, p.CheckAppend(b, base))
		record.SetBaseOffset(b, base)
		_, err := p.AppendAsFollower(b)
		require.NoError(t, err)
	}
	write(txnData(1, 2, 0, 3))
	require.ErrorIs(t, p.CheckAppend(record.ControlBatch(record.ControlAbort, 1, 1, 0, 1000), 3), kafka.ErrInvalidProducerEpoch)
	abort := record.ControlBatch(record.ControlAbort, 1, 2, 4, 1000)
	require.NoError(t, p.CheckAppend(abort, 3))
	txns, err := l.AbortedTxns()
	require.NoError(t, err)
	require.Empty(t, txns, "checked, not yet written")
	record.SetBaseOffset(abort, 3)
	_, err = p.AppendAsFollower(abort)
	require.NoError(t, err)
	txns, err = l.AbortedTxns()
	require.NoError(t, err)
	require.Equal(t, []segment.AbortedTxn{{ProducerID: 1, FirstOffset: 0, LastOffset: 3, LastStableOffset: 4}}, txns)
	require.ErrorIs(t, p.CheckAppend(record.ControlBatch(record.ControlCommit, 1, 2, 3, 1000), 4), kafka.ErrTransactionCoordinatorFenced)
}

// TestRetentionKeepsOpenTransactions: retention removes old segments but
// none at or above an open transaction's first offset; once it commits
// they may go. The control: the log's own retention, unbounded, removes
// them.
func TestRetentionKeepsOpenTransactions(t *testing.T) {
	for _, control := range []bool{false, true} {
		p, l := openPartition(t, vfs.NewMem(), log.Options{SegmentBytes: 1024, RetentionBytes: 1}, partition.Options{})
		appendAt(t, p, batch(1000, "before"), 0)
		appendAt(t, p, txnData(1, 0, 0, 1), 1)
		for len(l.Segments()) < 4 {
			appendAt(t, p, batch(1000, "filler-filler-filler-filler-filler-filler-filler"), l.LogEndOffset())
		}
		if control {
			_, err := l.DeleteRetained()
			require.NoError(t, err)
			require.Greater(t, l.LogStartOffset(), int64(1), "unbounded retention takes the open transaction")
			continue
		}
		n, err := p.DeleteRetained()
		require.NoError(t, err)
		require.Zero(t, n, "the first segment holds the open transaction")
		require.EqualValues(t, 0, l.LogStartOffset())
		markerAt(t, p, 1, 0, 0, record.ControlCommit, l.LogEndOffset())
		n, err = p.DeleteRetained()
		require.NoError(t, err)
		require.Positive(t, n)
	}
}

// TestSnapshotSyncsTxnIndex: a snapshot vouches for the .txnindex entries
// below it, so it is written only once they are durable. The case that
// needs it: a crash loses an entry never synced; the reopen rewrites it,
// unsynced, in a segment the log has just flushed and that rolls at the
// next append, so no flush comes back to it; the rolls snapshot above it;
// a second crash, with the recovery point checkpointed past that segment,
// reloads from those snapshots and would trust the entry's absence.
func TestSnapshotSyncsTxnIndex(t *testing.T) {
	fsys := vfs.NewMem()
	tp := kafka.TopicPartition{Topic: "t", Partition: 0}
	const hour = int64(3600_000)
	openDir := func() (*log.Dir, *partition.Partition, *log.Log) {
		t.Helper()
		d, err := log.OpenDir("/data", log.DirOptions{FS: fsys})
		require.NoError(t, err)
		l, err := d.Open(tp, log.Options{SyncBeforeAck: true, SegmentMs: time.Hour, MaxIndexBytes: 4096})
		require.NoError(t, err)
		return d, partition.New("t", 0, 1, 0, l, partition.Options{Now: clock}), l
	}
	_, p, _ := openDir()
	appendAt(t, p, txnData(1, 0, 0, 2), 0)
	markerAt(t, p, 1, 0, 0, record.ControlAbort, 2)
	want, err := p.AbortedTxns()
	require.NoError(t, err)
	require.Len(t, want, 1)

	fsys = fsys.CrashClone(vfs.CrashOptions{KeepUnsynced: vfs.KeepNone})
	d, p, l := openDir()
	got, err := p.AbortedTxns() // rebuilt, not yet durable
	require.NoError(t, err)
	require.Equal(t, want, got)
	appendAt(t, p, batch(1000+2*hour, "rolls"), 3) // segment.ms passed since the first batch
	appendAt(t, p, batch(1000+4*hour, "rolls again"), 4)
	require.Len(t, l.Segments(), 3)
	require.NoError(t, d.Checkpoint())

	fsys = fsys.CrashClone(vfs.CrashOptions{KeepUnsynced: vfs.KeepNone})
	_, p, _ = openDir()
	got, err = p.AbortedTxns()
	require.NoError(t, err)
	require.Equal(t, want, got)
}

// TestFetchRangeIsolated: on the OS filesystem a read_committed fetch as a
// file range names exactly the bytes FetchIsolated reads, with the same
// aborted transactions, from every offset.
func TestFetchRangeIsolated(t *testing.T) {
	l, err := log.Open(t.TempDir(), log.Options{SegmentBytes: 1024, MaxIndexBytes: 4096})
	require.NoError(t, err)
	defer l.Close()
	p := partition.New("t", 0, 1, 0, l, partition.Options{Now: clock})
	defer p.Close()
	for i := int64(0); len(l.Segments()) < 4; i++ {
		appendAt(t, p, txnData(i, 0, 0, 3), l.LogEndOffset())
		appendAt(t, p, batch(1000, "plain"), l.LogEndOffset())
		typ := []record.ControlType{record.ControlAbort, record.ControlCommit}[i%2]
		markerAt(t, p, i, 0, 0, typ, l.LogEndOffset())
	}
	appendAt(t, p, txnData(100, 0, 0, 2), l.LogEndOffset()) // open
	for off := int64(0); off <= l.LogEndOffset(); off++ {
		for _, maxBytes := range []int{1, 200, 1 << 20} {
			want, err := p.FetchIsolated(nil, off, maxBytes, kafka.ReadCommitted)
			require.NoError(t, err)
			got, r, err := p.FetchRangeIsolated(off, maxBytes, kafka.ReadCommitted)
			require.NoError(t, err)
			b := make([]byte, r.Size)
			if r.Size > 0 {
				n, err := unix.Pread(r.FD, b, r.Pos)
				require.NoError(t, err)
				require.EqualValues(t, r.Size, n)
			}
			require.NoError(t, r.Close())
			require.Equal(t, len(want.Records), len(b), "offset %d, %d bytes", off, maxBytes)
			require.True(t, bytes.Equal(want.Records, b), "offset %d, %d bytes", off, maxBytes)
			want.Records = nil
			require.Equal(t, want, got, "offset %d, %d bytes", off, maxBytes)
		}
	}
}

// TestListOffsetIsolated: under read_committed the latest offset is the
// last stable offset, and a timestamp finds only offsets below it.
func TestListOffsetIsolated(t *testing.T) {
	p, _ := openPartition(t, vfs.NewMem(), log.Options{}, partition.Options{})
	appendAt(t, p, txnData(1, 0, 0, 2), 0)
	for _, c := range []struct {
		isolation kafka.IsolationLevel
		latest    int64
		at1000    int64
	}{{kafka.ReadCommitted, 0, -1}, {kafka.ReadUncommitted, 2, 0}} {
		off, _, err := p.ListOffsetIsolated(kafka.LatestTimestamp, c.isolation)
		require.NoError(t, err)
		require.Equal(t, c.latest, off)
		off, _, err = p.ListOffsetIsolated(1000, c.isolation)
		require.NoError(t, err)
		require.Equal(t, c.at1000, off)
	}
	_, _, err := p.ListOffsetIsolated(kafka.LatestTimestamp, kafka.IsolationLevel(7))
	require.ErrorIs(t, err, kafka.ErrInvalidRequest)
}

// TestReplicatedLeaderSnapshotsOnRoll: a replicated leader checks batches
// before it writes them, so when a write rolls the log its state may be
// ahead of the log: the roll's snapshot waits for the write that catches
// up, rather than describe batches the log does not hold.
func TestReplicatedLeaderSnapshotsOnRoll(t *testing.T) {
	fsys := vfs.NewMem()
	p, l := openPartition(t, fsys, log.Options{SegmentBytes: 1024}, partition.Options{Replicated: true})
	var seq int32
	propose := func() []byte { // producer 1's only: its sequence is the offset
		b := txnData(1, 0, seq, 15)
		require.NoError(t, p.CheckAppend(b, int64(seq)))
		record.SetBaseOffset(b, int64(seq))
		seq += 15
		return b
	}
	write := func(b []byte) {
		_, err := p.AppendAsFollower(b)
		require.NoError(t, err)
	}
	for range 3 {
		write(propose())
	}
	require.Len(t, l.Segments(), 1)
	fourth, fifth := propose(), propose() // two proposals in one Ready
	write(fourth)
	require.Len(t, l.Segments(), 2, "the fourth batch rolls the log")
	require.Empty(t, snapshots(t, fsys), "the state is ahead of the log: no snapshot yet")
	write(fifth)
	require.Equal(t, []string{partition.SnapshotFileName(75)}, snapshots(t, fsys))
}

// TestNotifyOnMarker: readers waiting on Notify wake when a marker is
// written, though the high watermark does not move (a follower's).
func TestNotifyOnMarker(t *testing.T) {
	p, _ := openPartition(t, vfs.NewMem(), log.Options{}, partition.Options{Replicated: true})
	data := txnData(1, 0, 0, 1)
	_, err := p.AppendAsFollower(data)
	require.NoError(t, err)
	ch := make(chan struct{}, 1)
	p.Notify(ch)
	defer p.Stop(ch)
	abort := record.ControlBatch(record.ControlAbort, 1, 0, 0, 1000)
	record.SetBaseOffset(abort, 1)
	_, err = p.AppendAsFollower(abort)
	require.NoError(t, err)
	select {
	case <-ch:
	default:
		t.Fatal("no wake-up for the marker")
	}
	require.EqualValues(t, 0, p.HighWatermark())
}

// TestConcurrentTransactions: producers running transactions at once, in
// write groups, with read_committed readers beside them: the .txnindex
// holds exactly the aborted transactions the log's batches describe, in
// marker order, and every transaction ends decided.
func TestConcurrentTransactions(t *testing.T) {
	p, l := openPartition(t, vfs.NewMem(), log.Options{SyncBeforeAck: true, SegmentBytes: 2048}, partition.Options{})
	// event is an append a producer made: a data batch, or a marker.
	type event struct {
		offset, producer int64
		marker           bool
		typ              record.ControlType
	}
	var (
		mu     sync.Mutex
		events []event
		wg     sync.WaitGroup
	)
	note := func(e event) {
		mu.Lock()
		events = append(events, e)
		mu.Unlock()
	}
	for id := int64(0); id < 4; id++ {
		wg.Go(func() {
			var seq int32
			for i := range 15 {
				for range 1 + i%3 {
					res, err := p.Append(txnData(id, 0, seq, 2), kafka.AcksAll)
					if err != nil {
						t.Error(err)
						return
					}
					note(event{offset: res.FirstOffset, producer: id})
					seq += 2
				}
				typ := []record.ControlType{record.ControlAbort, record.ControlCommit}[i%2]
				res, err := p.AppendMarker(id, 0, 0, typ)
				if err != nil {
					t.Error(err)
					return
				}
				note(event{offset: res.FirstOffset, producer: id, marker: true, typ: typ})
			}
		})
	}
	done := make(chan struct{})
	var readers sync.WaitGroup
	readers.Go(func() {
		for {
			select {
			case <-done:
				return
			default:
			}
			if _, err := p.FetchIsolated(nil, 0, 1<<16, kafka.ReadCommitted); err != nil {
				t.Error(err)
				return
			}
		}
	})
	wg.Wait()
	close(done)
	readers.Wait()
	require.GreaterOrEqual(t, len(l.Segments()), 3)

	// The appends in offset order say which transactions aborted.
	slices.SortFunc(events, func(a, b event) int { return cmp.Compare(a.offset, b.offset) })
	open := map[int64]int64{}
	var want []segment.AbortedTxn
	for _, e := range events {
		first, ok := open[e.producer]
		switch {
		case !e.marker && !ok:
			open[e.producer] = e.offset
		case e.marker:
			delete(open, e.producer)
			if e.typ == record.ControlAbort {
				lso := e.offset + 1
				for _, f := range open {
					lso = min(lso, f)
				}
				want = append(want, segment.AbortedTxn{ProducerID: e.producer, FirstOffset: first, LastOffset: e.offset, LastStableOffset: lso})
			}
		}
	}
	require.Empty(t, open)
	got, err := p.AbortedTxns()
	require.NoError(t, err)
	require.Equal(t, want, got)
	require.Equal(t, l.LogEndOffset(), lso(t, p))
}
