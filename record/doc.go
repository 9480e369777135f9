// Package record reads and writes Kafka's RecordBatch format, magic 2, byte
// for byte as Kafka does: what partlog keeps in its segment files and sends
// over the wire, so that a fetch is a byte range of a file.
//
// # Batch
//
// A batch is a 61-byte header followed by its records, compressed as a
// whole when the attributes name a codec. Integers are big-endian. The
// CRC is a CRC-32C (Castagnoli) of every byte from the attributes to the
// end of the batch, so the base offset and partition leader epoch, which
// the log rewrites when it appends the batch, are outside it.
//
//	offset  size
//	     0     8  +-------------------------------+
//	              | BaseOffset            int64   |  offset of the first record
//	     8     4  | BatchLength           int32   |  bytes after this field
//	              +-------------------------------+  <- LogOverhead (12)
//	    12     4  | PartitionLeaderEpoch  int32   |
//	    16     1  | Magic                 int8    |  2
//	    17     4  | CRC                   uint32  |  CRC-32C of 21..end
//	              +-------------------------------+  <- CRC covers from here
//	    21     2  | Attributes            int16   |  codec, timestamp type,
//	              |                               |  transactional, control,
//	              |                               |  delete horizon
//	    23     4  | LastOffsetDelta       int32   |
//	    27     8  | BaseTimestamp         int64   |  "firstTimestamp", ms
//	    35     8  | MaxTimestamp          int64   |  ms
//	    43     8  | ProducerID            int64   |  -1: none
//	    51     2  | ProducerEpoch         int16   |  -1: none
//	    53     4  | BaseSequence          int32   |  "firstSequence", -1: none
//	    57     4  | NumRecords            int32   |
//	              +-------------------------------+  <- HeaderSize (61)
//	    61     *  | Records                       |  NumRecords records, or
//	              |                               |  their compressed form
//	              +-------------------------------+
//
// Attributes bits: 0-2 compression (0 none, 1 gzip, 2 snappy, 3 lz4,
// 4 zstd), 3 timestamp type (1 LogAppendTime), 4 transactional, 5 control,
// 6 has delete horizon.
//
// # Record
//
// A record is a run of varints — zigzag-encoded base-128 integers, int32
// in at most 5 bytes (varint) and int64 in at most 10 (varlong) — and byte
// strings prefixed by a varint length, where -1 means null:
//
//	+-------------------------------+
//	| Length          varint        |  bytes of the record after this field
//	+-------------------------------+
//	| Attributes      int8          |  unused, 0
//	| TimestampDelta  varlong       |  Timestamp - BaseTimestamp
//	| OffsetDelta     varint        |  Offset - BaseOffset
//	| KeyLength       varint        |  -1: null key
//	| Key             KeyLength bytes
//	| ValueLength     varint        |  -1: null value (a tombstone)
//	| Value           ValueLength bytes
//	| HeaderCount     varint        |
//	| Headers         HeaderCount times:
//	|   +---------------------------+
//	|   | KeyLength   varint        |  >= 0: header keys are never null
//	|   | Key         bytes (UTF-8) |
//	|   | ValueLength varint        |  -1: null value
//	|   | Value       bytes         |
//	|   +---------------------------+
//	+-------------------------------+
//
// A control batch (transaction marker) holds one record whose key is
// version int16 (0) and type int16 (0 ABORT, 1 COMMIT), and whose value is
// version int16 (0) and coordinator epoch int32.
//
// # Naming
//
// Names are Kafka's (DefaultRecordBatch, DefaultRecord): BaseOffset,
// BatchLength, PartitionLeaderEpoch, LastOffsetDelta, BaseTimestamp,
// MaxTimestamp, ProducerID, ProducerEpoch, BaseSequence; a field's byte
// position is its name with Offset appended (CRCOffset). Kafka's protocol
// docs call BaseTimestamp firstTimestamp and BaseSequence firstSequence.
//
// # Use
//
// A producer fills a Builder and calls Build (or AppendTo, to reuse a
// buffer). The log checks an incoming batch with Validate, which reads only
// the header and the CRC, and assigns offsets with SetBaseOffset and
// SetPartitionLeaderEpoch, which leave the CRC valid. A reader that needs
// the records calls Decode. Nothing here does I/O, and only the codec pools
// are shared between goroutines.
//
// Decoding never panics, and on hostile input never allocates more than
// the input's size allows, except that compressed records may decompress
// to up to MaxUncompressedBytes.
package record
