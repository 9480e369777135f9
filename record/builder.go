package record

import (
	"fmt"
	"math"
	"slices"
	"sync"
)

// BatchOptions describes the batch a Builder builds: everything in the
// header that does not come from the records.
//
// The zero BatchOptions is not Kafka's "no producer": it names producer ID
// 0, epoch 0, sequence 0 and leader epoch 0, which a broker takes for an
// idempotent producer. Start from DefaultBatchOptions unless you have a
// producer ID.
type BatchOptions struct {
	// BaseOffset is the offset of the first record. Producers leave it 0
	// and the log rewrites it with SetBaseOffset.
	BaseOffset int64
	// PartitionLeaderEpoch is the leader epoch stamped on the batch;
	// NoPartitionLeaderEpoch (-1) from a producer.
	PartitionLeaderEpoch int32
	// ProducerID is the idempotent or transactional producer's ID, or
	// NoProducerID (-1).
	ProducerID int64
	// ProducerEpoch is the producer's epoch, or NoProducerEpoch (-1).
	ProducerEpoch int16
	// BaseSequence is the first record's sequence number, or NoSequence
	// (-1).
	BaseSequence int32
	// Transactional marks the batch as part of a transaction.
	Transactional bool
	// Control marks the batch as holding control records. ControlBatch
	// builds transaction markers; data batches leave this false.
	Control bool
	// Compression is the codec for the records section; zero is None.
	Compression Compression
	// TimestampType is where record timestamps come from; zero is
	// CreateTime.
	TimestampType TimestampType
	// DeleteHorizon, when not zero, is the time (ms since the epoch) after
	// which the log cleaner may drop the batch's tombstones and markers.
	// It becomes the BaseTimestamp, record timestamps are encoded relative
	// to it, and the attributes say so. Only the log cleaner sets it.
	DeleteHorizon int64
}

// DefaultBatchOptions returns the options of a batch from a producer
// without a producer ID, as Kafka writes one: ProducerID, ProducerEpoch,
// BaseSequence and PartitionLeaderEpoch all -1, no compression,
// CreateTime, base offset 0.
func DefaultBatchOptions() BatchOptions {
	return BatchOptions{
		PartitionLeaderEpoch: NoPartitionLeaderEpoch,
		ProducerID:           NoProducerID,
		ProducerEpoch:        NoProducerEpoch,
		BaseSequence:         NoSequence,
	}
}

// A Builder encodes records into one batch. Append encodes each record
// straight into the Builder's buffer, which grows as append grows slices
// and is kept across Reset, so a reused Builder appends without
// allocating.
//
// A Builder is not safe for concurrent use.
type Builder struct {
	opts            BatchOptions
	attributes      Attributes
	buf             []byte // HeaderSize bytes left for the header, then the records
	numRecords      int32
	lastOffsetDelta int32
	baseTimestamp   int64
	maxTimestamp    int64
}

// NewBuilder returns a Builder for a batch described by opts.
func NewBuilder(opts BatchOptions) *Builder {
	b := new(Builder)
	b.Reset(opts)
	return b
}

// Reset empties the Builder, keeping its buffer, for a new batch described
// by opts.
func (b *Builder) Reset(opts BatchOptions) {
	b.opts = opts
	b.attributes = attributesOf(&opts)
	if b.buf == nil {
		b.buf = make([]byte, HeaderSize, 4096)
	}
	b.buf = b.buf[:HeaderSize]
	b.numRecords = 0
	b.lastOffsetDelta = 0
	b.baseTimestamp = NoTimestamp
	b.maxTimestamp = NoTimestamp
	if opts.DeleteHorizon != 0 {
		b.baseTimestamp = opts.DeleteHorizon
	}
}

// Grow makes room for n more bytes of records, so that appending them does
// not allocate.
func (b *Builder) Grow(n int) { b.buf = slices.Grow(b.buf, n) }

// Len returns the number of records appended.
func (b *Builder) Len() int { return int(b.numRecords) }

// Size returns the exact size of the batch that Build would return if its
// records were not compressed. With compression it is an estimate from
// above for any data that compresses, and the size that limits such as
// Kafka's batch.size are measured in.
func (b *Builder) Size() int { return len(b.buf) }

// Append adds r with the next offset: its offset delta is one past the
// previous record's, which for records added only by Append is the number
// of records before it. r.Offset is ignored. Its timestamp delta is
// relative to the first record's timestamp (or to the DeleteHorizon).
// Append keeps no reference to r's slices.
//
// Append panics if the record alone is over 2 GiB.
func (b *Builder) Append(r Record) {
	var delta int32
	if b.numRecords > 0 {
		delta = b.lastOffsetDelta + 1
	}
	b.append(delta, &r)
}

// AppendWithOffset adds r at its own Offset: its offset delta is r.Offset
// less the batch's BaseOffset. This rebuilds a batch whose offsets have
// gaps, as the log cleaner leaves them. It panics unless offsets increase
// from record to record and stay within BaseOffset..BaseOffset+MaxInt32.
func (b *Builder) AppendWithOffset(r Record) {
	delta := r.Offset - b.opts.BaseOffset
	if delta < 0 || delta > math.MaxInt32 || (b.numRecords > 0 && delta <= int64(b.lastOffsetDelta)) {
		panic(fmt.Sprintf("record: offset %d does not follow offset %d in a batch based at %d",
			r.Offset, b.opts.BaseOffset+int64(b.lastOffsetDelta), b.opts.BaseOffset))
	}
	b.append(int32(delta), &r)
}

func (b *Builder) append(offsetDelta int32, r *Record) {
	if b.numRecords == 0 {
		if b.opts.DeleteHorizon == 0 {
			b.baseTimestamp = r.Timestamp
		}
		b.maxTimestamp = r.Timestamp
	} else if r.Timestamp > b.maxTimestamp {
		b.maxTimestamp = r.Timestamp
	}
	timestampDelta := r.Timestamp - b.baseTimestamp // wraps, and so does decoding: exact for any int64

	size := 1 + // attributes
		varlongLen(timestampDelta) +
		varintLen(offsetDelta) +
		bytesLen(r.Key) +
		bytesLen(r.Value) +
		varlongLen(int64(len(r.Headers)))
	for i := range r.Headers {
		h := &r.Headers[i]
		size += varlongLen(int64(len(h.Key))) + len(h.Key) + bytesLen(h.Value)
	}
	if size > math.MaxInt32 {
		panic(fmt.Sprintf("record: a record of %d bytes does not fit a batch", size))
	}

	buf := slices.Grow(b.buf, maxVarintLen+size)
	buf = appendVarlong(buf, int64(size))
	buf = append(buf, 0) // record attributes: unused
	buf = appendVarlong(buf, timestampDelta)
	buf = appendVarlong(buf, int64(offsetDelta))
	buf = appendBytes(buf, r.Key)
	buf = appendBytes(buf, r.Value)
	buf = appendVarlong(buf, int64(len(r.Headers)))
	for i := range r.Headers {
		h := &r.Headers[i]
		buf = appendVarlong(buf, int64(len(h.Key)))
		buf = append(buf, h.Key...)
		buf = appendBytes(buf, h.Value)
	}
	b.buf = buf
	b.numRecords++
	b.lastOffsetDelta = offsetDelta
}

// Build returns the batch: the header with its CRC set and the records,
// compressed if the options say so. Its MaxTimestamp is the greatest record
// timestamp. A batch without records has timestamps NoTimestamp (or the
// delete horizon) and LastOffsetDelta 0; its records section is empty even
// when compressed, since readers look at it only when NumRecords > 0.
//
// The returned slice is new and the caller's. The Builder is unchanged:
// Build may be called again, and Append may continue the batch.
//
// Build panics if the batch would be over 2 GiB, or if the options name
// a codec this package does not know.
func (b *Builder) Build() []byte {
	if b.compressed() {
		scratch := scratchBuffers.Get().(*[]byte)
		batch := b.AppendTo((*scratch)[:0])
		out := slices.Clone(batch)
		*scratch = batch
		scratchBuffers.Put(scratch)
		return out
	}
	return b.AppendTo(make([]byte, 0, len(b.buf)))
}

// AppendTo appends the batch Build would return to dst and returns the
// extended slice. It allocates only when dst is short of room (with
// compression, Size() bytes of room is enough for data that compresses).
func (b *Builder) AppendTo(dst []byte) []byte {
	start := len(dst)
	if b.compressed() {
		dst = append(dst, b.buf[:HeaderSize]...)
		dst = compress(dst, b.opts.Compression, b.buf[HeaderSize:])
	} else {
		dst = append(dst, b.buf...)
	}
	b.seal(dst[start:])
	return dst
}

// seal writes the header of the encoded batch, and then its CRC.
func (b *Builder) seal(batch []byte) {
	if len(batch)-LogOverhead > math.MaxInt32 {
		panic(fmt.Sprintf("record: a batch of %d bytes is over the format's limit", len(batch)))
	}
	h := Header{
		BaseOffset:           b.opts.BaseOffset,
		BatchLength:          int32(len(batch) - LogOverhead),
		PartitionLeaderEpoch: b.opts.PartitionLeaderEpoch,
		Magic:                MagicV2,
		Attributes:           b.attributes,
		LastOffsetDelta:      b.lastOffsetDelta,
		BaseTimestamp:        b.baseTimestamp,
		MaxTimestamp:         b.maxTimestamp,
		ProducerID:           b.opts.ProducerID,
		ProducerEpoch:        b.opts.ProducerEpoch,
		BaseSequence:         b.opts.BaseSequence,
		NumRecords:           b.numRecords,
	}
	putHeader(batch, &h)
	putCRC(batch)
}

// compressed reports whether AppendTo compresses the records section.
func (b *Builder) compressed() bool {
	if b.opts.Compression == None {
		return false
	}
	if !b.opts.Compression.valid() {
		panic(fmt.Sprintf("record: cannot build a batch with compression %v", b.opts.Compression))
	}
	return b.numRecords > 0
}

// scratchBuffers hold compressed batches while Build sizes them, so Build
// allocates only its result.
var scratchBuffers = sync.Pool{New: func() any { return new([]byte) }}
