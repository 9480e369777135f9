package main

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/partlog/partlog"
	"github.com/partlog/partlog/index"
	"github.com/partlog/partlog/producer"
	"github.com/partlog/partlog/record"
	"github.com/partlog/partlog/segment"
	"github.com/partlog/partlog/vfs"
)

// ts0 is the timestamp the fixture's records start at.
const ts0 = 1700000000000

// fixture is a segment written with package segment, and what went into it.
type fixture struct {
	dir     string
	base    int64
	batches []fixtureBatch
	// The index entries the segment wrote.
	offsetEntries []index.OffsetPosition
	timeEntries   []index.TimestampOffset
}

type fixtureBatch struct {
	h     record.Header
	pos   int64
	bytes []byte
}

func (f fixture) path(suffix string) string {
	return filepath.Join(f.dir, segment.FileName(f.base, suffix))
}

// writeSegment writes a sealed segment at base in a new directory, holding
// the batches in order, each given its offsets as the log assigns them and
// leader epoch 0. It indexes every batch after the first.
func writeSegment(t testing.TB, base int64, batches ...[]byte) fixture {
	t.Helper()
	fx := fixture{dir: t.TempDir(), base: base}
	s, err := segment.Create(vfs.Default, fx.dir, base, 0, segment.Options{IndexIntervalBytes: 1})
	require.NoError(t, err)
	for _, b := range batches {
		record.SetBaseOffset(b, s.NextOffset())
		record.SetPartitionLeaderEpoch(b, 0)
		h, err := record.Validate(b)
		require.NoError(t, err)
		fx.batches = append(fx.batches, fixtureBatch{h: h, pos: s.Size(), bytes: b})
		require.NoError(t, s.Append(h, b))
	}
	require.NoError(t, s.Seal())
	for i := range s.OffsetIndex().Len() {
		fx.offsetEntries = append(fx.offsetEntries, s.OffsetIndex().Entry(i))
	}
	for i := range s.TimeIndex().Len() {
		fx.timeEntries = append(fx.timeEntries, s.TimeIndex().Entry(i))
	}
	require.NoError(t, s.Close())
	return fx
}

// mixedBatches returns one of each kind of batch dump-log has to show.
func mixedBatches() [][]byte {
	// Offsets 0-2: no producer; headers, a null key, a null value.
	b := record.NewBuilder(record.DefaultBatchOptions())
	b.Append(record.Record{Timestamp: ts0, Key: []byte("k0"), Value: []byte("hello"),
		Headers: []record.RecordHeader{{Key: "trace", Value: []byte("abc")}, {Key: "span", Value: nil}}})
	b.Append(record.Record{Timestamp: ts0 + 1, Key: nil, Value: []byte("no key")})
	b.Append(record.Record{Timestamp: ts0 + 2, Key: []byte("k2"), Value: nil})
	plain := b.Build()

	// Offsets 3-4: a transaction of producer 7, epoch 1.
	opts := record.DefaultBatchOptions()
	opts.ProducerID, opts.ProducerEpoch, opts.BaseSequence, opts.Transactional = 7, 1, 0, true
	b = record.NewBuilder(opts)
	b.Append(record.Record{Timestamp: ts0 + 10, Key: []byte("tk"), Value: []byte("txn-0")})
	b.Append(record.Record{Timestamp: ts0 + 11, Key: []byte("tk"), Value: []byte("txn-1")})
	txn := b.Build()

	// Offset 5: its COMMIT marker, from coordinator epoch 5.
	commit := record.ControlBatch(record.ControlCommit, 7, 1, 5, ts0+20)

	// Offsets 6-8: gzip, from idempotent producer 9, whose sequence wraps.
	opts = record.DefaultBatchOptions()
	opts.ProducerID, opts.ProducerEpoch, opts.BaseSequence, opts.Compression = 9, 0, math.MaxInt32-1, record.Gzip
	b = record.NewBuilder(opts)
	for i := range 3 {
		b.Append(record.Record{Timestamp: ts0 + 30 + int64(i), Key: fmt.Appendf(nil, "g%d", i), Value: []byte(strings.Repeat("z", 50))})
	}
	gzip := b.Build()

	// Offset 9: LogAppendTime, and a value that is not UTF-8.
	opts = record.DefaultBatchOptions()
	opts.TimestampType = record.LogAppendTime
	b = record.NewBuilder(opts)
	b.Append(record.Record{Timestamp: ts0 + 40, Key: []byte("héllo"), Value: []byte{'a', 0xff, 'b'}})
	appendTime := b.Build()
	record.SetMaxTimestamp(appendTime, record.LogAppendTime, ts0+100)

	return [][]byte{plain, txn, commit, gzip, appendTime}
}

// batchLines returns the lines dump-log prints for the fixture's batches:
// Kafka's format, with the values the test chose. Only size, position and
// CRC come from the bytes. valid overrides isvalid per batch index.
func (f fixture) batchLines(valid map[int]bool) []string {
	fixed := []string{
		"baseOffset: 0 lastOffset: 2 count: 3 baseSequence: -1 lastSequence: -1 producerId: -1 producerEpoch: -1 partitionLeaderEpoch: 0 isTransactional: false isControl: false deleteHorizonMs: OptionalLong.empty position: %d CreateTime: 1700000000002 size: %d magic: 2 compresscodec: none crc: %d isvalid: %t",
		"baseOffset: 3 lastOffset: 4 count: 2 baseSequence: 0 lastSequence: 1 producerId: 7 producerEpoch: 1 partitionLeaderEpoch: 0 isTransactional: true isControl: false deleteHorizonMs: OptionalLong.empty position: %d CreateTime: 1700000000011 size: %d magic: 2 compresscodec: none crc: %d isvalid: %t",
		"baseOffset: 5 lastOffset: 5 count: 1 baseSequence: -1 lastSequence: -1 producerId: 7 producerEpoch: 1 partitionLeaderEpoch: 0 isTransactional: true isControl: true deleteHorizonMs: OptionalLong.empty position: %d CreateTime: 1700000000020 size: %d magic: 2 compresscodec: none crc: %d isvalid: %t",
		"baseOffset: 6 lastOffset: 8 count: 3 baseSequence: 2147483646 lastSequence: 0 producerId: 9 producerEpoch: 0 partitionLeaderEpoch: 0 isTransactional: false isControl: false deleteHorizonMs: OptionalLong.empty position: %d CreateTime: 1700000000032 size: %d magic: 2 compresscodec: gzip crc: %d isvalid: %t",
		"baseOffset: 9 lastOffset: 9 count: 1 baseSequence: -1 lastSequence: -1 producerId: -1 producerEpoch: -1 partitionLeaderEpoch: 0 isTransactional: false isControl: false deleteHorizonMs: OptionalLong.empty position: %d LogAppendTime: 1700000000100 size: %d magic: 2 compresscodec: none crc: %d isvalid: %t",
	}
	var out []string
	for i, b := range f.batches {
		v, ok := valid[i]
		if !ok {
			v = true
		}
		out = append(out, fmt.Sprintf(fixed[i], b.pos, b.h.Size(), b.h.CRC, v))
	}
	return out
}

// recordLines are the --print-data-log lines of mixedBatches' records, by
// batch.
var recordLines = [][]string{
	{
		"| offset: 0 CreateTime: 1700000000000 keySize: 2 valueSize: 5 sequence: -1 headerKeys: [trace,span] key: k0 payload: hello",
		"| offset: 1 CreateTime: 1700000000001 keySize: -1 valueSize: 6 sequence: -1 headerKeys: [] payload: no key",
		"| offset: 2 CreateTime: 1700000000002 keySize: 2 valueSize: -1 sequence: -1 headerKeys: [] key: k2",
	},
	{
		"| offset: 3 CreateTime: 1700000000010 keySize: 2 valueSize: 5 sequence: 0 headerKeys: [] key: tk payload: txn-0",
		"| offset: 4 CreateTime: 1700000000011 keySize: 2 valueSize: 5 sequence: 1 headerKeys: [] key: tk payload: txn-1",
	},
	{
		"| offset: 5 CreateTime: 1700000000020 keySize: 4 valueSize: 6 sequence: -1 headerKeys: [] endTxnMarker: COMMIT coordinatorEpoch: 5",
	},
	{
		"| offset: 6 CreateTime: 1700000000030 keySize: 2 valueSize: 50 sequence: 2147483646 headerKeys: [] key: g0 payload: " + strings.Repeat("z", 50),
		"| offset: 7 CreateTime: 1700000000031 keySize: 2 valueSize: 50 sequence: 2147483647 headerKeys: [] key: g1 payload: " + strings.Repeat("z", 50),
		"| offset: 8 CreateTime: 1700000000032 keySize: 2 valueSize: 50 sequence: 0 headerKeys: [] key: g2 payload: " + strings.Repeat("z", 50),
	},
	{
		"| offset: 9 LogAppendTime: 1700000000100 keySize: 6 valueSize: 3 sequence: -1 headerKeys: [] key: héllo payload: a\uFFFDb",
	},
}

// stripData returns record lines as --deep-iteration prints them, without
// keys and payloads.
func stripData(l string) string {
	for _, field := range []string{" key: ", " payload: "} {
		if i := strings.Index(l, field); i >= 0 {
			l = l[:i]
		}
	}
	return l
}

func TestDumpLogBatches(t *testing.T) {
	fx := writeSegment(t, 0, mixedBatches()...)
	stdout, stderr, code := cli(t, "dump-log", fx.path(".log"))
	require.Equal(t, exitOK, code, stderr)
	require.Empty(t, stderr)
	want := append([]string{"Dumping " + fx.path(".log"), "Log starting offset: 0"}, fx.batchLines(nil)...)
	require.Equal(t, want, lines(stdout))
}

func TestDumpLogPrintDataLog(t *testing.T) {
	fx := writeSegment(t, 0, mixedBatches()...)
	want := []string{"Dumping " + fx.path(".log"), "Log starting offset: 0"}
	for i, l := range fx.batchLines(nil) {
		want = append(want, l)
		want = append(want, recordLines[i]...)
	}
	for _, args := range [][]string{
		{"dump-log", "--print-data-log", fx.path(".log")},
		{"dump-log", fx.path(".log"), "-print-data-log"},
		{"dump-log", "--deep-iteration", "--print-data-log", "--files", fx.path(".log")},
	} {
		stdout, stderr, code := cli(t, args...)
		require.Equal(t, exitOK, code, stderr)
		require.Empty(t, stderr)
		require.Equal(t, want, lines(stdout), args)
	}
}

func TestDumpLogDeepIteration(t *testing.T) {
	fx := writeSegment(t, 0, mixedBatches()...)
	want := []string{"Dumping " + fx.path(".log"), "Log starting offset: 0"}
	for i, l := range fx.batchLines(nil) {
		want = append(want, l)
		for _, r := range recordLines[i] {
			want = append(want, stripData(r))
		}
	}
	stdout, stderr, code := cli(t, "dump-log", "--deep-iteration", fx.path(".log"))
	require.Equal(t, exitOK, code, stderr)
	require.Equal(t, want, lines(stdout))
}

// TestDumpLogExact pins one whole dump, CRC and size included, so that a
// change in the bytes the format gives shows up here.
func TestDumpLogExact(t *testing.T) {
	b := record.NewBuilder(record.DefaultBatchOptions())
	b.Append(record.Record{Timestamp: ts0, Key: []byte("k"), Value: []byte("v")})
	fx := writeSegment(t, 42, b.Build())
	stdout, stderr, code := cli(t, "dump-log", "--print-data-log", fx.path(".log"))
	require.Equal(t, exitOK, code, stderr)
	require.Equal(t, "Dumping "+fx.path(".log")+"\n"+
		"Log starting offset: 42\n"+
		"baseOffset: 42 lastOffset: 42 count: 1 baseSequence: -1 lastSequence: -1 producerId: -1 producerEpoch: -1 partitionLeaderEpoch: 0 isTransactional: false isControl: false deleteHorizonMs: OptionalLong.empty position: 0 CreateTime: 1700000000000 size: 70 magic: 2 compresscodec: none crc: 3919285720 isvalid: true\n"+
		"| offset: 42 CreateTime: 1700000000000 keySize: 1 valueSize: 1 sequence: -1 headerKeys: [] key: k payload: v\n",
		stdout)
}

func TestDumpLogEmpty(t *testing.T) {
	fx := writeSegment(t, 0)
	stdout, stderr, code := cli(t, "dump-log", "--print-data-log", fx.path(".log"))
	require.Equal(t, exitOK, code, stderr)
	require.Equal(t, []string{"Dumping " + fx.path(".log"), "Log starting offset: 0"}, lines(stdout))
}

func TestDumpLogBadCRC(t *testing.T) {
	fx := writeSegment(t, 0, mixedBatches()...)
	data, err := os.ReadFile(fx.path(".log"))
	require.NoError(t, err)
	i := bytes.Index(data, []byte("txn-1"))
	require.Positive(t, i)
	data[i+4] = '9' // txn-1 becomes txn-9: the transactional batch's CRC fails
	require.NoError(t, os.WriteFile(fx.path(".log"), data, 0o644))

	stdout, stderr, code := cli(t, "dump-log", "--print-data-log", fx.path(".log"))
	require.Equal(t, exitOK, code, stderr)
	want := []string{"Dumping " + fx.path(".log"), "Log starting offset: 0"}
	for i, l := range fx.batchLines(map[int]bool{1: false}) {
		want = append(want, l)
		for _, r := range recordLines[i] {
			want = append(want, strings.Replace(r, "txn-1", "txn-9", 1))
		}
	}
	require.Equal(t, want, lines(stdout), "the bad batch is shown, records and all, and the dump goes on")
}

func TestDumpLogUnreadableRecords(t *testing.T) {
	fx := writeSegment(t, 0, mixedBatches()...)
	data, err := os.ReadFile(fx.path(".log"))
	require.NoError(t, err)
	gz := fx.batches[3]
	data[gz.pos+record.RecordsOffset] ^= 0xff // break the gzip header
	require.NoError(t, os.WriteFile(fx.path(".log"), data, 0o644))

	stdout, stderr, code := cli(t, "dump-log", "--print-data-log", fx.path(".log"))
	require.Equal(t, exitOK, code, stderr)
	got := lines(stdout)
	require.Equal(t, fx.batchLines(map[int]bool{3: false})[3], got[2+3+2+1+3])
	require.True(t, strings.HasPrefix(got[2+3+2+1+4], "| records not readable: record: corrupt record batch: "), got[2+3+2+1+4])
	require.Equal(t, fx.batchLines(nil)[4], got[2+3+2+1+5], "the dump goes on")
}

func TestDumpLogTruncated(t *testing.T) {
	fx := writeSegment(t, 0, mixedBatches()...)
	last := fx.batches[len(fx.batches)-1]
	end := last.pos + int64(last.h.Size())
	require.NoError(t, os.Truncate(fx.path(".log"), end-10))

	stdout, stderr, code := cli(t, "dump-log", fx.path(".log"))
	require.Equal(t, exitOK, code, stderr)
	want := append([]string{"Dumping " + fx.path(".log"), "Log starting offset: 0"}, fx.batchLines(nil)[:4]...)
	want = append(want,
		fmt.Sprintf("Found %d invalid bytes at the end of 00000000000000000000.log", last.h.Size()-10),
		fmt.Sprintf("Invalid bytes start at position %d: record: truncated record batch: batch of %d bytes at position %d passes the end at %d",
			last.pos, last.h.Size(), last.pos, end-10))
	require.Equal(t, want, lines(stdout))
}

func TestDumpLogTrailingGarbage(t *testing.T) {
	fx := writeSegment(t, 0, mixedBatches()...)
	f, err := os.OpenFile(fx.path(".log"), os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.Write(make([]byte, 100)) // a zeroed, preallocated tail
	require.NoError(t, err)
	require.NoError(t, f.Close())
	last := fx.batches[len(fx.batches)-1]
	end := last.pos + int64(last.h.Size())

	stdout, _, code := cli(t, "dump-log", fx.path(".log"))
	require.Equal(t, exitOK, code)
	got := lines(stdout)
	require.Equal(t, fx.batchLines(nil), got[2:7])
	require.Equal(t, []string{
		"Found 100 invalid bytes at the end of 00000000000000000000.log",
		fmt.Sprintf("Invalid bytes start at position %d: record: unsupported magic byte: 0", end),
	}, got[7:])
}

func TestDumpLogBadFiles(t *testing.T) {
	fx := writeSegment(t, 0, mixedBatches()...)
	dir := t.TempDir()
	missing := filepath.Join(dir, "00000000000000000000.log")
	other := filepath.Join(dir, "00000000000000000000.snapshot")
	badName := filepath.Join(dir, "segment.log")
	require.NoError(t, os.WriteFile(other, nil, 0o644))
	require.NoError(t, os.WriteFile(badName, nil, 0o644))

	stdout, stderr, code := cli(t, "dump-log", missing, other, badName, fx.path(".log"))
	require.Equal(t, exitFailure, code)
	want := []string{"Dumping " + missing, "Dumping " + other, "Dumping " + badName, "Dumping " + fx.path(".log"), "Log starting offset: 0"}
	require.Equal(t, append(want, fx.batchLines(nil)...), lines(stdout), "the good file is dumped")
	require.Equal(t, []string{
		"partlog: dump-log: open " + missing + ": no such file or directory",
		"partlog: dump-log: " + other + `: unsupported file type ".snapshot"; dump-log reads .log, .index, .timeindex and .txnindex files`,
		"partlog: dump-log: " + badName + ": not a segment file name: want the base offset in 20 digits, as in 00000000000000000000.log",
	}, lines(stderr))
}

// TestDumpLogLarge dumps a segment bigger than the scanner's read chunk,
// with a batch bigger than it too.
func TestDumpLogLarge(t *testing.T) {
	var batches [][]byte
	for i := range 2000 {
		b := record.NewBuilder(record.DefaultBatchOptions())
		b.Append(record.Record{Timestamp: ts0 + int64(i), Value: bytes.Repeat([]byte{'x'}, 100)})
		batches = append(batches, b.Build())
	}
	b := record.NewBuilder(record.DefaultBatchOptions())
	b.Append(record.Record{Timestamp: ts0 + 5000, Value: bytes.Repeat([]byte{'y'}, 300<<10)})
	batches = append(batches, b.Build())
	fx := writeSegment(t, 0, batches...)

	stdout, stderr, code := cli(t, "dump-log", "--print-data-log", fx.path(".log"))
	require.Equal(t, exitOK, code, stderr)
	got := lines(stdout)
	require.Len(t, got, 2+2*len(batches))
	require.Contains(t, got[len(got)-2], "baseOffset: 2000 lastOffset: 2000 ")
	require.Contains(t, got[len(got)-2], fmt.Sprintf(" position: %d ", fx.batches[2000].pos))
	require.True(t, strings.HasSuffix(got[len(got)-1], " payload: "+strings.Repeat("y", 300<<10)))
}

func TestSequence(t *testing.T) {
	for _, tc := range []struct{ base, delta, want int32 }{
		{-1, 5, -1},
		{0, 0, 0},
		{10, 5, 15},
		{math.MaxInt32, 0, math.MaxInt32},
		{math.MaxInt32, 1, 0},
		{math.MaxInt32 - 1, 3, 1},
	} {
		require.Equal(t, tc.want, sequence(tc.base, tc.delta), "%d+%d", tc.base, tc.delta)
	}
}

func TestDumpLogControlTypesAndDeleteHorizon(t *testing.T) {
	abort := record.ControlBatch(record.ControlAbort, 3, 0, 2, ts0)

	opts := record.DefaultBatchOptions()
	opts.Control = true
	b := record.NewBuilder(opts)
	b.Append(record.Record{Timestamp: ts0 + 1, Key: []byte{0, 0, 0, 2}, Value: []byte{0, 0}})
	b.Append(record.Record{Timestamp: ts0 + 2, Key: []byte{0, 0, 0, 9}})
	b.Append(record.Record{Timestamp: ts0 + 3, Key: []byte{0}})
	raft := b.Build()

	opts = record.DefaultBatchOptions()
	opts.DeleteHorizon = ts0 + 86400000
	b = record.NewBuilder(opts)
	b.Append(record.Record{Timestamp: ts0 + 4, Key: []byte("k")})
	cleaned := b.Build()

	fx := writeSegment(t, 0, abort, raft, cleaned)
	stdout, stderr, code := cli(t, "dump-log", "--print-data-log", fx.path(".log"))
	require.Equal(t, exitOK, code, stderr)
	got := lines(stdout)
	require.Len(t, got, 2+1+1+1+3+1+1)
	require.Contains(t, got[2], " isTransactional: true isControl: true ")
	require.Equal(t, "| offset: 0 CreateTime: 1700000000000 keySize: 4 valueSize: 6 sequence: -1 headerKeys: [] endTxnMarker: ABORT coordinatorEpoch: 2", got[3])
	require.Contains(t, got[4], " isTransactional: false isControl: true ")
	require.Equal(t, []string{
		"| offset: 1 CreateTime: 1700000000001 keySize: 4 valueSize: 2 sequence: -1 headerKeys: [] controlType: LEADER_CHANGE(2)",
		"| offset: 2 CreateTime: 1700000000002 keySize: 4 valueSize: -1 sequence: -1 headerKeys: [] controlType: UNKNOWN(9)",
	}, got[5:7])
	require.True(t, strings.HasPrefix(got[7], "| offset: 3 CreateTime: 1700000000003 keySize: 1 valueSize: -1 sequence: -1 headerKeys: [] controlRecord: invalid (record: corrupt record batch: "), got[7])
	require.Contains(t, got[8], " deleteHorizonMs: OptionalLong[1700086400000] position: ")
	require.Equal(t, "| offset: 4 CreateTime: 1700000000004 keySize: 1 valueSize: -1 sequence: -1 headerKeys: [] key: k", got[9])
}

// TestDumpLogTxnIndex: dump-log prints a .txnindex a line per aborted
// transaction, as kafka-dump-log does, and a damaged tail after the good
// entries; a .log shows the transaction's markers.
func TestDumpLogTxnIndex(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	n, err := partlog.Open(dir)
	require.NoError(t, err)
	require.NoError(t, n.CreateTopic(ctx, partlog.NewTopic{Name: "t"}))
	p, err := producer.New(n.Client(), producer.TransactionalID("tx"))
	require.NoError(t, err)
	for _, end := range []func(context.Context) error{p.AbortTransaction, p.CommitTransaction} {
		require.NoError(t, p.BeginTransaction())
		require.NoError(t, p.ProduceSync(ctx, &producer.Record{Topic: "t", Value: []byte("v")}).FirstErr())
		require.NoError(t, end(ctx))
	}
	require.NoError(t, p.Close())
	require.NoError(t, n.Close())

	txnindex := filepath.Join(dir, "t-0", "00000000000000000000.txnindex")
	stdout, stderr, code := cli(t, "dump-log", "--print-data-log", txnindex, filepath.Join(dir, "t-0", "00000000000000000000.log"))
	require.Equal(t, exitOK, code, stderr)
	got := lines(stdout)
	require.Equal(t, []string{"Dumping " + txnindex, "version: 0 producerId: 0 firstOffset: 0 lastOffset: 1 lastStableOffset: 2"}, got[:2])
	require.Contains(t, stdout, "endTxnMarker: ABORT coordinatorEpoch: 0")
	require.Contains(t, stdout, "endTxnMarker: COMMIT coordinatorEpoch: 0")

	f, err := os.OpenFile(txnindex, os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.Write([]byte{0, 0, 0, 0, 1})
	require.NoError(t, err)
	require.NoError(t, f.Close())
	stdout, stderr, code = cli(t, "dump-log", txnindex)
	require.Equal(t, exitFailure, code)
	require.Equal(t, got[:2], lines(stdout), "the good entry is printed")
	require.Equal(t, []string{"partlog: dump-log: " + txnindex + ": segment: corrupt record batch: a partial entry of 5 bytes at position 34"}, lines(stderr))
}
