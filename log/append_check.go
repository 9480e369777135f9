package log

import (
	"github.com/partlog/partlog/record"
	"github.com/partlog/partlog/vfs"
)

// AppendCheck vets batches as the log gives them their offsets, for state
// that must agree with the log batch for batch — an idempotent producer's
// last sequence numbers, say. Its methods are called with the log's append
// lock held, in the order the batches go into the log, so no other batch
// is appended between a CheckAppend and the write of its batch. They should
// be quick, and may read the Log (Read, LogEndOffset, LogStartOffset, Dir)
// but must not call anything that appends, truncates, deletes or closes,
// which would wait for the append lock they hold.
type AppendCheck interface {
	// CheckAppend is called once the batch is known to be valid, with its
	// header and the offset its first record will get (h.BaseOffset is
	// that offset too). An error refuses the batch: it is not written,
	// and AppendChecked returns the error as it is.
	CheckAppend(h record.Header, baseOffset int64) error
	// AppendFailed is called when a batch that passed CheckAppend was not
	// written after all (err says why): whatever CheckAppend recorded of
	// it is not in the log.
	AppendFailed(h record.Header, err error)
}

// AppendChecked is Append with a check: c.CheckAppend runs under the
// append lock just before the batch gets its offsets, and can refuse it
// (see AppendCheck). When c is also a TxnIndexer, the aborted transaction
// the batch completes, if any, goes into the .txnindex of the segment the
// batch lands in, before the append is published. It borrows batch as
// Append does: until it returns, refused or not. With SyncBeforeAck,
// checked batches share write groups and fsyncs with every other append,
// as Append's do.
func (l *Log) AppendChecked(batch []byte, c AppendCheck) (AppendInfo, error) {
	return l.appendChecked(batch, c)
}

// ActiveSegmentBaseOffset returns the base offset of the segment appends
// go to; it changes when the log rolls.
func (l *Log) ActiveSegmentBaseOffset() int64 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.segments[len(l.segments)-1].BaseOffset()
}

// FS returns the filesystem the log lives on, for files kept beside its
// segments (a partition's producer state snapshots).
func (l *Log) FS() vfs.FS { return l.fs }
