package log_test

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/partlog/partlog/internal/batchtest"
	"github.com/partlog/partlog/kafka"
	plog "github.com/partlog/partlog/log"
	"github.com/partlog/partlog/record"
	"github.com/partlog/partlog/segment"
	"github.com/partlog/partlog/vfs"
)

var tp = kafka.TopicPartition{Topic: "study", Partition: 0}

// epochBatch builds a batch of n records stamped with a leader epoch.
func epochBatch(n int, tag string, epoch int32) []byte {
	return batchtest.Build(batchtest.Spec{Records: n, ValueSize: 30, Tag: tag, Epoch: epoch})
}

// countLogReads wraps fsys and counts reads of .log files.
func countLogReads(fsys vfs.FS, n *int) *vfs.FaultFS {
	return vfs.WithFaults(fsys, vfs.InjectorFunc(func(op vfs.Op) error {
		if op.Kind == vfs.OpRead && path.Ext(op.Path) == ".log" {
			*n++
		}
		return nil
	}))
}

// TestCleanAndUncleanRestart covers test 7 of the reliability plan.
func TestCleanAndUncleanRestart(t *testing.T) {
	mem := newMem(t)
	opts := plog.Options{SegmentBytes: 4096, IndexIntervalBytes: 256, MaxIndexBytes: 4096}
	d, err := plog.OpenDir("/data", plog.DirOptions{FS: mem})
	require.NoError(t, err)
	require.False(t, d.WasClean())
	l, err := d.Open(tp, opts)
	require.NoError(t, err)
	for i := range 60 {
		_, err := l.Append(epochBatch(5, fmt.Sprint(i), int32(i/20)))
		require.NoError(t, err)
	}
	want := readAll(t, l, 0)
	wantEpochs := l.EpochEntries()
	require.Equal(t, []plog.EpochEntry{{0, 0}, {1, 100}, {2, 200}}, wantEpochs)
	segs := l.Segments()
	require.Greater(t, len(segs), 3)
	_, err = plog.OpenDir("/data", plog.DirOptions{FS: mem})
	require.ErrorIs(t, err, plog.ErrLocked)
	require.NoError(t, d.Close())

	t.Run("clean", func(t *testing.T) {
		fsys := mem.CrashClone(vfs.CrashOptions{KeepUnsynced: vfs.KeepNone})
		var reads int
		d, err := plog.OpenDir("/data", plog.DirOptions{FS: countLogReads(fsys, &reads)})
		require.NoError(t, err)
		defer d.Close()
		require.True(t, d.WasClean())
		l, err := d.Open(tp, opts)
		require.NoError(t, err)
		require.True(t, l.LoadReport().Clean)
		require.Empty(t, l.LoadReport().Recovered, "a clean restart scans no segment")
		require.LessOrEqual(t, reads, 2*len(segs), "only segment tails are read")
		require.Equal(t, want, readAll(t, l, 0))
		require.Equal(t, wantEpochs, l.EpochEntries())
		parts, err := d.Partitions()
		require.NoError(t, err)
		require.Equal(t, []kafka.TopicPartition{tp}, parts)
	})

	t.Run("unclean", func(t *testing.T) {
		fsys := mem.CrashClone(vfs.CrashOptions{KeepUnsynced: vfs.KeepNone})
		d, err := plog.OpenDir("/data", plog.DirOptions{FS: fsys})
		require.NoError(t, err)
		l, err := d.Open(tp, opts)
		require.NoError(t, err)
		rp := l.LogEndOffset()
		require.NoError(t, d.Checkpoint())
		for i := range 40 {
			_, err := l.Append(epochBatch(5, fmt.Sprint("more", i), 3))
			require.NoError(t, err)
		}
		wantAll := readAll(t, l, 0)
		wantEpochs := l.EpochEntries()
		after := l.Segments()
		crashed := fsys.CrashClone(vfs.CrashOptions{KeepUnsynced: vfs.KeepAll}) // kill -9
		require.NoError(t, d.Close())

		d2, err := plog.OpenDir("/data", plog.DirOptions{FS: crashed})
		require.NoError(t, err)
		defer d2.Close()
		require.False(t, d2.WasClean())
		l2, err := d2.Open(tp, opts)
		require.NoError(t, err)
		var above []int64
		for i, s := range after {
			if s.BaseOffset >= rp || (i+1 < len(after) && after[i+1].BaseOffset > rp) || i == len(after)-1 {
				above = append(above, s.BaseOffset)
			}
		}
		require.Equal(t, above, l2.LoadReport().Recovered, "only segments from the recovery point on are scanned")
		require.Less(t, len(above), len(after))
		require.Equal(t, wantAll, readAll(t, l2, 0))
		require.Equal(t, wantEpochs, l2.EpochEntries(), "the epoch cache is rebuilt exactly")
		require.Zero(t, l2.LoadReport().TruncatedBytes)
	})
}

// TestEpochCache checks OffsetsForLeaderEpoch answers (KIP-101, KIP-279)
// and that truncation keeps the cache in step with the log.
func TestEpochCache(t *testing.T) {
	mem := newMem(t)
	l := open(t, smallOptions(mem))
	require.EqualValues(t, plog.UndefinedEpoch, l.LatestEpoch())
	for _, e := range []struct {
		epoch int32
		n     int
	}{{1, 10}, {1, 5}, {3, 10}, {5, 10}} {
		_, err := l.Append(epochBatch(e.n, "e", e.epoch))
		require.NoError(t, err)
	}
	require.Equal(t, []plog.EpochEntry{{1, 0}, {3, 15}, {5, 25}}, l.EpochEntries())
	for _, tc := range []struct {
		ask, epoch int32
		end        int64
	}{
		{0, 0, 0}, // older than every entry: the first start offset
		{1, 1, 15},
		{2, 1, 15}, // an epoch that never wrote: the largest below it
		{3, 3, 25},
		{4, 3, 25},
		{5, 5, 35}, // the latest ends at the log end offset
		{6, plog.UndefinedEpoch, -1},
		{plog.UndefinedEpoch, plog.UndefinedEpoch, -1},
	} {
		epoch, end := l.EndOffsetForEpoch(tc.ask)
		require.Equal(t, tc.epoch, epoch, "epoch for %d", tc.ask)
		require.Equal(t, tc.end, end, "end offset for %d", tc.ask)
	}

	require.NoError(t, l.TruncateTo(25))
	require.Equal(t, []plog.EpochEntry{{1, 0}, {3, 15}}, l.EpochEntries())
	_, err := l.Append(epochBatch(3, "f", 7))
	require.NoError(t, err)
	require.NoError(t, l.DeleteRecordsBefore(20))
	require.Equal(t, []plog.EpochEntry{{3, 20}, {7, 25}}, l.EpochEntries())
	require.NoError(t, l.Close())

	data, err := readFile(mem, path.Join(dir, "leader-epoch-checkpoint"))
	require.NoError(t, err)
	require.Equal(t, "0\n2\n3 20\n7 25\n", data, "Kafka's checkpoint format")

	// A log on its own learns its start offset from its owner (a Dir
	// keeps it in log-start-offset-checkpoint).
	reopen := smallOptions(mem)
	reopen.LogStartOffset = 20
	l = open(t, reopen)
	require.EqualValues(t, 20, l.LogStartOffset())
	require.Equal(t, []plog.EpochEntry{{3, 20}, {7, 25}}, l.EpochEntries())
	require.NoError(t, l.TruncateFullyAndStartAt(100))
	require.Empty(t, l.EpochEntries())
	require.NoError(t, l.Close())
}

func readFile(fsys vfs.FS, name string) (string, error) {
	f, err := fsys.Open(name)
	if err != nil {
		return "", err
	}
	defer f.Close()
	b, err := io.ReadAll(f)
	return string(b), err
}

// TestCrashAtEveryOperation covers test 2 of the reliability plan: a short
// workload — appends with acknowledged durability, segment rolls, epoch and
// offset checkpoints, retention, a clean close — is crashed before each of
// its filesystem operations in turn, keeping only synced data, or all of
// it. Every crash state must open, hold a contiguous run of the history that
// includes every acknowledged record not deleted by retention, and have
// whole checkpoints.
func TestCrashAtEveryOperation(t *testing.T) {
	opts := plog.Options{SegmentBytes: 2048, IndexIntervalBytes: 256, MaxIndexBytes: 1024, RetentionBytes: 5000, RetentionMs: -1}
	type result struct {
		acked   []string // tags of records acknowledged durable, in order
		written []string // tags of every record appended, in order
	}
	workload := func(fsys vfs.FS) (res result) {
		d, err := plog.OpenDir("/data", plog.DirOptions{FS: fsys})
		if err != nil {
			return
		}
		o := opts
		o.SyncBeforeAck = true
		l, err := d.Open(tp, o)
		if err != nil {
			d.Close()
			return
		}
		for i := range 24 {
			tags := []string{fmt.Sprint(i, "a"), fmt.Sprint(i, "b")}
			b := record.NewBuilder(record.BatchOptions{PartitionLeaderEpoch: int32(i / 8), ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1})
			for _, tag := range tags {
				b.Append(record.Record{Value: batchtest.Value(tag, 0, 150)})
			}
			res.written = append(res.written, tags...)
			if _, err := l.Append(b.Build()); err != nil {
				break
			}
			res.acked = append(res.acked, tags...)
			if i%6 == 5 {
				if _, err := l.DeleteRetained(); err != nil {
					break
				}
				if err := d.Checkpoint(); err != nil {
					break
				}
			}
		}
		d.Close()
		return res
	}

	// A clean run counts the operations.
	clean := vfs.WithFaults(newMem(t), vfs.InjectorFunc(func(vfs.Op) error { return nil }))
	full := workload(clean)
	require.Len(t, full.acked, 48)
	total := clean.Ops()
	d, err := plog.OpenDir("/data", plog.DirOptions{FS: clean})
	require.NoError(t, err)
	l, err := d.Open(tp, opts)
	require.NoError(t, err)
	require.True(t, l.LoadReport().Clean)
	require.Positive(t, l.LogStartOffset(), "retention deleted segments")
	require.Greater(t, len(l.Segments()), 1)
	require.NoError(t, d.Close())
	t.Logf("workload makes %d filesystem operations", total)

	for i := range total {
		for _, keep := range []vfs.KeepPolicy{vfs.KeepNone, vfs.KeepAll} {
			mem := newMem(t)
			var crashed *vfs.MemFS
			eio := &fs.PathError{Op: "crash", Path: "-", Err: syscall.EIO}
			faulty := vfs.WithFaults(mem, vfs.InjectorFunc(func(op vfs.Op) error {
				if op.Seq == i {
					crashed = mem.CrashClone(vfs.CrashOptions{KeepUnsynced: keep, Seed: i})
				}
				if op.Seq >= i {
					return eio
				}
				return nil
			}))
			res := workload(faulty)
			require.NotNil(t, crashed, "op %d", i)
			what := fmt.Sprintf("crash before op %d keeping %v", i, keep)

			d, err := plog.OpenDir("/data", plog.DirOptions{FS: crashed})
			require.NoError(t, err, what)
			for _, name := range []string{plog.RecoveryPointFileName, plog.LogStartOffsetFileName, path.Join("study-0", plog.EpochFileName)} {
				requireWholeCheckpoint(t, crashed, path.Join("/data", name), what)
			}
			l, err := d.Open(tp, opts)
			require.NoError(t, err, what)
			var got []string
			for _, r := range readAll(t, l, l.LogStartOffset()) {
				got = append(got, tagOf(r.Value))
			}
			// A contiguous run of what was written ...
			if len(got) > 0 {
				start := slices.Index(res.written, got[0])
				require.GreaterOrEqual(t, start, 0, what)
				require.Equal(t, res.written[start:start+len(got)], got, what)
			}
			// ... holding every acknowledged record that retention kept.
			for j, tag := range res.acked {
				if int64(j) >= l.LogStartOffset() {
					require.Contains(t, got, tag, what)
				}
			}
			// And appends continue at the end.
			info, err := l.Append(batchtest.Simple(1, 0))
			require.NoError(t, err, what)
			require.Equal(t, l.LogStartOffset()+int64(len(got)), info.FirstOffset, what)
			require.NoError(t, d.Close(), what)
		}
	}
}

// requireWholeCheckpoint checks that a checkpoint file is absent or parses.
func requireWholeCheckpoint(t *testing.T, fsys vfs.FS, name, what string) {
	t.Helper()
	data, err := readFile(fsys, name)
	if errors.Is(err, fs.ErrNotExist) {
		return
	}
	require.NoError(t, err, what)
	lines := strings.Split(strings.TrimSuffix(data, "\n"), "\n")
	require.GreaterOrEqual(t, len(lines), 2, "%s: %s is %q", what, name, data)
	require.Equal(t, "0", lines[0], what)
	n, err := strconv.Atoi(lines[1])
	require.NoError(t, err, what)
	require.Len(t, lines, n+2, "%s: %s is %q", what, name, data)
}

// TestLockAcrossProcesses opens a directory here and tries again from a
// child process, which must fail with ErrLocked.
func TestLockAcrossProcesses(t *testing.T) {
	if d := os.Getenv("PARTLOG_LOCK_CHILD"); d != "" {
		_, err := plog.OpenDir(d, plog.DirOptions{})
		if errors.Is(err, plog.ErrLocked) {
			os.Exit(3)
		}
		os.Exit(4)
	}
	d := t.TempDir()
	dir, err := plog.OpenDir(d, plog.DirOptions{})
	require.NoError(t, err)
	cmd := exec.Command(os.Args[0], "-test.run=^TestLockAcrossProcesses$")
	cmd.Env = append(os.Environ(), "PARTLOG_LOCK_CHILD="+d)
	err = cmd.Run()
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit)
	require.Equal(t, 3, exit.ExitCode(), "the child saw ErrLocked")
	require.NoError(t, dir.Close())
	cmd = exec.Command(os.Args[0], "-test.run=^TestLockAcrossProcesses$")
	cmd.Env = append(os.Environ(), "PARTLOG_LOCK_CHILD="+d)
	err = cmd.Run()
	require.ErrorAs(t, err, &exit)
	require.Equal(t, 4, exit.ExitCode(), "after Close the child opens it")
}

// TestCorruptionBelowRecoveryPoint covers test 4: a bit flip in synced data
// of a sealed segment is not noticed on a clean open (nothing is scanned),
// but the batch's CRC catches it when read, so no corrupt record reaches a
// consumer; the batches around it still read, and a follower can cut the
// log there and fetch again.
func TestCorruptionBelowRecoveryPoint(t *testing.T) {
	mem := newMem(t)
	d, err := plog.OpenDir("/data", plog.DirOptions{FS: mem})
	require.NoError(t, err)
	opts := plog.Options{SegmentBytes: 4096, IndexIntervalBytes: 256, MaxIndexBytes: 4096}
	l, err := d.Open(tp, opts)
	require.NoError(t, err)
	for i := range 60 {
		_, err := l.Append(epochBatch(5, fmt.Sprint(i), 0))
		require.NoError(t, err)
	}
	segs := l.Segments()
	require.NoError(t, d.Close())

	// Flip a bit in the value of some batch in the second segment.
	victim, err := l2Batch(mem, segs[1].Path, 2)
	require.NoError(t, err)
	f, err := mem.OpenReadWrite(segs[1].Path)
	require.NoError(t, err)
	b := make([]byte, 1)
	_, err = f.ReadAt(b, victim.pos+victim.size-3)
	require.NoError(t, err)
	_, err = f.WriteAt([]byte{b[0] ^ 0x04}, victim.pos+victim.size-3)
	require.NoError(t, err)
	require.NoError(t, f.Close())

	d, err = plog.OpenDir("/data", plog.DirOptions{FS: mem})
	require.NoError(t, err)
	defer d.Close()
	l, err = d.Open(tp, opts)
	require.NoError(t, err, "a clean open does not scan the segment")
	data, err := l.Read(nil, victim.base, l.LogEndOffset(), 1)
	require.NoError(t, err)
	_, err = record.Decode(data)
	require.ErrorIs(t, err, record.ErrCorrupt, "the CRC catches the flipped bit")

	// The batches before and after are intact.
	before, err := l.Read(nil, victim.base-1, l.LogEndOffset(), 1)
	require.NoError(t, err)
	_, err = record.Decode(before)
	require.NoError(t, err)
	after, err := l.Read(nil, victim.base+5, l.LogEndOffset(), 1)
	require.NoError(t, err)
	_, err = record.Decode(after)
	require.NoError(t, err)

	// A follower cuts its log at the damaged batch and fetches again.
	require.NoError(t, l.TruncateTo(victim.base))
	require.Equal(t, victim.base, l.LogEndOffset())
	require.Len(t, readAll(t, l, 0), int(victim.base))
}

type batchAt struct{ pos, size, base int64 }

// l2Batch finds the n-th batch of a segment file.
func l2Batch(fsys vfs.FS, name string, n int) (batchAt, error) {
	f, err := fsys.Open(name)
	if err != nil {
		return batchAt{}, err
	}
	defer f.Close()
	size, _ := f.Size()
	sc := segment.NewScanner(f, 0, size, segment.ScanHeaders)
	for i := 0; sc.Next(); i++ {
		if i == n {
			return batchAt{pos: sc.Pos(), size: int64(sc.Header().Size()), base: sc.Header().BaseOffset}, nil
		}
	}
	return batchAt{}, fmt.Errorf("no batch %d: %v", n, sc.Err())
}
