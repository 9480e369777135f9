package broker

import (
	"context"

	"github.com/partlog/partlog/internal/nodehooks"
	"github.com/partlog/partlog/log"
)

// nodeHooks gives package partlogtest what it may do to a Broker.
type nodeHooks struct{ n *Broker }

func init() {
	nodehooks.OfBroker = func(b any) nodehooks.Node { return nodeHooks{b.(*Broker)} }
}

func (h nodeHooks) CleanNow(ctx context.Context) error     { return h.n.cleanNow(ctx) }
func (h nodeHooks) EnforceRetention() error                { return h.n.enforceRetentionNow() }
func (h nodeHooks) ExpireProducers() error                 { return h.n.expireProducersNow() }
func (h nodeHooks) TickShares()                            { h.n.shares.tick() }
func (h nodeHooks) SyncMetadata(ctx context.Context) error { return h.n.syncMetadata(ctx) }
func (h nodeHooks) Halt() error                            { return h.n.halt() }
func (h nodeHooks) FailTxnSteps(fault func(nodehooks.TxnStep) error) {
	if fault == nil {
		h.n.txnFault.Store(nil)
		return
	}
	h.n.txnFault.Store(&fault)
}
func (h nodeHooks) Log(topic string, partition int32) (*log.Log, error) {
	return h.n.partitionLog(topic, partition)
}

// txnStepFault returns the error a test's fault gives step, nil without
// one (see partlogtest.FailTransactionSteps).
func (n *Broker) txnStepFault(step func() nodehooks.TxnStep) error {
	f := n.txnFault.Load()
	if f == nil {
		return nil
	}
	return (*f)(step())
}
