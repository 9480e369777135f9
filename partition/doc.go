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
package partition
