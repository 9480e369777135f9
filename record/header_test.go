package record

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestBuildExactBytes lays out a small batch field by field, as Kafka's
// DefaultRecordBatch documents it, and checks the Builder writes exactly
// those bytes.
func TestBuildExactBytes(t *testing.T) {
	longKey := bytes.Repeat([]byte{'K'}, 64) // length 64: varint 0x80 0x01
	opts := BatchOptions{
		BaseOffset:           0x0102030405060708,
		PartitionLeaderEpoch: 7,
		ProducerID:           0x1122334455667788,
		ProducerEpoch:        3,
		BaseSequence:         42,
		Transactional:        true,
	}
	recs := []Record{
		{Timestamp: 1000, Key: []byte("k"), Value: []byte("v0")},
		{Timestamp: 999, Key: nil, Value: []byte{}, Headers: []RecordHeader{{Key: "h", Value: nil}}},
		{Timestamp: 1064, Key: longKey, Value: nil},
	}
	got := build(t, opts, recs)

	var records []byte
	// Record 0: attributes 0, timestamp delta 0, offset delta 0,
	// key length 1 (zigzag 2) "k", value length 2 (zigzag 4) "v0",
	// no headers. Nine bytes, so the length prefix is zigzag(9) = 18.
	records = append(records, 18, 0, 0, 0, 2, 'k', 4, 'v', '0', 0)
	// Record 1: timestamp delta -1 (zigzag 1), offset delta 1 (zigzag 2),
	// null key (-1: zigzag 1), empty value (0), one header (zigzag 2):
	// key length 1 "h", null value. Nine bytes.
	records = append(records, 18, 0, 1, 2, 1, 0, 2, 2, 'h', 1)
	// Record 2: timestamp delta 64 (zigzag 128: 0x80 0x01), offset delta 2
	// (zigzag 4), key length 64 (0x80 0x01) and the key, null value, no
	// headers: 1+2+1+2+64+1+1 = 72 bytes, zigzag 144: 0x90 0x01.
	records = append(records, 0x90, 0x01, 0, 0x80, 0x01, 4, 0x80, 0x01)
	records = append(records, longKey...)
	records = append(records, 1, 0)

	want := make([]byte, 0, 61+len(records))
	want = binary.BigEndian.AppendUint64(want, 0x0102030405060708)      // base offset
	want = binary.BigEndian.AppendUint32(want, uint32(49+len(records))) // batch length
	want = binary.BigEndian.AppendUint32(want, 7)                       // partition leader epoch
	want = append(want, 2)                                              // magic
	want = binary.BigEndian.AppendUint32(want, 0)                       // crc, below
	want = binary.BigEndian.AppendUint16(want, 0x10)                    // attributes: transactional
	want = binary.BigEndian.AppendUint32(want, 2)                       // last offset delta
	want = binary.BigEndian.AppendUint64(want, 1000)                    // base timestamp
	want = binary.BigEndian.AppendUint64(want, 1064)                    // max timestamp
	want = binary.BigEndian.AppendUint64(want, 0x1122334455667788)      // producer id
	want = binary.BigEndian.AppendUint16(want, 3)                       // producer epoch
	want = binary.BigEndian.AppendUint32(want, 42)                      // base sequence
	want = binary.BigEndian.AppendUint32(want, 3)                       // record count
	require.Len(t, want, 61)
	want = append(want, records...)
	crc := crc32.Checksum(want[21:], crc32.MakeTable(crc32.Castagnoli))
	binary.BigEndian.PutUint32(want[17:], crc)

	require.Equal(t, want, got)

	b := NewBuilder(opts)
	for _, r := range recs {
		b.Append(r)
	}
	require.Equal(t, len(want), b.Size())
	require.Equal(t, 3, b.Len())

	batch := mustDecode(t, got)
	require.Equal(t, crc, batch.CRC)
	require.Equal(t, withOffsets(0x0102030405060708, recs), batch.Records)
}

func TestHeaderAccessors(t *testing.T) {
	h := Header{BaseOffset: 100, BatchLength: 200, LastOffsetDelta: 9}
	require.Equal(t, 212, h.Size())
	require.Equal(t, int64(109), h.LastOffset())
	require.Equal(t, int64(110), h.NextOffset())
}

func TestAttributes(t *testing.T) {
	a := Attributes(0x7c) // zstd, LogAppendTime, transactional, control, delete horizon
	require.Equal(t, Zstd, a.Compression())
	require.Equal(t, LogAppendTime, a.TimestampType())
	require.True(t, a.IsTransactional())
	require.True(t, a.IsControl())
	require.True(t, a.HasDeleteHorizon())
	require.Equal(t, "compression=zstd,timestampType=LogAppendTime,transactional,control,deleteHorizon", a.String())

	a = Attributes(0x01)
	require.Equal(t, Gzip, a.Compression())
	require.Equal(t, CreateTime, a.TimestampType())
	require.False(t, a.IsTransactional())
	require.False(t, a.IsControl())
	require.False(t, a.HasDeleteHorizon())
	require.Equal(t, "compression=gzip,timestampType=CreateTime", a.String())

	for c, name := range map[Compression]string{None: "none", Gzip: "gzip", Snappy: "snappy", LZ4: "lz4", Zstd: "zstd", 5: "Compression(5)"} {
		require.Equal(t, name, c.String())
	}
	require.Equal(t, "TimestampType(2)", TimestampType(2).String())
}

func TestBatchOptionsToAttributes(t *testing.T) {
	opts := DefaultBatchOptions()
	opts.Compression = LZ4
	opts.TimestampType = LogAppendTime
	opts.Transactional = true
	opts.Control = true
	opts.DeleteHorizon = 5000
	h, err := Validate(build(t, opts, sampleRecords(3)))
	require.NoError(t, err)
	require.Equal(t, Attributes(0x7b), h.Attributes)
	require.Equal(t, int64(5000), h.BaseTimestamp)
	require.Equal(t, opts, h.Options())
}

func TestDefaultBatchOptions(t *testing.T) {
	h, err := Validate(build(t, DefaultBatchOptions(), sampleRecords(1)))
	require.NoError(t, err)
	require.Equal(t, int64(-1), h.ProducerID)
	require.Equal(t, int16(-1), h.ProducerEpoch)
	require.Equal(t, int32(-1), h.BaseSequence)
	require.Equal(t, int32(-1), h.PartitionLeaderEpoch)
	require.Equal(t, int64(0), h.BaseOffset)
	require.Equal(t, Attributes(0), h.Attributes)
}

// TestRewriteKeepsCRC checks that the fields the log rewrites are outside
// the CRC, and that SetMaxTimestamp recomputes it.
func TestRewriteKeepsCRC(t *testing.T) {
	for _, c := range allCodecs {
		t.Run(c.String(), func(t *testing.T) {
			opts := DefaultBatchOptions()
			opts.Compression = c
			recs := sampleRecords(20)
			b := build(t, opts, recs)
			before, err := Validate(b)
			require.NoError(t, err)

			SetBaseOffset(b, 1<<40)
			SetPartitionLeaderEpoch(b, 17)
			h, err := Validate(b)
			require.NoError(t, err)
			require.Equal(t, before.CRC, h.CRC)
			require.Equal(t, int64(1<<40), h.BaseOffset)
			require.Equal(t, int32(17), h.PartitionLeaderEpoch)
			require.Equal(t, withOffsets(1<<40, recs), mustDecode(t, b).Records)

			SetMaxTimestamp(b, LogAppendTime, 1_800_000_000_000)
			h, err = Validate(b)
			require.NoError(t, err)
			require.NotEqual(t, before.CRC, h.CRC)
			require.Equal(t, LogAppendTime, h.Attributes.TimestampType())
			require.Equal(t, c, h.Attributes.Compression())
			require.Equal(t, int64(1_800_000_000_000), h.MaxTimestamp)
			for _, r := range mustDecode(t, b).Records {
				require.Equal(t, int64(1_800_000_000_000), r.Timestamp)
			}

			SetMaxTimestamp(b, CreateTime, before.MaxTimestamp)
			h, err = Validate(b)
			require.NoError(t, err)
			require.Equal(t, before.CRC, h.CRC)
		})
	}
}

func TestParseHeaderErrors(t *testing.T) {
	valid := build(t, DefaultBatchOptions(), sampleRecords(3))
	put32 := func(off int, v int32) []byte {
		b := bytes.Clone(valid)
		binary.BigEndian.PutUint32(b[off:], uint32(v))
		return b
	}
	tests := []struct {
		name string
		b    []byte
		want error
		msg  string
	}{
		{"empty", nil, ErrTruncated, "have 0 bytes, need 61"},
		{"short header", valid[:60], ErrTruncated, "have 60 bytes, need 61"},
		{"magic 1", func() []byte { b := bytes.Clone(valid); b[MagicOffset] = 1; return b }(), ErrUnsupportedMagic, "magic byte: 1"},
		{"magic 0", func() []byte { b := bytes.Clone(valid); b[MagicOffset] = 0; return b }(), ErrUnsupportedMagic, "magic byte: 0"},
		{"magic 3", func() []byte { b := bytes.Clone(valid); b[MagicOffset] = 3; return b }(), ErrUnsupportedMagic, "magic byte: 3"},
		{"batch length below header", put32(BatchLengthOffset, 48), ErrCorrupt, "batch length 48 is below the minimum 49"},
		{"negative batch length", put32(BatchLengthOffset, -1), ErrCorrupt, "batch length -1"},
		{"negative last offset delta", put32(LastOffsetDeltaOffset, -1), ErrCorrupt, "negative last offset delta -1"},
		{"negative record count", put32(NumRecordsOffset, -3), ErrCorrupt, "negative record count -3"},
		{"record count past length", put32(NumRecordsOffset, 1<<30), ErrCorrupt, "1073741824 records cannot fit"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseHeader(tt.b)
			require.ErrorIs(t, err, tt.want)
			require.ErrorContains(t, err, tt.msg)
			_, err = Validate(tt.b)
			require.ErrorIs(t, err, tt.want)
			_, err = Decode(tt.b)
			require.ErrorIs(t, err, tt.want)
		})
	}

	// A compressed batch's record count is checked against its
	// decompressed size, not its header.
	opts := DefaultBatchOptions()
	opts.Compression = Zstd
	b := build(t, opts, sampleRecords(3))
	binary.BigEndian.PutUint32(b[NumRecordsOffset:], 1<<30)
	_, err := ParseHeader(b)
	require.NoError(t, err)
}

func TestValidateErrors(t *testing.T) {
	valid := build(t, DefaultBatchOptions(), sampleRecords(5))

	_, err := Validate(append(bytes.Clone(valid), 0))
	require.ErrorIs(t, err, ErrCorrupt)
	require.ErrorContains(t, err, "1 bytes after the")

	b := bytes.Clone(valid)
	b[len(b)-1] ^= 0x01
	_, err = Validate(b)
	require.ErrorIs(t, err, ErrCorrupt)
	var ce *CorruptError
	require.True(t, errors.As(err, &ce))
	require.Contains(t, ce.Reason, "crc mismatch: stored 0x")

	for c := Compression(5); c <= 7; c++ {
		b := bytes.Clone(valid)
		attrs := binary.BigEndian.Uint16(b[AttributesOffset:])
		binary.BigEndian.PutUint16(b[AttributesOffset:], attrs&^0x7|uint16(c))
		putCRC(b)
		_, err := ParseHeader(b)
		require.NoError(t, err, "ParseHeader leaves the codec to Validate")
		_, err = Validate(b)
		require.ErrorIs(t, err, ErrUnsupportedCompression)
		require.ErrorContains(t, err, "codec: "+string(rune('0'+c)))
		_, err = Decode(b)
		require.ErrorIs(t, err, ErrUnsupportedCompression)
	}
}

// TestTruncatedEverywhere cuts valid batches of every shape at every length
// and expects ErrTruncated, never a panic.
func TestTruncatedEverywhere(t *testing.T) {
	for _, c := range allCodecs {
		opts := DefaultBatchOptions()
		opts.Compression = c
		for _, b := range [][]byte{
			build(t, opts, sampleRecords(8)),
			build(t, opts, nil),
			ControlBatch(ControlCommit, 5, 1, 2, 3),
		} {
			for n := range len(b) {
				_, err := Validate(b[:n])
				require.ErrorIs(t, err, ErrTruncated, "%s, %d of %d bytes", c, n, len(b))
				_, err = Decode(b[:n])
				require.ErrorIs(t, err, ErrTruncated, "%s, %d of %d bytes", c, n, len(b))
			}
		}
	}
}

// TestBitFlips flips every bit of valid batches. Inside the CRC's reach
// every flip is ErrCorrupt; outside it, each field fails in its own way
// or, for the fields the log rewrites, not at all.
func TestBitFlips(t *testing.T) {
	for _, c := range allCodecs {
		opts := DefaultBatchOptions()
		opts.Compression = c
		valid := build(t, opts, sampleRecords(6))
		for i := range valid {
			for bit := range 8 {
				b := bytes.Clone(valid)
				b[i] ^= 1 << bit
				_, verr := Validate(b)
				_, derr := Decode(b)
				msg := []any{"%s: byte %d bit %d", c, i, bit}
				switch {
				case i >= CRCOffset: // the CRC itself, or what it covers
					require.ErrorIs(t, verr, ErrCorrupt, msg...)
					require.ErrorIs(t, derr, ErrCorrupt, msg...)
				case i < BatchLengthOffset || (i >= PartitionLeaderEpochOffset && i < MagicOffset):
					require.NoError(t, verr, msg...)
					require.NoError(t, derr, msg...)
				case i == MagicOffset:
					require.ErrorIs(t, verr, ErrUnsupportedMagic, msg...)
					require.ErrorIs(t, derr, ErrUnsupportedMagic, msg...)
				default: // batch length: too short, too long, or past the header check
					require.Error(t, verr, msg...)
					require.True(t, errors.Is(verr, ErrTruncated) || errors.Is(verr, ErrCorrupt), msg...)
					require.Error(t, derr, msg...)
				}
			}
		}
	}
}
