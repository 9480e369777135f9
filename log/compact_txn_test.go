package log_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	plog "github.com/partlog/partlog/log"
	"github.com/partlog/partlog/record"
)

// failures is a tb that records what fails instead of failing the test:
// a negative control runs a check through it and expects a failure.
type failures struct{ msgs []string }

func (f *failures) Errorf(format string, args ...any) {
	f.msgs = append(f.msgs, fmt.Sprintf(format, args...))
}
func (f *failures) FailNow() { panic(f) }
func (f *failures) Helper()  {}

// failureOf runs check and returns what failed in it, "" if nothing did.
func failureOf(check func(t tb)) (msg string) {
	f := &failures{}
	defer func() {
		if r := recover(); r != nil && r != f {
			panic(r)
		}
		msg = strings.Join(f.msgs, "\n")
	}()
	check(f)
	return ""
}

// failureMessage returns the Messages line of a testify failure.
func failureMessage(msg string) string {
	for _, line := range strings.Split(msg, "\n") {
		if m, ok := strings.CutPrefix(strings.TrimSpace(line), "Messages:"); ok {
			return strings.TrimSpace(m)
		}
	}
	return msg
}

// fillPlain appends n plain records over keys x0..x4, in batches of 3.
func fillPlain(t tb, l *plog.Log, h *txnHistory, n int, ts int64) {
	t.Helper()
	for i := 0; i < n; i += 3 {
		var kvs []kv
		for j := range 3 {
			k := fmt.Sprintf("x%d", (i+j)%5)
			kvs = append(kvs, put(k, fmt.Sprintf("%s@%d", k, len(h.records)+j)))
		}
		h.plain(t, l, ts, kvs...)
	}
}

// txnScenario writes a compacted log of several producers' transactions
// among plain records: producer 1 aborts a transaction that wrote key a
// after its plain value a1, and keys c and e besides; producer 2 commits
// one that supersedes b1; producer 3 commits one whose key stays; producer
// 4's transaction is still open, and a plain record after it rewrites key
// b. It returns the log, its history, and the read_committed view up to
// the last stable offset before any clean.
func txnScenario(t *testing.T, c *clock, rule string) (*plog.Log, *txnHistory, []written) {
	t.Helper()
	opts := compactOptions(newMem(t), c)
	opts.DeleteRetentionMs = time.Hour
	l := open(t, opts)
	t.Cleanup(func() { l.Close() })
	if rule != "" {
		plog.SwitchOffCleanerRule(l, rule)
	}
	h := newTxnHistory()
	h.plain(t, l, 1, put("a", "a1"), put("b", "b1"))
	h.txn(t, l, 1, 1, put("a", "a-aborted"), put("c", "c-aborted"))
	h.txn(t, l, 2, 1, put("b", "b-committed"))
	h.plain(t, l, 1, put("d", "d1"))
	h.txn(t, l, 1, 1, put("e", "e-aborted"))
	h.txn(t, l, 3, 1, put("f", "f-committed"))
	fillPlain(t, l, h, 30, 1)
	h.end(t, l, 1, 0, record.ControlAbort, 1)
	h.end(t, l, 2, 0, record.ControlCommit, 1)
	h.end(t, l, 3, 0, record.ControlCommit, 1)
	h.txn(t, l, 1, 1, put("g", "g-committed")) // producer 1 goes on: its aborted batches are not its last
	h.end(t, l, 1, 0, record.ControlCommit, 1)
	fillPlain(t, l, h, 30, 1)
	h.txn(t, l, 4, 1, put("a", "a-open"))
	h.plain(t, l, 1, put("b", "b-after-the-lso"))
	fillPlain(t, l, h, 60, 1)
	require.GreaterOrEqual(t, len(l.Segments()), 6)
	lso := h.lso(l.LogEndOffset())
	return l, h, readCommitted(t, l, lso)
}

// TestCleanTxnAbortedRemoved checks a clean of txnScenario record by
// record against the model: the aborted transaction's records are gone
// whatever their keys, and the committed value a1 that its record of key
// a came after is still the latest of a; the committed transactions are
// compacted as plain records; nothing at or after the open transaction's
// first offset changed; a read_committed read returns what it returned
// before but the records compaction removed by key, and a
// read_uncommitted one no aborted record below the clean's end.
//
// Negative controls: with aborted batches kept, the aborted records are
// still there; with aborted records in the key map, a1 is lost to the
// aborted record of its key.
func TestCleanTxnAbortedRemoved(t *testing.T) {
	check := func(t tb, l *plog.Log, h *txnHistory, before []written, st plog.CleanStats) {
		t.Helper()
		lso := h.lso(l.LogEndOffset())
		require.LessOrEqual(t, st.FirstUncleanableOffset, lso)
		certain, maybe := h.expected(st.FirstUncleanableOffset)
		got := readKV(t, l)
		requireRecords(t, certain, maybe, got, "read_uncommitted")
		for _, w := range got {
			require.NotContains(t, w.value, "aborted", "read_uncommitted after the clean reads %v", w)
		}
		requireTxnConsistent(t, l, h, "after the clean")
		// Read_committed: what it read before, but what compaction removed.
		var want []written
		kept := map[int64]bool{}
		for _, r := range certain {
			kept[r.offset] = true
		}
		for _, w := range before {
			if kept[w.offset] {
				want = append(want, w)
			}
		}
		require.Equal(t, want, readCommitted(t, l, lso), "read_committed after the clean")
		require.Equal(t, "a1", findKey(readCommitted(t, l, lso), "a").value)
	}
	clean := func(t *testing.T, l *plog.Log, h *txnHistory) plog.CleanStats {
		st, err := l.Clean(t.Context(), h.lso(l.LogEndOffset()))
		require.NoError(t, err)
		require.True(t, st.Cleaned)
		return st
	}

	l, h, before := txnScenario(t, nil, "")
	require.Contains(t, writtenOf(h.records), written{offset: 0, key: "a", value: "a1"})
	st := clean(t, l, h)
	require.Equal(t, int64(3), st.AbortedRecordsRemoved)
	check(t, l, h, before, st)

	for rule, symptom := range map[string]string{
		"remove aborted":             "should not be there",
		"aborted out of the key map": "0:a=a1 is missing",
	} {
		t.Run("without "+rule, func(t *testing.T) {
			l, h, before := txnScenario(t, nil, rule)
			st := clean(t, l, h)
			msg := failureOf(func(t tb) { check(t, l, h, before, st) })
			require.Contains(t, msg, symptom)
			t.Logf("the check fails as it should: %s", failureMessage(msg))
		})
	}
}

// markerOffsets are the markers of markerScenario.
type markerOffsets struct {
	abortedGone, committedGone     int64 // their transactions' batches all go
	committedLive, abortedLastLive int64 // their transactions keep a batch
	bumpedEpoch                    int64 // an empty transaction's, holding its producer's epoch
	otherLive                      []int64
}

// markerScenario writes transactions whose markers meet every fate:
// producer 1 aborts a transaction and goes on; producer 2 commits one
// whose record a plain one supersedes, and goes on; producer 3 commits
// one whose record stays; producer 4 aborts one and writes no more, so
// that its batch holds its state; producer 5 aborts one with a marker
// that begins epoch 1.
func markerScenario(t *testing.T, c *clock, rule string) (*plog.Log, *txnHistory, markerOffsets) {
	t.Helper()
	opts := compactOptions(newMem(t), c)
	opts.DeleteRetentionMs = time.Hour
	l := open(t, opts)
	t.Cleanup(func() { l.Close() })
	if rule != "" {
		plog.SwitchOffCleanerRule(l, rule)
	}
	h := newTxnHistory()
	var m markerOffsets
	h.txn(t, l, 1, 1, put("k1", "aborted"))
	h.txn(t, l, 2, 1, put("s2", "committed"))
	h.txn(t, l, 3, 1, put("keep3", "committed"))
	h.txn(t, l, 4, 1, put("k4", "aborted"))
	h.txn(t, l, 5, 1, put("k5", "aborted"))
	m.abortedGone = h.end(t, l, 1, 0, record.ControlAbort, 1)
	m.committedGone = h.end(t, l, 2, 0, record.ControlCommit, 1)
	m.committedLive = h.end(t, l, 3, 0, record.ControlCommit, 1)
	m.abortedLastLive = h.end(t, l, 4, 0, record.ControlAbort, 1)
	m.bumpedEpoch = h.end(t, l, 5, 1, record.ControlAbort, 1)
	h.plain(t, l, 1, put("s2", "plain"))
	h.txn(t, l, 1, 1, put("y1", "committed"))
	h.txn(t, l, 2, 1, put("y2", "committed"))
	m.otherLive = append(m.otherLive, h.end(t, l, 1, 0, record.ControlCommit, 1), h.end(t, l, 2, 0, record.ControlCommit, 1))
	fillPlain(t, l, h, 60, 1)
	return l, h, m
}

// markerAt returns the marker batch at offset, and whether the log holds
// it.
func markerAt(bs []logBatch, offset int64) (record.Header, bool) {
	for _, b := range bs {
		if b.h.BaseOffset == offset && b.h.Attributes.IsControl() {
			return b.h, true
		}
	}
	return record.Header{}, false
}

// TestCleanTxnMarkers follows markers through cleans: a marker stays, as
// written, while a batch of its transaction is in the log; the clean that
// first finds its transaction empty stamps it with a delete horizon
// delete.retention.ms ahead and drops its .txnindex entry; it stays until
// the horizon, and the first clean after removes it — but the marker that
// holds its producer's epoch, which stays stamped. After each clean a
// producer state rebuilt from the log finds what the model has.
//
// Negative controls: with the markers of transactions that still have
// batches treated as empty, a rebuilt producer state finds transactions
// open that were decided; with empty markers never removed, they stay.
func TestCleanTxnMarkers(t *testing.T) {
	// run cleans four times, checking the log against the model after each
	// clean, and the markers' fates too with fates.
	run := func(t tb, c *clock, l *plog.Log, h *txnHistory, m markerOffsets, fates bool) {
		t.Helper()
		start := c.now
		clean := func(what string) plog.CleanStats {
			t.Helper()
			fillPlain(t, l, h, 60, 1) // something dirty to clean
			st, err := l.Clean(context.Background(), h.lso(l.LogEndOffset()))
			require.NoError(t, err)
			require.True(t, st.Cleaned, what)
			certain, maybe := h.expected(st.FirstUncleanableOffset)
			requireRecords(t, certain, maybe, readKV(t, l), what)
			requireTxnConsistent(t, l, h, what)
			return st
		}
		if !fates {
			for i, ahead := range []time.Duration{0, time.Minute, time.Hour, time.Hour + 2*time.Minute} {
				c.now = start.Add(ahead)
				clean(fmt.Sprintf("clean %d", i+1))
			}
			return
		}
		marker := func(offset int64, what string) record.Header {
			t.Helper()
			hd, ok := markerAt(readBatches(t, l), offset)
			require.True(t, ok, "%s: marker %d is gone", what, offset)
			return hd
		}
		entries := func() []int64 {
			t.Helper()
			es, err := l.AbortedTxns()
			require.NoError(t, err)
			var out []int64
			for _, e := range es {
				out = append(out, e.LastOffset)
			}
			return out
		}
		live := append([]int64{m.committedLive, m.abortedLastLive}, m.otherLive...)
		all := append([]int64{m.abortedGone, m.committedGone, m.bumpedEpoch}, live...)

		st := clean("first clean")
		require.Equal(t, int64(3), st.AbortedRecordsRemoved)
		for _, off := range all {
			require.False(t, marker(off, "first clean").Attributes.HasDeleteHorizon(), "marker %d", off)
		}
		require.Equal(t, []int64{m.abortedGone, m.abortedLastLive, m.bumpedEpoch}, entries(),
			"the entries of the transactions the clean found with batches stay")

		c.now = start.Add(time.Minute)
		horizon := c.now.Add(time.Hour).UnixMilli()
		clean("second clean")
		for _, off := range []int64{m.abortedGone, m.committedGone, m.bumpedEpoch} {
			hd := marker(off, "second clean")
			require.True(t, hd.Attributes.HasDeleteHorizon(), "marker %d of an empty transaction is stamped", off)
			require.Equal(t, horizon, hd.BaseTimestamp)
		}
		for _, off := range live {
			require.False(t, marker(off, "second clean").Attributes.HasDeleteHorizon(), "marker %d", off)
		}
		require.Equal(t, []int64{m.abortedLastLive}, entries(), "empty transactions lose their entries")

		c.now = start.Add(time.Hour)
		st = clean("before the horizon")
		require.Zero(t, st.MarkersRemoved)
		for _, off := range all {
			marker(off, "before the horizon")
		}

		c.now = start.Add(time.Hour + 2*time.Minute)
		st = clean("after the horizon")
		require.Equal(t, int64(2), st.MarkersRemoved)
		bs := readBatches(t, l)
		for _, off := range []int64{m.abortedGone, m.committedGone} {
			_, ok := markerAt(bs, off)
			require.False(t, ok, "marker %d went after its horizon", off)
		}
		require.True(t, marker(m.bumpedEpoch, "after the horizon").Attributes.HasDeleteHorizon(),
			"the marker holding producer 5's epoch stays")
		for _, off := range live {
			marker(off, "after the horizon")
		}
	}

	c := &clock{now: time.UnixMilli(10_000_000)}
	l, h, m := markerScenario(t, c, "")
	run(t, c, l, h, m, true)

	for _, tc := range []struct {
		rule, symptom string
		fates         bool
	}{
		{"keep markers of live transactions", "the open transactions a producer state rebuilt from the log finds", false},
		{"remove empty markers", "of an empty transaction is stamped", true},
	} {
		t.Run("without "+tc.rule, func(t *testing.T) {
			c := &clock{now: time.UnixMilli(10_000_000)}
			l, h, m := markerScenario(t, c, tc.rule)
			msg := failureOf(func(t tb) { run(t, c, l, h, m, tc.fates) })
			require.Contains(t, msg, tc.symptom)
			t.Logf("the check fails as it should: %s", failureMessage(msg))
		})
	}
}
