package broker

import (
	"context"

	"github.com/partlog/partlog/transport"
)

// The Broker hands out producer ids to idempotent producers.
var _ transport.ProducerIDClient = (*Broker)(nil)

// InitProducerID hands out a new producer id with epoch 0, from a block
// the controller reserved for this node, for an idempotent producer (an
// empty TransactionalID). A failure to persist the id block is
// kafka.ErrKafkaStorage, and the id space running out (after 2^63 ids)
// ErrUnknownServerError. For a transactional id, the id's transaction
// coordinator answers (kafka.ErrNotCoordinator on another node).
func (n *Broker) InitProducerID(ctx context.Context, req *transport.InitProducerIDRequest) (*transport.InitProducerIDResponse, error) {
	if err := n.begin(); err != nil {
		return nil, err
	}
	defer n.end()
	resp := &transport.InitProducerIDResponse{ProducerID: -1, ProducerEpoch: -1}
	if req.TransactionalID != "" {
		return n.initTransactionalProducer(ctx, req), nil
	}
	id, err := n.member.producerID(ctx)
	if err != nil {
		if ctx.Err() == nil { // not the caller's leaving
			n.logger.Error("allocating a producer id failed", "err", err)
		}
		resp.Err = err
		return resp, nil
	}
	resp.ProducerID, resp.ProducerEpoch = id, 0
	return resp, nil
}

// expireProducersNow forgets expired producers now
// (partlogtest.ExpireProducers).
func (n *Broker) expireProducersNow() error {
	if err := n.begin(); err != nil {
		return err
	}
	defer n.end()
	n.removeExpiredProducers()
	return nil
}

// removeExpiredProducers forgets, in every partition, the idempotent
// producers silent for longer than ProducerIDExpiration.
func (n *Broker) removeExpiredProducers() {
	now := n.opts.Now()
	for _, p := range n.member.partitions() {
		if k := p.RemoveExpiredProducers(now); k > 0 {
			n.logger.Info("forgot expired producers", "partition", partitionName(p), "producers", k)
		}
	}
}
