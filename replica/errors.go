package replica

import "errors"

// Errors of the replica state machine. Protocol errors a peer or a
// producer sees are transport's Kafka errors (kafka.ErrNotEnoughReplicas,
// kafka.ErrNotLeaderOrFollower, kafka.ErrFencedLeaderEpoch, ...),
// wrapped with the details.
var (
	// ErrStaleLeaderEpoch means a LeaderAndISR command is older than what
	// the replica already follows: a lower leader epoch, or the same epoch
	// with a partition epoch not above the current one.
	ErrStaleLeaderEpoch = errors.New("replica: stale leader epoch")
	// ErrNotAssigned means a LeaderAndISR command does not list this
	// replica among the partition's replicas, or names a leader or ISR
	// member outside them.
	ErrNotAssigned = errors.New("replica: replica not assigned to the partition")
	// ErrNoReady means Advance was called without a Ready to acknowledge.
	ErrNoReady = errors.New("replica: Advance without Ready")
	// ErrClosed means a Node was closed, or stopped on a log write failure
	// (Node.Err says which).
	ErrClosed = errors.New("replica: node closed")
	// ErrCorruptMessage means bytes given to DecodeMessages are not what
	// AppendMessages writes: truncated, with bytes after the last message,
	// an unknown version, or a field out of range.
	ErrCorruptMessage = errors.New("replica: corrupt message encoding")
)
