package vfs

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// bits is the obvious model of a spanSet.
type bits []bool

func (b bits) spans() spanSet {
	var s spanSet
	for i := 0; i < len(b); i++ {
		if !b[i] {
			continue
		}
		j := i
		for j < len(b) && b[j] {
			j++
		}
		s = append(s, span{int64(i), int64(j)})
		i = j
	}
	return s
}

func TestSpanSetMatchesBitmap(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for round := range 100 {
		var s spanSet
		b := make(bits, 64)
		for range 30 {
			lo := rng.Int64N(64)
			hi := lo + rng.Int64N(64-lo+1)
			switch rng.IntN(3) {
			case 0, 1:
				s = s.add(lo, hi)
				for i := lo; i < hi; i++ {
					b[i] = true
				}
			case 2:
				s = s.cut(lo, hi)
				for i := lo; i < hi; i++ {
					b[i] = false
				}
			}
			want := b.spans()
			if len(want) == 0 {
				require.Empty(t, s, "round %d", round)
			} else {
				require.Equal(t, want, s, "round %d", round)
			}
			for i := range int64(64) {
				require.Equal(t, b[i], s.contains(i))
			}
			lo = rng.Int64N(64)
			hi = lo + rng.Int64N(64-lo+1)
			var gaps bits = make(bits, 64)
			s.gaps(lo, hi, func(glo, ghi int64) {
				for i := glo; i < ghi; i++ {
					gaps[i] = true
				}
			})
			for i := range int64(64) {
				require.Equal(t, i >= lo && i < hi && !b[i], gaps[i], "gap at %d of [%d,%d)", i, lo, hi)
			}
		}
	}
}

func TestPatchListWithoutAndTruncate(t *testing.T) {
	l := patchList{
		{span{0, 4}, []byte("abcd")},
		{span{6, 10}, nil},
		{span{12, 16}, []byte("wxyz")},
	}
	got := l.without(spanSet{{2, 7}, {13, 14}})
	require.Equal(t, patchList{
		{span{0, 2}, []byte("ab")},
		{span{7, 10}, nil},
		{span{12, 13}, []byte("w")},
		{span{14, 16}, []byte("yz")},
	}, got)

	buf := []byte("................")
	got.truncate(15).apply(buf)
	require.Equal(t, "ab.....\x00\x00\x00..w.y.", string(buf))
}
