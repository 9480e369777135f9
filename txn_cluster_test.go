package partlog_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/partlog/partlog"
	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/partlogtest"
	"github.com/partlog/partlog/record"
	"github.com/partlog/partlog/transport"
)

// retryBusy repeats call while the coordinator answers that it is busy
// or moving (CONCURRENT_TRANSACTIONS, COORDINATOR_LOAD_IN_PROGRESS,
// NOT_COORDINATOR) or unreachable (NETWORK_EXCEPTION), as a Kafka
// producer does.
func retryBusy(t *testing.T, call func() error) {
	t.Helper()
	for range 100 {
		err := call()
		if errors.Is(err, kafka.ErrConcurrentTransactions) || errors.Is(err, kafka.ErrCoordinatorLoadInProgress) ||
			errors.Is(err, kafka.ErrNotCoordinator) || errors.Is(err, kafka.ErrCoordinatorNotAvailable) ||
			errors.Is(err, kafka.ErrNetwork) {
			time.Sleep(20 * time.Millisecond)
			continue
		}
		require.NoError(t, err)
		return
	}
	t.Fatal("the coordinator stayed busy")
}

// TestClusterTransactionMarkers (on a virtual clock): a transaction over
// three partitions led by three nodes commits, and the coordinator writes
// the COMMIT marker to each partition's leader — on other nodes through
// WriteTxnMarkers — right after the transaction's batch; every replica
// gets it.
func TestClusterTransactionMarkers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newTestCluster(t, 1, 2, 3)
		ctx := context.Background()
		require.NoError(t, c.nodes[1].CreateTopic(ctx, partlog.NewTopic{Name: "t", Partitions: 3, ReplicationFactor: 3}))
		client, err := c.net.Client(ctx)
		require.NoError(t, err)
		defer client.Close()
		leaders := map[int32]bool{}
		for p := range int32(3) {
			leaders[c.leader("t", p)] = true
		}
		require.Len(t, leaders, 3, "each partition led by another node")

		var pid int64
		var epoch int16
		retryBusy(t, func() error {
			resp, err := client.InitProducerID(ctx, &transport.InitProducerIDRequest{TransactionalID: "tx", TransactionTimeout: time.Minute,
				ProducerID: -1, ProducerEpoch: -1})
			require.NoError(t, err)
			pid, epoch = resp.ProducerID, resp.ProducerEpoch
			return resp.Err
		})
		var tps []kafka.TopicPartition
		for p := range int32(3) {
			tps = append(tps, kafka.TopicPartition{Topic: "t", Partition: p})
		}
		retryBusy(t, func() error {
			resp, err := client.AddPartitionsToTxn(ctx, &transport.AddPartitionsToTxnRequest{Transactions: []transport.AddPartitionsToTxnTransaction{
				{TransactionalID: "tx", ProducerID: pid, ProducerEpoch: epoch, Partitions: tps}}})
			require.NoError(t, err)
			require.NoError(t, resp.Err)
			return errors.Join(func() (errs []error) {
				for _, pr := range resp.Transactions[0].Partitions {
					errs = append(errs, pr.Err)
				}
				return errs
			}()...)
		})
		for p := range int32(3) {
			opts := record.DefaultBatchOptions()
			opts.ProducerID, opts.ProducerEpoch, opts.BaseSequence, opts.Transactional = pid, epoch, 0, true
			b := record.NewBuilder(opts)
			b.Append(record.Record{Value: fmt.Appendf(nil, "v%d", p)})
			resp, err := client.Produce(ctx, &transport.ProduceRequest{Acks: kafka.AcksAll, TransactionalID: "tx",
				Topics: []transport.ProduceTopic{{Topic: "t", Partitions: []transport.ProducePartition{{Partition: p, Records: b.Build()}}}}})
			require.NoError(t, err)
			require.NoError(t, resp.Topics[0].Partitions[0].Err)
		}
		retryBusy(t, func() error {
			resp, err := client.EndTxn(ctx, &transport.EndTxnRequest{TransactionalID: "tx", ProducerID: pid, ProducerEpoch: epoch, Result: transport.TxnCommit})
			require.NoError(t, err)
			return resp.Err
		})
		for id, n := range c.nodes {
			for p := range int32(3) {
				l, err := partlogtest.Log(n, "t", p)
				require.NoError(t, err)
				waitUntil(t, fmt.Sprintf("node %d's replica of t-%d has the marker", id, p), func() bool { return l.LogEndOffset() == 2 })
				data, err := l.Read(nil, 1, 2, 1<<20)
				require.NoError(t, err)
				h, err := record.ParseHeader(data)
				require.NoError(t, err)
				require.True(t, h.Attributes.IsControl())
				require.Equal(t, pid, h.ProducerID)
				b, err := record.Decode(data[:h.Size()])
				require.NoError(t, err)
				cr, err := record.ParseControlRecord(b.Records[0])
				require.NoError(t, err)
				require.Equal(t, record.ControlCommit, cr.Type)
			}
		}
	})
}
