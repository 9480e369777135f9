package log_test

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/stretchr/testify/require"

	plog "github.com/partlog/partlog/log"
	"github.com/partlog/partlog/record"
	"github.com/partlog/partlog/segment"
)

// txnHistory is what was appended to a compacted log with transactions:
// each record with the transaction it was written in, each marker, and
// each producer's last batch — the model the cleaned log is compared with.
type txnHistory struct {
	records []txnRecord
	txns    []*modelTxn
	open    map[int64]*modelTxn // producer -> its open transaction
	markers map[int64]*modelTxn // marker offset -> the transaction it ended
	// batchTxn maps the base offset of each transactional data batch to
	// its transaction.
	batchTxn map[int64]*modelTxn
	// epoch is each producer's epoch (of its last batch), and lastData
	// the base offset of its last data batch in that epoch, -1 if none.
	epoch    map[int64]int16
	lastData map[int64]int64
	x        *txnTracker
}

// txnRecord is a record as appended, with its transaction (nil outside
// one).
type txnRecord struct {
	written
	txn *modelTxn
}

// modelTxn is one transaction of one producer.
type modelTxn struct {
	pid     int64
	first   int64
	marker  int64 // -1 while open
	aborted bool
}

func (m *modelTxn) String() string {
	return fmt.Sprintf("txn of %d from %d, marker %d, aborted %v", m.pid, m.first, m.marker, m.aborted)
}

func newTxnHistory() *txnHistory {
	return &txnHistory{open: map[int64]*modelTxn{}, markers: map[int64]*modelTxn{}, batchTxn: map[int64]*modelTxn{},
		epoch: map[int64]int16{}, lastData: map[int64]int64{}, x: newTracker()}
}

// app appends b through the tracker, which keeps the .txnindex as the
// partition would.
func (h *txnHistory) app(t tb, l *plog.Log, b []byte) plog.AppendInfo {
	t.Helper()
	info, err := l.AppendChecked(b, h.x)
	require.NoError(t, err)
	return info
}

// plain appends kvs outside transactions.
func (h *txnHistory) plain(t tb, l *plog.Log, ts int64, kvs ...kv) plog.AppendInfo {
	t.Helper()
	info := h.app(t, l, keyedBatch(record.DefaultBatchOptions(), ts, kvs...))
	h.note(info.FirstOffset, nil, kvs)
	return info
}

// txn appends kvs in pid's transaction, which the batch opens if none is.
func (h *txnHistory) txn(t tb, l *plog.Log, pid int64, ts int64, kvs ...kv) plog.AppendInfo {
	t.Helper()
	o := record.DefaultBatchOptions()
	o.ProducerID, o.ProducerEpoch, o.BaseSequence, o.Transactional = pid, h.epoch[pid], 0, true
	info := h.app(t, l, keyedBatch(o, ts, kvs...))
	m := h.open[pid]
	if m == nil {
		m = &modelTxn{pid: pid, first: info.FirstOffset, marker: -1}
		h.open[pid] = m
		h.txns = append(h.txns, m)
	}
	if _, ok := h.epoch[pid]; !ok {
		h.epoch[pid] = 0
	}
	h.lastData[pid] = info.FirstOffset
	h.batchTxn[info.FirstOffset] = m
	h.note(info.FirstOffset, m, kvs)
	return info
}

// end appends pid's marker of type typ at epoch, ending its transaction.
// An epoch above the producer's begins a new one, as a transaction
// version 2 marker does.
func (h *txnHistory) end(t tb, l *plog.Log, pid int64, epoch int16, typ record.ControlType, ts int64) int64 {
	t.Helper()
	info := h.app(t, l, record.ControlBatch(typ, pid, epoch, 0, ts))
	if m := h.open[pid]; m != nil {
		m.marker, m.aborted = info.FirstOffset, typ == record.ControlAbort
		h.markers[info.FirstOffset] = m
		delete(h.open, pid)
	}
	if _, ok := h.lastData[pid]; !ok || epoch != h.epoch[pid] {
		h.lastData[pid] = -1
	}
	h.epoch[pid] = epoch
	return info.FirstOffset
}

func (h *txnHistory) note(first int64, m *modelTxn, kvs []kv) {
	for i, r := range kvs {
		h.records = append(h.records, txnRecord{written: written{offset: first + int64(i), key: r.key, value: r.value, tomb: r.tomb}, txn: m})
	}
}

// lso is the model's last stable offset: the first offset of the oldest
// open transaction, or leo.
func (h *txnHistory) lso(leo int64) int64 {
	for _, m := range h.open {
		leo = min(leo, m.first)
	}
	return leo
}

// committed reports whether r is readable by read_committed once stable:
// outside transactions, or in a committed one.
func (r txnRecord) committed() bool {
	return r.txn == nil || r.txn.marker >= 0 && !r.txn.aborted
}

// expected returns what the log must hold when every clean so far ended at
// cleanedTo at the latest: below it, each key's latest record of those
// below it that no aborted or open transaction wrote, but for tombstones,
// which may have expired (maybe); from it on, everything.
func (h *txnHistory) expected(cleanedTo int64) (certain, maybe []txnRecord) {
	latest := map[string]int64{}
	for _, r := range h.records {
		if r.offset < cleanedTo && r.committed() {
			latest[r.key] = r.offset
		}
	}
	for _, r := range h.records {
		switch {
		case r.offset >= cleanedTo:
			certain = append(certain, r)
		case !r.committed() || latest[r.key] != r.offset:
		case r.tomb:
			maybe = append(maybe, r)
		default:
			certain = append(certain, r)
		}
	}
	return certain, maybe
}

// requireRecords checks that got holds, in offset order, every record of
// certain, some of maybe, and nothing else.
func requireRecords(t tb, certain, maybe []txnRecord, got []written, what string) {
	t.Helper()
	want := map[int64]written{}
	optional := map[int64]bool{}
	for _, r := range certain {
		want[r.offset] = r.written
	}
	for _, r := range maybe {
		want[r.offset] = r.written
		optional[r.offset] = true
	}
	seen := map[int64]bool{}
	for _, w := range got {
		exp, ok := want[w.offset]
		require.True(t, ok, "%s: record %v should not be there", what, w)
		require.Equal(t, exp, w, "%s: record at %d", what, w.offset)
		seen[w.offset] = true
	}
	for _, r := range certain {
		require.True(t, seen[r.offset], "%s: record %v is missing (txn %v)", what, r.written, r.txn)
	}
	require.True(t, slices.IsSortedFunc(got, func(a, b written) int { return int(a.offset - b.offset) }), "%s: offsets increase", what)
}

// committedOf keeps the records of rs below lso that read_committed reads.
func committedOf(rs []txnRecord, lso int64) []txnRecord {
	var out []txnRecord
	for _, r := range rs {
		if r.offset < lso && r.committed() {
			out = append(out, r)
		}
	}
	return out
}

// logBatch is a batch read back from the log.
type logBatch struct {
	h       record.Header
	records []record.Record
	marker  record.ControlType // for a control batch with a marker
}

// readBatches reads every batch of the log from its start.
func readBatches(t tb, l *plog.Log) []logBatch {
	t.Helper()
	var out []logBatch
	for off := l.LogStartOffset(); off < l.LogEndOffset(); {
		b, err := l.Read(nil, off, l.LogEndOffset(), 1<<20)
		require.NoError(t, err)
		require.NotEmpty(t, b)
		for len(b) > 0 {
			hd, err := record.ParseHeader(b)
			require.NoError(t, err)
			batch, err := record.Decode(b[:hd.Size()])
			require.NoError(t, err)
			lb := logBatch{h: hd, records: batch.Records, marker: -1}
			if hd.Attributes.IsControl() && len(batch.Records) > 0 {
				c, err := record.ParseControlRecord(batch.Records[0])
				require.NoError(t, err)
				lb.marker = c.Type
			}
			out = append(out, lb)
			b = b[hd.Size():]
			off = hd.NextOffset()
		}
	}
	return out
}

// readCommitted reads the log up to lso as a read_committed consumer does
// (Kafka's fetcher): the aborted transactions come from the .txnindex
// (CollectAbortedTxns), and a producer's transactional batches are skipped
// from an aborted transaction's first offset to the producer's ABORT
// marker.
func readCommitted(t tb, l *plog.Log, lso int64) []written {
	t.Helper()
	aborted, err := l.CollectAbortedTxns(nil, l.LogStartOffset(), lso)
	require.NoError(t, err)
	sort.SliceStable(aborted, func(i, j int) bool { return aborted[i].FirstOffset < aborted[j].FirstOffset })
	skipping := map[int64]bool{}
	out := []written{}
	for _, b := range readBatches(t, l) {
		if b.h.BaseOffset >= lso {
			break
		}
		for len(aborted) > 0 && aborted[0].FirstOffset <= b.h.LastOffset() {
			skipping[aborted[0].ProducerID] = true
			aborted = aborted[1:]
		}
		if b.h.Attributes.IsControl() {
			if b.marker == record.ControlAbort {
				delete(skipping, b.h.ProducerID)
			}
			continue
		}
		if b.h.Attributes.IsTransactional() && skipping[b.h.ProducerID] {
			continue
		}
		for _, r := range b.records {
			out = append(out, written{offset: r.Offset, key: string(r.Key), value: string(r.Value), tomb: r.Value == nil})
		}
	}
	return out
}

// replayed is what a producer state rebuilt from the log knows: each
// producer's open transaction (its first offset), its epoch, and the base
// offset of its last data batch in that epoch (-1 if none).
type replayed struct {
	open     map[int64]int64
	epoch    map[int64]int16
	lastData map[int64]int64
}

// replay rebuilds, from the log's batches, what a partition's producer
// state would (see partition's producerState.apply).
func replay(bs []logBatch) replayed {
	r := replayed{open: map[int64]int64{}, epoch: map[int64]int16{}, lastData: map[int64]int64{}}
	for _, b := range bs {
		pid := b.h.ProducerID
		if pid < 0 || b.h.Attributes.IsControl() && b.marker < 0 {
			continue
		}
		if e, ok := r.epoch[pid]; !ok || e != b.h.ProducerEpoch {
			r.lastData[pid] = -1
		}
		r.epoch[pid] = b.h.ProducerEpoch
		if b.h.Attributes.IsControl() {
			delete(r.open, pid)
			continue
		}
		r.lastData[pid] = b.h.BaseOffset
		if _, ok := r.open[pid]; !ok && b.h.Attributes.IsTransactional() {
			r.open[pid] = b.h.BaseOffset
		}
	}
	return r
}

// requireTxnConsistent checks what the cleaner must keep of transactions
// whatever it did, from the log's batches and .txnindex:
//
//   - a producer state rebuilt from the log finds exactly the open
//     transactions of the model, each producer at its epoch, and its last
//     data batch where the model has it;
//   - every transaction with a batch left in the log has its marker;
//   - every aborted transaction with a batch left has its .txnindex
//     entry, and every entry's marker is in the log;
//   - read_committed reads up to the last stable offset exactly the
//     committed records the log holds.
func requireTxnConsistent(t tb, l *plog.Log, h *txnHistory, what string) {
	t.Helper()
	bs := readBatches(t, l)
	r := replay(bs)
	wantOpen := map[int64]int64{}
	for pid, m := range h.open {
		wantOpen[pid] = m.first
	}
	require.Equal(t, wantOpen, r.open, "%s: the open transactions a producer state rebuilt from the log finds", what)
	require.Equal(t, h.epoch, r.epoch, "%s: the producers' epochs", what)
	require.Equal(t, h.lastData, r.lastData, "%s: the producers' last data batches", what)

	markers := map[int64]bool{}
	firstLeft := map[*modelTxn]int64{}
	for _, b := range bs {
		if b.h.Attributes.IsControl() {
			markers[b.h.BaseOffset] = true
			continue
		}
		if m := h.batchTxn[b.h.BaseOffset]; m != nil && b.h.ProducerID == m.pid {
			if _, ok := firstLeft[m]; !ok {
				firstLeft[m] = b.h.BaseOffset
			}
		}
	}
	entries, err := l.AbortedTxns()
	require.NoError(t, err, what)
	for m, first := range firstLeft {
		if m.marker < 0 {
			continue
		}
		require.True(t, markers[m.marker], "%s: %v has a batch at %d but lost its marker", what, m, first)
		if m.aborted {
			require.True(t, slices.ContainsFunc(entries, func(e segment.AbortedTxn) bool {
				return e.ProducerID == m.pid && e.FirstOffset <= first && e.LastOffset == m.marker
			}), "%s: %v has a batch at %d but no .txnindex entry: %v\n%s", what, m, first, entries, dumpBatches(bs))
		}
	}
	for _, e := range entries {
		require.True(t, markers[e.LastOffset], "%s: entry %+v names a marker the log lost", what, e)
	}

	lso := h.lso(l.LogEndOffset())
	var held []txnRecord
	for _, w := range readKV(t, l) {
		i := slices.IndexFunc(h.records, func(r txnRecord) bool { return r.offset == w.offset })
		require.GreaterOrEqual(t, i, 0, "%s: offset %d was never written", what, w.offset)
		require.Equal(t, h.records[i].written, w, "%s: record at %d", what, w.offset)
		held = append(held, h.records[i])
	}
	require.Equal(t, writtenOf(committedOf(held, lso)), readCommitted(t, l, lso), "%s: read_committed", what)
}

func writtenOf(rs []txnRecord) []written {
	out := []written{}
	for _, r := range rs {
		out = append(out, r.written)
	}
	return out
}

// dumpBatches lists batches, one a line, for failure messages.
func dumpBatches(bs []logBatch) string {
	var sb strings.Builder
	for _, b := range bs {
		fmt.Fprintf(&sb, "%d-%d pid=%d e=%d ctl=%v txn=%v n=%d marker=%d hz=%v\n", b.h.BaseOffset, b.h.LastOffset(), b.h.ProducerID, b.h.ProducerEpoch, b.h.Attributes.IsControl(), b.h.Attributes.IsTransactional(), b.h.NumRecords, b.marker, b.h.Attributes.HasDeleteHorizon())
	}
	return sb.String()
}
