package log_test

import (
	"fmt"
	"io"
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
// value lies past the log end offset used to make the log delete every
// segment and start empty there. After a clean shutdown nothing was lost,
// so the value is damage: it is ignored, with a report, and every record
// stays. After an unclean one a crash may have taken a tail that
// DeleteRecordsBefore had passed: the log starts empty at the offset, as
// Kafka's does (offsets are never handed out twice), but the segments are
// moved aside, byte for byte, not deleted.
func TestLogStartOffsetBeyondTheEnd(t *testing.T) {
	for _, clean := range []bool{true, false} {
		t.Run(fmt.Sprintf("clean=%v", clean), func(t *testing.T) {
			mem := newMem(t)
			opts := plog.Options{SegmentBytes: 4096, IndexIntervalBytes: 256, MaxIndexBytes: 4096}
			want := damageFixture(t, mem, opts)
			before := segmentFiles(t, mem, "/data/study-0")
			writeFile(t, mem, path.Join("/data", plog.LogStartOffsetFileName), []byte("0\n1\nstudy 0 999999\n"))
			if !clean {
				require.NoError(t, mem.Remove(path.Join("/data", plog.CleanShutdownFileName)))
			}
			d, err := plog.OpenDir("/data", plog.DirOptions{FS: mem})
			require.NoError(t, err)
			defer d.Close()
			l, err := d.Open(tp, opts)
			require.NoError(t, err)
			if clean {
				require.EqualValues(t, 999999, l.LoadReport().IgnoredLogStartOffset)
				require.Zero(t, l.LogStartOffset())
				require.EqualValues(t, 300, l.LogEndOffset())
				require.Equal(t, want, readAll(t, l, 0), "every record is kept")
				return
			}
			q := l.LoadReport().Quarantined
			require.NotEmpty(t, q)
			require.EqualValues(t, 999999, l.LogStartOffset())
			require.EqualValues(t, 999999, l.LogEndOffset())
			require.Equal(t, before, segmentFiles(t, mem, q), "the segments are moved aside whole")
		})
	}
}

// segmentFiles returns the .log files of a directory and their bytes.
func segmentFiles(t *testing.T, fsys vfs.FS, dir string) map[string]string {
	t.Helper()
	names, err := fsys.List(dir)
	require.NoError(t, err)
	out := map[string]string{}
	for _, n := range names {
		if path.Ext(n) != ".log" {
			continue
		}
		f, err := fsys.Open(path.Join(dir, n))
		require.NoError(t, err)
		b, err := io.ReadAll(f)
		require.NoError(t, err)
		require.NoError(t, f.Close())
		out[n] = string(b)
	}
	return out
}
