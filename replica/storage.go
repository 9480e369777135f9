package replica

import "github.com/partlog/partlog/log"

// Storage is what a Replica reads of its partition's log. *log.Log
// satisfies it. A Replica never writes through Storage: what to write comes
// out in Ready, and the driver writes it (see Ready.Persist).
//
// A Replica calls Storage only from Step, Tick, Propose, Apply, Ready and
// Advance, never concurrently with the driver's writes of a Ready it has not
// yet Advanced past — the driver's loop orders them.
type Storage interface {
	// LogStartOffset is the first offset the log holds.
	LogStartOffset() int64
	// LogEndOffset is the offset the next record will get.
	LogEndOffset() int64
	// Read appends to dst whole batches from the one holding offset, at
	// most maxBytes of them but at least one, none reaching maxOffset. The
	// returned bytes are the caller's: a Replica hands them to a follower
	// in a Message.
	Read(dst []byte, offset, maxOffset int64, maxBytes int) ([]byte, error)
	// LatestEpoch is the leader epoch of the log's last epoch entry, or
	// log.UndefinedEpoch.
	LatestEpoch() int32
	// EndOffsetForEpoch answers OffsetsForLeaderEpoch from the log's
	// epoch cache, as log.Log.EndOffsetForEpoch documents.
	EndOffsetForEpoch(epoch int32) (int32, int64)
}

// LogWriter is what a driver writes a Ready to. *log.Log satisfies it.
type LogWriter interface {
	Storage
	AppendAsFollower(batches []byte) (log.AppendInfo, error)
	TruncateTo(offset int64) error
	TruncateFullyAndStartAt(offset int64) error
	Flush() error
	// DeleteRecordsBefore raises the log start offset to offset, at most
	// the log end offset, removing the segments wholly below it.
	DeleteRecordsBefore(offset int64) error
}

var _ LogWriter = (*log.Log)(nil)
