// Package partlogtest is for tests of programs that embed partlog, and for
// partlog's own: it runs a Node's background work now rather than on its
// timers, crashes a node, and reads a replica's log directly. None of it
// is on the Node's API, which is what a program calls.
package partlogtest

import (
	"context"

	"github.com/partlog/partlog"
	"github.com/partlog/partlog/internal/nodehooks"
	"github.com/partlog/partlog/log"
)

// CleanNow runs one pass of n's log cleaner over every replica of the
// topics whose cleanup.policy includes compact, and returns when it is
// done: each log dirty enough (min.cleanable.dirty.ratio) is compacted up
// to its high watermark, as log.Log.Clean describes, and the cleaner
// checkpoint is written — what the node does every
// partlog.LogCleanerInterval.
func CleanNow(ctx context.Context, n *partlog.Node) error { return nodehooks.Of(n).CleanNow(ctx) }

// EnforceRetention runs retention over every replica of n now, as the node
// does every partlog.RetentionCheckInterval.
func EnforceRetention(n *partlog.Node) error { return nodehooks.Of(n).EnforceRetention() }

// ExpireProducers forgets, in every replica of n, the idempotent producers
// whose last batch is partlog.ProducerIDExpiration or more older than the
// node's clock, as the node does every
// partlog.ProducerIDExpirationCheckInterval.
func ExpireProducers(n *partlog.Node) error { return nodehooks.Of(n).ExpireProducers() }

// TickShares runs n's share-group housekeeping now, as the node does
// every 100 ms: acquisition locks due by the node's clock expire, and
// share sessions unused for too long are evicted, what their members held
// given back.
func TickShares(n *partlog.Node) { nodehooks.Of(n).TickShares() }

// SyncMetadata fetches the cluster metadata from the controller now,
// rather than at n's next heartbeat, and applies it: when it returns, n
// hosts, leads and follows what the controller had decided when it
// answered. Other nodes learn of changes at their own pace (see
// partlog.HeartbeatInterval).
func SyncMetadata(ctx context.Context, n *partlog.Node) error {
	return nodehooks.Of(n).SyncMetadata(ctx)
}

// Halt closes n without telling its cluster first, as a crash would: the
// controller moves its partitions' leadership only once its heartbeats
// have stopped for the session timeout.
func Halt(n *partlog.Node) error { return nodehooks.Of(n).Halt() }

// TxnStep is a step of a transaction coordinator that a fault can fail:
// an append to __transaction_state (Append holds the transactions it
// writes) or a marker (IsMarker, to Marker).
type TxnStep = nodehooks.TxnStep

// FailTransactionSteps offers each step n's transaction coordinator is
// about to take to fault first: a step fault fails does not happen, as if
// the node had crashed just before it — the append fails, the marker is
// not written — and the coordinator sees the error. With a fault that
// fails every step from some point on, then Halt, a test crashes a
// coordinator between any two of its steps. nil removes the fault.
func FailTransactionSteps(n *partlog.Node, fault func(TxnStep) error) {
	nodehooks.Of(n).FailTxnSteps(fault)
}

// Log returns the log of a replica n hosts, to read it directly. The
// errors are those of a fetch: kafka.ErrUnknownTopicOrPartition,
// ErrNotLeaderOrFollower, ErrKafkaStorage. The log is n's: it closes with
// n.
func Log(n *partlog.Node, topic string, partition int32) (*log.Log, error) {
	return nodehooks.Of(n).Log(topic, partition)
}
