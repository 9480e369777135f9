// Package log is one partition's log: a directory of segments, named like
// Kafka's (<topic>-<partition>), that takes batches at its end and serves
// byte ranges of them by offset.
//
//	study-0/
//	    00000000000000000000.log        sealed segments ...
//	    00000000000000000000.index
//	    00000000000000000000.timeindex
//	    00000000000000052301.log        ... and the active one, last
//	    00000000000000052301.index
//	    00000000000000052301.timeindex
//	    00000000000000052301.txnindex   aborted transactions, when it has some
//	    leader-epoch-checkpoint
//
// # Offsets
//
// The log start offset is the first offset a reader may ask for; the log end
// offset (LEO) is the offset the next record gets. Append assigns offsets by
// rewriting a batch's base offset in its header (the CRC does not cover it);
// AppendAsFollower takes batches whose offsets a leader already assigned.
//
// # Durability
//
// Append writes to the page cache. A batch is durable once a flush covers
// it: when FlushMessages records have accumulated, every FlushInterval, on
// WaitDurable, or — with SyncBeforeAck — before Append returns. Appenders
// waiting together share one fdatasync (group commit). The offset below which
// everything is durable is the recovery point.
//
// A failed write or sync is fail-stop: the waiting appenders get ErrStorage,
// nothing is acknowledged, and the log refuses appends until it is reopened,
// when recovery keeps what is valid on disk. A full disk is not fatal: the
// append fails with ErrDiskFull, nothing of it is kept, and appends succeed
// again once there is room.
//
// # Recovery
//
// Open after a clean shutdown reads no segment through; after a crash it
// scans every batch of the segments from the recovery point on, cuts the log
// at the first invalid byte, and rebuilds their indexes and the leader epoch
// cache. A Dir remembers recovery points and clean shutdowns for the logs
// under one directory, as Kafka's log directory does.
//
// # Transactions
//
// The log keeps each segment's .txnindex (see package segment) without
// knowing transactions: an AppendCheck that is also a TxnIndexer — the
// partition's producer state — names the aborted transaction each ABORT
// marker completes as the marker is written, and the log adds the entry
// to the marker's segment before the append is published
// (AppendChecked, AppendAsFollowerIndexed). CollectAbortedTxns answers a
// read_committed fetch from them. Truncation, retention, the cleaner's
// swaps and quarantine carry the .txnindex with its segment. Recovery
// checks it but cannot rebuild it, which takes the producer state:
// LoadReport names the segments the partition must rebuild the entries of
// (RewriteAbortedTxns).
//
// # Compaction
//
// A log whose CleanupPolicy includes compact is compacted by Clean (or
// CleanWithin, with the bounds its partition knows), as Kafka's log
// cleaner does it: the latest record of each key stays at its offset and
// older ones go; tombstones go DeleteRetentionMs after the clean that
// first kept them; aborted transactions' records go, and supersede none;
// a transaction marker goes DeleteRetentionMs after the clean that first
// found its transaction empty; each producer's last batch stays. Nothing
// at or above the bound the caller passes — the last stable offset — is
// cleaned. A cleaned segment replaces the ones it came from crash-safely
// through ".cleaned", ".swap" and ".deleted" files, which Open finishes or
// rolls back. A Dir keeps each log's first dirty offset in Kafka's
// cleaner-offset-checkpoint.
//
// # Concurrency
//
// A Log is safe for concurrent use. Appends are serialised; reads run in
// parallel with them and with each other, and see every batch whose append
// has returned.
package log
