package log_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"slices"
	"sync/atomic"
	"syscall"
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

// appendBytes appends b to the file name on fsys.
func appendBytes(t *testing.T, fsys vfs.FS, name string, b []byte) {
	t.Helper()
	f, err := fsys.OpenReadWrite(name)
	require.NoError(t, err)
	size, err := f.Size()
	require.NoError(t, err)
	_, err = f.WriteAt(b, size)
	require.NoError(t, err)
	require.NoError(t, f.Sync())
	require.NoError(t, f.Close())
}

// reopen opens the Dir at /data and tp's log in it.
func reopen(t *testing.T, fsys vfs.FS, opts plog.Options) (*plog.Dir, *plog.Log) {
	t.Helper()
	d, err := plog.OpenDir("/data", plog.DirOptions{FS: fsys})
	require.NoError(t, err)
	t.Cleanup(func() { d.Close() })
	l, err := d.Open(tp, opts)
	require.NoError(t, err)
	return d, l
}

// TestDamageAfterCleanShutdown: bytes that a clean shutdown cannot
// explain — garbage after the last batch of the active segment or of an
// older one, a torn batch at the end, a stray segment that overlaps the
// ones before — used to make the log (and the node) refuse to open. The
// damaged segment is recovered as after a crash: the garbage is cut, and
// every record before it, and every segment that follows on, is kept; a
// stray overlapping segment is moved aside.
func TestDamageAfterCleanShutdown(t *testing.T) {
	opts := plog.Options{SegmentBytes: 4096, IndexIntervalBytes: 256, MaxIndexBytes: 4096}
	garbage := []byte("this is not a record batch, it was appended by hand\n")
	cases := map[string]func(t *testing.T, mem *vfs.MemFS, segs []plog.SegmentInfo){
		"garbage after the active segment": func(t *testing.T, mem *vfs.MemFS, segs []plog.SegmentInfo) {
			appendBytes(t, mem, segPath(segs[len(segs)-1].BaseOffset), garbage)
		},
		"garbage after an older segment": func(t *testing.T, mem *vfs.MemFS, segs []plog.SegmentInfo) {
			appendBytes(t, mem, segPath(segs[1].BaseOffset), garbage)
		},
		"a torn last batch": func(t *testing.T, mem *vfs.MemFS, segs []plog.SegmentInfo) {
			// A batch header that promises more bytes than follow, as a
			// write cut short by a full disk leaves it.
			appendBytes(t, mem, segPath(segs[len(segs)-1].BaseOffset), epochBatch(5, "torn", 0)[:100])
		},
		"a stray segment inside the log": func(t *testing.T, mem *vfs.MemFS, segs []plog.SegmentInfo) {
			writeFile(t, mem, segPath(segs[0].BaseOffset+7), garbage)
		},
	}
	for name, damage := range cases {
		t.Run(name, func(t *testing.T) {
			mem := newMem(t)
			want := damageFixture(t, mem, opts)
			d, l := reopen(t, mem, opts)
			segs := l.Segments()
			require.Greater(t, len(segs), 2)
			require.NoError(t, d.Close())
			damage(t, mem, segs)

			_, l = reopen(t, mem, opts)
			require.Equal(t, want, readAll(t, l, 0), "every record is kept")
			r := l.LoadReport()
			require.True(t, len(r.Damaged) > 0 || r.Quarantined != "", "the damage is reported: %+v", r)
			require.Empty(t, r.DeletedSegments, "no segment is deleted")
			_, err := l.Append(epochBatch(2, "after", 0))
			require.NoError(t, err, "the log takes appends again")
		})
	}
}

// segPath is the path of the .log file of tp's segment at base in /data.
func segPath(base int64) string {
	return path.Join("/data", tp.String(), fmt.Sprintf("%020d.log", base))
}

// TestFailedLogIsNotMarkedClean: a log whose sync failed (as a disk that
// ran out of room at writeback does) may hold a torn tail, so the Dir
// closes without the clean-shutdown marker and the next open scans it.
// The marker used to be written anyway, and the next open trusted the tail.
func TestFailedLogIsNotMarkedClean(t *testing.T) {
	mem := newMem(t)
	var fail atomic.Bool
	faulty := vfs.WithFaults(mem, vfs.InjectorFunc(func(op vfs.Op) error {
		if fail.Load() && op.Kind == vfs.OpSync && path.Ext(op.Path) == ".log" {
			return &fs.PathError{Op: "sync", Path: op.Path, Err: syscall.ENOSPC}
		}
		return nil
	}))
	opts := plog.Options{SegmentBytes: 4096, IndexIntervalBytes: 256, MaxIndexBytes: 4096, SyncBeforeAck: true}
	d, err := plog.OpenDir("/data", plog.DirOptions{FS: faulty})
	require.NoError(t, err)
	l, err := d.Open(tp, opts)
	require.NoError(t, err)
	_, err = l.Append(epochBatch(5, "kept", 0))
	require.NoError(t, err)
	fail.Store(true)
	_, err = l.Append(epochBatch(5, "failed", 0))
	require.ErrorIs(t, err, plog.ErrStorage)
	require.ErrorIs(t, l.Err(), plog.ErrStorage)
	require.NoError(t, d.Close())
	_, err = mem.Stat(path.Join("/data", plog.CleanShutdownFileName))
	require.ErrorIs(t, err, fs.ErrNotExist, "no clean-shutdown marker over a failed log")

	fail.Store(false)
	d, l = reopen(t, faulty, opts)
	require.False(t, d.WasClean())
	require.NotEmpty(t, l.LoadReport().Recovered, "the failed log's tail is scanned")
}

// TestDiskFullAtEveryWrite fails the k-th write to a .log file with
// ENOSPC after half its bytes went in, for every k of a workload, with
// and without the cut of those bytes failing too; the workload goes on
// appending. Then the directory is reopened after a clean close and after
// a crash (unsynced bytes lost, or kept): every acknowledged batch is
// there, in order, byte for byte; nothing else is; and the directory
// opens each time.
func TestDiskFullAtEveryWrite(t *testing.T) {
	opts := plog.Options{SegmentBytes: 2048, IndexIntervalBytes: 256, MaxIndexBytes: 4096, SyncBeforeAck: true}
	const batches = 24
	for _, cutFails := range []bool{false, true} {
		for k := int64(0); k < batches; k++ {
			t.Run(fmt.Sprintf("cut-fails=%v/write=%d", cutFails, k), func(t *testing.T) {
				mem := newMem(t)
				var writes atomic.Int64
				var torn atomic.Bool
				faulty := vfs.WithFaults(mem, vfs.InjectorFunc(func(op vfs.Op) error {
					switch {
					case op.Kind == vfs.OpWrite && path.Ext(op.Path) == ".log" && writes.Add(1)-1 == k:
						torn.Store(true)
						return vfs.ShortWrite(40, syscall.ENOSPC)
					case op.Kind == vfs.OpTruncate && path.Ext(op.Path) == ".log" && cutFails && torn.CompareAndSwap(true, false):
						return &fs.PathError{Op: "truncate", Path: op.Path, Err: syscall.EIO}
					}
					return nil
				}))
				d, err := plog.OpenDir("/data", plog.DirOptions{FS: faulty})
				require.NoError(t, err)
				l, err := d.Open(tp, opts)
				require.NoError(t, err)
				var acked []record.Record
				for i := range batches {
					b := epochBatch(1+i%4, fmt.Sprint("b", i), 0)
					if _, err := l.Append(b); err != nil {
						require.True(t, errors.Is(err, plog.ErrDiskFull) || errors.Is(err, plog.ErrStorage), "batch %d: %v", i, err)
						continue
					}
					d, err := record.Decode(b)
					require.NoError(t, err)
					acked = append(acked, d.Records...)
				}
				crashedNone := mem.CrashClone(vfs.CrashOptions{KeepUnsynced: vfs.KeepNone})
				crashedAll := mem.CrashClone(vfs.CrashOptions{KeepUnsynced: vfs.KeepAll})
				require.NoError(t, d.Close())
				for name, fsys := range map[string]vfs.FS{"clean": mem, "crash, unsynced lost": crashedNone, "crash, unsynced kept": crashedAll} {
					d, err := plog.OpenDir("/data", plog.DirOptions{FS: fsys})
					require.NoError(t, err, name)
					l, err := d.Open(tp, opts)
					require.NoError(t, err, name)
					got := readAll(t, l, 0)
					require.Equal(t, len(acked), len(got), "%s: the acknowledged records, and nothing else", name)
					for i := range acked {
						require.Equal(t, acked[i].Value, got[i].Value, "%s: record %d", name, i)
						require.Equal(t, acked[i].Key, got[i].Key, "%s: record %d", name, i)
					}
					require.NoError(t, d.Close())
				}
			})
		}
	}
}

// TestGapBetweenSegments: an empty segment file dropped into the
// directory past the log's end moves the log end offset there; the log
// opens, keeps every record, and reports the offsets no segment holds
// (it used to say nothing).
func TestGapBetweenSegments(t *testing.T) {
	opts := plog.Options{SegmentBytes: 4096, IndexIntervalBytes: 256, MaxIndexBytes: 4096}
	mem := newMem(t)
	want := damageFixture(t, mem, opts)
	writeFile(t, mem, segPath(5000), nil)
	_, l := reopen(t, mem, opts)
	require.Equal(t, []plog.Gap{{From: 300, To: 5000}}, l.LoadReport().Gaps)
	var got []record.Record
	for off := int64(0); off < 300; {
		data, err := l.Read(nil, off, 300, 1<<20)
		require.NoError(t, err)
		require.NotEmpty(t, data)
		for len(data) > 0 {
			b, err := record.Decode(data[:mustSize(data)])
			require.NoError(t, err)
			got, data, off = append(got, b.Records...), data[b.Size():], b.NextOffset()
		}
	}
	require.True(t, slices.EqualFunc(want, got, func(a, b record.Record) bool { return a.Offset == b.Offset && bytes.Equal(a.Value, b.Value) }),
		"every record is kept")
	require.EqualValues(t, 5000, l.LogEndOffset())
}

// TestCleanOpenChecksTheLastBatch: a last batch whose length holds but
// whose bytes do not (a write cut short on a device that zero-fills, a
// flipped bit) was trusted by an open after a clean shutdown, and readers
// got a batch that fails its CRC. The open checks the active segment's
// last batch and recovers the segment when it is bad: the batches before
// it are all there.
func TestCleanOpenChecksTheLastBatch(t *testing.T) {
	opts := plog.Options{SegmentBytes: 4096, IndexIntervalBytes: 256, MaxIndexBytes: 4096}
	mem := newMem(t)
	want := damageFixture(t, mem, opts)
	d, l := reopen(t, mem, opts)
	segs := l.Segments()
	require.NoError(t, d.Close())
	last := segPath(segs[len(segs)-1].BaseOffset)
	data := readFileBytes(t, mem, last)
	data[len(data)-3] ^= 0xff // inside the last batch's records
	writeFile(t, mem, last, data)

	_, l = reopen(t, mem, opts)
	require.NotEmpty(t, l.LoadReport().Damaged)
	got := readAll(t, l, 0)
	require.Equal(t, want[:len(want)-5], got, "every batch before the bad one")
}

func readFileBytes(t *testing.T, fsys vfs.FS, name string) []byte {
	t.Helper()
	f, err := fsys.Open(name)
	require.NoError(t, err)
	defer f.Close()
	b, err := io.ReadAll(f)
	require.NoError(t, err)
	return b
}
