package record

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestEmptyBatchKeepsProducerState checks that an emptied batch keeps what
// producer state and offsets are rebuilt from.
func TestEmptyBatchKeepsProducerState(t *testing.T) {
	opts := BatchOptions{BaseOffset: 100, PartitionLeaderEpoch: 3, ProducerID: 7, ProducerEpoch: 2, BaseSequence: 40,
		Transactional: true, Compression: Zstd, TimestampType: LogAppendTime, DeleteHorizon: 5000}
	b := NewBuilder(opts)
	for i := range 5 {
		b.Append(Record{Timestamp: 1000 + int64(i), Key: []byte("k"), Value: []byte("v")})
	}
	h, err := Validate(b.Build())
	require.NoError(t, err)

	e := EmptyBatch(h)
	got, err := Decode(e)
	require.NoError(t, err)
	require.Empty(t, got.Records)
	require.Equal(t, h.BaseOffset, got.BaseOffset)
	require.Equal(t, h.LastOffset(), got.LastOffset())
	require.Equal(t, h.PartitionLeaderEpoch, got.PartitionLeaderEpoch)
	require.Equal(t, h.ProducerID, got.ProducerID)
	require.Equal(t, h.ProducerEpoch, got.ProducerEpoch)
	require.Equal(t, h.BaseSequence, got.BaseSequence)
	require.True(t, got.Attributes.IsTransactional())
	require.False(t, got.Attributes.IsControl())
	require.False(t, got.Attributes.HasDeleteHorizon())
	require.Equal(t, None, got.Attributes.Compression())
	require.Equal(t, LogAppendTime, got.Attributes.TimestampType())
	require.Equal(t, h.MaxTimestamp, got.MaxTimestamp)
	require.Equal(t, HeaderSize, len(e))
}

// TestSetLastOffsetDelta checks that a batch rebuilt with fewer records
// keeps its offset range and stays valid.
func TestSetLastOffsetDelta(t *testing.T) {
	opts := DefaultBatchOptions()
	opts.BaseOffset = 10
	b := NewBuilder(opts)
	b.AppendWithOffset(Record{Offset: 11, Timestamp: 1, Key: []byte("a"), Value: []byte("1")})
	batch := b.Build()
	SetLastOffsetDelta(batch, 4)
	got, err := Decode(batch)
	require.NoError(t, err)
	require.Equal(t, int64(14), got.LastOffset())
	require.Len(t, got.Records, 1)
	require.Equal(t, int64(11), got.Records[0].Offset)
}

// FuzzEmptyBatch empties any header that parses: the result must be a valid
// batch without records and with the header's offsets and producer.
func FuzzEmptyBatch(f *testing.F) {
	for _, seed := range decodeSeeds() {
		f.Add(seed.data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		h, err := ParseHeader(data)
		if err != nil {
			return
		}
		e := EmptyBatch(h)
		got, err := Decode(e)
		require.NoError(t, err)
		require.Empty(t, got.Records)
		require.Equal(t, h.BaseOffset, got.BaseOffset)
		require.Equal(t, h.LastOffsetDelta, got.LastOffsetDelta)
		require.Equal(t, h.ProducerID, got.ProducerID)
		require.Equal(t, h.ProducerEpoch, got.ProducerEpoch)
		require.Equal(t, h.BaseSequence, got.BaseSequence)
		require.Equal(t, h.Attributes.IsControl(), got.Attributes.IsControl())
		require.Equal(t, h.Attributes.IsTransactional(), got.Attributes.IsTransactional())
		if len(data) >= h.Size() {
			if _, err := Validate(data[:h.Size()]); err == nil {
				// A valid batch keeps its records when its offset
				// range is widened.
				c := bytes.Clone(data[:h.Size()])
				SetLastOffsetDelta(c, h.LastOffsetDelta)
				require.Equal(t, data[:h.Size()], c)
			}
		}
	})
}
