package broker

import (
	"cmp"
	"context"
	"fmt"
	"time"

	"github.com/partlog/partlog/group"
	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/record"
	"github.com/partlog/partlog/transport"
	"github.com/partlog/partlog/txn"
)

// initTransactionalProducer answers InitProducerId for a transactional
// id: the coordinator of the id binds it to a producer id and a new epoch,
// fencing older instances and aborting their open transaction.
func (n *Broker) initTransactionalProducer(ctx context.Context, req *transport.InitProducerIDRequest) *transport.InitProducerIDResponse {
	resp := &transport.InitProducerIDResponse{ProducerID: -1, ProducerEpoch: -1}
	h := n.txns
	if _, err := h.state.partitionOf(ctx, req.TransactionalID, txnStatePartitions, txnStateConfigs()); err != nil {
		resp.Err = err
		return resp
	}
	a, err := h.request(ctx, func(id uint64, nowMs int64) {
		h.c.InitProducerID(txn.InitProducerIDRequest{ID: id, Version: cmp.Or(req.Version, initProducerIDVersion),
			TransactionalID: req.TransactionalID, TransactionTimeoutMs: int32(req.TransactionTimeout.Milliseconds()),
			ProducerID: req.ProducerID, ProducerEpoch: req.ProducerEpoch}, nowMs)
	})
	if err != nil {
		resp.Err = err
		return resp
	}
	resp.Err, resp.ProducerID, resp.ProducerEpoch = a.Err, a.ProducerID, a.ProducerEpoch
	return resp
}

// initProducerIDVersion is the InitProducerId version the coordinator is
// told of for a request that names none (a caller in process): the
// latest, which knows PRODUCER_FENCED and KIP-360's resumption.
const initProducerIDVersion = 5

// writeMarker writes mw's marker to partition tp: on the node itself when
// it leads tp. A partition another node leads is answered
// kafka.ErrNotLeaderOrFollower until markers travel between nodes
// (WriteTxnMarkers), and the coordinator retries it.
func (n *Broker) writeMarker(mw txn.MarkerWrite, tp kafka.TopicPartition) error {
	md, _ := n.member.metadata()
	t, ok := md.Topics[tp.Topic]
	if !ok || tp.Partition < 0 || int(tp.Partition) >= len(t.Partitions) {
		return fmt.Errorf("%w: %s", txn.ErrPartitionDeleted, tp)
	}
	if leader := t.Partitions[tp.Partition].Leader; leader != n.meta.NodeID {
		return fmt.Errorf("%w: %s is led by node %d", kafka.ErrNotLeaderOrFollower, tp, leader)
	}
	ctx, cancel := context.WithTimeout(context.Background(), markerTimeout)
	defer cancel()
	return n.appendMarker(ctx, tp, mw.ProducerID, mw.ProducerEpoch, mw.CoordinatorEpoch, mw.Result == txn.Commit)
}

// markerTimeout bounds the writing of one marker.
const markerTimeout = 10 * time.Second

// appendMarker appends a transaction's COMMIT or ABORT marker to tp,
// which this node must lead, as an acks=all write; a marker that reaches
// a partition of __consumer_offsets also ends the transaction's pending
// offsets there.
func (n *Broker) appendMarker(ctx context.Context, tp kafka.TopicPartition, producerID int64, producerEpoch int16, coordinatorEpoch int32, commit bool) error {
	h, err := n.leaderReplica(tp.Topic, tp.Partition)
	if err != nil {
		return err
	}
	typ := record.ControlAbort
	if commit {
		typ = record.ControlCommit
	}
	batch := record.ControlBatch(typ, producerID, producerEpoch, coordinatorEpoch, n.opts.Now().UnixMilli())
	if _, _, err := n.appendReplicated(ctx, h, batch, kafka.AcksAll, markerTimeout); err != nil {
		return err
	}
	if tp.Topic == group.OffsetsTopic {
		if c := n.groups.loadedCoordinator(); c != nil {
			c.CompleteTxn(tp.Partition, producerID, commit)
		}
	}
	return nil
}

// findTxnCoordinator answers FindCoordinator for a transactional id: the
// leader of its partition of __transaction_state, which is created first
// if need be.
func (n *Broker) findTxnCoordinator(ctx context.Context, key string) *transport.FindCoordinatorResponse {
	resp := &transport.FindCoordinatorResponse{NodeID: -1, Port: -1}
	id, host, port, err := n.txns.state.coordinatorNode(ctx, key, txnStatePartitions, txnStateConfigs())
	if err != nil {
		resp.Err = err
		return resp
	}
	resp.NodeID, resp.Host, resp.Port = id, host, port
	return resp
}
