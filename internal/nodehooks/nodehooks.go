// Package nodehooks carries what package partlogtest may do to a
// partlog.Node — run its background work now, crash it, read a replica's
// log — without those calls on the Node's API.
package nodehooks

import (
	"context"

	"github.com/partlog/partlog/log"
)

// Node is a partlog.Node's test hooks.
type Node interface {
	CleanNow(ctx context.Context) error
	EnforceRetention() error
	ExpireProducers() error
	SyncMetadata(ctx context.Context) error
	Halt() error
	Log(topic string, partition int32) (*log.Log, error)
}

// Of returns the hooks of n, a *partlog.Node. Package partlog sets it.
var Of func(n any) Node

// OfBroker returns the hooks of b, a *broker.Broker, which a partlog.Node
// runs. Package broker sets it.
var OfBroker func(b any) Node
