// Package partition is one replica of a partition: its log, and the state
// Kafka keeps beside it — the high watermark (the offset below which records
// are committed and readable), the leader epoch stamped on every batch the
// leader appends, and the in-sync replicas.
//
// This package serves a partition led by its own node with the node as the
// only in-sync replica, so the high watermark follows the log end offset —
// or, when the log syncs before acknowledging, the offset below which the
// log is durable, so that a consumer never reads a record a crash could take
// back. Replication (package replica) will move the high watermark to the
// smallest log end offset among the in-sync replicas.
//
// Readers wait for the high watermark to move with Notify, which wakes them
// when it advances: long-poll fetches block on it instead of polling.
//
// The leader also keeps the idempotent producers' state (KIP-98): per
// producer id its epoch and its last BatchesPerProducer batches. Append
// checks each batch of a producer against it under the log's append lock
// (log.AppendChecked), so the check and the append are one step: a retry of
// a batch the log holds is answered with its original offsets
// (AppendResult.Duplicate) and not appended, a gap is
// kafka.ErrOutOfOrderSequence, an older epoch
// kafka.ErrInvalidProducerEpoch. The state lives in the batch headers,
// so it is rebuilt from the log — from the newest producer state snapshot
// (%020d.snapshot, written on roll and on Close) and the batches above it.
// A follower records the producers of what it replicates
// (AppendAsFollower), so a new leader still recognises retries first sent
// to the old one.
package partition
