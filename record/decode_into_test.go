package record

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestDecodeIntoMatchesDecode decodes every seed of FuzzDecode with both
// functions, into a dst that holds an earlier, larger batch: the results
// and errors must be the same.
func TestDecodeIntoMatchesDecode(t *testing.T) {
	var dst []Record
	big, err := Decode(buildSeed(DefaultBatchOptions(), sampleRecords(40)))
	require.NoError(t, err)
	for _, s := range decodeSeeds() {
		t.Run(s.name, func(t *testing.T) {
			dst = append(dst[:0], big.Records...) // stale records to overwrite
			want, wantErr := Decode(s.data)
			got, err := DecodeInto(dst, s.data, VerifyCRC)
			if wantErr != nil {
				require.EqualError(t, err, wantErr.Error())
				return
			}
			require.NoError(t, err)
			require.Equal(t, want.Header, got.Header)
			require.Equal(t, len(want.Records), len(got.Records))
			if len(want.Records) == 0 {
				require.Empty(t, got.Records)
				return
			}
			require.Equal(t, want.Records, got.Records)
			require.Same(t, &dst[0], &got.Records[0], "decoded into dst's array")
		})
	}
}

func TestDecodeIntoMalformedRecords(t *testing.T) {
	ok := rawRecord(0, 0, 0, 1, 1, 0)
	for _, tt := range []struct {
		name    string
		num     int32
		records []byte
		msg     string
	}{
		{"count above records", 2, rawRecord(0, 0, 0, 1, 20, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 0), "the header says 2 records, the batch holds 1"},
		{"trailing byte", 1, append(bytes.Clone(ok), 0), "1 bytes after the last record"},
		{"key length -5", 1, rawRecord(0, 0, 0, 9, 1, 0), "record 0: key length -5"},
		{"null header key", 1, rawRecord(0, 0, 0, 1, 1, 2, 1, 1), "record 0: header key length -1"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			b := rawBatch(Header{NumRecords: tt.num, LastOffsetDelta: tt.num - 1}, tt.records)
			for _, crc := range []CRCCheck{VerifyCRC, SkipCRC} {
				_, err := DecodeInto(make([]Record, 4), b, crc)
				require.ErrorIs(t, err, ErrCorrupt)
				require.ErrorContains(t, err, tt.msg)
			}
		})
	}
}

func TestDecodeIntoSkipCRC(t *testing.T) {
	b := buildSeed(DefaultBatchOptions(), sampleRecords(3))
	b[len(b)-3] ^= 0x40 // inside the last record's value: parses, CRC fails
	_, err := DecodeInto(nil, b, VerifyCRC)
	require.ErrorIs(t, err, ErrCorrupt)
	require.ErrorContains(t, err, "crc mismatch")

	got, err := DecodeInto(nil, b, SkipCRC)
	require.NoError(t, err)
	require.Len(t, got.Records, 3)

	// Everything but the CRC is still checked.
	_, err = DecodeInto(nil, b[:len(b)-1], SkipCRC)
	require.ErrorIs(t, err, ErrTruncated)
	_, err = DecodeInto(nil, append(bytes.Clone(b), 0), SkipCRC)
	require.ErrorIs(t, err, ErrCorrupt)
	bad := bytes.Clone(b)
	bad[AttributesOffset+1] |= 7 // codec 7
	_, err = DecodeInto(nil, bad, SkipCRC)
	require.ErrorIs(t, err, ErrUnsupportedCompression)
}

// TestDecodeIntoReuse checks that a reused dst allocates nothing for the
// records, and that headers survive the next call.
func TestDecodeIntoReuse(t *testing.T) {
	recs := sampleRecords(8)
	first := buildSeed(DefaultBatchOptions(), recs)
	second := buildSeed(DefaultBatchOptions(), sampleRecords(8)[:4])
	b1, err := DecodeInto(nil, first, VerifyCRC)
	require.NoError(t, err)
	kept := b1.Records[2].Headers
	b2, err := DecodeInto(b1.Records, second, VerifyCRC)
	require.NoError(t, err)
	require.Len(t, b2.Records, 4)
	require.Equal(t, recs[2].Headers, kept, "headers are not reused")
	require.Nil(t, b2.Records[1].Headers, "no stale headers")

	plain := buildSeed(DefaultBatchOptions(), benchRecords(100))
	dst := make([]Record, 0, 100)
	allocs := testing.AllocsPerRun(10, func() {
		if _, err := DecodeInto(dst, plain, VerifyCRC); err != nil {
			t.Fatal(err)
		}
	})
	require.Zero(t, allocs)
}

func BenchmarkDecodeInto(b *testing.B) {
	recs := benchRecords(1000)
	for _, crc := range []CRCCheck{VerifyCRC, SkipCRC} {
		name := "crc"
		if crc == SkipCRC {
			name = "nocrc"
		}
		b.Run(name, func(b *testing.B) {
			raw := build(b, DefaultBatchOptions(), recs)
			dst := make([]Record, 0, len(recs))
			b.SetBytes(int64(len(recs) * 100))
			b.ReportAllocs()
			for b.Loop() {
				batch, err := DecodeInto(dst, raw, crc)
				if err != nil {
					b.Fatal(err)
				}
				dst = batch.Records
			}
			b.ReportMetric(float64(b.N)*float64(len(recs))/b.Elapsed().Seconds(), "records/s")
		})
	}
}
