package record

import (
	"encoding/binary"
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestVarintMatchesProtobufZigzag(t *testing.T) {
	values := []int64{0, 1, -1, 2, -2, 63, -64, 64, -65, 8191, -8192, 8192,
		math.MaxInt32, math.MinInt32, math.MaxInt32 + 1, math.MinInt32 - 1,
		math.MaxInt64, math.MinInt64, 1 << 40, -(1 << 40)}
	for _, v := range values {
		got := appendVarlong(nil, v)
		require.Equal(t, binary.AppendVarint(nil, v), got, "%d", v) // Go's varint is zigzag too
		require.Len(t, got, varlongLen(v), "%d", v)

		back, pos := readVarlong(got, 0)
		require.Equal(t, len(got), pos)
		require.Equal(t, v, back)

		if v >= math.MinInt32 && v <= math.MaxInt32 {
			require.Len(t, got, varintLen(int32(v)))
			back32, pos := readVarint(got, 0)
			require.Equal(t, len(got), pos)
			require.Equal(t, int32(v), back32)
		} else {
			_, pos := readVarint(got, 0)
			require.Equal(t, varintOverlong, pos, "%d does not fit an int32 varint", v)
		}
	}
}

func TestVarintErrors(t *testing.T) {
	for _, tt := range []struct {
		b        []byte
		int32Pos int
		int64Pos int
	}{
		{nil, varintTruncated, varintTruncated},
		{[]byte{0x80}, varintTruncated, varintTruncated},
		{[]byte{0xff, 0xff, 0xff, 0xff}, varintTruncated, varintTruncated},
		{[]byte{0xff, 0xff, 0xff, 0xff, 0x0f}, 5, 5},                    // largest 32-bit pattern
		{[]byte{0xff, 0xff, 0xff, 0xff, 0x10}, varintOverlong, 5},       // bit 32
		{[]byte{0x80, 0x80, 0x80, 0x80, 0x80, 0x00}, varintOverlong, 6}, // six bytes
		{[]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}, varintOverlong, 10},
		{[]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02}, varintOverlong, varintOverlong},
		{[]byte{0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00}, varintOverlong, varintOverlong},
	} {
		_, pos := readVarint(tt.b, 0)
		require.Equal(t, tt.int32Pos, pos, "varint % x", tt.b)
		_, pos = readVarlong(tt.b, 0)
		require.Equal(t, tt.int64Pos, pos, "varlong % x", tt.b)
	}
	require.Equal(t, "overlong varint", varintProblem(varintOverlong))
	require.Equal(t, "truncated varint", varintProblem(varintTruncated))
}
