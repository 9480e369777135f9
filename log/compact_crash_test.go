package log_test

import (
	"context"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	plog "github.com/partlog/partlog/log"
	"github.com/partlog/partlog/record"
	"github.com/partlog/partlog/segment"
	"github.com/partlog/partlog/vfs"
)

// cleanCrashFixture is a compacted log on a MemFS, closed cleanly, and what
// was written to it: several segments of keyed records and tombstones.
func cleanCrashFixture(t *testing.T) (*vfs.MemFS, history, plog.Options) {
	t.Helper()
	base := newMem(t)
	opts := compactOptions(nil, nil)
	opts.FS = nil
	opts.SyncBeforeAck = true
	d, err := plog.OpenDir("/data", plog.DirOptions{FS: base})
	require.NoError(t, err)
	l, err := d.Open(tp, opts)
	require.NoError(t, err)
	var h history
	rng := rand.New(rand.NewPCG(11, 12))
	fill(t, l, &h, rng, 40, 8, 1)
	h.appendKV(t, l, 1, del("k1"), del("k2"))
	fill(t, l, &h, rng, 40, 8, 1)
	h.appendKV(t, l, 1, del("k3"))
	fill(t, l, &h, rng, 25, 6, 1)
	require.NoError(t, d.Close())
	return base, h, opts
}

// TestCleanCrashAtEveryOperation crashes a clean before each of its
// filesystem operations in turn — keeping only what was synced, everything,
// or a random part of what was not — and reopens what the crash left. The
// log must open, hold every key's latest record at its offset and only
// records as they were appended, end where it ended, and clean to exactly
// the compacted model afterwards.
func TestCleanCrashAtEveryOperation(t *testing.T) {
	base, h, opts := cleanCrashFixture(t)
	leo := h[len(h)-1].offset + 1
	workload := func(fsys vfs.FS) {
		d, err := plog.OpenDir("/data", plog.DirOptions{FS: fsys})
		if err != nil {
			return
		}
		defer d.Close()
		l, err := d.Open(tp, opts)
		if err != nil {
			return
		}
		if _, err := l.Clean(context.Background(), l.LogEndOffset()); err != nil {
			return
		}
		_ = d.Checkpoint()
	}
	copyOf := func() *vfs.MemFS { return base.CrashClone(vfs.CrashOptions{KeepUnsynced: vfs.KeepAll}) }

	clean := vfs.WithFaults(copyOf(), vfs.InjectorFunc(func(vfs.Op) error { return nil }))
	workload(clean)
	total := clean.Ops()
	t.Logf("a clean makes %d filesystem operations", total)

	policies := []vfs.KeepPolicy{vfs.KeepNone, vfs.KeepAll, vfs.KeepRandomPrefix}
	if testing.Short() {
		policies = policies[:1] // power loss, the hardest
	}
	swapStates := 0
	for i := range total {
		for _, keep := range policies {
			mem := copyOf()
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
			workload(faulty)
			require.NotNil(t, crashed)
			what := fmt.Sprintf("crash before op %d keeping %v", i, keep)
			names, err := crashed.List("/data/study-0")
			require.NoError(t, err)
			for _, n := range names {
				if strings.Contains(n, ".swap") || strings.Contains(n, ".deleted") || strings.Contains(n, ".cleaned") {
					swapStates++
					break
				}
			}

			d, err := plog.OpenDir("/data", plog.DirOptions{FS: crashed})
			require.NoError(t, err, what)
			l, err := d.Open(tp, opts)
			require.NoError(t, err, what)
			require.Zero(t, l.LoadReport().TruncatedBytes, what)
			require.Equal(t, leo, l.LogEndOffset(), what)
			requireConsistent(t, h, readKV(t, l), what)
			names, err = crashed.List("/data/study-0")
			require.NoError(t, err)
			for _, n := range names {
				require.False(t, strings.Contains(n, ".swap") || strings.Contains(n, ".deleted") || strings.Contains(n, ".cleaned"),
					"%s: %s left after open", what, n)
			}

			st, err := l.Clean(context.Background(), l.LogEndOffset())
			require.NoError(t, err, what)
			require.Equal(t, h.compacted(l.FirstDirtyOffset()), readKV(t, l), what)
			require.Equal(t, l.Segments()[len(l.Segments())-1].BaseOffset, l.FirstDirtyOffset(), "%s: %+v", what, st)
			require.NoError(t, d.Close(), what)

			// And again from the files alone.
			d, err = plog.OpenDir("/data", plog.DirOptions{FS: crashed})
			require.NoError(t, err, what)
			l, err = d.Open(tp, opts)
			require.NoError(t, err, what)
			require.Equal(t, h.compacted(l.FirstDirtyOffset()), readKV(t, l), what)
			require.NoError(t, d.Close(), what)
		}
	}
	t.Logf("%d crash states held swap files", swapStates)
	require.Positive(t, swapStates, "some crashes left a swap half done")
}

// TestCleanRecoveryCrash crashes the open that finishes an interrupted swap,
// before each of its filesystem operations: recovery must itself be
// crash-safe, so that the open after that still finds every key's latest
// record.
func TestCleanRecoveryCrash(t *testing.T) {
	base, h, opts := cleanCrashFixture(t)
	leo := h[len(h)-1].offset + 1
	workload := func(fsys vfs.FS) {
		d, err := plog.OpenDir("/data", plog.DirOptions{FS: fsys})
		if err != nil {
			return
		}
		defer d.Close()
		if l, err := d.Open(tp, opts); err == nil {
			_, _ = l.Clean(context.Background(), l.LogEndOffset())
		}
	}
	reopen := func(fsys vfs.FS) {
		d, err := plog.OpenDir("/data", plog.DirOptions{FS: fsys})
		if err != nil {
			return
		}
		defer d.Close()
		_, _ = d.Open(tp, opts)
	}
	// crashAt runs work on a copy of mem, crashing before operation i.
	crashAt := func(mem *vfs.MemFS, i int64, keep vfs.KeepPolicy, work func(vfs.FS)) *vfs.MemFS {
		crashed := mem
		eio := &fs.PathError{Op: "crash", Path: "-", Err: syscall.EIO}
		work(vfs.WithFaults(mem, vfs.InjectorFunc(func(op vfs.Op) error {
			if op.Seq == i {
				crashed = mem.CrashClone(vfs.CrashOptions{KeepUnsynced: keep, Seed: i})
			}
			if op.Seq >= i {
				return eio
			}
			return nil
		})))
		return crashed
	}
	copyOf := func(m *vfs.MemFS) *vfs.MemFS { return m.CrashClone(vfs.CrashOptions{KeepUnsynced: vfs.KeepAll}) }
	counted := vfs.WithFaults(copyOf(base), vfs.InjectorFunc(func(vfs.Op) error { return nil }))
	workload(counted)

	swapped, sweeps := 0, 0
	for i := range counted.Ops() {
		state := crashAt(copyOf(base), i, vfs.KeepNone, workload)
		names, err := state.List("/data/study-0")
		require.NoError(t, err)
		if !slices.ContainsFunc(names, func(n string) bool { return strings.HasSuffix(n, ".log.swap") }) {
			continue
		}
		swapped++
		if every := map[bool]int{false: 8, true: 32}[testing.Short()]; swapped%every != 1 {
			continue // a sample keeps the sweep short
		}
		sweeps++
		probe := vfs.WithFaults(copyOf(state), vfs.InjectorFunc(func(vfs.Op) error { return nil }))
		reopen(probe)
		for j := range probe.Ops() {
			for _, keep := range []vfs.KeepPolicy{vfs.KeepNone, vfs.KeepRandomPrefix} {
				what := fmt.Sprintf("crash before op %d of the clean, then before op %d of the open keeping %v", i, j, keep)
				twice := crashAt(copyOf(state), j, keep, reopen)
				d, err := plog.OpenDir("/data", plog.DirOptions{FS: twice})
				require.NoError(t, err, what)
				l, err := d.Open(tp, opts)
				require.NoError(t, err, what)
				require.Equal(t, leo, l.LogEndOffset(), what)
				requireConsistent(t, h, readKV(t, l), what)
				require.NoError(t, d.Close(), what)
			}
		}
	}
	require.Positive(t, sweeps)
	t.Logf("%d crash states held a committed swap; swept the open of %d", swapped, sweeps)
}

// txnCrashFixture is a compacted log with transactions on a MemFS, closed
// cleanly, and its history: two cleans have removed aborted transactions
// and stamped the markers of the emptied ones with delete horizons; after
// them come another aborted transaction, a committed one and one still
// open, among plain records, not yet cleaned. It returns the offsets of
// the stamped markers too.
func txnCrashFixture(t *testing.T, c *clock) (*vfs.MemFS, *txnHistory, plog.Options, []int64) {
	t.Helper()
	base := newMem(t)
	opts := compactOptions(base, c)
	opts.SyncBeforeAck = true
	opts.DeleteRetentionMs = time.Hour
	l := open(t, opts)
	h := newTxnHistory()
	start := c.now
	h.plain(t, l, 1, put("a", "a1"), put("b", "b1"))
	h.txn(t, l, 1, 1, put("a", "a-aborted"))
	h.txn(t, l, 2, 1, put("b", "b-committed"))
	h.txn(t, l, 4, 1, put("k4", "aborted, its producer's last batch"))
	fillPlain(t, l, h, 12, 1)
	// Producer 1's transaction empties once cleaned; so does producer
	// 2's, once a plain record supersedes its only one. Both go on.
	stamped := []int64{h.end(t, l, 1, 0, record.ControlAbort, 1), h.end(t, l, 2, 0, record.ControlCommit, 1)}
	h.end(t, l, 4, 0, record.ControlAbort, 1)
	h.txn(t, l, 1, 1, put("c", "c-committed"))
	h.end(t, l, 1, 0, record.ControlCommit, 1)
	h.plain(t, l, 1, put("b", "b-plain"))
	h.txn(t, l, 2, 1, put("d", "d-committed"))
	h.end(t, l, 2, 0, record.ControlCommit, 1)
	fillPlain(t, l, h, 24, 1)
	for i, ahead := range []time.Duration{0, time.Minute} {
		c.now = start.Add(ahead)
		st, err := l.Clean(t.Context(), h.lso(l.LogEndOffset()))
		require.NoError(t, err)
		require.True(t, st.Cleaned, "clean %d", i)
		fillPlain(t, l, h, 24, 1)
	}
	for _, off := range stamped {
		hd, ok := markerAt(readBatches(t, l), off)
		require.True(t, ok)
		require.True(t, hd.Attributes.HasDeleteHorizon(), "marker %d is stamped", off)
	}
	h.txn(t, l, 6, 1, put("a", "a-aborted-again"), put("e", "e-aborted"))
	h.txn(t, l, 7, 1, put("b", "b-committed-again"))
	fillPlain(t, l, h, 12, 1)
	h.end(t, l, 6, 0, record.ControlAbort, 1)
	h.end(t, l, 7, 0, record.ControlCommit, 1)
	h.txn(t, l, 8, 1, put("a", "a-open"))
	fillPlain(t, l, h, 24, 1)
	requireTxnConsistent(t, l, h, "fixture")
	require.NoError(t, l.Close())
	opts.FS = nil
	return base, h, opts, stamped
}

// TestCleanTxnCrashAtEveryOperation crashes a clean of a log with
// transactions — one that removes an aborted transaction's records and
// markers whose horizons have passed — before each of its filesystem
// operations in turn, keeping only what was synced or a random part of
// the rest, and reopens what the crash left. The log must end where it
// ended and hold only records as appended, and every record the clean
// keeps; a producer state rebuilt from it must find the same producers
// and open transactions; every transaction with a batch left must have
// its marker, and every aborted one its .txnindex entry; read_committed
// must read exactly the committed records held. A clean afterwards must
// leave exactly the model, without the expired markers.
func TestCleanTxnCrashAtEveryOperation(t *testing.T) {
	c := &clock{now: time.UnixMilli(20_000_000)}
	base, h, opts, stamped := txnCrashFixture(t, c)
	c.now = c.now.Add(3 * time.Hour) // past the stamped markers' horizons
	leo := h.records[len(h.records)-1].offset + 1
	var cleanedTo int64
	workload := func(fsys vfs.FS) {
		o := opts
		o.FS, o.CleanShutdown = fsys, true
		l, err := plog.Open(dir, o)
		if err != nil {
			return
		}
		defer l.Close()
		if st, err := l.Clean(context.Background(), h.lso(l.LogEndOffset())); err == nil {
			cleanedTo = st.FirstUncleanableOffset
		}
	}
	copyOf := func() *vfs.MemFS { return base.CrashClone(vfs.CrashOptions{KeepUnsynced: vfs.KeepAll}) }
	counted := vfs.WithFaults(copyOf(), vfs.InjectorFunc(func(vfs.Op) error { return nil }))
	workload(counted)
	total := counted.Ops()
	require.Positive(t, cleanedTo)
	after, _ := h.expected(cleanedTo)
	t.Logf("the clean makes %d filesystem operations", total)

	swapStates := 0
	for i := range total {
		policies := []vfs.KeepPolicy{vfs.KeepNone, vfs.KeepRandomPrefix}
		if testing.Short() || i%3 != 0 {
			policies = policies[:1] // power loss, the hardest; a sample of the rest
		}
		for _, keep := range policies {
			mem := copyOf()
			crashed := mem
			workload(vfs.WithFaults(mem, vfs.InjectorFunc(func(op vfs.Op) error {
				if op.Seq == i {
					crashed = mem.CrashClone(vfs.CrashOptions{KeepUnsynced: keep, Seed: i})
				}
				if op.Seq >= i {
					return &fs.PathError{Op: "crash", Path: "-", Err: syscall.EIO}
				}
				return nil
			})))
			names, err := crashed.List(dir)
			require.NoError(t, err)
			if slices.ContainsFunc(names, func(n string) bool { return strings.HasSuffix(n, segment.SwapSuffix) }) {
				swapStates++
			}
			what := fmt.Sprintf("crash before op %d keeping %v", i, keep)
			o := opts
			o.FS = crashed
			l, err := plog.Open(dir, o)
			require.NoError(t, err, what)
			require.Equal(t, leo, l.LogEndOffset(), what)
			requireTxnConsistent(t, l, h, what)
			held := map[int64]bool{}
			for _, w := range readKV(t, l) {
				held[w.offset] = true
			}
			for _, r := range after {
				require.True(t, held[r.offset], "%s: record %v is missing", what, r.written)
			}

			st, err := l.Clean(context.Background(), h.lso(l.LogEndOffset()))
			require.NoError(t, err, what)
			certain, maybe := h.expected(st.FirstUncleanableOffset)
			require.Empty(t, maybe, what)
			requireRecords(t, certain, nil, readKV(t, l), what+", cleaned again")
			requireTxnConsistent(t, l, h, what+", cleaned again")
			bs := readBatches(t, l)
			for _, off := range stamped {
				_, ok := markerAt(bs, off)
				require.False(t, ok, "%s: marker %d outlived its horizon", what, off)
			}
			require.NoError(t, l.Close(), what)
		}
	}
	t.Logf("%d crash states held a swap to complete", swapStates)
	require.Positive(t, swapStates)
}
