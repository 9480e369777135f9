// Package segment is one segment of a partition's log: a file of Kafka
// record batches with its offset and time indexes.
//
// A segment is named by its base offset, the first offset it may hold,
// padded to 20 digits:
//
//	00000000000000000000.log        record batches, back to back
//	00000000000000000000.index      offset index (see package index)
//	00000000000000000000.timeindex  time index
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
// A Segment has one writer. Reads (Read, Locate, FindOffsetByTimestamp) may
// run concurrently with Append; they see the batches whose append has
// returned. Every other method needs exclusive access.
package segment
