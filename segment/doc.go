// Package segment is one segment of a partition's log: a file of Kafka
// record batches with its offset and time indexes.
//
// A segment is named by its base offset, the first offset it may hold,
// padded to 20 digits:
//
//	00000000000000000000.log        record batches, back to back
//	00000000000000000000.index      offset index (see package index)
//	00000000000000000000.timeindex  time index
//	00000000000000000000.txnindex   aborted transactions, once there is one
//
// The .log file holds Kafka RecordBatch v2 batches exactly as the wire
// carries them (see package record), so a fetch is a byte range of it:
//
//	+-------------+---------------+------------------------------------+
//	| base offset | batch length  | rest of header, records ...        |
//	| int64       | int32 = N     | N bytes, CRC-32C over attributes.. |
//	+-------------+---------------+------------------------------------+
//	^ position p                                     next batch at p+12+N
//
// Offsets increase from batch to batch; gaps are allowed (compaction leaves
// them). Every index.interval.bytes of log the segment adds an offset index
// entry (last offset of a batch -> position of the batch) and, when the
// segment's largest timestamp has grown, a time index entry.
//
// Recovery reads every batch from the start of the file, checking its length
// bounds, magic byte, CRC and offsets, cuts the file at the first byte that
// is not part of a valid batch, and rebuilds both indexes from what is left.
//
// # The transaction index
//
// The .txnindex lists the transactions whose ABORT marker the segment
// holds, in marker order, as Kafka's TransactionIndex does: a
// read_committed fetch gathers from it the aborted transactions its
// records overlap, so that the consumer skips their records. It has no
// header; each entry is 34 bytes, big-endian:
//
//	+---------+-------------+--------------+-------------+--------------------+
//	| version | producer id | first offset | last offset | last stable offset |
//	| int16 0 | int64       | int64        | int64       | int64              |
//	+---------+-------------+--------------+-------------+--------------------+
//	first offset: the transaction's first record (maybe in an earlier segment)
//	last offset: its ABORT marker, in this segment
//	last stable offset: the first unstable offset once the marker was written
//
// The file is created by the first entry and goes with its segment:
// deleted, renamed and truncated with it. Its entries come from the
// producer state, which the segment does not know, so recovery does not
// rebuild it: opening and recovering check it (every entry's version,
// order, and offsets inside the segment) and report damage with
// TxnIndexErr; the partition rebuilds the entries from the log (see
// package partition). A reader never trusts bytes past the first entry
// that fails the check.
//
// A Segment has one writer. Reads (Read, Locate, FindOffsetByTimestamp,
// CollectAbortedTxns, AbortedTxns) may run concurrently with Append and
// AppendAbortedTxn; they see the batches and entries whose append has
// returned. Every other method needs exclusive access.
package segment
