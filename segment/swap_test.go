package segment_test

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/partlog/partlog/internal/batchtest"
	"github.com/partlog/partlog/record"
	"github.com/partlog/partlog/segment"
)

// TestSwapSuffixes writes a segment under ".cleaned" names and renames it
// through ".swap" to its final names, as the log cleaner does; it stays
// readable throughout and opens under its final names afterwards.
func TestSwapSuffixes(t *testing.T) {
	fsys := newFS(t)
	s, err := segment.CreateWithSuffix(fsys, dir, 10, 0, segment.Options{IndexIntervalBytes: 1}, segment.CleanedSuffix)
	require.NoError(t, err)
	b := batchtest.Simple(3, 5)
	record.SetBaseOffset(b, 10)
	h, err := record.Validate(b)
	require.NoError(t, err)
	require.NoError(t, s.Append(h, b))
	require.NoError(t, s.Seal())
	names := func() []string {
		n, err := fsys.List(dir)
		require.NoError(t, err)
		slices.Sort(n)
		return n
	}
	require.Equal(t, []string{"00000000000000000010.index.cleaned", "00000000000000000010.log.cleaned", "00000000000000000010.timeindex.cleaned"}, names())
	require.Equal(t, dir+"/00000000000000000010.log.cleaned", s.Path(segment.LogSuffix))

	require.NoError(t, s.RenameFiles(segment.SwapSuffix))
	require.Equal(t, segment.SwapSuffix, s.Suffix())
	require.Equal(t, []string{"00000000000000000010.index.swap", "00000000000000000010.log.swap", "00000000000000000010.timeindex.swap"}, names())
	got, err := s.Read(nil, 10, 13, 1<<20)
	require.NoError(t, err)
	require.Equal(t, b, got)

	require.NoError(t, s.RenameFiles(""))
	require.Equal(t, []string{"00000000000000000010.index", "00000000000000000010.log", "00000000000000000010.timeindex"}, names())
	require.NoError(t, s.Flush())
	require.NoError(t, s.Close())
	o, err := segment.Open(fsys, dir, 10, 0, segment.Options{IndexIntervalBytes: 1})
	require.NoError(t, err)
	defer o.Close()
	require.Equal(t, int64(13), o.NextOffset())
	base, suffix, ok := segment.ParseFileName("00000000000000000010.log.swap")
	require.True(t, ok)
	require.Equal(t, int64(10), base)
	require.Equal(t, ".log.swap", suffix)
}
