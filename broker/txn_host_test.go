package broker

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/record"
	"github.com/partlog/partlog/transport"
	"github.com/partlog/partlog/txn"
)

// txnStep sends one request to the node's transaction coordinator,
// retrying while it answers that another change is under way.
func txnStep(t *testing.T, n *Broker, id string, do func(h *txnHost, rid uint64, nowMs int64)) txn.Answer {
	t.Helper()
	ctx := context.Background()
	for range 200 {
		if _, err := n.txns.state.partitionOf(ctx, id, txnStatePartitions, txnStateConfigs()); err != nil {
			if errors.Is(err, kafka.ErrCoordinatorLoadInProgress) {
				continue
			}
			require.NoError(t, err)
		}
		a, err := n.txns.request(ctx, func(rid uint64, nowMs int64) { do(n.txns, rid, nowMs) })
		require.NoError(t, err)
		if errors.Is(a.Err, kafka.ErrConcurrentTransactions) || errors.Is(a.Err, kafka.ErrCoordinatorLoadInProgress) {
			time.Sleep(10 * time.Millisecond) // the coordinator's previous change is being written
			continue
		}
		return a
	}
	t.Fatalf("the coordinator kept answering that it is busy")
	return txn.Answer{}
}

// lastBatch returns the header and first record of the last batch of
// topic-partition p's log.
func lastBatch(t *testing.T, n *Broker, topic string, p int32) (record.Header, record.Record) {
	t.Helper()
	l, err := n.partitionLog(topic, p)
	require.NoError(t, err)
	var h record.Header
	var first record.Record
	require.NoError(t, eachBatchRecord(l, l.LogEndOffset(), func(bh *record.Header, r record.Record) (bool, error) {
		if r.Offset == bh.BaseOffset {
			h, first = *bh, r
		}
		return true, nil
	}))
	return h, first
}

// TestTxnCommitWritesMarkers (on a virtual clock): on a node on its own, a transaction's
// EndTxn(commit) is decided durably, then the coordinator writes the
// COMMIT marker to the transaction's partition and completes — and a
// restarted node finds the transaction complete in __transaction_state.
func TestTxnCommitWritesMarkers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dir := t.TempDir()
		ctx := context.Background()
		n, err := Open(dir, Options{NodeID: 1})
		require.NoError(t, err)
		require.NoError(t, n.CreateTopic(ctx, NewTopic{Name: "t"}))

		a := txnStep(t, n, "tx", func(h *txnHost, rid uint64, now int64) {
			h.c.InitProducerID(txn.InitProducerIDRequest{ID: rid, Version: 5, TransactionalID: "tx", TransactionTimeoutMs: 60_000,
				ProducerID: -1, ProducerEpoch: -1}, now)
		})
		require.NoError(t, a.Err)
		pid, epoch := a.ProducerID, a.ProducerEpoch
		tp := kafka.TopicPartition{Topic: "t", Partition: 0}
		a = txnStep(t, n, "tx", func(h *txnHost, rid uint64, now int64) {
			h.c.AddPartitions(txn.AddPartitionsRequest{ID: rid, Version: 3, TransactionalID: "tx", ProducerID: pid, ProducerEpoch: epoch,
				Partitions: []kafka.TopicPartition{tp}}, now)
		})
		require.NoError(t, a.Err)

		opts := record.DefaultBatchOptions()
		opts.ProducerID, opts.ProducerEpoch, opts.BaseSequence, opts.Transactional = pid, epoch, 0, true
		b := record.NewBuilder(opts)
		b.Append(record.Record{Value: []byte("in the transaction")})
		resp, err := n.Produce(ctx, &transport.ProduceRequest{TransactionalID: "tx", Acks: kafka.AcksAll, Topics: []transport.ProduceTopic{
			{Topic: "t", Partitions: []transport.ProducePartition{{Partition: 0, Records: b.Build()}}}}})
		require.NoError(t, err)
		require.NoError(t, resp.Topics[0].Partitions[0].Err)

		a = txnStep(t, n, "tx", func(h *txnHost, rid uint64, now int64) {
			h.c.EndTxn(txn.EndTxnRequest{ID: rid, Version: 3, TransactionalID: "tx", ProducerID: pid, ProducerEpoch: epoch, Result: txn.Commit}, now)
		})
		require.NoError(t, a.Err)
		deadline := time.Now().Add(10 * time.Second)
		for {
			s, err := n.txns.describe("tx")
			require.NoError(t, err)
			if s.State == txn.CompleteCommit {
				break
			}
			require.True(t, time.Now().Before(deadline), "the transaction stays %s", s.State)
			time.Sleep(10 * time.Millisecond)
		}
		h, first := lastBatch(t, n, "t", 0)
		require.True(t, h.Attributes.IsControl(), "the marker ends the partition")
		require.Equal(t, pid, h.ProducerID)
		c, err := record.ParseControlRecord(first)
		require.NoError(t, err)
		require.Equal(t, record.ControlCommit, c.Type)
		require.Equal(t, int64(1), h.BaseOffset, "right after the transaction's record")
		require.NoError(t, n.Close())

		n, err = Open(dir, Options{NodeID: 1})
		require.NoError(t, err)
		defer n.Close()
		s, err := n.txns.describe("tx")
		require.NoError(t, err)
		require.Equal(t, txn.CompleteCommit, s.State, "reloaded from __transaction_state")
		require.Equal(t, pid, s.ProducerID)
	})
}
