package log_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	plog "github.com/partlog/partlog/log"
	"github.com/partlog/partlog/vfs"
)

// pread reads a vfs.FileRange's bytes as sendfile would send them.
func pread(t *testing.T, r vfs.FileRange) []byte {
	t.Helper()
	b := make([]byte, r.Size)
	n, err := unix.Pread(r.FD, b, r.Pos)
	require.NoError(t, err)
	require.Equal(t, int(r.Size), n)
	return b
}

// TestReadRangeMatchesRead checks that the file range ReadRange names
// holds exactly the bytes Read returns, for every offset and several byte
// limits, on the OS filesystem.
func TestReadRangeMatchesRead(t *testing.T) {
	dir := t.TempDir()
	opts := smallOptions(vfs.Default)
	l, err := plog.Open(dir, opts)
	require.NoError(t, err)
	defer l.Close()
	for i := range 100 {
		appendN(t, l, 1+i%4, "r", 1_000_000+int64(i))
	}
	require.Greater(t, len(l.Segments()), 2)
	leo := l.LogEndOffset()
	for off := int64(0); off <= leo; off++ {
		for _, maxBytes := range []int{1, 300, 4096} {
			for _, maxOffset := range []int64{leo, off + 3} {
				want, err := l.Read(nil, off, maxOffset, maxBytes)
				require.NoError(t, err)
				r, err := l.ReadRange(off, maxOffset, maxBytes)
				require.NoError(t, err)
				if len(want) == 0 {
					require.Zero(t, r.Size, "offset %d", off)
					continue
				}
				require.Equal(t, want, pread(t, r), "offset %d, max bytes %d, max offset %d", off, maxBytes, maxOffset)
				require.NoError(t, r.Close())
			}
		}
	}
	_, err = l.ReadRange(leo+1, leo+1, 100)
	require.ErrorIs(t, err, plog.ErrOffsetOutOfRange)
}

// TestReadRangeOutlivesItsSegment checks that a range still reads its
// bytes after retention deleted the segment it lies in.
func TestReadRangeOutlivesItsSegment(t *testing.T) {
	c := &clock{now: time.UnixMilli(1_000_000)}
	opts := smallOptions(vfs.Default)
	opts.Now, opts.RetentionMs = c.Now, time.Hour
	l, err := plog.Open(t.TempDir(), opts)
	require.NoError(t, err)
	defer l.Close()
	for i := range 60 {
		appendN(t, l, 3, "r", 1_000_000+int64(i)*60_000)
	}
	want, err := l.Read(nil, 0, l.LogEndOffset(), 1<<20)
	require.NoError(t, err)
	r, err := l.ReadRange(0, l.LogEndOffset(), 1<<20)
	require.NoError(t, err)
	defer r.Close()
	c.now = time.UnixMilli(1_000_000 + 3*time.Hour.Milliseconds())
	n, err := l.DeleteRetained()
	require.NoError(t, err)
	require.Positive(t, n)
	require.Positive(t, l.LogStartOffset())
	require.Equal(t, want, pread(t, r))
}

func TestReadRangeWithoutDescriptors(t *testing.T) {
	l := open(t, smallOptions(newMem(t)))
	defer l.Close()
	appendN(t, l, 3, "r", 1_000_000)
	_, err := l.ReadRange(0, 3, 1<<20)
	require.ErrorIs(t, err, plog.ErrNoDescriptor)
	r, err := l.ReadRange(3, 3, 1<<20)
	require.NoError(t, err, "nothing to read needs no descriptor")
	require.Zero(t, r.Size)
}
