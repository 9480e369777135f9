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
	"github.com/partlog/partlog/consumer"
	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/record"
	"github.com/partlog/partlog/transport"
	"github.com/partlog/partlog/vfs"
)

// txnClient is what a transactional client calls: a node's Client, or a
// ClusterClient.
type txnClient interface {
	transport.Client
	transport.ProducerIDClient
	transport.GroupClient
	transport.TxnClient
}

// txnBubbleNode opens a node on the in-memory filesystem, closed when the
// test ends, with topics of one partition, and returns it with a context
// and its client; for a test in a synctest bubble.
func txnBubbleNode(t *testing.T, topics []string, opts ...partlog.Option) (*partlog.Node, context.Context, partlog.Client) {
	t.Helper()
	n := openNode(t, vfs.NewMem(), opts...)
	t.Cleanup(func() { n.Close() })
	ctx := context.Background()
	for _, name := range topics {
		require.NoError(t, n.CreateTopic(ctx, partlog.NewTopic{Name: name}))
	}
	return n, ctx, n.Client()
}

// txnTimeout is the transaction timeout rawTxn's producers ask for.
const txnTimeout = time.Minute

// rawTxn drives a transactional id's requests by hand, as a Kafka client
// would send them, so that a test can hold one back and deliver it late.
type rawTxn struct {
	t      *testing.T
	ctx    context.Context
	client txnClient
	id     string
	// version is the EndTxn version: 5 and up is transaction version 2,
	// whose EndTxn bumps the epoch (KIP-890 part 2).
	version int16
	// produceVersion and offsetCommitVersion are the Produce and
	// TxnOffsetCommit versions, zero for an in-process call: from 12 and
	// 5 the broker adds the partition to the transaction itself.
	produceVersion, offsetCommitVersion int16
	producerID                          int64
	producerEpoch                       int16
	// sequence is the next batch's base sequence on each partition.
	sequence map[kafka.TopicPartition]int32
	// lastEnd is the last EndTxn sent, for a retry.
	lastEnd *transport.EndTxnRequest
}

// newRawTxn initialises transactional id id on the node's client, with
// a transaction timeout of txnTimeout.
func newRawTxn(t *testing.T, ctx context.Context, c txnClient, id string, endTxnVersion int16) *rawTxn {
	return newRawTxnTimeout(t, ctx, c, id, endTxnVersion, txnTimeout)
}

// newRawTxnTimeout is newRawTxn with a transaction timeout.
func newRawTxnTimeout(t *testing.T, ctx context.Context, c txnClient, id string, endTxnVersion int16, timeout time.Duration) *rawTxn {
	r := &rawTxn{t: t, ctx: ctx, client: c, id: id, version: endTxnVersion, sequence: map[kafka.TopicPartition]int32{}}
	retryBusy(t, func() error {
		resp, err := c.InitProducerID(ctx, &transport.InitProducerIDRequest{TransactionalID: id, TransactionTimeout: timeout,
			ProducerID: -1, ProducerEpoch: -1})
		if err != nil {
			return err
		}
		r.producerID, r.producerEpoch = resp.ProducerID, resp.ProducerEpoch
		return resp.Err
	})
	return r
}

// add adds partitions to the transaction.
func (r *rawTxn) add(tps ...kafka.TopicPartition) {
	retryBusy(r.t, func() error {
		resp, err := r.client.AddPartitionsToTxn(r.ctx, &transport.AddPartitionsToTxnRequest{Transactions: []transport.AddPartitionsToTxnTransaction{
			{TransactionalID: r.id, ProducerID: r.producerID, ProducerEpoch: r.producerEpoch, Partitions: tps}}})
		if err != nil {
			return err
		}
		require.NoError(r.t, resp.Err)
		var errs []error
		for _, pr := range resp.Transactions[0].Partitions {
			errs = append(errs, pr.Err)
		}
		return errors.Join(errs...)
	})
}

// addOffsets adds group's offsets partition to the transaction.
func (r *rawTxn) addOffsets(group string) {
	retryBusy(r.t, func() error {
		resp, err := r.client.AddOffsetsToTxn(r.ctx, &transport.AddOffsetsToTxnRequest{TransactionalID: r.id,
			ProducerID: r.producerID, ProducerEpoch: r.producerEpoch, Group: group})
		if err != nil {
			return err
		}
		return resp.Err
	})
}

// commitOffsets commits group's offset of a partition of topic in the
// transaction, as a group without members (generation -1).
func (r *rawTxn) commitOffsets(group, topic string, partition int32, offset int64) {
	retryBusy(r.t, func() error { return r.commitOffsetsOnce(group, topic, partition, offset) })
}

// commitOffsetsOnce is commitOffsets, sent once; it returns the answer.
func (r *rawTxn) commitOffsetsOnce(group, topic string, partition int32, offset int64) error {
	resp, err := r.client.TxnOffsetCommit(r.ctx, &transport.TxnOffsetCommitRequest{Version: r.offsetCommitVersion,
		TransactionalID: r.id, Group: group, ProducerID: r.producerID, ProducerEpoch: r.producerEpoch, GenerationID: -1,
		Topics: []transport.OffsetCommitTopic{{Topic: topic, Partitions: []transport.OffsetCommitPartition{
			{Partition: partition, Offset: offset, LeaderEpoch: -1}}}}})
	if err != nil {
		return err
	}
	return resp.Topics[0].Partitions[0].Err
}

// batchFor builds the transaction's next batch for tp, holding value.
func (r *rawTxn) batchFor(tp kafka.TopicPartition, value string) []byte {
	opts := record.DefaultBatchOptions()
	opts.ProducerID, opts.ProducerEpoch, opts.BaseSequence, opts.Transactional = r.producerID, r.producerEpoch, r.sequence[tp], true
	b := record.NewBuilder(opts)
	b.Append(record.Record{Value: []byte(value)})
	r.sequence[tp]++
	return b.Build()
}

// produceTo sends batch to tp and returns the partition's answer.
func (r *rawTxn) produceTo(tp kafka.TopicPartition, batch []byte) error {
	resp, err := r.client.Produce(r.ctx, &transport.ProduceRequest{Version: r.produceVersion, TransactionalID: r.id, Acks: kafka.AcksAll,
		Topics: []transport.ProduceTopic{{Topic: tp.Topic, Partitions: []transport.ProducePartition{{Partition: tp.Partition, Records: batch}}}}})
	require.NoError(r.t, err)
	return resp.Topics[0].Partitions[0].Err
}

// batch and produce are batchFor and produceTo for partition 0 of topic
// "t".
func (r *rawTxn) batch(value string) []byte { return r.batchFor(t0, value) }
func (r *rawTxn) produce(topic string, batch []byte) error {
	return r.produceTo(kafka.TopicPartition{Topic: topic}, batch)
}

// t0 is partition 0 of topic "t".
var t0 = kafka.TopicPartition{Topic: "t"}

// endOnce sends EndTxn once and returns its error; under transaction
// version 2 the producer takes the epoch the answer gives, and its
// sequences start over.
func (r *rawTxn) endOnce(result transport.TxnResult) error {
	r.lastEnd = &transport.EndTxnRequest{Version: r.version, TransactionalID: r.id,
		ProducerID: r.producerID, ProducerEpoch: r.producerEpoch, Result: result}
	resp, err := r.client.EndTxn(r.ctx, r.lastEnd)
	if err != nil {
		return err
	}
	if resp.Err == nil && r.version >= 5 {
		r.producerID, r.producerEpoch = resp.ProducerID, resp.ProducerEpoch
		clear(r.sequence)
	}
	return resp.Err
}

// end ends the transaction, retrying while the coordinator is busy.
func (r *rawTxn) end(result transport.TxnResult) {
	retryBusy(r.t, func() error { return r.endOnce(result) })
}

// endAgain sends the last EndTxn again, as a client whose answer was lost
// does, until the coordinator answers: the answer must be a success with
// the producer id and epoch the first gave.
func (r *rawTxn) endAgain(result transport.TxnResult) {
	require.Equal(r.t, result, r.lastEnd.Result)
	retryBusy(r.t, func() error {
		resp, err := r.client.EndTxn(r.ctx, r.lastEnd)
		if err != nil {
			return err
		}
		if resp.Err == nil && r.version >= 5 {
			require.Equal(r.t, []any{r.producerID, r.producerEpoch}, []any{resp.ProducerID, resp.ProducerEpoch})
		}
		return resp.Err
	})
}

// offsets returns partition 0 of topic's log end offset and last stable
// offset, once no marker is on its way: the LSO read twice around a
// settled virtual clock.
func offsets(t *testing.T, ctx context.Context, c txnClient, topic string) (leo, lso int64) {
	synctest.Wait()
	list := func(iso kafka.IsolationLevel) int64 {
		resp, err := c.ListOffsets(ctx, &transport.ListOffsetsRequest{ReplicaID: kafka.ConsumerReplicaID, Isolation: iso,
			Topics: []transport.ListOffsetsTopic{{Topic: topic, Partitions: []transport.ListOffsetsPartition{
				{Partition: 0, CurrentLeaderEpoch: -1, Timestamp: kafka.LatestTimestamp}}}}})
		require.NoError(t, err)
		require.NoError(t, resp.Topics[0].Partitions[0].Err)
		return resp.Topics[0].Partitions[0].Offset
	}
	return list(kafka.ReadUncommitted), list(kafka.ReadCommitted)
}

// TestTxnLateProduceRefused is reliability test 21 (c) (KIP-890 part 1):
// a produce of transaction T1 arrives at the partition after T1 was
// aborted, and no transaction has started since. A client of transaction
// version 0 keeps its epoch, so only the partition leader's question to
// the coordinator stands between the late batch and a transaction that
// no coordinator will ever end: the leader refuses it with
// INVALID_TXN_STATE and the last stable offset keeps up with the log. The
// negative control turns verification off
// (transaction.partition.verification.enable=false): the late batch opens
// a hanging transaction and the LSO stops at it for good.
func TestTxnLateProduceRefused(t *testing.T) {
	for _, verify := range []bool{true, false} {
		t.Run(fmt.Sprintf("verification=%v", verify), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				_, ctx, c := txnBubbleNode(t, []string{"t"}, partlog.TransactionPartitionVerification(verify))
				r := newRawTxn(t, ctx, c, "tx", 3)
				r.add(t0)
				require.NoError(t, r.produce("t", r.batch("t1-a")))
				late := r.batch("t1-late") // held back
				r.end(transport.TxnAbort)
				leo, lso := offsets(t, ctx, c, "t")
				require.Equal(t, []int64{2, 2}, []int64{leo, lso}, "t1-a and the ABORT marker")

				err := r.produce("t", late)
				leo, lso = offsets(t, ctx, c, "t")
				if !verify {
					require.NoError(t, err, "without verification the late batch is taken")
					require.Equal(t, []int64{3, 2}, []int64{leo, lso}, "and its transaction hangs: the LSO stays before it")
					return
				}
				require.ErrorIs(t, err, kafka.ErrInvalidTxnState)
				require.Equal(t, []int64{2, 2}, []int64{leo, lso}, "nothing taken, nothing hanging")
				r.sequence[t0]-- // the partition never took the late batch's sequence

				// The producer goes on: its next transaction verifies and
				// commits, and the LSO follows the COMMIT marker.
				r.add(t0)
				require.NoError(t, r.produce("t", r.batch("t2-a")))
				r.end(transport.TxnCommit)
				leo, lso = offsets(t, ctx, c, "t")
				require.Equal(t, []int64{4, 4}, []int64{leo, lso})
			})
		})
	}
}

// TestTxnProduceToPartitionNotAdded: a transactional batch to a partition
// the producer never added to its transaction is refused with
// INVALID_TXN_STATE, and one sent without a transactional id with
// TRANSACTIONAL_ID_AUTHORIZATION_FAILED, as Kafka answers; the partition
// takes neither.
func TestTxnProduceToPartitionNotAdded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, ctx, c := txnBubbleNode(t, []string{"t", "u"})
		r := newRawTxn(t, ctx, c, "tx", 5)
		r.add(t0)
		u0 := kafka.TopicPartition{Topic: "u"}
		require.ErrorIs(t, r.produceTo(u0, r.batchFor(u0, "not added")), kafka.ErrInvalidTxnState)

		r.sequence[t0] = 0
		b := r.batch("anonymous")
		resp, err := c.Produce(ctx, &transport.ProduceRequest{Acks: kafka.AcksAll,
			Topics: []transport.ProduceTopic{{Topic: "t", Partitions: []transport.ProducePartition{{Partition: 0, Records: b}}}}})
		require.NoError(t, err)
		require.ErrorIs(t, resp.Topics[0].Partitions[0].Err, kafka.ErrTransactionalIDAuthorizationFailed)
		for _, topic := range []string{"t", "u"} {
			leo, _ := offsets(t, ctx, c, topic)
			require.Zero(t, leo, topic)
		}
	})
}

// TestTxnLateProduceAfterNextTransactionAdded is reliability test 21 (b)
// under transaction version 2: T1's held-back produce reaches the
// partition after T1 aborted and T2 added the same partition. The
// coordinator bumped the epoch when T1 ended, so the batch's epoch is
// stale: refused, while T2's own batch is taken and commits. (Under
// transaction version 0 the same late batch would pass verification and
// join T2 — the gap KIP-890 part 2 closes; txn's TestLateProduce shows the
// coordinator's side.)
func TestTxnLateProduceAfterNextTransactionAdded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, ctx, c := txnBubbleNode(t, []string{"t"})
		r := newRawTxn(t, ctx, c, "tx", 5)
		r.add(t0)
		require.NoError(t, r.produce("t", r.batch("t1-a")))
		late := r.batch("t1-late")
		r.end(transport.TxnAbort)
		r.add(t0) // T2
		err := r.produce("t", late)
		require.ErrorIs(t, err, kafka.ErrInvalidProducerEpoch, "T1's epoch is over")
		require.NoError(t, r.produce("t", r.batch("t2-a")))
		r.end(transport.TxnCommit)
		leo, lso := offsets(t, ctx, c, "t")
		require.Equal(t, []int64{4, 4}, []int64{leo, lso}, "t1-a, ABORT, t2-a, COMMIT")
	})
}

// TestTxnDuplicateEndTxnAndMarkers is reliability test 21 (d): an EndTxn
// sent twice gets the same outcome both times — the second finds the
// transaction complete and answers with the producer id and epoch the
// first did — and a WriteTxnMarkers delivered twice appends a marker that
// ends nothing: the committed record is read once, the LSO keeps up with
// the log, and the producer's next transaction goes on.
func TestTxnDuplicateEndTxnAndMarkers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n, ctx, c := txnBubbleNode(t, []string{"t"})
		r := newRawTxn(t, ctx, c, "tx", 5)
		r.add(t0)
		require.NoError(t, r.produce("t", r.batch("t1")))
		first := *r
		r.end(transport.TxnCommit)
		r.endAgain(transport.TxnCommit)
		leo, lso := offsets(t, ctx, c, "t")
		require.Equal(t, []int64{2, 2}, []int64{leo, lso}, "t1 and its COMMIT")

		// The coordinator's WriteTxnMarkers, delivered again.
		resp, err := c.WriteTxnMarkers(ctx, &transport.WriteTxnMarkersRequest{Markers: []transport.TxnMarker{{
			ProducerID: first.producerID, ProducerEpoch: r.producerEpoch, Result: transport.TxnCommit,
			Partitions: []kafka.TopicPartition{t0}}}})
		require.NoError(t, err)
		require.NoError(t, resp.Markers[0].Partitions[0].Err)
		leo, lso = offsets(t, ctx, c, "t")
		require.Equal(t, []int64{3, 3}, []int64{leo, lso}, "a marker that ends nothing leaves nothing unstable")

		r.add(t0)
		require.NoError(t, r.produce("t", r.batch("t2")))
		r.end(transport.TxnCommit)
		require.Equal(t, []string{"t1", "t2"}, txnReadAll(t, ctx, n, "t", 5, consumer.ReadCommitted))
	})
}
