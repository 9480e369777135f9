package record

// RecordHeader is one of a record's headers: a key and a value that ride
// along with the record, as Kafka's Header. Keys need not be unique.
type RecordHeader struct {
	// Key is the header's name. Unlike a record key it cannot be null.
	Key string
	// Value is the header's value; nil is a null value, distinct from an
	// empty one.
	Value []byte
}

// Record is one record of a batch, with its offset and timestamp made
// absolute.
type Record struct {
	// Offset is the record's offset: the batch's BaseOffset plus the
	// record's offset delta. Decode fills it; Builder.Append ignores it.
	Offset int64
	// Timestamp is in milliseconds since the epoch: the batch's
	// BaseTimestamp plus the record's timestamp delta, or the batch's
	// MaxTimestamp when the batch has LogAppendTime.
	Timestamp int64
	// Key is the record's key. nil is a null key (encoded as length -1);
	// an empty non-nil slice is an empty key.
	Key []byte
	// Value is the record's value. nil is a null value: in a compacted
	// topic, a tombstone that deletes the key.
	Value []byte
	// Headers are the record's headers, in order; nil when it has none.
	Headers []RecordHeader
}

// Batch is a decoded batch: its header and its records.
type Batch struct {
	Header
	// Records holds Header.NumRecords records in offset order.
	Records []Record
}

// Decode validates b as one whole batch, as Validate does, decompresses its
// records if they are compressed, and parses every record. Besides
// Validate's errors it returns ErrCorrupt (a *CorruptError) when a record
// does not parse: a varint longer than its type, a length below -1 (or
// below 0 for a header key), a length that runs past its record or a
// record that runs past the batch, a record whose fields do not fill
// exactly its length prefix, offset deltas that do not increase or pass
// LastOffsetDelta, a record count other than NumRecords, bytes after the
// last record, or records that decompress to more than
// MaxUncompressedBytes.
//
// Record keys and values alias b when the batch is uncompressed, and a
// buffer that belongs to the Batch when it is compressed: modifying b
// modifies the records, and they stay valid for as long as b is. Header
// keys are strings of their own, shared between records where they repeat.
// Decode allocates the Records slice once, one slice (grown if need be)
// that every record's Headers share, header key strings, and, when
// compressed, the decompressed buffer.
func Decode(b []byte) (Batch, error) { return DecodeInto(nil, b, VerifyCRC) }

// badLength is readBytes' position for a length below -1 or past the end.
const badLength = -3

// readBytes reads the length-prefixed field at b[p:], returning nil for
// length -1 and otherwise a slice of b capped at its end. On failure the
// position is varintTruncated, varintOverlong or badLength, and length is
// the length read, for the error.
func readBytes(b []byte, p int) (field []byte, length int32, next int) {
	length, p = readVarint(b, p)
	if p < 0 {
		return nil, 0, p
	}
	if length < 0 {
		if length == -1 {
			return nil, length, p
		}
		return nil, length, badLength
	}
	if int(length) > len(b)-p {
		return nil, length, badLength
	}
	end := p + int(length)
	return b[p:end:end], length, end
}

// fieldError describes a field that readBytes could not read.
func fieldError(record int, field string, length int32, pos int) error {
	if pos == badLength {
		return corruptf("record %d: %s length %d", record, field, length)
	}
	return corruptf("record %d: %s length: %s", record, field, varintProblem(pos))
}
