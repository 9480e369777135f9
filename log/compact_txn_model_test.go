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

// txnCleanMachine drives a compacted log with plain records and three
// producers' transactions — committed, aborted, empty, open, some ending
// with markers that begin a new epoch — cleans it up to random offsets at
// or below the model's last stable offset, moves the clock past delete
// horizons and reopens it, and checks it against the model after every
// step: the records (requireRecords), and what a producer state, the
// .txnindex and a read_committed reader make of it
// (requireTxnConsistent).
type txnCleanMachine struct {
	fs    *vfs.MemFS
	clock *clock
	opts  plog.Options
	d     *plog.Dir
	l     *plog.Log
	h     *txnHistory
	// cleanedTo is the end of the last clean (see cleanMachine).
	cleanedTo int64
}

func (m *txnCleanMachine) open(t *rapid.T) {
	var err error
	m.d, err = plog.OpenDir("/data", plog.DirOptions{FS: m.fs})
	require.NoError(t, err)
	m.l, err = m.d.Open(tp, m.opts)
	require.NoError(t, err)
}

func (m *txnCleanMachine) kvs(t *rapid.T, tag string) []kv {
	var out []kv
	for i := range rapid.IntRange(1, 3).Draw(t, "records") {
		k := fmt.Sprintf("k%d", rapid.IntRange(0, 5).Draw(t, "key"))
		if rapid.IntRange(0, 7).Draw(t, "tombstone") == 0 {
			out = append(out, del(k))
		} else {
			out = append(out, put(k, fmt.Sprintf("%s-%s@%d.%d", k, tag, len(m.h.records), i)))
		}
	}
	return out
}

func (m *txnCleanMachine) Plain(t *rapid.T) {
	m.h.plain(t, m.l, m.clock.now.UnixMilli(), m.kvs(t, "plain")...)
}

func (m *txnCleanMachine) Txn(t *rapid.T) {
	pid := rapid.Int64Range(1, 3).Draw(t, "producer")
	m.h.txn(t, m.l, pid, m.clock.now.UnixMilli(), m.kvs(t, fmt.Sprintf("p%d", pid))...)
}

func (m *txnCleanMachine) End(t *rapid.T) {
	pid := rapid.Int64Range(1, 3).Draw(t, "producer")
	typ := rapid.SampledFrom([]record.ControlType{record.ControlCommit, record.ControlAbort}).Draw(t, "marker")
	epoch := m.h.epoch[pid]
	if rapid.IntRange(0, 4).Draw(t, "bump") == 0 {
		epoch++
	}
	m.h.end(t, m.l, pid, epoch, typ, m.clock.now.UnixMilli())
}

func (m *txnCleanMachine) Clean(t *rapid.T) {
	start, lso := m.l.LogStartOffset(), m.h.lso(m.l.LogEndOffset())
	upTo := rapid.Int64Range(start, lso).Draw(t, "upTo")
	st, err := m.l.Clean(context.Background(), upTo)
	require.NoError(t, err)
	require.LessOrEqual(t, st.FirstUncleanableOffset, max(upTo, st.FirstDirtyOffset))
	if st.Cleaned {
		m.cleanedTo = max(m.cleanedTo, st.FirstUncleanableOffset)
	}
}

func (m *txnCleanMachine) Tick(t *rapid.T) {
	m.clock.now = m.clock.now.Add(time.Duration(rapid.IntRange(1, 90).Draw(t, "minutes")) * time.Minute)
}

func (m *txnCleanMachine) Reopen(t *rapid.T) {
	require.NoError(t, m.d.Close())
	m.open(t)
}

func (m *txnCleanMachine) Check(t *rapid.T) {
	certain, maybe := m.h.expected(m.cleanedTo)
	requireRecords(t, certain, maybe, readKV(t, m.l), "model")
	requireTxnConsistent(t, m.l, m.h, "model")
}

// TestCleanTxnModel is the property test of compaction with transactions.
func TestCleanTxnModel(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		mem := vfs.NewMem()
		require.NoError(t, mem.MkdirAll("/data", 0o755))
		c := &clock{now: time.UnixMilli(50_000_000)}
		opts := compactOptions(nil, c)
		opts.FS = nil
		opts.SegmentBytes = 1024
		opts.DeleteRetentionMs = time.Hour
		m := &txnCleanMachine{fs: mem, clock: c, opts: opts, h: newTxnHistory()}
		m.open(t)
		defer func() { m.d.Close() }()
		t.Repeat(rapid.StateMachineActions(m))
	})
}
