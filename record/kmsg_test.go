package record

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"testing"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// These tests check our encoding against franz-go's kmsg, an independent
// implementation of the same format: what we build, kmsg reads field for
// field and re-encodes to the same bytes; what kmsg encodes, we decode to
// the same records. The decompression on kmsg's side uses the codec
// libraries directly, not our compression code.

// kmsgRecords splits an uncompressed records section into kmsg.Records.
func kmsgRecords(t *testing.T, section []byte, n int) []kmsg.Record {
	t.Helper()
	out := make([]kmsg.Record, 0, n)
	for len(section) > 0 {
		length, w := binary.Varint(section) // the same zigzag varint
		require.Positive(t, w)
		end := w + int(length)
		var r kmsg.Record
		require.NoError(t, r.ReadFrom(section[:end]))
		require.Equal(t, int32(length), r.Length)
		out = append(out, r)
		section = section[end:]
	}
	require.Len(t, out, n)
	return out
}

// plainDecompress decompresses with the codec libraries alone.
func plainDecompress(t *testing.T, c Compression, b []byte) []byte {
	t.Helper()
	switch c {
	case None:
		return b
	case Gzip:
		r, err := gzip.NewReader(bytes.NewReader(b))
		require.NoError(t, err)
		var out bytes.Buffer
		_, err = out.ReadFrom(r)
		require.NoError(t, err)
		return out.Bytes()
	case Zstd:
		d, err := zstd.NewReader(nil)
		require.NoError(t, err)
		defer d.Close()
		out, err := d.DecodeAll(b, nil)
		require.NoError(t, err)
		return out
	}
	t.Fatalf("no plain decompressor for %s", c)
	return nil
}

func TestKmsgReadsOurBatches(t *testing.T) {
	for _, c := range []Compression{None, Gzip, Zstd} {
		t.Run(c.String(), func(t *testing.T) {
			opts := BatchOptions{
				BaseOffset:           5000,
				PartitionLeaderEpoch: 12,
				ProducerID:           77,
				ProducerEpoch:        4,
				BaseSequence:         900,
				Transactional:        true,
				Compression:          c,
			}
			recs := sampleRecords(40)
			raw := build(t, opts, recs)
			h, err := Validate(raw)
			require.NoError(t, err)

			var kb kmsg.RecordBatch
			require.NoError(t, kb.ReadFrom(raw))
			require.Equal(t, int64(5000), kb.FirstOffset)
			require.Equal(t, int32(len(raw)-LogOverhead), kb.Length)
			require.Equal(t, int32(12), kb.PartitionLeaderEpoch)
			require.Equal(t, int8(2), kb.Magic)
			require.Equal(t, h.CRC, uint32(kb.CRC))
			require.Equal(t, int16(0x10)|int16(c), kb.Attributes)
			require.Equal(t, int32(39), kb.LastOffsetDelta)
			require.Equal(t, recs[0].Timestamp, kb.FirstTimestamp)
			require.Equal(t, h.MaxTimestamp, kb.MaxTimestamp)
			require.Equal(t, int64(77), kb.ProducerID)
			require.Equal(t, int16(4), kb.ProducerEpoch)
			require.Equal(t, int32(900), kb.FirstSequence)
			require.Equal(t, int32(40), kb.NumRecords)

			// kmsg's re-encoding is our bytes, and its CRC is the CRC-32C
			// of them.
			again := kb.AppendTo(nil)
			require.Equal(t, raw, again)
			require.Equal(t, uint32(kb.CRC), crc32.Checksum(again[AttributesOffset:], crc32.MakeTable(crc32.Castagnoli)))

			plain := plainDecompress(t, c, kb.Records)
			krecs := kmsgRecords(t, plain, len(recs))
			var reencoded []byte
			for _, kr := range krecs {
				reencoded = kr.AppendTo(reencoded)
			}
			require.Equal(t, plain, reencoded, "kmsg encodes the records to our bytes")
			for i, kr := range krecs {
				want := recs[i]
				require.Equal(t, int8(0), kr.Attributes)
				require.Equal(t, int32(i), kr.OffsetDelta)
				require.Equal(t, want.Timestamp-recs[0].Timestamp, kr.TimestampDelta64)
				require.Equal(t, want.Key, kr.Key, "record %d key", i)
				require.Equal(t, want.Key == nil, kr.Key == nil, "record %d: null key", i)
				require.Equal(t, want.Value, kr.Value, "record %d value", i)
				require.Equal(t, want.Value == nil, kr.Value == nil, "record %d: null value", i)
				require.Len(t, kr.Headers, len(want.Headers))
				for j, kh := range kr.Headers {
					require.Equal(t, want.Headers[j].Key, kh.Key)
					require.Equal(t, want.Headers[j].Value, kh.Value)
					require.Equal(t, want.Headers[j].Value == nil, kh.Value == nil)
				}
			}
		})
	}
}

func TestWeReadKmsgBatches(t *testing.T) {
	recs := sampleRecords(40)
	recs[7].Timestamp = recs[0].Timestamp - 1_000_000_000 // a large negative delta

	// kmsg encodes each record; its Length field is for us to fill.
	var section []byte
	for i, r := range recs {
		kr := kmsg.Record{
			TimestampDelta64: r.Timestamp - recs[0].Timestamp,
			OffsetDelta:      int32(i * 2), // gaps, as compaction leaves
			Key:              r.Key,
			Value:            r.Value,
		}
		for _, h := range r.Headers {
			kr.Headers = append(kr.Headers, kmsg.Header{Key: h.Key, Value: h.Value})
		}
		body := kr.AppendTo(nil)[1:] // with Length 0, one byte of length
		kr.Length = int32(len(body))
		section = kr.AppendTo(section)
	}

	for _, c := range []Compression{None, Gzip, Zstd} {
		t.Run(c.String(), func(t *testing.T) {
			records := section
			switch c {
			case Gzip:
				var buf bytes.Buffer
				w := gzip.NewWriter(&buf)
				_, err := w.Write(section)
				require.NoError(t, err)
				require.NoError(t, w.Close())
				records = buf.Bytes()
			case Zstd:
				e, err := zstd.NewWriter(nil)
				require.NoError(t, err)
				records = e.EncodeAll(section, nil)
			}
			kb := kmsg.RecordBatch{
				FirstOffset:          300,
				Length:               int32(minBatchLength + len(records)),
				PartitionLeaderEpoch: 3,
				Magic:                2,
				Attributes:           int16(c),
				LastOffsetDelta:      int32(2*len(recs) - 1), // past the last record, as after compaction
				FirstTimestamp:       recs[0].Timestamp,
				MaxTimestamp:         recs[0].Timestamp + 1000,
				ProducerID:           -1,
				ProducerEpoch:        -1,
				FirstSequence:        -1,
				NumRecords:           int32(len(recs)),
				Records:              records,
			}
			raw := kb.AppendTo(nil)
			kb.CRC = int32(crc32.Checksum(raw[AttributesOffset:], crc32.MakeTable(crc32.Castagnoli)))
			raw = kb.AppendTo(nil)

			batch := mustDecode(t, raw)
			require.Equal(t, uint32(kb.CRC), batch.CRC)
			require.Equal(t, int64(300), batch.BaseOffset)
			require.Equal(t, int64(300+2*len(recs)-1), batch.LastOffset())
			require.Equal(t, c, batch.Attributes.Compression())
			want := make([]Record, len(recs))
			for i, r := range recs {
				r.Offset = 300 + int64(2*i)
				want[i] = r
			}
			require.Equal(t, want, batch.Records)
		})
	}
}
