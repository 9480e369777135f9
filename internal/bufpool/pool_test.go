package bufpool

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestClasses(t *testing.T) {
	for _, c := range []struct{ n, class int }{
		{0, -1}, {32 << 10, -1}, {32<<10 + 1, 0}, {64 << 10, 0}, {64<<10 + 1, 1},
		{2 << 20, 5}, {64 << 20, 10}, {64<<20 + 1, -1},
	} {
		require.Equal(t, c.class, classOf(c.n), "classOf(%d)", c.n)
	}
	var p Pool
	b := p.Get(100 << 10)
	require.Len(t, b, 100<<10)
	require.Equal(t, 128<<10, cap(b))
	p.Put(make([]byte, 100<<10)) // not of a class's size: dropped
	small := p.Get(1000)
	require.Len(t, small, 1000)
}

// TestPoison: with Poison on, what Put is given is overwritten, so that a
// reader left holding it sees damage.
func TestPoison(t *testing.T) {
	defer Poison(Poison(true))
	var p Pool
	b := p.Get(64 << 10)
	copy(b, "records")
	kept := b[:7]
	p.Put(b)
	require.Equal(t, bytes.Repeat([]byte{0xAA}, 7), kept)
}
