package record

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestControlBatch(t *testing.T) {
	for _, typ := range []ControlType{ControlAbort, ControlCommit} {
		raw := ControlBatch(typ, 4242, 7, 19, 1_700_000_000_123)
		batch := mustDecode(t, raw)
		require.True(t, batch.Attributes.IsControl())
		require.True(t, batch.Attributes.IsTransactional())
		require.Equal(t, None, batch.Attributes.Compression())
		require.Equal(t, int64(4242), batch.ProducerID)
		require.Equal(t, int16(7), batch.ProducerEpoch)
		require.Equal(t, int32(NoSequence), batch.BaseSequence)
		require.Equal(t, int32(NoPartitionLeaderEpoch), batch.PartitionLeaderEpoch)
		require.Equal(t, int32(1), batch.NumRecords)
		require.Equal(t, int64(1_700_000_000_123), batch.MaxTimestamp)
		require.Len(t, batch.Records, 1)

		r := batch.Records[0]
		require.Equal(t, []byte{0, 0, 0, byte(typ)}, r.Key, "version 0, type")
		require.Equal(t, []byte{0, 0, 0, 0, 0, 19}, r.Value, "version 0, coordinator epoch")
		require.Equal(t, int64(1_700_000_000_123), r.Timestamp)

		c, err := ParseControlRecord(r)
		require.NoError(t, err)
		require.Equal(t, ControlRecord{Type: typ, CoordinatorEpoch: 19}, c)
	}
	require.Equal(t, "ABORT", ControlAbort.String())
	require.Equal(t, "COMMIT", ControlCommit.String())
	require.Equal(t, "ControlType(3)", ControlType(3).String())
}

func TestParseControlRecord(t *testing.T) {
	tests := []struct {
		name string
		r    Record
		want ControlRecord
		err  string
	}{
		{"commit", Record{Key: []byte{0, 0, 0, 1}, Value: []byte{0, 0, 0, 0, 1, 0}}, ControlRecord{ControlCommit, 256}, ""},
		{"negative epoch", Record{Key: []byte{0, 0, 0, 0}, Value: []byte{0, 0, 0xff, 0xff, 0xff, 0xff}}, ControlRecord{ControlAbort, -1}, ""},
		{"newer versions, longer fields", Record{Key: []byte{0, 1, 0, 1, 9}, Value: []byte{0, 3, 0, 0, 0, 5, 9, 9}}, ControlRecord{ControlCommit, 5}, ""},
		{"other type, any value", Record{Key: []byte{0, 0, 0, 2}, Value: []byte{1}}, ControlRecord{Type: 2}, ""},
		{"null key", Record{Value: []byte{0, 0, 0, 0, 0, 0}}, ControlRecord{}, "control record key of 0 bytes, want 4"},
		{"short key", Record{Key: []byte{0, 0, 0}}, ControlRecord{}, "control record key of 3 bytes"},
		{"negative key version", Record{Key: []byte{0xff, 0xff, 0, 1}}, ControlRecord{}, "control record key version -1"},
		{"short value", Record{Key: []byte{0, 0, 0, 1}, Value: []byte{0, 0, 0}}, ControlRecord{}, "COMMIT marker value of 3 bytes, want 6"},
		{"null value", Record{Key: []byte{0, 0, 0, 0}}, ControlRecord{}, "ABORT marker value of 0 bytes"},
		{"negative value version", Record{Key: []byte{0, 0, 0, 0}, Value: []byte{0x80, 0, 0, 0, 0, 0}}, ControlRecord{}, "ABORT marker value version -32768"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseControlRecord(tt.r)
			if tt.err != "" {
				require.ErrorIs(t, err, ErrCorrupt)
				require.ErrorContains(t, err, tt.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
}

func TestParseControlBatch(t *testing.T) {
	c, ok, err := ParseControlBatch(ControlBatch(ControlAbort, 9, 3, 17, 1000), VerifyCRC)
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, ControlRecord{Type: ControlAbort, CoordinatorEpoch: 17}, c)

	// A data batch is not one; a damaged one fails its CRC.
	data := NewBuilder(DefaultBatchOptions())
	data.Append(Record{Value: []byte("v")})
	_, _, err = ParseControlBatch(data.Build(), VerifyCRC)
	require.ErrorIs(t, err, ErrCorrupt)
	raw := ControlBatch(ControlCommit, 9, 3, 17, 1000)
	raw[len(raw)-1] ^= 1
	_, _, err = ParseControlBatch(raw, VerifyCRC)
	require.ErrorIs(t, err, ErrCorrupt)

	// An emptied control batch closes nothing.
	h, err := Validate(ControlBatch(ControlCommit, 9, 3, 17, 1000))
	require.NoError(t, err)
	_, ok, err = ParseControlBatch(EmptyBatch(h), VerifyCRC)
	require.NoError(t, err)
	require.False(t, ok)
}
