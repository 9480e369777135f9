package log_test

import (
	"fmt"
	"path"
	"testing"

	"github.com/stretchr/testify/require"

	plog "github.com/partlog/partlog/log"
	"github.com/partlog/partlog/record"
	"github.com/partlog/partlog/vfs"
)

// damageFixture writes 60 batches of 5 records to a partition of a Dir on
// mem, closes the Dir cleanly, and returns what the log held.
func damageFixture(t *testing.T, mem *vfs.MemFS, opts plog.Options) []record.Record {
	t.Helper()
	d, err := plog.OpenDir("/data", plog.DirOptions{FS: mem})
	require.NoError(t, err)
	l, err := d.Open(tp, opts)
	require.NoError(t, err)
	for i := range 60 {
		_, err := l.Append(epochBatch(5, fmt.Sprint(i), 0))
		require.NoError(t, err)
	}
	want := readAll(t, l, 0)
	require.NoError(t, d.Close())
	return want
}

// writeFile replaces a file on fsys.
func writeFile(t *testing.T, fsys vfs.FS, name string, data []byte) {
	t.Helper()
	f, err := fsys.Create(name)
	require.NoError(t, err)
	_, err = f.Write(data)
	require.NoError(t, err)
	require.NoError(t, f.Sync())
	require.NoError(t, f.Close())
}

// TestLogStartOffsetBeyondTheEnd: a log-start-offset-checkpoint whose
// value lies past the log end offset (damaged, or edited) is ignored with
// a report, after a clean and after an unclean shutdown; it used to make
// the log delete every segment and start empty there.
func TestLogStartOffsetBeyondTheEnd(t *testing.T) {
	for _, clean := range []bool{true, false} {
		t.Run(fmt.Sprintf("clean=%v", clean), func(t *testing.T) {
			mem := newMem(t)
			opts := plog.Options{SegmentBytes: 4096, IndexIntervalBytes: 256, MaxIndexBytes: 4096}
			want := damageFixture(t, mem, opts)
			writeFile(t, mem, path.Join("/data", plog.LogStartOffsetFileName), []byte("0\n1\nstudy 0 999999\n"))
			if !clean {
				require.NoError(t, mem.Remove(path.Join("/data", plog.CleanShutdownFileName)))
			}
			d, err := plog.OpenDir("/data", plog.DirOptions{FS: mem})
			require.NoError(t, err)
			defer d.Close()
			l, err := d.Open(tp, opts)
			require.NoError(t, err)
			require.EqualValues(t, 999999, l.LoadReport().IgnoredLogStartOffset)
			require.Zero(t, l.LogStartOffset())
			require.EqualValues(t, 300, l.LogEndOffset())
			require.Equal(t, want, readAll(t, l, 0), "every record is kept")
		})
	}
}
