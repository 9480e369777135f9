// Package partition is one replica of a partition: its log, and the state
// Kafka keeps beside it — the high watermark (the offset below which records
// are committed and readable), the last stable offset (below which every
// transaction is decided), the leader epoch stamped on every batch the
// leader appends, and the in-sync replicas.
//
// This package serves a partition led by its own node with the node as the
// only in-sync replica, so the high watermark follows the log end offset —
// or, when the log syncs before acknowledging, the offset below which the
// log is durable, so that a consumer never reads a record a crash could take
// back. Replication (package replica) will move the high watermark to the
// smallest log end offset among the in-sync replicas.
//
// Readers wait for the high watermark or the last stable offset to move
// with Notify, which wakes them when either advances: long-poll fetches
// block on it instead of polling.
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
//
// # Transactions
//
// The producer state also follows each producer's transaction (KIP-98):
// a transactional batch opens one at its first offset when none is open,
// and a COMMIT or ABORT marker — a control batch a transaction
// coordinator has written, AppendMarker on a leader, record.ControlBatch
// proposed through a replica — closes it. A marker at an epoch older than
// the producer's is refused with kafka.ErrInvalidProducerEpoch, one from a
// coordinator epoch older than the producer's last marker's with
// kafka.ErrTransactionCoordinatorFenced; under transaction version 2 a
// marker's epoch is one above its transaction's and becomes the
// producer's, which fences the transaction's late writes. A write outside
// a producer's open transaction is kafka.ErrInvalidTxnState. Before a
// transactional batch opens a transaction, the leader asks the
// TxnVerifier, if it has one, whether the coordinator agrees (KIP-890
// part 1).
//
// The first unstable offset is the first offset of the oldest transaction
// still open, or completed but with its marker not yet below the high
// watermark; the last stable offset (LastStableOffset) is the lower of it
// and the high watermark. A read_committed fetch (FetchIsolated) stops
// there and answers the aborted transactions its records overlap, which
// the consumer skips. They come from the segments' .txnindex files (see
// package segment): as an ABORT marker that closes a transaction is
// written, the producer state gives the log its entry — producer, first
// offset, the marker's offset, and the first unstable offset once the
// transaction ended — for the segment the marker lands in, in the same
// step under the log's append lock, on the leader and on every follower.
//
//	producer 1:  [data 0-1]           [data 4]        [ABORT 6]
//	producer 2:            [data 2-3]                          [COMMIT 7]
//	LSO: 0 until the high watermark passes 6, then 2 (producer 2's is
//	     open); 8 once it passes 7
//	.txnindex: {producer 1, first 0, last 6, last stable 2}
//
// The entries are rebuilt as the producer state is: every load rewrites
// them from the snapshot it starts at, and a snapshot is written only once
// the entries below its offset are durable. The first load after the log
// opened starts no later than the first segment Open recovered or found
// with a damaged .txnindex, deleting the snapshots above it first, as
// Kafka's log loader rebuilds the transaction index of the segments it
// recovers. Truncation removes the entries with their markers and reloads
// the state; the log cleaner keeps transactions' batches and markers
// whole and carries the entries into the segments it writes; retention
// (DeleteRetained) keeps every segment from the last stable offset on.
//
// Snapshots are version 2, with each producer's coordinator epoch and
// open transaction; version 1 files, written before transactions, load
// with neither.
package partition
