package kafka

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestCoordinatorPartitionMatchesKafka(t *testing.T) {
	// Java: "lzl".hashCode() == 107678; "hello".hashCode() == 99162322;
	// "polygenelubricants".hashCode() == Integer.MIN_VALUE, which
	// Utils.abs takes to 0; "Aa" and "BB" collide at 2112.
	require.Equal(t, int32(107678), javaHashCode("lzl"))
	require.Equal(t, int32(99162322), javaHashCode("hello"))
	require.Equal(t, int32(-1<<31), javaHashCode("polygenelubricants"))
	require.Equal(t, javaHashCode("Aa"), javaHashCode("BB"))
	require.Equal(t, int32(107678%50), CoordinatorPartition("lzl", 50))
	require.Equal(t, int32(99162322%50), CoordinatorPartition("hello", 50))
	require.Equal(t, int32(0), CoordinatorPartition("polygenelubricants", 50))
	// A negative hash: "billing-consumers".
	h := javaHashCode("zzzzzzzz")
	require.Less(t, h, int32(0))
	require.Equal(t, (-h)%7, CoordinatorPartition("zzzzzzzz", 7))
}
