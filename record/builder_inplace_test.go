package record

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestFinishInPlace checks that Finish returns exactly what Build does,
// in the Builder's own buffer, that it writes the whole header anew after
// a holder rewrote it in place (as the log does), that the batch can go
// on after it, and that a compressed batch is left to AppendTo.
func TestFinishInPlace(t *testing.T) {
	opts := DefaultBatchOptions()
	b := NewBuilder(opts)
	recs := sampleRecords(50)
	for _, r := range recs[:40] {
		b.Append(r)
	}
	want := b.Build()
	got, ok := b.Finish()
	require.True(t, ok)
	require.Equal(t, want, got)
	require.Same(t, &b.buf[0], &got[0], "Finish copied the batch")

	// A log assigns offsets and a leader epoch, and with LogAppendTime
	// new timestamps and CRC, in place.
	SetBaseOffset(got, 777)
	SetPartitionLeaderEpoch(got, 9)
	SetMaxTimestamp(got, LogAppendTime, 123456)
	again, ok := b.Finish()
	require.True(t, ok)
	require.Equal(t, want, again, "Finish did not restore the header")

	b.SetProducer(5, 1, 100)
	for _, r := range recs[40:] {
		b.Append(r)
	}
	all, ok := b.Finish()
	require.True(t, ok)
	require.Equal(t, b.Build(), all)
	batch := mustDecode(t, all)
	require.Equal(t, withOffsets(0, recs), batch.Records)
	require.Equal(t, int64(5), batch.ProducerID)
	require.Equal(t, int32(100), batch.BaseSequence)

	for _, c := range allCodecs {
		if c == None {
			continue
		}
		opts.Compression = c
		cb := NewBuilder(opts)
		cb.Append(recs[0])
		out, ok := cb.Finish()
		require.False(t, ok, "%v", c)
		require.Nil(t, out)
	}
}

// TestFinishDoesNotAllocate checks that Finish encodes without allocating.
func TestFinishDoesNotAllocate(t *testing.T) {
	b := NewBuilder(DefaultBatchOptions())
	for _, r := range sampleRecords(10) {
		b.Append(r)
	}
	require.Zero(t, testing.AllocsPerRun(100, func() { b.Finish() }))
}
