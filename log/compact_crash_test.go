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

	"github.com/stretchr/testify/require"

	plog "github.com/partlog/partlog/log"
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
