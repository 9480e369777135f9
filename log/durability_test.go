package log_test

import (
	"fmt"
	"io/fs"
	"path"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/partlog/partlog/internal/batchtest"
	plog "github.com/partlog/partlog/log"
	"github.com/partlog/partlog/record"
	"github.com/partlog/partlog/vfs"
)

// TestSyncBeforeAckSurvivesPowerLoss appends with SyncBeforeAck and crashes
// keeping only synced bytes: every acknowledged record is there.
func TestSyncBeforeAckSurvivesPowerLoss(t *testing.T) {
	mem := newMem(t)
	opts := smallOptions(mem)
	opts.SyncBeforeAck = true
	l := open(t, opts)
	for i := range 40 {
		switch i % 5 {
		case 3: // a transactional batch ...
			o := record.DefaultBatchOptions()
			o.ProducerID, o.ProducerEpoch, o.BaseSequence, o.Transactional = 7, 0, int32(i), true
			b := record.NewBuilder(o)
			b.Append(record.Record{Value: batchtest.Value(fmt.Sprint(i), 0, 30)})
			_, err := l.Append(b.Build())
			require.NoError(t, err)
		case 4: // ... and its commit marker
			_, err := l.Append(record.ControlBatch(record.ControlCommit, 7, 0, 0, 0))
			require.NoError(t, err)
		default:
			appendN(t, l, 3, fmt.Sprint(i), 0)
		}
	}
	want := readAll(t, l, 0)
	crashed := mem.CrashClone(vfs.CrashOptions{KeepUnsynced: vfs.KeepNone, Tear: vfs.TearGarbage})
	require.NoError(t, l.Close())

	opts.FS = crashed
	l2 := open(t, opts)
	defer l2.Close()
	require.Equal(t, want, readAll(t, l2, 0))
	require.False(t, l2.LoadReport().Clean)
}

// TestWithoutSyncPowerLossKeepsAPrefix crashes a log that never synced:
// what survives is a prefix of what was appended, and appends continue.
func TestWithoutSyncPowerLossKeepsAPrefix(t *testing.T) {
	for seed := range int64(20) {
		mem := newMem(t)
		l := open(t, smallOptions(mem))
		for i := range 30 {
			appendN(t, l, 3, fmt.Sprint(i), 0)
			if i == 10 {
				require.NoError(t, l.Flush())
			}
		}
		want := readAll(t, l, 0)
		crashed := mem.CrashClone(vfs.CrashOptions{Seed: seed, KeepUnsynced: vfs.KeepRandomPrefix, Tear: vfs.TearPolicy(seed % 3)})
		require.NoError(t, l.Close())

		l2 := open(t, smallOptions(crashed))
		got := readAll(t, l2, 0)
		require.GreaterOrEqual(t, len(got), 33, "seed %d: the flushed records survive", seed)
		require.Equal(t, want[:len(got)], got, "seed %d", seed)
		info, _ := appendN(t, l2, 1, "after", 0)
		require.EqualValues(t, len(got), info.FirstOffset)
		require.NoError(t, l2.Close())
	}
}

// countSyncs wraps fsys and counts syncs of .log files.
func countSyncs(fsys vfs.FS, n *atomic.Int64) *vfs.FaultFS {
	return vfs.WithFaults(fsys, vfs.InjectorFunc(func(op vfs.Op) error {
		if op.Kind == vfs.OpSync && path.Ext(op.Path) == ".log" {
			n.Add(1)
		}
		return nil
	}))
}

// TestGroupCommit has many appenders wait for durability at once while a
// sync takes time (on synctest's fake clock): they share fdatasyncs.
func TestGroupCommit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var syncs atomic.Int64
		slow := vfs.WithFaults(newMem(t), vfs.InjectorFunc(func(op vfs.Op) error {
			if op.Kind == vfs.OpSync && path.Ext(op.Path) == ".log" {
				syncs.Add(1)
				time.Sleep(time.Millisecond) // an fdatasync's latency
			}
			return nil
		}))
		opts := smallOptions(slow)
		opts.SegmentBytes = 1 << 20
		opts.SyncBeforeAck = true
		l := open(t, opts)
		defer l.Close()
		const appenders, rounds = 16, 5
		var wg sync.WaitGroup
		for a := range appenders {
			wg.Go(func() {
				for i := range rounds {
					_, err := l.Append(batchtest.Build(batchtest.Spec{Records: 1, ValueSize: 20, Tag: fmt.Sprint(a, "-", i), Epoch: -1}))
					if err != nil {
						t.Error(err)
					}
				}
			})
		}
		wg.Wait()
		require.EqualValues(t, appenders*rounds, l.LogEndOffset())
		require.Equal(t, l.LogEndOffset(), l.RecoveryPoint())
		// Each sync covers every append made while the one before ran.
		require.LessOrEqual(t, syncs.Load(), int64(2*rounds+1))
		t.Logf("%d appends, %d syncs", appenders*rounds, syncs.Load())
	})
}

func TestFlushMessages(t *testing.T) {
	var syncs atomic.Int64
	opts := smallOptions(countSyncs(newMem(t), &syncs))
	opts.FlushMessages = 10
	l := open(t, opts)
	defer l.Close()
	appendN(t, l, 4, "a", 0)
	appendN(t, l, 4, "b", 0)
	require.Zero(t, l.RecoveryPoint())
	require.Zero(t, syncs.Load())
	appendN(t, l, 4, "c", 0)
	require.EqualValues(t, 12, l.RecoveryPoint(), "the append that reached flush.messages flushed")
	require.EqualValues(t, 1, syncs.Load())
}

// TestFlushInterval runs the flush.ms loop on synctest's fake clock.
func TestFlushInterval(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		opts := smallOptions(newMem(t))
		opts.FlushInterval = time.Second
		l := open(t, opts)
		appendN(t, l, 5, "a", 0)
		require.Zero(t, l.RecoveryPoint())
		time.Sleep(999 * time.Millisecond)
		synctest.Wait()
		require.Zero(t, l.RecoveryPoint())
		time.Sleep(2 * time.Millisecond)
		synctest.Wait()
		require.EqualValues(t, 5, l.RecoveryPoint(), "flushed within flush.ms")
		require.NoError(t, l.Close())
	})
}

// TestSyncFailureIsFailStop covers test 6: an fsync error reaches every
// appender waiting on it, nothing is acknowledged, the log refuses further
// appends, and after a restart only what was durable is there.
func TestSyncFailureIsFailStop(t *testing.T) {
	mem := newMem(t)
	var syncs atomic.Int64
	var failed atomic.Bool
	eio := &fs.PathError{Op: "sync", Path: "x", Err: syscall.EIO}
	faulty := vfs.WithFaults(mem, vfs.InjectorFunc(func(op vfs.Op) error {
		if op.Kind == vfs.OpSync && path.Ext(op.Path) == ".log" && syncs.Add(1) == 20 {
			failed.Store(true)
			return eio
		}
		return nil
	}))
	opts := smallOptions(faulty)
	opts.SegmentBytes = 1 << 20
	opts.SyncBeforeAck = true
	l := open(t, opts)

	var mu sync.Mutex
	acked := map[string]bool{}
	var errs []error
	var wg sync.WaitGroup
	for a := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 100 {
				tag := fmt.Sprint(a, "-", i)
				_, err := l.Append(batchtest.Build(batchtest.Spec{Records: 1, ValueSize: 20, Tag: tag, Epoch: -1}))
				mu.Lock()
				if err == nil {
					acked[tag] = true
				} else {
					errs = append(errs, err)
				}
				mu.Unlock()
				if err != nil {
					return
				}
			}
		}()
	}
	wg.Wait()
	require.True(t, failed.Load())
	require.Len(t, errs, 8, "every appender saw the failure")
	for _, err := range errs {
		require.ErrorIs(t, err, plog.ErrStorage)
	}
	require.ErrorIs(t, errs[0], syscall.EIO)
	_, err := l.Append(batchtest.Simple(1, 0))
	require.ErrorIs(t, err, plog.ErrStorage, "the log refuses appends until reopened")
	require.ErrorIs(t, l.Flush(), plog.ErrStorage, "and never retries the sync")

	crashed := mem.CrashClone(vfs.CrashOptions{KeepUnsynced: vfs.KeepNone})
	require.NoError(t, l.Close())
	l2 := open(t, smallOptions(crashed))
	defer l2.Close()
	got := map[string]bool{}
	for _, r := range readAll(t, l2, 0) {
		got[tagOf(r.Value)] = true
	}
	for tag := range acked {
		require.True(t, got[tag], "acknowledged %s survived", tag)
	}
}

// tagOf recovers the tag batchtest.Value put at the start of a value.
func tagOf(v []byte) string {
	for i, c := range v {
		if c == '/' {
			return string(v[:i])
		}
	}
	return string(v)
}

// TestDiskFull covers test 5: ENOSPC fails the append with a typed error,
// nothing of it is visible or kept, and appends resume once there is room.
func TestDiskFull(t *testing.T) {
	mem := newMem(t)
	opts := smallOptions(mem)
	opts.SyncBeforeAck = true
	l := open(t, opts)
	defer l.Close()
	appendN(t, l, 5, "before", 0)
	used := l.Size()
	mem.SetCapacity(2*4096 + used + 1000) // the index files are preallocated to 4096 each

	var full error
	n := 1
	for ; n < 100; n++ {
		_, err := l.Append(batchtest.Build(batchtest.Spec{Records: 5, ValueSize: 30, Tag: fmt.Sprint(n), Epoch: -1}))
		if err != nil {
			full = err
			break
		}
	}
	require.ErrorIs(t, full, plog.ErrDiskFull)
	require.ErrorIs(t, full, syscall.ENOSPC)
	leo := l.LogEndOffset()
	require.EqualValues(t, n*5, leo)
	_, err := l.Append(batchtest.Build(batchtest.Spec{Records: 5, ValueSize: 30, Epoch: -1}))
	require.ErrorIs(t, err, plog.ErrDiskFull, "still full")
	require.Equal(t, leo, l.LogEndOffset())
	require.Len(t, readAll(t, l, 0), int(leo))

	mem.SetCapacity(0)
	info, err := l.Append(batchtest.Simple(1, 0))
	require.NoError(t, err, "appends resume once there is room")
	require.Equal(t, leo, info.FirstOffset)

	// A segment roll that cannot preallocate its indexes fails the same way.
	mem.SetCapacity(l.Size() + 3*4096)
	var rollErr error
	for range 100 {
		if _, rollErr = l.Append(batchtest.Simple(5, 0)); rollErr != nil {
			break
		}
	}
	require.ErrorIs(t, rollErr, plog.ErrDiskFull)
	leo = l.LogEndOffset()
	mem.SetCapacity(0)
	info, err = l.Append(batchtest.Simple(1, 0))
	require.NoError(t, err)
	require.Equal(t, leo, info.FirstOffset)
	require.Len(t, readAll(t, l, 0), int(leo)+1)
}

// TestWriteErrorIsFailStop: an EIO or short write on the log fails it.
func TestWriteErrorIsFailStop(t *testing.T) {
	for _, fault := range []error{
		&fs.PathError{Op: "write", Path: "x", Err: syscall.EIO},
		vfs.ShortWrite(10, &fs.PathError{Op: "write", Path: "x", Err: syscall.EIO}),
	} {
		mem := newMem(t)
		faulty := vfs.WithFaults(mem, vfs.FailOn(vfs.OpWrite, "*.log", 3, fault))
		opts := smallOptions(faulty)
		opts.SyncBeforeAck = true
		l := open(t, opts)
		for range 3 {
			appendN(t, l, 2, "ok", 0)
		}
		_, err := l.Append(batchtest.Simple(2, 0))
		require.ErrorIs(t, err, plog.ErrStorage)
		require.ErrorIs(t, err, syscall.EIO)
		require.EqualValues(t, 6, l.LogEndOffset())
		_, err = l.Append(batchtest.Simple(2, 0))
		require.ErrorIs(t, err, plog.ErrStorage)
		require.NoError(t, l.Close())

		l2 := open(t, smallOptions(mem.CrashClone(vfs.CrashOptions{KeepUnsynced: vfs.KeepAll})))
		require.Len(t, readAll(t, l2, 0), 6, "recovery keeps the valid prefix")
		require.NoError(t, l2.Close())
	}
}
