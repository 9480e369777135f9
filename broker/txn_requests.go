package broker

import (
	"cmp"
	"context"

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
