package log_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	plog "github.com/partlog/partlog/log"
	"github.com/partlog/partlog/record"
	"github.com/partlog/partlog/vfs"
)

// cleanMachine drives a compacted log with random appends (tombstones and
// producer batches among them), cleans up to random offsets, clock jumps
// past delete horizons and reopens, and checks it against the history of
// appends after every step.
type cleanMachine struct {
	fs    *vfs.MemFS
	clock *clock
	opts  plog.Options
	d     *plog.Dir
	l     *plog.Log
	h     history
	seq   int32
	// cleanedTo is the end of the last clean: below it each key has only
	// its latest record (of those below it); from it on nothing was cleaned.
	cleanedTo int64
}

func (m *cleanMachine) open(t *rapid.T) {
	var err error
	m.d, err = plog.OpenDir("/data", plog.DirOptions{FS: m.fs})
	require.NoError(t, err)
	m.l, err = m.d.Open(tp, m.opts)
	require.NoError(t, err)
}

func (m *cleanMachine) Append(t *rapid.T) {
	n := rapid.IntRange(1, 4).Draw(t, "records")
	var kvs []kv
	for i := range n {
		k := fmt.Sprintf("k%d", rapid.IntRange(0, 7).Draw(t, "key"))
		if rapid.IntRange(0, 5).Draw(t, "tombstone") == 0 {
			kvs = append(kvs, del(k))
		} else {
			kvs = append(kvs, put(k, fmt.Sprintf("%s@%d.%d", k, len(m.h), i)))
		}
	}
	opts := record.DefaultBatchOptions()
	if rapid.Bool().Draw(t, "idempotent") {
		opts.ProducerID, opts.ProducerEpoch, opts.BaseSequence = 42, 0, m.seq
		m.seq += int32(n)
	}
	m.h.appendWith(t, m.l, opts, m.clock.now.UnixMilli(), kvs...)
}

func (m *cleanMachine) Clean(t *rapid.T) {
	start, leo := m.l.LogStartOffset(), m.l.LogEndOffset()
	upTo := rapid.Int64Range(start, leo).Draw(t, "upTo")
	st, err := m.l.Clean(context.Background(), upTo)
	require.NoError(t, err)
	require.LessOrEqual(t, st.FirstUncleanableOffset, max(upTo, st.FirstDirtyOffset))
	if st.Cleaned {
		m.cleanedTo = max(m.cleanedTo, st.FirstUncleanableOffset)
	}
	require.Equal(t, m.cleanedTo, m.l.FirstDirtyOffset())
}

func (m *cleanMachine) Tick(t *rapid.T) {
	m.clock.now = m.clock.now.Add(time.Duration(rapid.IntRange(1, 90).Draw(t, "minutes")) * time.Minute)
}

func (m *cleanMachine) Reopen(t *rapid.T) {
	require.NoError(t, m.d.Close())
	m.open(t)
}

func (m *cleanMachine) Check(t *rapid.T) {
	got := readKV(t, m.l)
	requireConsistent(t, m.h, got, "model")
	if len(m.h) > 0 {
		require.Equal(t, m.h[len(m.h)-1].offset+1, m.l.LogEndOffset())
	}
	latestBelow := map[string]int64{}
	for _, w := range m.h {
		if w.offset < m.cleanedTo {
			latestBelow[w.key] = w.offset
		}
	}
	present := map[int64]bool{}
	for _, w := range got {
		present[w.offset] = true
		if w.offset < m.cleanedTo {
			require.Equal(t, latestBelow[w.key], w.offset, "record %v was superseded before %d", w, m.cleanedTo)
		}
	}
	for _, w := range m.h {
		switch {
		case w.offset >= m.cleanedTo:
			require.True(t, present[w.offset], "record %v was never cleaned", w)
		case latestBelow[w.key] == w.offset && !w.tomb:
			require.True(t, present[w.offset], "record %v is the latest below %d", w, m.cleanedTo)
		}
	}
}

// TestCleanModel is the property test of compaction.
func TestCleanModel(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		mem := vfs.NewMem()
		require.NoError(t, mem.MkdirAll("/data", 0o755))
		c := &clock{now: time.UnixMilli(50_000_000)}
		opts := compactOptions(nil, c)
		opts.FS = nil
		opts.DeleteRetentionMs = time.Hour
		opts.MinCleanableDirtyRatio = rapid.SampledFrom([]float64{-1, 0.3}).Draw(t, "ratio")
		m := &cleanMachine{fs: mem, clock: c, opts: opts}
		m.open(t)
		defer func() { m.d.Close() }()
		t.Repeat(rapid.StateMachineActions(m))
	})
}
