package log_test

import (
	"errors"
	"fmt"
	"path"
	"slices"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	plog "github.com/partlog/partlog/log"
	"github.com/partlog/partlog/record"
	"github.com/partlog/partlog/segment"
	"github.com/partlog/partlog/vfs"
)

// txnTracker is a small stand-in for the partition's producer state: it
// follows open transactions (a transactional batch opens one, a marker
// closes it) and answers the log's TxnIndexer with an entry for each ABORT
// marker, as the partition does.
type txnTracker struct {
	mu   sync.Mutex
	open map[int64]int64 // producer -> first offset
	next int64           // batches below it are applied
}

func newTracker() *txnTracker { return &txnTracker{open: map[int64]int64{}} }

func (t *txnTracker) CheckAppend(record.Header, int64) error { return nil }
func (t *txnTracker) AppendFailed(record.Header, error)      {}

func (t *txnTracker) AbortedTxn(h record.Header, batch []byte) (segment.AbortedTxn, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if h.BaseOffset < t.next {
		return segment.AbortedTxn{}, false
	}
	t.next = h.NextOffset()
	if !h.Attributes.IsTransactional() {
		return segment.AbortedTxn{}, false
	}
	if !h.Attributes.IsControl() {
		if _, ok := t.open[h.ProducerID]; !ok {
			t.open[h.ProducerID] = h.BaseOffset
		}
		return segment.AbortedTxn{}, false
	}
	m, ok, err := record.ParseControlBatch(batch, record.VerifyCRC)
	first, open := t.open[h.ProducerID]
	if err != nil || !ok || !open {
		return segment.AbortedTxn{}, false
	}
	delete(t.open, h.ProducerID)
	if m.Type != record.ControlAbort {
		return segment.AbortedTxn{}, false
	}
	lso := h.BaseOffset + 1
	for _, f := range t.open {
		lso = min(lso, f)
	}
	return segment.AbortedTxn{ProducerID: h.ProducerID, FirstOffset: first, LastOffset: h.BaseOffset, LastStableOffset: lso}, true
}

// txnBatch is a transactional batch of n keyed records from producer pid.
func txnBatch(pid int64, n int, tag string) []byte {
	opts := record.DefaultBatchOptions()
	opts.ProducerID, opts.ProducerEpoch, opts.BaseSequence, opts.Transactional = pid, 0, 0, true
	b := record.NewBuilder(opts)
	for i := range n {
		b.Append(record.Record{Timestamp: 1, Key: fmt.Appendf(nil, "%s%d", tag, i), Value: []byte(tag + "-value-padding-padding")})
	}
	return b.Build()
}

func marker(pid int64, typ record.ControlType) []byte {
	return record.ControlBatch(typ, pid, 0, 0, 1)
}

// TestTxnIndexFollowsAppends: on both append paths, an ABORT marker's entry
// lands in the .txnindex of the segment the marker went to, whatever
// segment the transaction began in, and a follower given the leader's
// batches keeps the same index.
func TestTxnIndexFollowsAppends(t *testing.T) {
	for _, sync := range []bool{false, true} {
		t.Run(fmt.Sprintf("sync-before-ack=%v", sync), func(t *testing.T) {
			fsys := newMem(t)
			opts := smallOptions(fsys)
			opts.SyncBeforeAck = sync
			l := open(t, opts)
			defer l.Close()
			x := newTracker()
			app := func(b []byte) int64 {
				t.Helper()
				info, err := l.AppendChecked(b, x)
				require.NoError(t, err)
				return info.FirstOffset
			}
			first1 := app(txnBatch(1, 10, "a")) // 0..9
			first2 := app(txnBatch(2, 10, "b")) // 10..19
			for len(l.Segments()) < 3 {
				app(txnBatch(1, 10, "a")) // producer 1's transaction goes on
			}
			m1 := app(marker(1, record.ControlAbort))
			m2 := app(marker(2, record.ControlCommit))
			app(txnBatch(3, 2, "c"))
			m3 := app(marker(3, record.ControlAbort))
			want := []segment.AbortedTxn{
				{ProducerID: 1, FirstOffset: first1, LastOffset: m1, LastStableOffset: first2},
				{ProducerID: 3, FirstOffset: m2 + 1, LastOffset: m3, LastStableOffset: m3 + 1},
			}
			got, err := l.AbortedTxns()
			require.NoError(t, err)
			require.Equal(t, want, got)
			segs := l.Segments()
			active := segs[len(segs)-1]
			name := path.Join(dir, segment.FileName(active.BaseOffset, segment.TxnIndexSuffix))
			info, err := fsys.Stat(name)
			require.NoError(t, err, "the markers went to the active segment")
			require.EqualValues(t, 2*segment.TxnIndexEntrySize, info.Size())
			for _, s := range segs[:len(segs)-1] {
				_, err := fsys.Stat(path.Join(dir, segment.FileName(s.BaseOffset, segment.TxnIndexSuffix)))
				require.ErrorIs(t, err, errNotExist, "no .txnindex where no marker is")
			}

			// A read of [0, 15) overlaps producer 1's aborted transaction.
			// Its entry's last stable offset (10, producer 2's transaction
			// was open) is below 15, so the search goes on to producer 3's
			// entry, which began after 15 and whose last stable offset ends
			// the search.
			got, err = l.CollectAbortedTxns(nil, 0, 15)
			require.NoError(t, err)
			require.Equal(t, want[:1], got)
			got, err = l.CollectAbortedTxns(nil, m2, m3+1)
			require.NoError(t, err)
			require.Equal(t, want[1:], got)

			// A follower appending the leader's bytes keeps the same index.
			ffs := newMem(t)
			fopts := smallOptions(ffs)
			fl, err := plog.Open("/data/follower-0", fopts)
			require.NoError(t, err)
			defer fl.Close()
			fx := newTracker()
			for off := int64(0); off < l.LogEndOffset(); {
				b, err := l.Read(nil, off, l.LogEndOffset(), 1000)
				require.NoError(t, err)
				info, err := fl.AppendAsFollowerIndexed(b, fx)
				require.NoError(t, err)
				off = info.LastOffset + 1
			}
			fgot, err := fl.AbortedTxns()
			require.NoError(t, err)
			require.Equal(t, want, fgot)
		})
	}
}

// TestTxnIndexTruncation: truncating the log across a marker removes its
// entry; reopening after a clean close reads the entries back.
func TestTxnIndexTruncation(t *testing.T) {
	fsys := newMem(t)
	l := open(t, smallOptions(fsys))
	x := newTracker()
	for _, b := range [][]byte{txnBatch(1, 3, "a"), marker(1, record.ControlAbort), txnBatch(2, 3, "b"), marker(2, record.ControlAbort)} {
		_, err := l.AppendChecked(b, x)
		require.NoError(t, err)
	}
	want := []segment.AbortedTxn{{ProducerID: 1, FirstOffset: 0, LastOffset: 3, LastStableOffset: 4}, {ProducerID: 2, FirstOffset: 4, LastOffset: 7, LastStableOffset: 8}}
	got, err := l.AbortedTxns()
	require.NoError(t, err)
	require.Equal(t, want, got)
	require.NoError(t, l.TruncateTo(7)) // the second marker goes
	got, err = l.AbortedTxns()
	require.NoError(t, err)
	require.Equal(t, want[:1], got)
	require.NoError(t, l.Close())

	l = open(t, smallOptions(fsys))
	defer l.Close()
	require.Empty(t, l.LoadReport().DamagedTxnIndexes)
	got, err = l.AbortedTxns()
	require.NoError(t, err)
	require.Equal(t, want[:1], got)
	require.NoError(t, l.TruncateTo(0))
	got, err = l.AbortedTxns()
	require.NoError(t, err)
	require.Empty(t, got)
}

// TestRewriteAbortedTxns: a rewrite replaces the entries of markers from
// its offset on, in the segments that hold them, and keeps those below.
func TestRewriteAbortedTxns(t *testing.T) {
	fsys := newMem(t)
	l := open(t, smallOptions(fsys))
	defer l.Close()
	x := newTracker()
	var markers []int64
	for i := int64(0); len(l.Segments()) < 3 || len(markers) < 4; i++ {
		_, err := l.AppendChecked(txnBatch(i, 20, "a"), x)
		require.NoError(t, err)
		info, err := l.AppendChecked(marker(i, record.ControlAbort), x)
		require.NoError(t, err)
		markers = append(markers, info.FirstOffset)
	}
	all, err := l.AbortedTxns()
	require.NoError(t, err)
	require.Len(t, all, len(markers))

	// Damage what a rebuild from the third marker on would rewrite.
	from := markers[2]
	require.NoError(t, l.RewriteAbortedTxns(from, nil))
	got, err := l.AbortedTxns()
	require.NoError(t, err)
	require.Equal(t, all[:2], got)
	require.NoError(t, l.RewriteAbortedTxns(from, all[2:]))
	got, err = l.AbortedTxns()
	require.NoError(t, err)
	require.Equal(t, all, got)
	// Rewriting twice, or with entries already there, changes nothing.
	require.NoError(t, l.RewriteAbortedTxns(markers[0], all))
	got, err = l.AbortedTxns()
	require.NoError(t, err)
	require.Equal(t, all, got)
	require.Error(t, l.RewriteAbortedTxns(markers[1], all), "an entry below the rewrite's offset")
	require.NoError(t, l.SyncTxnIndexes())
}

// TestTxnIndexDamageReported: a damaged .txnindex is reported at open and
// kept as it is; a .txnindex whose log is gone is removed.
func TestTxnIndexDamageReported(t *testing.T) {
	fsys := newMem(t)
	l := open(t, smallOptions(fsys))
	x := newTracker()
	for _, b := range [][]byte{txnBatch(1, 3, "a"), marker(1, record.ControlAbort)} {
		_, err := l.AppendChecked(b, x)
		require.NoError(t, err)
	}
	require.NoError(t, l.Close())
	name := path.Join(dir, segment.FileName(0, segment.TxnIndexSuffix))
	f, err := fsys.OpenReadWrite(name)
	require.NoError(t, err)
	_, err = f.WriteAt([]byte{0xde, 0xad}, segment.TxnIndexEntrySize) // a torn second entry
	require.NoError(t, err)
	require.NoError(t, f.Close())
	stray := path.Join(dir, segment.FileName(1000, segment.TxnIndexSuffix))
	f, err = fsys.Create(stray)
	require.NoError(t, err)
	require.NoError(t, f.Close())

	opts := smallOptions(fsys)
	opts.CleanShutdown = true
	l = open(t, opts)
	defer l.Close()
	r := l.LoadReport()
	require.Equal(t, []int64{0}, r.DamagedTxnIndexes)
	from, ok := r.TxnIndexRebuildFrom()
	require.True(t, ok)
	require.EqualValues(t, 0, from)
	_, err = l.AbortedTxns()
	require.ErrorIs(t, err, segment.ErrCorruptTxnIndex)
	_, err = fsys.Stat(stray)
	require.ErrorIs(t, err, errNotExist)
	require.NoError(t, l.RewriteAbortedTxns(0, []segment.AbortedTxn{{ProducerID: 1, FirstOffset: 0, LastOffset: 3, LastStableOffset: 4}}))
	got, err := l.AbortedTxns()
	require.NoError(t, err)
	require.Len(t, got, 1)
}

// TestDeleteRetainedUpTo: retention keeps every segment holding an offset
// at or above its bound — an open transaction's first offset — however old.
func TestDeleteRetainedUpTo(t *testing.T) {
	fsys := newMem(t)
	opts := smallOptions(fsys)
	opts.RetentionBytes = 1 // everything but the active segment may go
	l := open(t, opts)
	defer l.Close()
	for len(l.Segments()) < 5 {
		appendN(t, l, 10, "x", 1)
	}
	segs := l.Segments()
	bound := segs[2].BaseOffset + 1 // inside the third segment
	n, err := l.DeleteRetainedUpTo(bound)
	require.NoError(t, err)
	require.Equal(t, 2, n)
	require.Equal(t, segs[2].BaseOffset, l.LogStartOffset())
	n, err = l.DeleteRetainedUpTo(-1)
	require.NoError(t, err)
	require.Equal(t, len(segs)-3, n)
}

// txnCompactFixture is a compacted log holding, among plain keyed batches,
// a committed transaction, an aborted one and one still open, each writing
// key "k" after its committed value: what a clean must not lose.
func txnCompactFixture(t *testing.T, fsys vfs.FS, transactional bool) (*plog.Log, *txnTracker) {
	t.Helper()
	opts := compactOptions(nil, nil)
	opts.FS = fsys
	opts.MinCleanableDirtyRatio = -1
	l := open(t, opts)
	x := newTracker()
	app := func(b []byte) {
		t.Helper()
		_, err := l.AppendChecked(b, x)
		require.NoError(t, err)
	}
	ropts := record.DefaultBatchOptions()
	app(keyedBatch(ropts, 1, put("k", "committed-v1")))
	tx := func(pid int64, v string) []byte {
		o := ropts
		if transactional {
			o.ProducerID, o.ProducerEpoch, o.BaseSequence, o.Transactional = pid, 0, 0, true
		}
		return keyedBatch(o, 1, put("k", v))
	}
	app(tx(7, "aborted-v2"))
	if transactional {
		app(marker(7, record.ControlAbort))
	}
	app(tx(8, "open-v3"))
	for len(l.Segments()) < 4 {
		app(keyedBatch(ropts, 1, put("other", "filler-filler-filler-filler-filler-filler")))
	}
	return l, x
}

// TestCleanKeepsTransactions: the cleaner removes the aborted
// transaction's record and leaves the open one's whole, and neither
// supersedes the committed value of their key, which stays; the marker
// stays (its transaction had a batch when the clean began), and so does
// its entry, in the cleaned segment's .txnindex. The same records written
// outside transactions lose the committed value to the later ones: the
// transactions are what keep it.
func TestCleanKeepsTransactions(t *testing.T) {
	for _, transactional := range []bool{true, false} {
		t.Run(fmt.Sprintf("transactional=%v", transactional), func(t *testing.T) {
			l, _ := txnCompactFixture(t, newMem(t), transactional)
			defer l.Close()
			before, err := l.AbortedTxns()
			require.NoError(t, err)
			st, err := l.Clean(t.Context(), l.LogEndOffset())
			require.NoError(t, err)
			require.True(t, st.Cleaned)
			var values []string
			for _, w := range readKV(t, l) {
				if w.key == "k" {
					values = append(values, w.value)
				}
			}
			if !transactional {
				require.Equal(t, []string{"open-v3"}, values, "outside transactions the latest value wins")
				return
			}
			require.Equal(t, []string{"committed-v1", "open-v3"}, values)
			require.Equal(t, int64(1), st.AbortedRecordsRemoved)
			require.Len(t, before, 1)
			after, err := l.AbortedTxns()
			require.NoError(t, err)
			require.Equal(t, before, after, "the cleaned segment carries the entry")
			segs := l.Segments()
			for _, s := range segs[:len(segs)-1] {
				if s.BaseOffset <= before[0].LastOffset && before[0].LastOffset < s.NextOffset {
					return
				}
			}
			t.Fatalf("no segment holds the marker at %d: %+v", before[0].LastOffset, segs)
		})
	}
}

// TestCleanCrashKeepsTxnIndex crashes a clean of a log with an aborted
// transaction before each filesystem operation in turn and reopens: the
// aborted transaction's entry is there, once, in the segment of its marker,
// whatever step of the swap the crash interrupted.
func TestCleanCrashKeepsTxnIndex(t *testing.T) {
	base := newMem(t)
	l, _ := txnCompactFixture(t, base, true)
	want, err := l.AbortedTxns()
	require.NoError(t, err)
	require.Len(t, want, 1)
	require.NoError(t, l.Close())
	opts := compactOptions(nil, nil)
	opts.MinCleanableDirtyRatio = -1
	opts.CleanShutdown = true

	work := func(fsys vfs.FS) {
		o := opts
		o.FS = fsys
		if l, err := plog.Open(dir, o); err == nil {
			_, _ = l.Clean(t.Context(), l.LogEndOffset())
			_ = l.Close()
		}
	}
	copyOf := func() *vfs.MemFS { return base.CrashClone(vfs.CrashOptions{KeepUnsynced: vfs.KeepAll}) }
	counted := vfs.WithFaults(copyOf(), vfs.InjectorFunc(func(vfs.Op) error { return nil }))
	work(counted)
	swapStates := 0
	for i := range counted.Ops() {
		for _, keep := range []vfs.KeepPolicy{vfs.KeepNone, vfs.KeepAll} {
			mem := copyOf()
			crashed := mem
			work(vfs.WithFaults(mem, vfs.InjectorFunc(func(op vfs.Op) error {
				if op.Seq == i {
					crashed = mem.CrashClone(vfs.CrashOptions{KeepUnsynced: keep, Seed: i})
				}
				if op.Seq >= i {
					return errors.New("crashed")
				}
				return nil
			})))
			names, err := crashed.List(dir)
			require.NoError(t, err)
			if slices.ContainsFunc(names, func(n string) bool { return path.Ext(n) == segment.SwapSuffix }) {
				swapStates++
			}
			o := opts
			o.FS, o.CleanShutdown = crashed, false
			l, err := plog.Open(dir, o)
			what := fmt.Sprintf("crash before op %d keeping %v: %v", i, keep, names)
			require.NoError(t, err, what)
			got, err := l.AbortedTxns()
			require.NoError(t, err, what)
			require.Equal(t, want, got, what)
			require.NoError(t, l.Close())
		}
	}
	require.Positive(t, swapStates, "some crash left a swap to complete")
}
