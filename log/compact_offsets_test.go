package log_test

import (
	"context"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/partlog/partlog/kafka"
	plog "github.com/partlog/partlog/log"
	"github.com/partlog/partlog/record"
	"github.com/partlog/partlog/vfs"
)

// TestOffsetsTopicCompaction is the log-level part of test 26 of the
// reliability plan: a __consumer_offsets partition with many commits per
// group and partition, group deletions (tombstones for every key of the
// group), and transactional offset commits still above the last stable
// offset, compacted up to that LSO and crashed before every filesystem
// operation of the clean. After reloading, each (group, topic, partition)
// maps to its latest commit, deleted groups stay deleted, and nothing at or
// above the LSO was touched — nor a commit below it that only a pending
// transactional commit supersedes.
func TestOffsetsTopicCompaction(t *testing.T) {
	base := newMem(t)
	opts := compactOptions(nil, nil)
	opts.FS = nil
	opts.SyncBeforeAck = true
	key := func(g, tp, p int) string { return fmt.Sprintf("g%d/t%d/%d", g, tp, p) }

	d, err := plog.OpenDir("/data", plog.DirOptions{FS: base})
	require.NoError(t, err)
	l, err := d.Open(kafka.TopicPartition{Topic: "__consumer_offsets", Partition: 0}, opts)
	require.NoError(t, err)
	var h history
	rng := rand.New(rand.NewPCG(26, 26))
	committed := map[string]int{}
	for round := range 12 {
		var kvs []kv
		for range 8 {
			k := key(rng.IntN(5), rng.IntN(2), rng.IntN(3))
			committed[k] += 1 + rng.IntN(10)
			kvs = append(kvs, put(k, fmt.Sprint(committed[k])))
		}
		h.appendKV(t, l, 1, kvs...)
		if round == 5 || round == 11 {
			g := map[int]int{5: 0, 11: 4}[round] // delete a group: a tombstone for each of its keys
			var tombs []kv
			for tp := range 2 {
				for p := range 3 {
					tombs = append(tombs, del(key(g, tp, p)))
					delete(committed, key(g, tp, p))
				}
			}
			h.appendKV(t, l, 1, tombs...)
		}
	}
	lso := l.LogEndOffset()
	// A transaction commits offsets it has not yet committed: they sit
	// above the LSO and supersede commits below it only if it commits.
	txn := record.DefaultBatchOptions()
	txn.ProducerID, txn.ProducerEpoch, txn.BaseSequence, txn.Transactional = 9, 0, 0, true
	var pending []kv
	for k := range committed {
		pending = append(pending, put(k, "pending"))
		if len(pending) == 3 {
			break
		}
	}
	h.appendWith(t, l, txn, 1, pending...)
	h.appendKV(t, l, 1, put(key(0, 0, 0), "after")) // more, past the LSO
	require.NoError(t, d.Close())
	require.Greater(t, lso, int64(40))

	// reload reads the partition the way a coordinator loads it: key by
	// key, the last record wins and a tombstone deletes.
	reload := func(t *testing.T, l *plog.Log, upTo int64) map[string]string {
		out := map[string]string{}
		for _, w := range readKV(t, l) {
			if w.offset >= upTo {
				break
			}
			if w.tomb {
				delete(out, w.key)
			} else {
				out[w.key] = w.value
			}
		}
		return out
	}
	want := map[string]string{}
	for k, v := range committed {
		want[k] = fmt.Sprint(v)
	}
	above := func(ws []written) []written {
		var out []written
		for _, w := range ws {
			if w.offset >= lso {
				out = append(out, w)
			}
		}
		return out
	}

	workload := func(fsys vfs.FS) {
		d, err := plog.OpenDir("/data", plog.DirOptions{FS: fsys})
		if err != nil {
			return
		}
		defer d.Close()
		l, err := d.Open(kafka.TopicPartition{Topic: "__consumer_offsets", Partition: 0}, opts)
		if err != nil {
			return
		}
		_, _ = l.Clean(context.Background(), lso)
	}
	copyOf := func() *vfs.MemFS { return base.CrashClone(vfs.CrashOptions{KeepUnsynced: vfs.KeepAll}) }
	counted := vfs.WithFaults(copyOf(), vfs.InjectorFunc(func(vfs.Op) error { return nil }))
	workload(counted)
	total := counted.Ops()

	for i := range total + 1 { // the last run does not crash
		for _, keep := range []vfs.KeepPolicy{vfs.KeepNone, vfs.KeepRandomPrefix} {
			mem := copyOf()
			crashed := mem
			eio := &fs.PathError{Op: "crash", Path: "-", Err: syscall.EIO}
			workload(vfs.WithFaults(mem, vfs.InjectorFunc(func(op vfs.Op) error {
				if op.Seq == i {
					crashed = mem.CrashClone(vfs.CrashOptions{KeepUnsynced: keep, Seed: i})
				}
				if op.Seq >= i {
					return eio
				}
				return nil
			})))
			what := fmt.Sprintf("crash before op %d of %d keeping %v", i, total, keep)
			d, err := plog.OpenDir("/data", plog.DirOptions{FS: crashed})
			require.NoError(t, err, what)
			l, err := d.Open(kafka.TopicPartition{Topic: "__consumer_offsets", Partition: 0}, opts)
			require.NoError(t, err, what)
			got := readKV(t, l)
			require.Equal(t, want, reload(t, l, lso), what)
			require.Equal(t, above(h), above(got), "%s: nothing above the LSO is touched", what)
			requireConsistent(t, h, got, what)
			for k := range reload(t, l, lso) {
				require.NotRegexp(t, "^g4/", k, "%s: group g4 was deleted", what)
			}
			if i == total {
				// The clean ran whole: below where it ended, only the
				// latest commits are left, and deleted groups' tombstones.
				fd := l.FirstDirtyOffset()
				require.Greater(t, fd, int64(0), what)
				require.Equal(t, below(h.compacted(fd), fd), below(got, fd), what)
			}
			require.NoError(t, d.Close(), what)
		}
	}
}

func below(ws []written, offset int64) []written {
	var out []written
	for _, w := range ws {
		if w.offset < offset {
			out = append(out, w)
		}
	}
	return out
}
