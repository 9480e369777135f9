package log_test

import (
	"context"
	"math/rand/v2"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	plog "github.com/partlog/partlog/log"
	"github.com/partlog/partlog/vfs"
)

// onCleanedCreate returns a filesystem that runs action once, when the
// cleaner creates its first ".cleaned" file: in the middle of a clean.
func onCleanedCreate(mem vfs.FS, action *func()) *vfs.FaultFS {
	var done atomic.Bool
	return vfs.WithFaults(mem, vfs.InjectorFunc(func(op vfs.Op) error {
		if op.Kind == vfs.OpCreate && strings.HasSuffix(op.Path, ".log.cleaned") && *action != nil && done.CompareAndSwap(false, true) {
			(*action)()
		}
		return nil
	}))
}

func requireNoSwapFiles(t *testing.T, fsys vfs.FS) {
	t.Helper()
	names, err := fsys.List(dir)
	require.NoError(t, err)
	for _, n := range names {
		require.False(t, strings.Contains(n, ".cleaned") || strings.Contains(n, ".swap") || strings.Contains(n, ".deleted"), n)
	}
}

// TestCleanAbortedByRetentionAndTruncation changes the log under a clean in
// progress — retention deletes the segments it rewrites, or a follower
// truncates the log — and checks that the clean gives up with
// ErrCleanAborted, swaps nothing in, leaves no files behind, does not move
// the first dirty offset, and that the next clean succeeds.
func TestCleanAbortedByRetentionAndTruncation(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(t *testing.T, l *plog.Log, h *history)
	}{
		{"retention", func(t *testing.T, l *plog.Log, h *history) {
			require.NoError(t, l.DeleteRecordsBefore(l.Segments()[1].BaseOffset))
			kept := (*h)[:0]
			for _, w := range *h {
				if w.offset >= l.LogStartOffset() {
					kept = append(kept, w)
				}
			}
			*h = kept
		}},
		{"truncation", func(t *testing.T, l *plog.Log, h *history) {
			leo := l.LogEndOffset()
			require.NoError(t, l.TruncateTo(leo-1))
			*h = (*h)[:len(*h)-int(leo-l.LogEndOffset())]
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mem := newMem(t)
			var action func()
			fsys := onCleanedCreate(mem, &action)
			l := open(t, compactOptions(fsys, nil))
			defer l.Close()
			var h history
			fill(t, l, &h, rand.New(rand.NewPCG(1, 3)), 200, 6, 1)
			before := l.Segments()
			action = func() { tc.change(t, l, &h) }

			_, err := l.Clean(context.Background(), l.LogEndOffset())
			require.ErrorIs(t, err, plog.ErrCleanAborted)
			require.Zero(t, l.FirstDirtyOffset()-l.LogStartOffset())
			requireNoSwapFiles(t, mem)
			requireConsistent(t, h, readKV(t, l), "after the aborted clean")
			require.LessOrEqual(t, len(l.Segments()), len(before))

			st := clean(t, l)
			require.True(t, st.Cleaned)
			got := readKV(t, l)
			requireConsistent(t, h, got, "after the next clean")
			seen := map[string]bool{}
			for _, w := range got {
				if w.offset < l.FirstDirtyOffset() {
					require.False(t, seen[w.key], "key %s twice below %d", w.key, l.FirstDirtyOffset())
					seen[w.key] = true
				}
			}
		})
	}
}

// TestCleanWriteFailureKeepsTheLog fails the cleaner's writes before it
// commits a swap: the clean returns the error, the log keeps working and
// holds what it held, nothing is left behind, and a later clean succeeds.
func TestCleanWriteFailureKeepsTheLog(t *testing.T) {
	for _, tc := range []struct {
		name string
		inj  vfs.Injector
	}{
		{"no space writing", vfs.FailOn(vfs.OpWrite, "*.log.cleaned", 0, syscall.ENOSPC)},
		{"sync fails", vfs.FailOn(vfs.OpSync, "*.log.cleaned", 0, syscall.EIO)},
		{"create fails", vfs.FailOn(vfs.OpCreate, "*.index.cleaned", 0, syscall.EIO)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mem := newMem(t)
			l := open(t, compactOptions(vfs.WithFaults(mem, tc.inj), nil))
			defer l.Close()
			var h history
			rng := rand.New(rand.NewPCG(4, 5))
			fill(t, l, &h, rng, 200, 6, 1)

			_, err := l.Clean(context.Background(), l.LogEndOffset())
			require.Error(t, err)
			requireNoSwapFiles(t, mem)
			require.Equal(t, h.compacted(0), readKV(t, l), "nothing changed")
			fill(t, l, &h, rng, 10, 6, 1) // appends go on

			st := clean(t, l)
			require.True(t, st.Cleaned)
			require.Equal(t, h.compacted(st.FirstUncleanableOffset), readKV(t, l))
		})
	}
}

// TestCleanCancelled cancels a clean in progress: it stops with the
// context's error and leaves the log as it was, with nothing behind.
func TestCleanCancelled(t *testing.T) {
	mem := newMem(t)
	var action func()
	l := open(t, compactOptions(onCleanedCreate(mem, &action), nil))
	defer l.Close()
	var h history
	fill(t, l, &h, rand.New(rand.NewPCG(6, 7)), 200, 6, 1)
	ctx, cancel := context.WithCancel(context.Background())
	action = cancel
	_, err := l.Clean(ctx, l.LogEndOffset())
	require.ErrorIs(t, err, context.Canceled)
	requireNoSwapFiles(t, mem)
	require.Zero(t, l.FirstDirtyOffset())
	requireConsistent(t, h, readKV(t, l), "after a cancelled clean")
}

// TestCloseDuringClean closes the log while a clean runs: Close waits for
// the clean to stop (with ErrClosed, or done), and the log reopens whole
// with no swap files left.
func TestCloseDuringClean(t *testing.T) {
	mem := newMem(t)
	var action func()
	opts := compactOptions(onCleanedCreate(mem, &action), nil)
	l := open(t, opts)
	var h history
	fill(t, l, &h, rand.New(rand.NewPCG(6, 7)), 200, 6, 1)
	closed := make(chan error, 1)
	action = func() { go func() { closed <- l.Close() }() }
	_, err := l.Clean(context.Background(), l.LogEndOffset())
	if err != nil {
		require.ErrorIs(t, err, plog.ErrClosed)
	}
	require.NoError(t, <-closed)
	requireNoSwapFiles(t, mem)
	l = open(t, opts)
	defer l.Close()
	requireConsistent(t, h, readKV(t, l), "reopened")
}
