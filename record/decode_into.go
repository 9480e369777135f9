package record

import "fmt"

// CRCCheck says whether DecodeInto verifies a batch's CRC-32C: Kafka's
// consumer setting check.crcs.
type CRCCheck bool

// The CRC checks.
const (
	// VerifyCRC checks the stored CRC against the bytes, as Decode and
	// Validate do.
	VerifyCRC CRCCheck = true
	// SkipCRC trusts the stored CRC. Every other check still holds, so a
	// damaged batch may decode to wrong data but never panics or reads
	// past b.
	SkipCRC CRCCheck = false
)

// DecodeInto is Decode into memory the caller reuses: the batch's records
// are appended to dst[:0], and the returned Batch's Records is that slice,
// in dst's array when it has room. A reader that decodes batch after batch
// passes the previous Batch's Records back as dst, and so allocates no
// Records slice once it has grown to the largest batch. The records of the
// previous call are overwritten: copy out what must outlive the next call.
//
// Everything else is as Decode: the same checks and errors (without the
// CRC's under SkipCRC), keys and values that alias b (or the decompressed
// buffer, new per call), and Headers slices and header key strings
// allocated per call, so that they stay valid after dst is reused.
func DecodeInto(dst []Record, b []byte, crc CRCCheck) (Batch, error) {
	var h Header
	var err error
	if crc == VerifyCRC {
		h, err = Validate(b)
	} else {
		h, err = validateNoCRC(b)
	}
	if err != nil {
		return Batch{}, err
	}
	records := b[HeaderSize:]
	if c := h.Attributes.Compression(); c != None && len(records) > 0 {
		if records, err = decompress(c, records); err != nil {
			return Batch{}, err
		}
	}
	parsed, err := appendRecords(dst[:0], &h, records)
	if err != nil {
		return Batch{}, err
	}
	return Batch{Header: h, Records: parsed}, nil
}

// validateNoCRC is Validate without the CRC check.
func validateNoCRC(b []byte) (Header, error) {
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
	if c := h.Attributes.Compression(); !c.valid() {
		return Header{}, fmt.Errorf("%w: %d", ErrUnsupportedCompression, c)
	}
	return h, nil
}

// appendRecords parses the h.NumRecords records that make up all of b and
// appends them to dst, growing it at most once.
func appendRecords(dst []Record, h *Header, b []byte) ([]Record, error) {
	n := int(h.NumRecords)
	if n > len(b)/minRecordSize { // before allocating for n records
		return nil, corruptf("%d records cannot fit in %d bytes", n, len(b))
	}
	if n == 0 {
		if len(b) > 0 {
			return nil, corruptf("%d bytes after the last record", len(b))
		}
		return dst, nil
	}
	base := len(dst)
	if cap(dst)-base < n {
		grown := make([]Record, base, base+n)
		copy(grown, dst)
		dst = grown
	}
	dst = dst[:base+n]
	records := dst[base:]
	var headers []RecordHeader // shared by every record's Headers
	logAppendTime := h.Attributes.TimestampType() == LogAppendTime
	prevDelta := int64(-1)
	pos := 0
	for i := range records {
		if pos == len(b) {
			return nil, corruptf("the header says %d records, the batch holds %d", n, i)
		}
		length, p := readVarint(b, pos)
		if p < 0 {
			return nil, corruptf("record %d: length: %s", i, varintProblem(p))
		}
		if length < 0 || int(length) > len(b)-p {
			return nil, corruptf("record %d: length %d with %d bytes left", i, length, len(b)-p)
		}
		end := p + int(length)
		body := b[:end] // every read below stops at the record's end
		r := &records[i]

		if p == end {
			return nil, corruptf("record %d: no attributes", i)
		}
		p++ // record attributes: unused

		timestampDelta, p := readVarlong(body, p)
		if p < 0 {
			return nil, corruptf("record %d: timestamp delta: %s", i, varintProblem(p))
		}
		r.Timestamp = h.BaseTimestamp + timestampDelta
		if logAppendTime {
			r.Timestamp = h.MaxTimestamp
		}

		offsetDelta, p := readVarint(body, p)
		if p < 0 {
			return nil, corruptf("record %d: offset delta: %s", i, varintProblem(p))
		}
		if int64(offsetDelta) <= prevDelta || offsetDelta > h.LastOffsetDelta {
			return nil, corruptf("record %d: offset delta %d after %d, last offset delta %d",
				i, offsetDelta, prevDelta, h.LastOffsetDelta)
		}
		prevDelta = int64(offsetDelta)
		r.Offset = h.BaseOffset + int64(offsetDelta)

		var field int32
		if r.Key, field, p = readBytes(body, p); p < 0 {
			return nil, fieldError(i, "key", field, p)
		}
		if r.Value, field, p = readBytes(body, p); p < 0 {
			return nil, fieldError(i, "value", field, p)
		}

		count, p := readVarint(body, p)
		if p < 0 {
			return nil, corruptf("record %d: header count: %s", i, varintProblem(p))
		}
		if count < 0 || int(count) > (end-p)/2 { // a header takes 2 bytes at least
			return nil, corruptf("record %d: header count %d with %d bytes left", i, count, end-p)
		}
		r.Headers = nil // dst may hold an earlier batch's record here
		if count > 0 {
			if headers == nil { // guess every record has as many
				headers = make([]RecordHeader, 0, min(int(count)*(n-i), (len(b)-p)/2))
			}
			var prev []RecordHeader // to share key strings with
			if i > 0 {
				prev = records[i-1].Headers
			}
			start := len(headers)
			for j := 0; j < int(count); j++ {
				var key, value []byte
				if key, field, p = readBytes(body, p); p < 0 || key == nil {
					if p >= 0 {
						p = badLength
					}
					return nil, fieldError(i, "header key", field, p)
				}
				if value, field, p = readBytes(body, p); p < 0 {
					return nil, fieldError(i, "header value", field, p)
				}
				hdr := RecordHeader{Value: value}
				if j < len(prev) && prev[j].Key == string(key) {
					hdr.Key = prev[j].Key
				} else {
					hdr.Key = string(key)
				}
				headers = append(headers, hdr)
			}
			r.Headers = headers[start:len(headers):len(headers)]
		}

		if p != end {
			return nil, corruptf("record %d: length %d, but its fields end after %d", i, length, int(length)-(end-p))
		}
		pos = end
	}
	if pos != len(b) {
		return nil, corruptf("%d bytes after the last record", len(b)-pos)
	}
	return dst, nil
}
