package record

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"testing"

	"github.com/stretchr/testify/require"
)

// build returns the batch of recs built with opts.
func build(tb testing.TB, opts BatchOptions, recs []Record) []byte {
	tb.Helper()
	b := NewBuilder(opts)
	for _, r := range recs {
		b.Append(r)
	}
	return b.Build()
}

// withOffsets returns recs with Offset set as Append assigns them from
// base.
func withOffsets(base int64, recs []Record) []Record {
	out := make([]Record, len(recs))
	for i, r := range recs {
		r.Offset = base + int64(i)
		out[i] = r
	}
	return out
}

// mustDecode decodes b, failing the test on error.
func mustDecode(tb testing.TB, b []byte) Batch {
	tb.Helper()
	batch, err := Decode(b)
	require.NoError(tb, err)
	return batch
}

// sampleRecords returns n records of a mix of shapes: null and empty keys,
// null and empty values, headers, timestamps that go back and forth.
func sampleRecords(n int) []Record {
	recs := make([]Record, n)
	for i := range recs {
		r := Record{Timestamp: 1_700_000_000_000 + int64(i*7%13) - 6}
		switch i % 4 {
		case 0:
			r.Key = fmt.Appendf(nil, "key-%d", i)
			r.Value = fmt.Appendf(nil, "value-%d-%s", i, "xxxxxxxxxxxxxxxx")
		case 1:
			r.Key = []byte{}
			r.Value = nil // tombstone
		case 2:
			r.Value = []byte{}
			r.Headers = []RecordHeader{{Key: "trace", Value: []byte{byte(i)}}, {Key: "", Value: nil}}
		case 3:
			r.Key = []byte{0, 1, 2}
			r.Value = make([]byte, 300)
			r.Headers = []RecordHeader{{Key: "trace", Value: []byte{}}}
		}
		recs[i] = r
	}
	return recs
}

// rawBatch returns a batch with h's fields and records as its records
// section, with BatchLength and CRC computed to fit, so that a test can
// hand-craft records that a Builder would never write.
func rawBatch(h Header, records []byte) []byte {
	b := make([]byte, HeaderSize, HeaderSize+len(records))
	h.Magic = MagicV2
	h.BatchLength = int32(minBatchLength + len(records))
	putHeader(b, &h)
	b = append(b, records...)
	binary.BigEndian.PutUint32(b[CRCOffset:], crc32.Checksum(b[AttributesOffset:], crc32.MakeTable(crc32.Castagnoli)))
	return b
}

// rawRecord returns a record: a varint length and then body.
func rawRecord(body ...byte) []byte {
	return append(appendVarlong(nil, int64(len(body))), body...)
}

// allCodecs lists every compression codec.
var allCodecs = []Compression{None, Gzip, Snappy, LZ4, Zstd}
