// Package nodehooks carries what package partlogtest may do to a
// partlog.Node — run its background work now, crash it, read a replica's
// log — without those calls on the Node's API.
package nodehooks

import (
	"context"

	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/log"
	"github.com/partlog/partlog/txn"
)

// Node is a partlog.Node's test hooks.
type Node interface {
	CleanNow(ctx context.Context) error
	EnforceRetention() error
	ExpireProducers() error
	TickShares()
	SyncMetadata(ctx context.Context) error
	Halt() error
	Log(topic string, partition int32) (*log.Log, error)
	FailTxnSteps(fault func(TxnStep) error)
}

// TxnStep is a step a transaction coordinator takes that others see: an
// append to __transaction_state, or a marker written to a partition.
type TxnStep struct {
	// Append holds, for an append, the transactions its records write.
	Append []txn.Value
	// Marker is, for a marker, the partition it goes to.
	Marker kafka.TopicPartition
	// IsMarker says the step is a marker.
	IsMarker bool
}

// Of returns the hooks of n, a *partlog.Node. Package partlog sets it.
var Of func(n any) Node

// OfBroker returns the hooks of b, a *broker.Broker, which a partlog.Node
// runs. Package broker sets it.
var OfBroker func(b any) Node
