package segment_test

import (
	"encoding/hex"
	"io/fs"
	"path"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/partlog/partlog/segment"
	"github.com/partlog/partlog/vfs"
)

var txnPath = path.Join(dir, "00000000000000000100.txnindex")

// txnSegment creates a segment at 100 holding offsets 100..129 (three
// batches of ten records).
func txnSegment(t *testing.T, fsys vfs.FS) *segment.Segment {
	t.Helper()
	s, err := segment.Create(fsys, dir, 100, 0, segment.Options{})
	require.NoError(t, err)
	appendBatches(t, s, 3, 10, 10, 1000)
	require.EqualValues(t, 130, s.NextOffset())
	return s
}

func readFile(t *testing.T, fsys vfs.FS, name string) []byte {
	t.Helper()
	f, err := fsys.Open(name)
	require.NoError(t, err)
	defer f.Close()
	size, err := f.Size()
	require.NoError(t, err)
	b := make([]byte, size)
	_, err = f.ReadAt(b, 0)
	if size > 0 {
		require.NoError(t, err)
	}
	return b
}

// TestTxnIndexLayout: the file appears with the first entry and holds
// Kafka's 34-byte entries, byte for byte.
func TestTxnIndexLayout(t *testing.T) {
	fsys := newFS(t)
	s := txnSegment(t, fsys)
	defer s.Close()
	_, err := fsys.Stat(txnPath)
	require.ErrorIs(t, err, fs.ErrNotExist, "no .txnindex before its first entry")
	require.False(t, s.HasTxnIndex())
	got, err := s.AbortedTxns()
	require.NoError(t, err)
	require.Empty(t, got)

	a := segment.AbortedTxn{ProducerID: 7, FirstOffset: 95, LastOffset: 104, LastStableOffset: 105}
	b := segment.AbortedTxn{ProducerID: 0x0102030405060708, FirstOffset: 110, LastOffset: 120, LastStableOffset: 112}
	require.NoError(t, s.AppendAbortedTxn(a))
	require.NoError(t, s.AppendAbortedTxn(b))
	require.True(t, s.HasTxnIndex())
	want := "" +
		"0000" + "0000000000000007" + "000000000000005f" + "0000000000000068" + "0000000000000069" +
		"0000" + "0102030405060708" + "000000000000006e" + "0000000000000078" + "0000000000000070"
	require.Equal(t, want, hex.EncodeToString(readFile(t, fsys, txnPath)))
	require.Equal(t, 2*segment.TxnIndexEntrySize, len(want)/2)
	got, err = s.AbortedTxns()
	require.NoError(t, err)
	require.Equal(t, []segment.AbortedTxn{a, b}, got)

	// Indexing a marker again writes nothing.
	require.NoError(t, s.AppendAbortedTxn(a))
	require.NoError(t, s.AppendAbortedTxn(b))
	require.Len(t, readFile(t, fsys, txnPath), 2*segment.TxnIndexEntrySize)

	// Entries that cannot belong are refused.
	for _, bad := range []segment.AbortedTxn{
		{ProducerID: 1, FirstOffset: 121, LastOffset: 130, LastStableOffset: 131}, // marker past the segment
		{ProducerID: 1, FirstOffset: 126, LastOffset: 125, LastStableOffset: 126}, // first after last
		{ProducerID: -1, FirstOffset: 121, LastOffset: 125, LastStableOffset: 126},
		{ProducerID: 1, FirstOffset: 121, LastOffset: 125, LastStableOffset: 127},
	} {
		require.Error(t, s.AppendAbortedTxn(bad), "%+v", bad)
	}

	// Reopened, the entries are read back; a new segment of the same name
	// starts without them.
	require.NoError(t, s.Close())
	s, err = segment.Open(fsys, dir, 100, 0, segment.Options{})
	require.NoError(t, err)
	require.NoError(t, s.TxnIndexErr())
	got, err = s.AbortedTxns()
	require.NoError(t, err)
	require.Equal(t, []segment.AbortedTxn{a, b}, got)
	require.NoError(t, s.Close())
	s, err = segment.Create(fsys, dir, 100, 0, segment.Options{})
	require.NoError(t, err)
	defer s.Close()
	_, err = fsys.Stat(txnPath)
	require.ErrorIs(t, err, fs.ErrNotExist)
}

// TestTxnIndexCollect: entries overlapping [fetch, upper) are collected,
// and the first whose last stable offset reaches upper completes the
// search, as Kafka's collectAbortedTxns.
func TestTxnIndexCollect(t *testing.T) {
	fsys := newFS(t)
	s := txnSegment(t, fsys)
	defer s.Close()
	es := []segment.AbortedTxn{
		{ProducerID: 1, FirstOffset: 90, LastOffset: 102, LastStableOffset: 95},  // 95: producer 2's txn open
		{ProducerID: 2, FirstOffset: 95, LastOffset: 110, LastStableOffset: 111}, // none open after
		{ProducerID: 3, FirstOffset: 112, LastOffset: 115, LastStableOffset: 116},
		{ProducerID: 1, FirstOffset: 120, LastOffset: 125, LastStableOffset: 126},
	}
	for _, e := range es {
		require.NoError(t, s.AppendAbortedTxn(e))
	}
	for _, tc := range []struct {
		fetch, upper int64
		want         []segment.AbortedTxn
		complete     bool
	}{
		{100, 105, es[:2], true}, // es[1] reaches 105
		{103, 105, es[1:2], true},
		{111, 113, es[2:3], true},
		{100, 200, es, false},
		{126, 200, nil, false},
		{116, 120, nil, true},
	} {
		got, complete, err := s.CollectAbortedTxns(nil, tc.fetch, tc.upper)
		require.NoError(t, err)
		require.Equal(t, tc.want, got, "fetch %d upper %d", tc.fetch, tc.upper)
		require.Equal(t, tc.complete, complete, "fetch %d upper %d", tc.fetch, tc.upper)
	}
}

// TestTxnIndexTruncates: truncating the segment drops the entries of the
// markers it removes; renaming and deleting cover the .txnindex.
func TestTxnIndexTruncateRenameDelete(t *testing.T) {
	fsys := newFS(t)
	s := txnSegment(t, fsys)
	require.NoError(t, s.AppendAbortedTxn(segment.AbortedTxn{ProducerID: 1, FirstOffset: 100, LastOffset: 105, LastStableOffset: 106}))
	require.NoError(t, s.AppendAbortedTxn(segment.AbortedTxn{ProducerID: 1, FirstOffset: 110, LastOffset: 119, LastStableOffset: 120}))
	require.NoError(t, s.AppendAbortedTxn(segment.AbortedTxn{ProducerID: 1, FirstOffset: 121, LastOffset: 125, LastStableOffset: 126}))
	_, err := s.TruncateTo(120) // the third batch, 120..129, goes
	require.NoError(t, err)
	got, err := s.AbortedTxns()
	require.NoError(t, err)
	require.Len(t, got, 2)
	require.Len(t, readFile(t, fsys, txnPath), 2*segment.TxnIndexEntrySize)

	changed, err := s.TruncateAbortedTxns(110)
	require.NoError(t, err)
	require.True(t, changed)
	changed, err = s.TruncateAbortedTxns(110)
	require.NoError(t, err)
	require.False(t, changed)
	require.Len(t, readFile(t, fsys, txnPath), segment.TxnIndexEntrySize)

	require.NoError(t, s.RenameFiles(segment.SwapSuffix))
	require.Len(t, readFile(t, fsys, txnPath+segment.SwapSuffix), segment.TxnIndexEntrySize)
	require.NoError(t, s.RenameFiles(""))
	require.NoError(t, s.Delete())
	names, err := fsys.List(dir)
	require.NoError(t, err)
	require.Empty(t, names)
}

// TestTxnIndexDamage: a torn or garbage .txnindex is reported at open,
// read only up to the damage, and cut by a truncation; never a panic.
func TestTxnIndexDamage(t *testing.T) {
	good := segment.AbortedTxn{ProducerID: 1, FirstOffset: 100, LastOffset: 105, LastStableOffset: 106}
	entry := func(e segment.AbortedTxn) []byte {
		fsys := newFS(t)
		s := txnSegment(t, fsys)
		require.NoError(t, s.AppendAbortedTxn(e))
		require.NoError(t, s.Close())
		return readFile(t, fsys, txnPath)
	}
	for _, tc := range []struct {
		name string
		tail []byte
	}{
		{"torn entry", entry(segment.AbortedTxn{ProducerID: 2, FirstOffset: 107, LastOffset: 110, LastStableOffset: 111})[:20]},
		{"zeros", make([]byte, segment.TxnIndexEntrySize)},
		{"marker past the segment", entry(segment.AbortedTxn{ProducerID: 2, FirstOffset: 107, LastOffset: 129, LastStableOffset: 130})},
		{"version 1", append([]byte{0, 1}, entry(segment.AbortedTxn{ProducerID: 2, FirstOffset: 107, LastOffset: 110, LastStableOffset: 111})[2:]...)},
		{"marker out of order", entry(segment.AbortedTxn{ProducerID: 2, FirstOffset: 100, LastOffset: 104, LastStableOffset: 105})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fsys := newFS(t)
			s := txnSegment(t, fsys)
			require.NoError(t, s.AppendAbortedTxn(good))
			// The segment ends at 120 once reopened: the last batch is cut
			// from the log, so an entry for 129 lies past it.
			_, err := s.TruncateTo(120)
			require.NoError(t, err)
			require.NoError(t, s.Close())
			writeAt(t, fsys, txnPath, tc.tail, segment.TxnIndexEntrySize)

			s, err = segment.Open(fsys, dir, 100, 0, segment.Options{})
			require.NoError(t, err)
			defer s.Close()
			require.ErrorIs(t, s.TxnIndexErr(), segment.ErrCorruptTxnIndex)
			got, err := s.AbortedTxns()
			require.ErrorIs(t, err, segment.ErrCorruptTxnIndex)
			require.Equal(t, []segment.AbortedTxn{good}, got)
			_, _, err = s.CollectAbortedTxns(nil, 100, 200)
			require.ErrorIs(t, err, segment.ErrCorruptTxnIndex)

			// An append goes after the valid entries, cutting the damage.
			next := segment.AbortedTxn{ProducerID: 3, FirstOffset: 108, LastOffset: 112, LastStableOffset: 113}
			require.NoError(t, s.AppendAbortedTxn(next))
			got, err = s.AbortedTxns()
			require.NoError(t, err)
			require.Equal(t, []segment.AbortedTxn{good, next}, got)
			_, err = s.TruncateAbortedTxns(100)
			require.NoError(t, err)
			require.Empty(t, readFile(t, fsys, txnPath))
		})
	}
}

// TestTxnIndexRecoverChecks: recovery checks the .txnindex against the
// batches it keeps: an entry for a marker the log lost is damage.
func TestTxnIndexRecoverChecks(t *testing.T) {
	fsys := newFS(t)
	s := txnSegment(t, fsys)
	require.NoError(t, s.AppendAbortedTxn(segment.AbortedTxn{ProducerID: 1, FirstOffset: 100, LastOffset: 125, LastStableOffset: 126}))
	size := s.Size()
	require.NoError(t, s.Close())
	setSizeOf(t, fsys, path.Join(dir, "00000000000000000100.log"), size-10) // the last batch is torn
	s, err := segment.OpenForRecovery(fsys, dir, 100, 0, segment.Options{})
	require.NoError(t, err)
	defer s.Close()
	_, err = s.Recover(nil)
	require.NoError(t, err)
	require.EqualValues(t, 120, s.NextOffset())
	require.ErrorIs(t, s.TxnIndexErr(), segment.ErrCorruptTxnIndex)
}

func setSizeOf(t *testing.T, fsys vfs.FS, name string, size int64) {
	t.Helper()
	f, err := fsys.OpenReadWrite(name)
	require.NoError(t, err)
	require.NoError(t, f.Truncate(size))
	require.NoError(t, f.Close())
}

// FuzzTxnIndex writes valid entries, then fuzzed bytes after them or over
// them, and opens the segment: no panic; the entries read back begin with
// every valid entry before the first changed byte; damage is reported
// exactly when reading stops short of the file's end; and after the
// entries from the first are truncated away the file is empty and takes
// entries again.
func FuzzTxnIndex(f *testing.F) {
	f.Add([]byte("garbage"), uint16(0), false)
	f.Add(make([]byte, segment.TxnIndexEntrySize), uint16(0), false)
	f.Add([]byte{0xff}, uint16(40), true)
	f.Add([]byte{0, 0, 0, 0, 0, 0, 0, 0, 9}, uint16(34), true)
	f.Fuzz(func(t *testing.T, junk []byte, at uint16, splice bool) {
		fsys := newFS(t)
		s := txnSegment(t, fsys)
		valid := []segment.AbortedTxn{
			{ProducerID: 1, FirstOffset: 98, LastOffset: 103, LastStableOffset: 99},
			{ProducerID: 2, FirstOffset: 99, LastOffset: 111, LastStableOffset: 112},
			{ProducerID: 1, FirstOffset: 115, LastOffset: 118, LastStableOffset: 119},
		}
		for _, e := range valid {
			require.NoError(t, s.AppendAbortedTxn(e))
		}
		require.NoError(t, s.Close())
		end := int64(len(valid) * segment.TxnIndexEntrySize)
		damage := end
		if splice && len(junk) > 0 {
			damage = int64(at) % end
		}
		writeAt(t, fsys, txnPath, junk, damage)
		intact := int(damage / segment.TxnIndexEntrySize)

		s, err := segment.Open(fsys, dir, 100, 0, segment.Options{})
		require.NoError(t, err)
		defer s.Close()
		got, rerr := s.AbortedTxns()
		require.GreaterOrEqual(t, len(got), intact)
		for i := range intact {
			require.Equal(t, valid[i], got[i])
		}
		size := int64(len(readFile(t, fsys, txnPath)))
		require.Equal(t, rerr != nil, int64(len(got)*segment.TxnIndexEntrySize) < size)
		if rerr != nil {
			require.ErrorIs(t, rerr, segment.ErrCorruptTxnIndex)
			require.ErrorIs(t, s.TxnIndexErr(), segment.ErrCorruptTxnIndex)
		} else {
			require.NoError(t, s.TxnIndexErr())
		}
		_, _, _ = s.CollectAbortedTxns(nil, 100, 130)

		_, err = s.TruncateAbortedTxns(100)
		require.NoError(t, err)
		require.Empty(t, readFile(t, fsys, txnPath))
		require.NoError(t, s.AppendAbortedTxn(valid[0]))
		got, err = s.AbortedTxns()
		require.NoError(t, err)
		require.Equal(t, valid[:1], got)
	})
}
