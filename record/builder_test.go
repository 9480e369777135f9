package record

import (
	"bytes"
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestRoundTrip(t *testing.T) {
	cases := map[string][]Record{
		"one": {{Timestamp: 1, Key: []byte("k"), Value: []byte("v")}},
		"null key and value": {
			{Timestamp: 5, Key: nil, Value: nil},
			{Timestamp: 5, Key: []byte{}, Value: []byte{}},
			{Timestamp: 5, Key: nil, Value: []byte{}},
			{Timestamp: 5, Key: []byte{}, Value: nil},
		},
		"headers": {
			{Timestamp: 9, Headers: []RecordHeader{{Key: "a", Value: []byte("1")}, {Key: "a", Value: nil}, {Key: "", Value: []byte{}}}},
			{Timestamp: 9, Headers: []RecordHeader{{Key: "a", Value: []byte("2")}}},
			{Timestamp: 9, Headers: []RecordHeader{{Key: "b", Value: []byte("3")}, {Key: "ümlaut", Value: bytes.Repeat([]byte{7}, 200)}}},
		},
		"timestamps back and forth": {
			{Timestamp: 1_700_000_000_000, Value: []byte("a")},
			{Timestamp: 1_600_000_000_000, Value: []byte("b")}, // large negative delta
			{Timestamp: 1_800_000_000_000, Value: []byte("c")},
			{Timestamp: -1, Value: []byte("d")},
			{Timestamp: 0, Value: []byte("e")},
		},
		"extreme timestamps": {
			{Timestamp: math.MinInt64, Value: []byte("a")},
			{Timestamp: math.MaxInt64, Value: []byte("b")}, // the delta wraps and unwraps
			{Timestamp: 0},
		},
		"many":  sampleRecords(5000),
		"large": {{Timestamp: 3, Key: bytes.Repeat([]byte("k"), 70000), Value: bytes.Repeat([]byte("0123456789"), 100_000)}},
	}
	for name, recs := range cases {
		for _, c := range allCodecs {
			t.Run(name+"/"+c.String(), func(t *testing.T) {
				opts := BatchOptions{
					BaseOffset:           1234,
					PartitionLeaderEpoch: 5,
					ProducerID:           99,
					ProducerEpoch:        2,
					BaseSequence:         1000,
					Compression:          c,
				}
				b := NewBuilder(opts)
				for _, r := range recs {
					b.Append(r)
				}
				raw := b.Build()
				if c == None {
					require.Len(t, raw, b.Size())
				}
				batch := mustDecode(t, raw)
				require.Equal(t, withOffsets(1234, recs), batch.Records)

				h := batch.Header
				require.Equal(t, len(raw), h.Size())
				require.Equal(t, int32(len(recs)), h.NumRecords)
				require.Equal(t, int32(len(recs)-1), h.LastOffsetDelta)
				require.Equal(t, recs[0].Timestamp, h.BaseTimestamp)
				maxTs := recs[0].Timestamp
				for _, r := range recs {
					maxTs = max(maxTs, r.Timestamp)
				}
				require.Equal(t, maxTs, h.MaxTimestamp)
				require.Equal(t, c, h.Attributes.Compression())
				require.Equal(t, opts, h.Options())

				// AppendTo writes the same bytes after what dst holds.
				dst := b.AppendTo([]byte("prefix"))
				require.Equal(t, "prefix", string(dst[:6]))
				require.Equal(t, raw, dst[6:])
			})
		}
	}
}

func TestEmptyBatch(t *testing.T) {
	for _, c := range allCodecs {
		opts := DefaultBatchOptions()
		opts.Compression = c
		b := NewBuilder(opts)
		raw := b.Build()
		require.Len(t, raw, HeaderSize, "an empty batch has an empty records section, even compressed")
		batch := mustDecode(t, raw)
		require.Empty(t, batch.Records)
		require.Equal(t, int32(0), batch.NumRecords)
		require.Equal(t, int32(0), batch.LastOffsetDelta)
		require.Equal(t, int64(NoTimestamp), batch.BaseTimestamp)
		require.Equal(t, int64(NoTimestamp), batch.MaxTimestamp)
		require.Equal(t, c, batch.Attributes.Compression())
	}
}

func TestBuilderResetAndContinue(t *testing.T) {
	recs := sampleRecords(10)
	b := NewBuilder(DefaultBatchOptions())
	for _, r := range recs[:5] {
		b.Append(r)
	}
	first := b.Build()
	require.Equal(t, withOffsets(0, recs[:5]), mustDecode(t, first).Records)

	// Build leaves the Builder as it was: appending continues the batch.
	for _, r := range recs[5:] {
		b.Append(r)
	}
	require.Equal(t, withOffsets(0, recs), mustDecode(t, b.Build()).Records)
	require.Equal(t, withOffsets(0, recs[:5]), mustDecode(t, first).Records, "an earlier Build's bytes are the caller's")

	opts := DefaultBatchOptions()
	opts.BaseOffset = 77
	opts.Compression = Snappy
	b.Reset(opts)
	require.Equal(t, 0, b.Len())
	require.Equal(t, HeaderSize, b.Size())
	for _, r := range recs[:3] {
		b.Append(r)
	}
	batch := mustDecode(t, b.Build())
	require.Equal(t, withOffsets(77, recs[:3]), batch.Records)
	require.Equal(t, Snappy, batch.Attributes.Compression())
}

func TestAppendWithOffset(t *testing.T) {
	opts := DefaultBatchOptions()
	opts.BaseOffset = 100
	recs := []Record{
		{Offset: 100, Timestamp: 10, Value: []byte("a")},
		{Offset: 103, Timestamp: 11, Value: []byte("b")},
		{Offset: 250, Timestamp: 12, Value: []byte("c")},
	}
	b := NewBuilder(opts)
	for _, r := range recs {
		b.AppendWithOffset(r)
	}
	b.Append(Record{Timestamp: 13}) // the next offset after the last
	batch := mustDecode(t, b.Build())
	require.Equal(t, append(recs, Record{Offset: 251, Timestamp: 13}), batch.Records)
	require.Equal(t, int32(151), batch.LastOffsetDelta)
	require.Equal(t, int64(251), batch.LastOffset())

	require.Panics(t, func() { b.AppendWithOffset(Record{Offset: 251}) }, "offsets must increase")
	require.Panics(t, func() { NewBuilder(opts).AppendWithOffset(Record{Offset: 99}) }, "below the base offset")
	require.Panics(t, func() { NewBuilder(opts).AppendWithOffset(Record{Offset: 100 + math.MaxInt32 + 1}) }, "past an int32 delta")
}

func TestBuildUnknownCodecPanics(t *testing.T) {
	opts := DefaultBatchOptions()
	opts.Compression = 6
	b := NewBuilder(opts)
	b.Append(Record{Value: []byte("x")})
	require.Panics(t, func() { b.Build() })
}

// TestBuilderDoesNotAllocate checks the hot path: a reused Builder appends
// records and writes the batch into a buffer with room without
// allocating.
func TestBuilderDoesNotAllocate(t *testing.T) {
	recs := sampleRecords(100)
	b := NewBuilder(DefaultBatchOptions())
	dst := make([]byte, 0, 1<<20)
	allocs := testing.AllocsPerRun(20, func() {
		b.Reset(DefaultBatchOptions())
		for _, r := range recs {
			b.Append(r)
		}
		dst = b.AppendTo(dst[:0])
	})
	require.Zero(t, allocs)

	allocs = testing.AllocsPerRun(20, func() { _ = b.Build() })
	require.Equal(t, 1.0, allocs, "Build allocates only its result")
}

func TestDecodeAllocations(t *testing.T) {
	recs := sampleRecords(100)
	raw := build(t, DefaultBatchOptions(), recs)
	allocs := testing.AllocsPerRun(20, func() { _, _ = Decode(raw) })
	// The Records slice, one shared Headers slice, and the header keys
	// that differ from the previous record's ("trace" after "", and back).
	require.LessOrEqual(t, allocs, 2.0+float64(len(recs)/4), "allocs")
	noHeaders := make([]Record, 1000)
	for i := range noHeaders {
		noHeaders[i] = Record{Timestamp: int64(i), Value: make([]byte, 100)}
	}
	raw = build(t, DefaultBatchOptions(), noHeaders)
	allocs = testing.AllocsPerRun(20, func() { _, _ = Decode(raw) })
	require.Equal(t, 1.0, allocs, "the Records slice only")
}
