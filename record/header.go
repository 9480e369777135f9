package record

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"strings"
)

// Sizes of the v2 batch format.
const (
	// MagicV2 is the magic byte of the RecordBatch format, the only one
	// this package reads and writes.
	MagicV2 = 2

	// LogOverhead is the number of bytes before those that BatchLength
	// counts: the base offset (int64) and the batch length (int32).
	LogOverhead = 12

	// HeaderSize is the size of the whole v2 batch header. Records start
	// here.
	HeaderSize = 61
)

// Byte positions of the header's fields, counted from the batch's first
// byte, named as Kafka's DefaultRecordBatch names them. Multi-byte fields
// are big-endian.
const (
	BaseOffsetOffset           = 0          // int64
	BatchLengthOffset          = 8          // int32
	PartitionLeaderEpochOffset = 12         // int32
	MagicOffset                = 16         // int8
	CRCOffset                  = 17         // uint32, CRC-32C of AttributesOffset..end
	AttributesOffset           = 21         // int16
	LastOffsetDeltaOffset      = 23         // int32
	BaseTimestampOffset        = 27         // int64
	MaxTimestampOffset         = 35         // int64
	ProducerIDOffset           = 43         // int64
	ProducerEpochOffset        = 51         // int16
	BaseSequenceOffset         = 53         // int32
	NumRecordsOffset           = 57         // int32
	RecordsOffset              = HeaderSize // the first record, or the compressed records
)

const (
	// minBatchLength is the BatchLength of a batch with no records bytes.
	minBatchLength = HeaderSize - LogOverhead

	// minRecordSize is the size of the smallest record: a one-byte length,
	// attributes, one-byte timestamp and offset deltas, null key and value,
	// and no headers.
	minRecordSize = 7
)

// Kafka's values for "none" in header fields (RecordBatch.NO_PRODUCER_ID and
// friends).
const (
	// NoProducerID is the ProducerID of a batch from a producer that is
	// neither idempotent nor transactional.
	NoProducerID = -1
	// NoProducerEpoch is the ProducerEpoch that goes with NoProducerID.
	NoProducerEpoch = -1
	// NoSequence is the BaseSequence that goes with NoProducerID.
	NoSequence = -1
	// NoPartitionLeaderEpoch is the PartitionLeaderEpoch of a batch that no
	// leader has stamped yet, as producers send it.
	NoPartitionLeaderEpoch = -1
	// NoTimestamp is the timestamp of a batch without records.
	NoTimestamp = -1
)

// castagnoli is the CRC-32C table; hash/crc32 uses the CPU's instruction
// for it where there is one.
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// checksum returns the CRC-32C that the CRC field of batch b must hold: of
// every byte from the attributes to the end.
func checksum(b []byte) uint32 {
	return crc32.Checksum(b[AttributesOffset:], castagnoli)
}

// Compression is a batch's compression codec, the low three bits of its
// attributes.
type Compression int8

// The compression codecs, with Kafka's numbers.
const (
	None   Compression = 0
	Gzip   Compression = 1
	Snappy Compression = 2
	LZ4    Compression = 3
	Zstd   Compression = 4
)

// String returns the codec's name as Kafka's compression.type spells it:
// "none", "gzip", "snappy", "lz4" or "zstd".
func (c Compression) String() string {
	switch c {
	case None:
		return "none"
	case Gzip:
		return "gzip"
	case Snappy:
		return "snappy"
	case LZ4:
		return "lz4"
	case Zstd:
		return "zstd"
	}
	return fmt.Sprintf("Compression(%d)", int8(c))
}

// valid reports whether c is a codec this package can read and write.
func (c Compression) valid() bool { return c >= None && c <= Zstd }

// TimestampType says where record timestamps come from: bit 3 of a
// batch's attributes.
type TimestampType int8

const (
	// CreateTime timestamps were set by the producer.
	CreateTime TimestampType = 0
	// LogAppendTime timestamps were set by the broker when it appended the
	// batch. The batch's MaxTimestamp holds that time, and every record
	// reads as having it.
	LogAppendTime TimestampType = 1
)

// String returns "CreateTime" or "LogAppendTime".
func (t TimestampType) String() string {
	switch t {
	case CreateTime:
		return "CreateTime"
	case LogAppendTime:
		return "LogAppendTime"
	}
	return fmt.Sprintf("TimestampType(%d)", int8(t))
}

// Attributes is a batch's attributes field: a bit set describing the
// records.
//
//	bits 0-2  compression codec
//	bit  3    timestamp type (0 CreateTime, 1 LogAppendTime)
//	bit  4    transactional
//	bit  5    control batch
//	bit  6    has delete horizon (BaseTimestamp is the delete horizon)
//	bits 7-15 unused, zero
type Attributes int16

const (
	compressionMask   Attributes = 0x07
	timestampTypeFlag Attributes = 0x08
	transactionalFlag Attributes = 0x10
	controlFlag       Attributes = 0x20
	deleteHorizonFlag Attributes = 0x40
)

// Compression returns the codec of the batch's records.
func (a Attributes) Compression() Compression { return Compression(a & compressionMask) }

// TimestampType returns where the batch's record timestamps come from.
func (a Attributes) TimestampType() TimestampType {
	if a&timestampTypeFlag != 0 {
		return LogAppendTime
	}
	return CreateTime
}

// IsTransactional reports whether the batch was written inside a
// transaction: it stays invisible to read_committed consumers until a
// COMMIT marker for its producer follows it.
func (a Attributes) IsTransactional() bool { return a&transactionalFlag != 0 }

// IsControl reports whether the batch holds control records (transaction
// markers) rather than data.
func (a Attributes) IsControl() bool { return a&controlFlag != 0 }

// HasDeleteHorizon reports whether the log cleaner has set the batch's
// BaseTimestamp to the time after which its tombstones and markers may be
// removed (KIP-534).
func (a Attributes) HasDeleteHorizon() bool { return a&deleteHorizonFlag != 0 }

// String lists the attributes by name, for example
// "compression=zstd,timestampType=CreateTime,transactional".
func (a Attributes) String() string {
	var s strings.Builder
	s.WriteString("compression=")
	s.WriteString(a.Compression().String())
	s.WriteString(",timestampType=")
	s.WriteString(a.TimestampType().String())
	if a.IsTransactional() {
		s.WriteString(",transactional")
	}
	if a.IsControl() {
		s.WriteString(",control")
	}
	if a.HasDeleteHorizon() {
		s.WriteString(",deleteHorizon")
	}
	return s.String()
}

// attributesOf returns the attributes that describe a batch built with
// opts.
func attributesOf(opts *BatchOptions) Attributes {
	a := Attributes(opts.Compression) & compressionMask
	if opts.TimestampType == LogAppendTime {
		a |= timestampTypeFlag
	}
	if opts.Transactional {
		a |= transactionalFlag
	}
	if opts.Control {
		a |= controlFlag
	}
	if opts.DeleteHorizon != 0 {
		a |= deleteHorizonFlag
	}
	return a
}

// Header is a batch's fixed 61-byte header, decoded. Field names follow
// Kafka's DefaultRecordBatch; Kafka's protocol docs call BaseTimestamp
// "firstTimestamp" and BaseSequence "firstSequence".
type Header struct {
	// BaseOffset is the offset of the batch's first record. A producer
	// sends 0; the log assigns the real one by rewriting it in place.
	BaseOffset int64
	// BatchLength is the number of bytes after this field: the batch's
	// size less LogOverhead.
	BatchLength int32
	// PartitionLeaderEpoch is the leader epoch of the leader that appended
	// the batch (NoPartitionLeaderEpoch from a producer).
	PartitionLeaderEpoch int32
	// Magic is the format version, MagicV2.
	Magic int8
	// CRC is the CRC-32C (Castagnoli) of the bytes from Attributes to the
	// end of the batch. It does not cover BaseOffset, BatchLength,
	// PartitionLeaderEpoch or Magic.
	CRC uint32
	// Attributes holds the compression codec, timestamp type and the
	// transactional, control and delete-horizon flags.
	Attributes Attributes
	// LastOffsetDelta is the last record's offset less BaseOffset. The
	// log cleaner keeps it when it removes records, so it may exceed the
	// last remaining record's delta.
	LastOffsetDelta int32
	// BaseTimestamp is the first record's timestamp in milliseconds since
	// the epoch, which record timestamp deltas are relative to, or the
	// delete horizon when Attributes.HasDeleteHorizon().
	BaseTimestamp int64
	// MaxTimestamp is the greatest record timestamp (ms), or, with
	// LogAppendTime, the time the broker appended the batch.
	MaxTimestamp int64
	// ProducerID is the idempotent or transactional producer's ID, or
	// NoProducerID.
	ProducerID int64
	// ProducerEpoch is the producer's epoch, or NoProducerEpoch.
	ProducerEpoch int16
	// BaseSequence is the sequence number of the first record; record i
	// has BaseSequence+i. NoSequence without a producer ID.
	BaseSequence int32
	// NumRecords is the number of records in the batch.
	NumRecords int32
}

// Size returns the number of bytes of the whole batch: LogOverhead plus
// BatchLength.
func (h Header) Size() int { return LogOverhead + int(h.BatchLength) }

// LastOffset returns the offset of the batch's last record: BaseOffset plus
// LastOffsetDelta.
func (h Header) LastOffset() int64 { return h.BaseOffset + int64(h.LastOffsetDelta) }

// NextOffset returns the offset after the batch's last: LastOffset()+1.
func (h Header) NextOffset() int64 { return h.LastOffset() + 1 }

// Options returns the BatchOptions that build a batch with h's base offset,
// leader epoch, producer, attributes and delete horizon, for rewriting a
// batch's records (as the log cleaner does). A delete horizon of 0 reads as
// none, since DeleteHorizon's zero means none.
func (h Header) Options() BatchOptions {
	opts := BatchOptions{
		BaseOffset:           h.BaseOffset,
		PartitionLeaderEpoch: h.PartitionLeaderEpoch,
		ProducerID:           h.ProducerID,
		ProducerEpoch:        h.ProducerEpoch,
		BaseSequence:         h.BaseSequence,
		Transactional:        h.Attributes.IsTransactional(),
		Control:              h.Attributes.IsControl(),
		Compression:          h.Attributes.Compression(),
		TimestampType:        h.Attributes.TimestampType(),
	}
	if h.Attributes.HasDeleteHorizon() {
		opts.DeleteHorizon = h.BaseTimestamp
	}
	return opts
}

// ParseHeader decodes the header at the start of b and checks what the
// header alone can show:
//
//   - len(b) >= HeaderSize, else ErrTruncated;
//   - Magic == MagicV2, else ErrUnsupportedMagic;
//   - BatchLength >= HeaderSize-LogOverhead, LastOffsetDelta >= 0 and
//     NumRecords >= 0, else ErrCorrupt;
//   - for uncompressed records, NumRecords no more than BatchLength leaves
//     room for (7 bytes per record at least), else ErrCorrupt.
//
// It does not check the CRC, the codec, or that b holds the whole batch:
// Validate does. It does not retain b.
func ParseHeader(b []byte) (Header, error) {
	if len(b) < HeaderSize {
		return Header{}, truncated(int64(len(b)), HeaderSize)
	}
	h := Header{
		BaseOffset:           int64(binary.BigEndian.Uint64(b[BaseOffsetOffset:])),
		BatchLength:          int32(binary.BigEndian.Uint32(b[BatchLengthOffset:])),
		PartitionLeaderEpoch: int32(binary.BigEndian.Uint32(b[PartitionLeaderEpochOffset:])),
		Magic:                int8(b[MagicOffset]),
		CRC:                  binary.BigEndian.Uint32(b[CRCOffset:]),
		Attributes:           Attributes(binary.BigEndian.Uint16(b[AttributesOffset:])),
		LastOffsetDelta:      int32(binary.BigEndian.Uint32(b[LastOffsetDeltaOffset:])),
		BaseTimestamp:        int64(binary.BigEndian.Uint64(b[BaseTimestampOffset:])),
		MaxTimestamp:         int64(binary.BigEndian.Uint64(b[MaxTimestampOffset:])),
		ProducerID:           int64(binary.BigEndian.Uint64(b[ProducerIDOffset:])),
		ProducerEpoch:        int16(binary.BigEndian.Uint16(b[ProducerEpochOffset:])),
		BaseSequence:         int32(binary.BigEndian.Uint32(b[BaseSequenceOffset:])),
		NumRecords:           int32(binary.BigEndian.Uint32(b[NumRecordsOffset:])),
	}
	if h.Magic != MagicV2 {
		return Header{}, fmt.Errorf("%w: %d", ErrUnsupportedMagic, h.Magic)
	}
	if h.BatchLength < minBatchLength {
		return Header{}, corruptf("batch length %d is below the minimum %d", h.BatchLength, minBatchLength)
	}
	if h.LastOffsetDelta < 0 {
		return Header{}, corruptf("negative last offset delta %d", h.LastOffsetDelta)
	}
	if h.NumRecords < 0 {
		return Header{}, corruptf("negative record count %d", h.NumRecords)
	}
	if h.Attributes.Compression() == None {
		room := int64(h.BatchLength) - minBatchLength
		if int64(h.NumRecords) > room/minRecordSize {
			return Header{}, corruptf("%d records cannot fit in %d bytes", h.NumRecords, room)
		}
	}
	return h, nil
}

// Validate checks that b is exactly one whole batch and returns its header.
// Beyond ParseHeader's checks: b must be Size() bytes (shorter is
// ErrTruncated, longer ErrCorrupt), the stored CRC must equal the CRC-32C of
// the bytes from the attributes to the end (else ErrCorrupt), and the codec
// must be one this package knows (else ErrUnsupportedCompression). It does
// not look inside the records. It does not retain b.
func Validate(b []byte) (Header, error) {
	h, err := ParseHeader(b)
	if err != nil {
		return Header{}, err
	}
	size := int64(LogOverhead) + int64(h.BatchLength)
	if int64(len(b)) < size {
		return Header{}, truncated(int64(len(b)), size)
	}
	if int64(len(b)) > size {
		return Header{}, corruptf("%d bytes after the %d-byte batch", int64(len(b))-size, size)
	}
	if crc := checksum(b); crc != h.CRC {
		return Header{}, corruptf("crc mismatch: stored %#08x, computed %#08x", h.CRC, crc)
	}
	if c := h.Attributes.Compression(); !c.valid() {
		return Header{}, fmt.Errorf("%w: %d", ErrUnsupportedCompression, c)
	}
	return h, nil
}

// putHeader writes h into the first HeaderSize bytes of b, leaving the CRC
// field to the caller.
func putHeader(b []byte, h *Header) {
	_ = b[HeaderSize-1]
	binary.BigEndian.PutUint64(b[BaseOffsetOffset:], uint64(h.BaseOffset))
	binary.BigEndian.PutUint32(b[BatchLengthOffset:], uint32(h.BatchLength))
	binary.BigEndian.PutUint32(b[PartitionLeaderEpochOffset:], uint32(h.PartitionLeaderEpoch))
	b[MagicOffset] = byte(h.Magic)
	binary.BigEndian.PutUint32(b[CRCOffset:], h.CRC)
	binary.BigEndian.PutUint16(b[AttributesOffset:], uint16(h.Attributes))
	binary.BigEndian.PutUint32(b[LastOffsetDeltaOffset:], uint32(h.LastOffsetDelta))
	binary.BigEndian.PutUint64(b[BaseTimestampOffset:], uint64(h.BaseTimestamp))
	binary.BigEndian.PutUint64(b[MaxTimestampOffset:], uint64(h.MaxTimestamp))
	binary.BigEndian.PutUint64(b[ProducerIDOffset:], uint64(h.ProducerID))
	binary.BigEndian.PutUint16(b[ProducerEpochOffset:], uint16(h.ProducerEpoch))
	binary.BigEndian.PutUint32(b[BaseSequenceOffset:], uint32(h.BaseSequence))
	binary.BigEndian.PutUint32(b[NumRecordsOffset:], uint32(h.NumRecords))
}

// SetBaseOffset rewrites the base offset of the batch at the start of b in
// place. The CRC does not cover it, so the batch stays valid. This is how
// the log assigns offsets to a producer's batch. b must hold at least the
// header.
func SetBaseOffset(b []byte, offset int64) {
	binary.BigEndian.PutUint64(b[BaseOffsetOffset:HeaderSize], uint64(offset))
}

// SetPartitionLeaderEpoch rewrites the partition leader epoch of the batch
// at the start of b in place. The CRC does not cover it, so the batch stays
// valid. b must hold at least the header.
func SetPartitionLeaderEpoch(b []byte, epoch int32) {
	binary.BigEndian.PutUint32(b[PartitionLeaderEpochOffset:HeaderSize], uint32(epoch))
}

// SetMaxTimestamp rewrites the timestamp type and MaxTimestamp of batch b in
// place and recomputes its CRC, as Kafka's broker does to stamp
// LogAppendTime on a batch (setMaxTimestamp). b must be exactly one batch,
// as Validate checks; the records are not touched, since with LogAppendTime
// every record reads as having MaxTimestamp.
func SetMaxTimestamp(b []byte, typ TimestampType, timestampMs int64) {
	attrs := Attributes(binary.BigEndian.Uint16(b[AttributesOffset:HeaderSize])) &^ timestampTypeFlag
	if typ == LogAppendTime {
		attrs |= timestampTypeFlag
	}
	binary.BigEndian.PutUint16(b[AttributesOffset:], uint16(attrs))
	binary.BigEndian.PutUint64(b[MaxTimestampOffset:], uint64(timestampMs))
	putCRC(b)
}

// putCRC computes the CRC of batch b and stores it in the CRC field.
func putCRC(b []byte) {
	binary.BigEndian.PutUint32(b[CRCOffset:], checksum(b))
}
