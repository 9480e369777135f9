package record

import (
	"bytes"
	"encoding/binary"
	"runtime"
	"testing"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
	"github.com/stretchr/testify/require"
)

// TestDecodeMalformedRecords hand-crafts record sections (with a valid CRC)
// that break each rule of the record format.
func TestDecodeMalformedRecords(t *testing.T) {
	ok := rawRecord(0, 0, 0, 1, 1, 0) // null key, null value, no headers
	cat := func(parts ...[]byte) []byte { return bytes.Join(parts, nil) }
	tests := []struct {
		name    string
		num     int32
		lastOD  int32
		records []byte
		msg     string
	}{
		{"count above records", 2, 1, rawRecord(0, 0, 0, 1, 20, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 0), "the header says 2 records, the batch holds 1"},
		{"count below records", 1, 1, cat(ok, rawRecord(0, 0, 2, 1, 1, 0)), "7 bytes after the last record"},
		{"trailing byte", 1, 0, cat(ok, []byte{0}), "1 bytes after the last record"},
		{"trailing bytes, no records", 0, 0, make([]byte, 6), "6 bytes after the last record"},
		{"negative length", 1, 0, cat([]byte{3}, make([]byte, 6)), "record 0: length -2 with 6 bytes left"},
		{"length past the batch", 1, 0, cat([]byte{16}, make([]byte, 6)), "record 0: length 8 with 6 bytes left"},
		{"overlong length", 1, 0, []byte{0x80, 0x80, 0x80, 0x80, 0x80, 0x01, 0}, "record 0: length: overlong varint"},
		{"length with bits past 32", 1, 0, []byte{0xff, 0xff, 0xff, 0xff, 0x1f, 0, 0}, "record 0: length: overlong varint"},
		{"zero length", 1, 0, cat([]byte{0}, make([]byte, 6)), "record 0: no attributes"},
		{"key length -5", 1, 0, rawRecord(0, 0, 0, 9, 1, 0), "record 0: key length -5"},
		{"key past the record", 1, 0, rawRecord(0, 0, 0, 20, 1, 0), "record 0: key length 10"},
		{"value length -2", 1, 0, rawRecord(0, 0, 0, 1, 3, 0), "record 0: value length -2"},
		{"value past the record", 1, 0, cat(rawRecord(0, 0, 0, 1, 8, 0), []byte{1, 2, 3, 4}), "record 0: value length 4"},
		{"truncated timestamp", 1, 0, rawRecord(0, 0x80, 0x80, 0x80, 0x80, 0x80), "record 0: timestamp delta: truncated varint"},
		{"overlong timestamp", 1, 0, rawRecord(0, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x02, 0, 1, 1, 0), "record 0: timestamp delta: overlong varint"},
		{"truncated offset delta", 1, 0, cat(rawRecord(0, 0, 0x80), make([]byte, 4)), "record 0: offset delta: truncated varint"},
		{"negative offset delta", 1, 0, rawRecord(0, 0, 1, 1, 1, 0), "record 0: offset delta -1 after -1"},
		{"offset delta past last", 1, 0, rawRecord(0, 0, 2, 1, 1, 0), "record 0: offset delta 1 after -1, last offset delta 0"},
		{"offset delta repeats", 2, 1, cat(ok, ok), "record 1: offset delta 0 after 0"},
		{"negative header count", 1, 0, rawRecord(0, 0, 0, 1, 1, 1), "record 0: header count -1"},
		{"header count past the record", 1, 0, rawRecord(0, 0, 0, 1, 1, 4, 0, 1), "record 0: header count 2 with 2 bytes left"},
		{"null header key", 1, 0, rawRecord(0, 0, 0, 1, 1, 2, 1, 1), "record 0: header key length -1"},
		{"header key past the record", 1, 0, rawRecord(0, 0, 0, 1, 1, 2, 8, 1), "record 0: header key length 4"},
		{"header value length -3", 1, 0, rawRecord(0, 0, 0, 1, 1, 2, 0, 5), "record 0: header value length -3"},
		{"length longer than fields", 1, 0, rawRecord(0, 0, 0, 1, 1, 0, 0xaa), "record 0: length 7, but its fields end after 6"},
		{"length shorter than fields", 1, 0, cat(rawRecord(0, 0, 0, 1, 1), []byte{0}), "record 0: header count: truncated varint"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := Header{NumRecords: tt.num, LastOffsetDelta: tt.lastOD, ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1}
			b := rawBatch(h, tt.records)
			_, err := Validate(b)
			require.NoError(t, err, "the header and CRC are fine")
			_, err = Decode(b)
			require.ErrorIs(t, err, ErrCorrupt)
			require.ErrorContains(t, err, tt.msg)

			// The same records, compressed, fail the same way.
			h.Attributes = Attributes(Zstd)
			_, err = Decode(rawBatch(h, compress(nil, Zstd, tt.records)))
			require.ErrorIs(t, err, ErrCorrupt)
			require.ErrorContains(t, err, tt.msg)
		})
	}
}

func TestDecodeNonMinimalVarints(t *testing.T) {
	// Kafka's reader accepts padded varints that fit their type, and so
	// does ours: here record length 8 as 0x90 0x00, and key length 0 as
	// 0x80 0x80 0x00.
	records := []byte{0x90, 0x00, 0, 0, 0, 0x80, 0x80, 0x00, 1, 0}
	b := rawBatch(Header{NumRecords: 1}, records)
	batch := mustDecode(t, b)
	require.Equal(t, []Record{{Key: []byte{}}}, batch.Records)
}

func TestDecodeCompressedCountCheckedAfterDecompression(t *testing.T) {
	records := rawRecord(0, 0, 0, 1, 1, 0)
	h := Header{NumRecords: 1 << 20, LastOffsetDelta: 0, Attributes: Attributes(Gzip)}
	_, err := Decode(rawBatch(h, compress(nil, Gzip, records)))
	require.ErrorIs(t, err, ErrCorrupt)
	require.ErrorContains(t, err, "1048576 records cannot fit in 7 bytes")
}

func TestDecodeGarbageCompressed(t *testing.T) {
	for _, c := range allCodecs[1:] {
		h := Header{NumRecords: 1, Attributes: Attributes(c)}
		for _, junk := range [][]byte{{0}, []byte("definitely not compressed data"), bytes.Repeat([]byte{0xff}, 100)} {
			_, err := Decode(rawBatch(h, junk))
			require.ErrorIs(t, err, ErrCorrupt, "%s %q", c, junk)
		}
	}
}

func TestDecodeRawSnappy(t *testing.T) {
	recs := sampleRecords(50)
	plain := build(t, DefaultBatchOptions(), recs)
	h, err := ParseHeader(plain)
	require.NoError(t, err)
	h.Attributes = Attributes(Snappy)

	// One raw snappy block, as librdkafka and Go clients write it.
	batch := mustDecode(t, rawBatch(h, s2.EncodeSnappy(nil, plain[HeaderSize:])))
	require.Equal(t, withOffsets(0, recs), batch.Records)

	// Xerial framing with small chunks, as snappy-java may cut them.
	framed := append([]byte(nil), xerialHeader...)
	for rest := plain[HeaderSize:]; len(rest) > 0; {
		n := min(len(rest), 100)
		block := s2.EncodeSnappy(nil, rest[:n])
		framed = binary.BigEndian.AppendUint32(framed, uint32(len(block)))
		framed = append(framed, block...)
		rest = rest[n:]
	}
	batch = mustDecode(t, rawBatch(h, framed))
	require.Equal(t, withOffsets(0, recs), batch.Records)

	// What we write is xerial-framed.
	opts := DefaultBatchOptions()
	opts.Compression = Snappy
	ours := build(t, opts, recs)
	require.Equal(t, xerialHeader, ours[HeaderSize:HeaderSize+len(xerialHeader)])

	for name, bad := range map[string][]byte{
		"short header":      xerialHeader[:12],
		"short chunk size":  append(bytes.Clone(xerialHeader), 0, 0),
		"chunk past end":    append(bytes.Clone(xerialHeader), 0, 0, 0, 9, 1),
		"bad block":         append(bytes.Clone(xerialHeader), 0, 0, 0, 2, 0xff, 0xff),
		"block longer than": append(bytes.Clone(xerialHeader), 0, 0, 0, 3, 5, 0, 'a'),
	} {
		_, err := Decode(rawBatch(h, bad))
		require.ErrorIs(t, err, ErrCorrupt, name)
	}
}

// bomb returns codec c's encoding of more than MaxUncompressedBytes of
// zeros, made from concatenated frames so that making it is cheap.
func bomb(t *testing.T, c Compression) []byte {
	t.Helper()
	const chunk = 1 << 20
	zeros := make([]byte, chunk)
	var one []byte
	switch c {
	case Gzip:
		var buf bytes.Buffer
		w := gzip.NewWriter(&buf)
		_, _ = w.Write(zeros)
		require.NoError(t, w.Close())
		one = buf.Bytes()
	case LZ4:
		var buf bytes.Buffer
		w := lz4.NewWriter(&buf)
		_, _ = w.Write(zeros)
		require.NoError(t, w.Close())
		one = buf.Bytes()
	case Zstd:
		// A streamed frame does not state its size up front.
		var buf bytes.Buffer
		w, err := zstd.NewWriter(&buf)
		require.NoError(t, err)
		_, _ = w.Write(zeros)
		require.NoError(t, w.Close())
		one = buf.Bytes()
	case Snappy:
		out := bytes.Clone(xerialHeader)
		block := s2.EncodeSnappy(nil, zeros[:xerialBlockSize])
		for range MaxUncompressedBytes/xerialBlockSize + 1 {
			out = binary.BigEndian.AppendUint32(out, uint32(len(block)))
			out = append(out, block...)
		}
		return out
	}
	return bytes.Repeat(one, MaxUncompressedBytes/chunk+1)
}

// TestDecompressionBomb checks that records that decompress past
// MaxUncompressedBytes are rejected having allocated about that much, not
// what they would decompress to.
func TestDecompressionBomb(t *testing.T) {
	if testing.Short() {
		t.Skip("decompresses 64 MiB per codec")
	}
	for _, c := range allCodecs[1:] {
		t.Run(c.String(), func(t *testing.T) {
			b := rawBatch(Header{NumRecords: 1, Attributes: Attributes(c)}, bomb(t, c))
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			_, err := Decode(b)
			runtime.ReadMemStats(&after)
			require.ErrorIs(t, err, ErrCorrupt)
			require.ErrorContains(t, err, "decompress to more than 67108864 bytes")
			if !raceEnabled { // the codecs' pools, emptied at random, would count
				require.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(3*MaxUncompressedBytes))
			}
		})
	}

	// A zstd frame that states a size over the limit is refused before
	// decoding, and a raw snappy block likewise.
	enc, err := zstd.NewWriter(nil)
	require.NoError(t, err)
	frame := enc.EncodeAll(make([]byte, MaxUncompressedBytes+1), nil)
	_, err = Decode(rawBatch(Header{NumRecords: 1, Attributes: Attributes(Zstd)}, frame))
	require.ErrorContains(t, err, "decompress to more than")

	raw := binary.AppendUvarint(nil, MaxUncompressedBytes+1)
	_, err = Decode(rawBatch(Header{NumRecords: 1, Attributes: Attributes(Snappy)}, append(raw, 0, 0, 0)))
	require.ErrorContains(t, err, "decompress to more than")
}

func TestMaxUncompressedBytesFits(t *testing.T) {
	// Exactly the limit is fine.
	if testing.Short() {
		t.Skip("decompresses 64 MiB")
	}
	value := make([]byte, MaxUncompressedBytes-20)
	opts := DefaultBatchOptions()
	opts.Compression = LZ4
	raw := build(t, opts, []Record{{Value: value}})
	batch := mustDecode(t, raw)
	require.Len(t, batch.Records[0].Value, len(value))
}

// snappyBlock returns src as one raw snappy block.
func snappyBlock(src []byte) []byte { return s2.EncodeSnappy(nil, src) }
