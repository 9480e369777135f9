package partition_test

import (
	"errors"
	"path"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/log"
	"github.com/partlog/partlog/partition"
	"github.com/partlog/partlog/record"
	"github.com/partlog/partlog/vfs"
)

// producerMachine drives a partition with idempotent producers sending in
// order, retrying, skipping sequences and changing epochs, mixed with
// plain batches, snapshots and small segments that roll; at each restart
// — a clean close or a crash, with its snapshots or with none — the state
// rebuilt from the log must equal the state before.
type producerMachine struct {
	fs   *vfs.MemFS
	opts log.Options
	l    *log.Log
	p    *partition.Partition
	// sent is, per producer, its epoch and the sequence its next batch
	// takes, as an in-order producer would track it.
	epoch   map[int64]int16
	nextSeq map[int64]int32
	// last holds, per producer, the batches it sent that the partition
	// took (appended or answered as duplicates), for retries.
	last map[int64][]sentBatch
}

type sentBatch struct {
	epoch int16
	seq   int32
	n     int
}

var clock = func() time.Time { return time.UnixMilli(2000) }

func (m *producerMachine) open(t *rapid.T) {
	l, err := log.Open("/data/t-0", m.opts)
	require.NoError(t, err)
	m.l = l
	m.p = partition.New("t", 0, 1, 0, l, partition.Options{Now: clock})
}

func (m *producerMachine) close() {
	m.p.Close()
	m.l.Close()
}

// Send sends a batch the way a producer would: the next in sequence, a
// retry of a recent one, a gap, a bumped epoch, or a stale epoch.
func (m *producerMachine) Send(t *rapid.T) {
	id := rapid.Int64Range(0, 3).Draw(t, "producer")
	n := rapid.IntRange(1, 4).Draw(t, "records")
	epoch, seq := m.epoch[id], m.nextSeq[id]
	kind := rapid.SampledFrom([]string{"next", "next", "next", "retry", "gap", "bump", "stale"}).Draw(t, "kind")
	switch kind {
	case "retry":
		if len(m.last[id]) == 0 {
			return
		}
		b := rapid.SampledFrom(m.last[id]).Draw(t, "retried")
		epoch, seq, n = b.epoch, b.seq, b.n
	case "gap":
		seq += rapid.Int32Range(1, 10).Draw(t, "gap")
	case "bump":
		epoch, seq = epoch+1, 0
	case "stale":
		if len(m.last[id]) == 0 {
			return // a producer the partition does not know starts anywhere
		}
		epoch--
	}
	data := idemBatch(id, epoch, seq, n, 1000)
	res, err := m.p.Append(data, kafka.AcksAll)
	if err != nil {
		require.True(t, errors.Is(err, kafka.ErrOutOfOrderSequence) || errors.Is(err, kafka.ErrInvalidProducerEpoch) ||
			errors.Is(err, kafka.ErrUnknownProducerID) && seq != 0 && len(m.last[id]) == 0, "%v", err)
		require.NotEqual(t, "next", kind, "an in-order batch is refused: %v", err)
		return
	}
	if res.Duplicate {
		// The answer points at that very batch in the log.
		got, err := m.l.Read(nil, res.FirstOffset, m.l.LogEndOffset(), 1)
		require.NoError(t, err)
		h, err := record.ParseHeader(got)
		require.NoError(t, err)
		require.Equal(t, [4]int64{id, int64(epoch), int64(seq), res.FirstOffset}, [4]int64{h.ProducerID, int64(h.ProducerEpoch), int64(h.BaseSequence), h.BaseOffset})
		return
	}
	require.NotEqual(t, "stale", kind, "a stale epoch is appended")
	if kind == "retry" && m.nextSeq[id] != seq {
		t.Fatalf("a retry of a remembered batch was appended again")
	}
	if epoch != m.epoch[id] {
		m.last[id] = nil
	}
	m.epoch[id], m.nextSeq[id] = epoch, seq+int32(n)
	m.last[id] = append(m.last[id], sentBatch{epoch, seq, n})
	if len(m.last[id]) > partition.BatchesPerProducer {
		m.last[id] = m.last[id][1:]
	}
}

// Plain appends a batch without a producer id.
func (m *producerMachine) Plain(t *rapid.T) {
	_, err := m.p.Append(batch(1000, "plain"), kafka.AcksAll)
	require.NoError(t, err)
}

// Snapshot writes a snapshot now.
func (m *producerMachine) Snapshot(t *rapid.T) {
	require.NoError(t, m.p.SnapshotProducerState())
}

// Restart closes the partition cleanly or crashes it, optionally deletes
// every snapshot, reopens, and compares the state.
func (m *producerMachine) Restart(t *rapid.T) {
	before, err := m.p.ProducerStates()
	require.NoError(t, err)
	if rapid.Bool().Draw(t, "crash") {
		m.fs = m.fs.CrashClone(vfs.CrashOptions{Seed: rapid.Int64().Draw(t, "seed"), KeepUnsynced: vfs.KeepNone})
		m.opts.FS = m.fs
		// The old log's files are gone with the old filesystem.
	} else {
		m.close()
	}
	if rapid.Bool().Draw(t, "drop snapshots") {
		names, err := m.fs.List("/data/t-0")
		require.NoError(t, err)
		for _, n := range names {
			if path.Ext(n) == partition.SnapshotSuffix {
				require.NoError(t, m.fs.Remove("/data/t-0/"+n))
			}
		}
	}
	m.open(t)
	after, err := m.p.ProducerStates()
	require.NoError(t, err)
	require.Equal(t, before, after)
}

func (m *producerMachine) Check(t *rapid.T) {}

func TestProducerStateModel(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		m := &producerMachine{
			fs:      vfs.NewMem(),
			epoch:   map[int64]int16{},
			nextSeq: map[int64]int32{},
			last:    map[int64][]sentBatch{},
		}
		// Sync before ack: a crash keeps every acknowledged batch. Small
		// segments roll, and each roll snapshots.
		m.opts = log.Options{FS: m.fs, SyncBeforeAck: true, SegmentBytes: 2048, MaxIndexBytes: 4096}
		m.open(t)
		defer func() { m.close() }()
		t.Repeat(rapid.StateMachineActions(m))
	})
}
