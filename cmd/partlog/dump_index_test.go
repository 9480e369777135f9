package main

import (
	"encoding/binary"
	"fmt"
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/partlog/partlog/index"
	"github.com/partlog/partlog/record"
)

// indexFixture is a segment at base 100 of mixedBatches, indexed after every
// batch but the first.
func indexFixture(t *testing.T) fixture {
	t.Helper()
	fx := writeSegment(t, 100, mixedBatches()...)
	require.Len(t, fx.offsetEntries, len(fx.batches)-1)
	for i, e := range fx.offsetEntries {
		b := fx.batches[i+1]
		require.Equal(t, index.OffsetPosition{Offset: b.h.LastOffset(), Pos: b.pos}, e)
	}
	// The largest timestamp grows with every batch, so each indexed batch
	// adds a time index entry too (and the seal has nothing to add).
	require.Equal(t, []index.TimestampOffset{
		{Timestamp: ts0 + 11, Offset: 104},
		{Timestamp: ts0 + 20, Offset: 105},
		{Timestamp: ts0 + 32, Offset: 108},
		{Timestamp: ts0 + 100, Offset: 109},
	}, fx.timeEntries)
	return fx
}

func TestDumpOffsetIndex(t *testing.T) {
	fx := indexFixture(t)
	stdout, stderr, code := cli(t, "dump-log", fx.path(".index"))
	require.Equal(t, exitOK, code, stderr)
	require.Equal(t, []string{
		"Dumping " + fx.path(".index"),
		"offset: 104 position: " + fmt.Sprint(fx.batches[1].pos),
		"offset: 105 position: " + fmt.Sprint(fx.batches[2].pos),
		"offset: 108 position: " + fmt.Sprint(fx.batches[3].pos),
		"offset: 109 position: " + fmt.Sprint(fx.batches[4].pos),
	}, lines(stdout))
}

func TestDumpTimeIndex(t *testing.T) {
	fx := indexFixture(t)
	stdout, stderr, code := cli(t, "dump-log", fx.path(".timeindex"))
	require.Equal(t, exitOK, code, stderr)
	require.Equal(t, []string{
		"Dumping " + fx.path(".timeindex"),
		"timestamp: 1700000000011 offset: 104",
		"timestamp: 1700000000020 offset: 105",
		"timestamp: 1700000000032 offset: 108",
		"timestamp: 1700000000100 offset: 109",
	}, lines(stdout))
}

func TestDumpIndexEmpty(t *testing.T) {
	fx := writeSegment(t, 0)
	stdout, stderr, code := cli(t, "dump-log", "--files", fx.path(".index")+","+fx.path(".timeindex"))
	require.Equal(t, exitOK, code, stderr)
	require.Equal(t, []string{
		"Dumping " + fx.path(".index"),
		fx.path(".index") + " is empty.",
		"Dumping " + fx.path(".timeindex"),
		fx.path(".timeindex") + " is empty.",
	}, lines(stdout))
}

// appendFile appends b to the file at path.
func appendFile(t *testing.T, path string, b []byte) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.Write(b)
	require.NoError(t, err)
	require.NoError(t, f.Close())
}

// TestDumpIndexZeroTail dumps indexes left preallocated by a crash: the
// entries end at the first zero entry, as in Kafka's tool.
func TestDumpIndexZeroTail(t *testing.T) {
	fx := indexFixture(t)
	want := map[string][]string{}
	for _, suffix := range []string{".index", ".timeindex"} {
		stdout, _, code := cli(t, "dump-log", fx.path(suffix))
		require.Equal(t, exitOK, code)
		want[suffix] = lines(stdout)
	}
	appendFile(t, fx.path(".index"), make([]byte, 10*index.OffsetEntrySize))
	appendFile(t, fx.path(".timeindex"), make([]byte, 10*index.TimeEntrySize))
	for _, suffix := range []string{".index", ".timeindex"} {
		stdout, stderr, code := cli(t, "dump-log", fx.path(suffix))
		require.Equal(t, exitOK, code, stderr)
		require.Equal(t, want[suffix], lines(stdout), suffix)
		stdout, stderr, code = cli(t, "dump-log", "--verify-index-only", fx.path(suffix))
		require.Equal(t, exitOK, code, stderr)
		require.Equal(t, []string{"Dumping " + fx.path(suffix), "No mismatches in " + fx.path(suffix)}, lines(stdout))
	}
}

func TestDumpIndexPartialEntry(t *testing.T) {
	fx := indexFixture(t)
	appendFile(t, fx.path(".index"), []byte{0, 0, 0})
	appendFile(t, fx.path(".timeindex"), []byte{1, 2, 3, 4, 5})

	stdout, stderr, code := cli(t, "dump-log", fx.path(".index"), fx.path(".timeindex"))
	require.Equal(t, exitFailure, code)
	got := lines(stdout)
	require.Len(t, got, 1+4+1+4, "every whole entry is still dumped")
	require.Equal(t, "offset: 109 position: "+fmt.Sprint(fx.batches[4].pos), got[4])
	require.Equal(t, "timestamp: 1700000000100 offset: 109", got[9])
	require.Equal(t, []string{
		"partlog: dump-log: " + fx.path(".index") + ": corrupt index: its size, 35 bytes, is not a multiple of the entry size 8; the last 3 bytes were ignored",
		"partlog: dump-log: " + fx.path(".timeindex") + ": corrupt index: its size, 53 bytes, is not a multiple of the entry size 12; the last 5 bytes were ignored",
	}, lines(stderr))

	// Verification reports it too.
	_, stderr, code = cli(t, "dump-log", "--verify-index-only", fx.path(".index"))
	require.Equal(t, exitFailure, code)
	require.Contains(t, stderr, "is not a multiple of the entry size 8")
}

func TestVerifyIndexGood(t *testing.T) {
	fx := indexFixture(t)
	stdout, stderr, code := cli(t, "dump-log", "--verify-index-only", fx.path(".index"), fx.path(".timeindex"))
	require.Equal(t, exitOK, code, stderr)
	require.Empty(t, stderr)
	require.Equal(t, []string{
		"Dumping " + fx.path(".index"),
		"No mismatches in " + fx.path(".index"),
		"Dumping " + fx.path(".timeindex"),
		"No mismatches in " + fx.path(".timeindex"),
	}, lines(stdout))
}

// patch overwrites the bytes at off in the file at path.
func patch(t *testing.T, path string, off int64, b []byte) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.WriteAt(b, off)
	require.NoError(t, err)
	require.NoError(t, f.Close())
}

func TestVerifyOffsetIndexMismatch(t *testing.T) {
	fx := indexFixture(t)
	// Entry 1 (offset 105) points at the first batch instead, and entry 3
	// (offset 109) past the end of the log.
	var pos [4]byte
	patch(t, fx.path(".index"), 1*index.OffsetEntrySize+4, pos[:])
	binary.BigEndian.PutUint32(pos[:], 1<<20)
	patch(t, fx.path(".index"), 3*index.OffsetEntrySize+4, pos[:])

	stdout, stderr, code := cli(t, "dump-log", "--verify-index-only", fx.path(".index"))
	require.Equal(t, exitFailure, code)
	require.Equal(t, []string{
		"Dumping " + fx.path(".index"),
		"Mismatches in :" + fx.path(".index"),
		"  Index offset: 105, log offset: 102",
		"  Index offset: 109, log offset: -1",
	}, lines(stdout))
	require.Equal(t, []string{
		"partlog: dump-log: " + fx.path(".index") + ": 2 entries do not match " + fx.path(".log"),
	}, lines(stderr))

	// Without --verify-index-only the entries are printed as they are.
	stdout, _, code = cli(t, "dump-log", fx.path(".index"))
	require.Equal(t, exitOK, code)
	require.Equal(t, "offset: 105 position: 0", lines(stdout)[2])
}

func TestVerifyTimeIndexMismatch(t *testing.T) {
	fx := indexFixture(t)
	var b [8]byte
	// Entry 0 (offset 104) claims a later timestamp than its batch has.
	binary.BigEndian.PutUint64(b[:], ts0+15)
	patch(t, fx.path(".timeindex"), 0*index.TimeEntrySize, b[:])
	// Entry 1 (offset 105) goes back in time.
	binary.BigEndian.PutUint64(b[:], ts0+1)
	patch(t, fx.path(".timeindex"), 1*index.TimeEntrySize, b[:])
	// Entry 2 names offset 107, inside the gzip batch 106-108.
	patch(t, fx.path(".timeindex"), 2*index.TimeEntrySize+8, []byte{0, 0, 0, 7})
	// Entry 3 names offset 150, past the log.
	patch(t, fx.path(".timeindex"), 3*index.TimeEntrySize+8, []byte{0, 0, 0, 50})

	stdout, stderr, code := cli(t, "dump-log", "--verify-index-only", fx.path(".timeindex"))
	require.Equal(t, exitFailure, code)
	require.Equal(t, []string{
		"Dumping " + fx.path(".timeindex"),
		"Found timestamp mismatch in :" + fx.path(".timeindex"),
		"  Index timestamp: 1700000000015, log timestamp: 1700000000011",
		"  Index timestamp: 1700000000001, log timestamp: 1700000000020",
		"Found out of order timestamp in :" + fx.path(".timeindex"),
		"  Index timestamp: 1700000000001, Previously indexed timestamp: 1700000000015",
		"The following indexed offsets are not found in the log.",
		"Indexed offset: 107, found log offset: 108",
		"Indexed offset: 150, found log offset: -1",
	}, lines(stdout))
	require.Equal(t, []string{
		"partlog: dump-log: " + fx.path(".timeindex") + ": 4 entries do not match " + fx.path(".log"),
	}, lines(stderr))
}

// TestVerifyTimeIndexOffsetsBackwards checks entries whose offsets go down,
// which makes the check read the log again from the start.
func TestVerifyTimeIndexOffsetsBackwards(t *testing.T) {
	fx := indexFixture(t)
	// Entry 2 names offset 102 (the first batch, max timestamp ts0+2)
	// after entry 1 named 105.
	patch(t, fx.path(".timeindex"), 2*index.TimeEntrySize+8, []byte{0, 0, 0, 2})
	stdout, _, code := cli(t, "dump-log", "--verify-index-only", fx.path(".timeindex"))
	require.Equal(t, exitFailure, code)
	require.Equal(t, []string{
		"Dumping " + fx.path(".timeindex"),
		"Found timestamp mismatch in :" + fx.path(".timeindex"),
		"  Index timestamp: 1700000000032, log timestamp: 1700000000002",
	}, lines(stdout))
}

func TestVerifyIndexWithoutLog(t *testing.T) {
	fx := indexFixture(t)
	require.NoError(t, os.Remove(fx.path(".log")))
	stdout, stderr, code := cli(t, "dump-log", "--verify-index-only", fx.path(".index"))
	require.Equal(t, exitFailure, code)
	require.Equal(t, []string{"Dumping " + fx.path(".index")}, lines(stdout))
	require.Equal(t, []string{
		"partlog: dump-log: verify " + fx.path(".index") + ": open " + fx.path(".log") + ": no such file or directory",
	}, lines(stderr))

	// A dump of the entries does not need the log.
	_, _, code = cli(t, "dump-log", fx.path(".index"), fx.path(".timeindex"))
	require.Equal(t, exitOK, code)
}

// TestVerifyIndexCorruptLog verifies indexes against a log whose tail is
// garbage: entries pointing into it are mismatches.
func TestVerifyIndexCorruptLog(t *testing.T) {
	fx := indexFixture(t)
	last := fx.batches[4]
	patch(t, fx.path(".log"), last.pos+record.MagicOffset, []byte{7})

	stdout, _, code := cli(t, "dump-log", "--verify-index-only", fx.path(".index"), fx.path(".timeindex"))
	require.Equal(t, exitFailure, code)
	require.Equal(t, []string{
		"Dumping " + fx.path(".index"),
		"Mismatches in :" + fx.path(".index"),
		"  Index offset: 109, log offset: -1",
		"Dumping " + fx.path(".timeindex"),
		"The following indexed offsets are not found in the log.",
		"Indexed offset: 109, found log offset: -1",
	}, lines(stdout))
}
