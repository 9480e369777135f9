package log

import (
	"errors"
	"fmt"
	"io/fs"
	"syscall"
)

var (
	// ErrOffsetOutOfRange means a read asked for an offset below the log
	// start offset or above the log end offset (Kafka's
	// OFFSET_OUT_OF_RANGE). The error is an *OffsetOutOfRangeError.
	ErrOffsetOutOfRange = errors.New("log: offset out of range")
	// ErrRecordTooLarge means a batch is larger than MaxMessageBytes
	// (Kafka's MESSAGE_TOO_LARGE).
	ErrRecordTooLarge = errors.New("log: record batch too large")
	// ErrUnexpectedAppendOffset means a batch appended with its offsets
	// already assigned does not start at or above the log end offset
	// (Kafka's UnexpectedAppendOffsetException).
	ErrUnexpectedAppendOffset = errors.New("log: batch offsets do not follow the log end offset")
	// ErrStorage means a write or sync failed in a way that leaves the
	// file's state unknown (Kafka's KAFKA_STORAGE_ERROR). The log refuses
	// every later append and flush; reopening it recovers what is valid on
	// disk. A sync is never retried: after a failed fsync the kernel may
	// have dropped the dirty pages, and a second fsync would report success
	// for data that is gone.
	ErrStorage = errors.New("log: storage failure, log must be reopened")
	// ErrDiskFull means a write found no space left. Nothing of the append
	// was kept — what the write got onto the file is cut — and appends
	// succeed again once there is room. It matches syscall.ENOSPC too. (A
	// write whose partial bytes cannot be cut fails the log instead, with
	// ErrStorage; a sync that finds no room does too.)
	ErrDiskFull = errors.New("log: no space left on device")
	// ErrLocked means another Log or Dir, in this process or another, has
	// the directory open.
	ErrLocked = errors.New("log: directory in use")
	// ErrClosed means the log was used after Close.
	ErrClosed = errors.New("log: closed")
	// ErrNoDescriptor means ReadRange cannot give a file range because the
	// log's filesystem has no file descriptors (the in-memory one): read
	// the bytes with Read instead.
	ErrNoDescriptor = errors.New("log: the filesystem has no file descriptors")
)

// OffsetOutOfRangeError says which offset was asked for and what the log
// holds. It matches ErrOffsetOutOfRange.
type OffsetOutOfRangeError struct {
	// Offset is the offset asked for.
	Offset int64
	// LogStartOffset is the log's first offset when it was asked.
	LogStartOffset int64
	// LogEndOffset is the offset the log's next record would have got.
	LogEndOffset int64
}

// Error names the offset and the range the log holds.
func (e *OffsetOutOfRangeError) Error() string {
	return fmt.Sprintf("log: offset %d out of range [%d, %d]", e.Offset, e.LogStartOffset, e.LogEndOffset)
}

// Unwrap returns ErrOffsetOutOfRange.
func (e *OffsetOutOfRangeError) Unwrap() error { return ErrOffsetOutOfRange }

func isNotExist(err error) bool { return errors.Is(err, fs.ErrNotExist) }

func isNoSpace(err error) bool { return errors.Is(err, syscall.ENOSPC) }
