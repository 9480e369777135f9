package consumer_test

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/partlog/partlog/consumer"
	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/record"
	"github.com/partlog/partlog/transport"
)

// txnLog is a fixedLog whose batches come from transactional producers:
// it names the aborted transactions in answers to read_committed fetches,
// as a node does, and remembers each fetch's isolation level.
type txnLog struct {
	*fixedLog
	aborted []transport.AbortedTransaction

	mu         sync.Mutex
	isolations []kafka.IsolationLevel
}

func (l *txnLog) Fetch(ctx context.Context, req *transport.FetchRequest) (*transport.FetchResponse, error) {
	l.mu.Lock()
	l.isolations = append(l.isolations, req.Isolation)
	l.mu.Unlock()
	resp, err := l.fixedLog.Fetch(ctx, req)
	if err == nil && req.Isolation == kafka.ReadCommitted {
		resp.Topics[0].Partitions[0].AbortedTransactions = l.aborted
	}
	return resp, err
}

// txnBatch returns a transactional batch of producer pid at base offset
// base, with values.
func txnBatch(pid int64, base int64, values ...string) []byte {
	opts := record.DefaultBatchOptions()
	opts.BaseOffset, opts.ProducerID, opts.ProducerEpoch, opts.BaseSequence, opts.Transactional = base, pid, 0, 0, true
	b := record.NewBuilder(opts)
	for _, v := range values {
		b.Append(record.Record{Timestamp: baseTime, Value: []byte(v)})
	}
	return b.Build()
}

// marker returns producer pid's COMMIT or ABORT marker at offset.
func marker(typ record.ControlType, pid int64, offset int64) []byte {
	ctl, err := record.Decode(record.ControlBatch(typ, pid, 0, 0, baseTime))
	if err != nil {
		panic(err)
	}
	opts := record.DefaultBatchOptions()
	opts.BaseOffset, opts.ProducerID, opts.Transactional, opts.Control = offset, pid, true, true
	b := record.NewBuilder(opts)
	r := ctl.Records[0]
	r.Offset = 0
	b.Append(r)
	return b.Build()
}

// newTxnLog returns a log where producer 1's transaction aborts while
// producer 2's, interleaved with it, commits, between plain records:
//
//	0 p0   1 a1(1)  2 c1(2)  3 a2(1)  4 ABORT(1)  5 c2(2)  6 COMMIT(2)  7 p7
func newTxnLog() *txnLog {
	plain := func(base int64, v string) []byte {
		opts := record.DefaultBatchOptions()
		opts.BaseOffset = base
		b := record.NewBuilder(opts)
		b.Append(record.Record{Timestamp: baseTime, Value: []byte(v)})
		return b.Build()
	}
	l := &fixedLog{batches: [][]byte{
		plain(0, "p0"),
		txnBatch(1, 1, "a1"),
		txnBatch(2, 2, "c1"),
		txnBatch(1, 3, "a2"),
		marker(record.ControlAbort, 1, 4),
		txnBatch(2, 5, "c2"),
		marker(record.ControlCommit, 2, 6),
		plain(7, "p7"),
	}, hw: 8}
	return &txnLog{fixedLog: l, aborted: []transport.AbortedTransaction{{ProducerID: 1, FirstOffset: 1}}}
}

// TestReadCommittedSkipsAbortedTransactions: a read_committed consumer
// returns the committed transaction's records and the plain ones, never
// the aborted transaction's interleaved with them nor the markers, and
// its position moves past all of them.
func TestReadCommittedSkipsAbortedTransactions(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newTxnLog()
		c := newConsumer(t, l, consumer.Partitions(tp("t", 0)), consumer.AutoOffsetReset(consumer.Earliest),
			consumer.Isolation(consumer.ReadCommitted))
		recs := pollN(t, c, 4)
		require.Equal(t, []string{"p0", "c1", "c2", "p7"}, values(recs))
		offsets := make([]int64, len(recs))
		for i, r := range recs {
			offsets[i] = r.Offset
		}
		require.Equal(t, []int64{0, 2, 5, 7}, offsets)
		pos, err := c.Position(context.Background(), tp("t", 0))
		require.NoError(t, err)
		require.Equal(t, int64(8), pos)
		l.mu.Lock()
		require.Equal(t, kafka.ReadCommitted, l.isolations[0], "fetches ask read_committed")
		l.mu.Unlock()
	})
}

// TestReadCommittedIteratorSkipsAbortedTransactions: Records, which
// decodes one batch at a time, skips them the same way, also when a loop
// stops mid-way and the rest is given back.
func TestReadCommittedIteratorSkipsAbortedTransactions(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newConsumer(t, newTxnLog(), consumer.Partitions(tp("t", 0)), consumer.AutoOffsetReset(consumer.Earliest),
			consumer.Isolation(consumer.ReadCommitted))
		var got []string
		for len(got) < 4 {
			for r, err := range c.Records(context.Background()) {
				require.NoError(t, err)
				got = append(got, string(r.Value))
				break // one at a time: the rest is given back
			}
		}
		require.Equal(t, []string{"p0", "c1", "c2", "p7"}, got)
	})
}

// TestReadUncommittedReturnsAbortedTransactions is the negative control:
// read_uncommitted returns the aborted transaction's records too (never
// the markers), and asks no read_committed fetch.
func TestReadUncommittedReturnsAbortedTransactions(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newTxnLog()
		c := newConsumer(t, l, consumer.Partitions(tp("t", 0)), consumer.AutoOffsetReset(consumer.Earliest))
		require.Equal(t, []string{"p0", "a1", "c1", "a2", "c2", "p7"}, values(pollN(t, c, 6)))
		l.mu.Lock()
		require.Equal(t, kafka.ReadUncommitted, l.isolations[0])
		l.mu.Unlock()
	})
}

// TestReadCommittedMovesPastAMarkerAlone: a fetch that brings only a
// marker still moves the position past it.
func TestReadCommittedMovesPastAMarkerAlone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := &txnLog{fixedLog: &fixedLog{batches: [][]byte{
			txnBatch(1, 0, "a"), marker(record.ControlAbort, 1, 1),
		}, hw: 2}, aborted: []transport.AbortedTransaction{{ProducerID: 1, FirstOffset: 0}}}
		c := newConsumer(t, l, consumer.PartitionsAt(map[kafka.TopicPartition]int64{tp("t", 0): 1}),
			consumer.Isolation(consumer.ReadCommitted))
		for i := 0; ; i++ {
			pos, err := c.Position(context.Background(), tp("t", 0))
			require.NoError(t, err)
			if pos == 2 {
				break
			}
			require.Less(t, i, 100, "position stuck at %d", pos)
			fs, err := c.Poll(context.Background(), 10*time.Millisecond)
			require.NoError(t, err)
			require.True(t, fs.Empty(), "the marker is no record")
		}
	})
}
