package segment

import (
	"errors"
	"fmt"
)

var (
	// ErrCorrupt means the log file holds bytes that are not a valid batch
	// where one should be.
	ErrCorrupt = errors.New("segment: corrupt record batch")
	// ErrOffsetOrder means a batch does not start above the segment's last
	// offset, or does not fit the segment's relative offsets.
	ErrOffsetOrder = errors.New("segment: batch offset out of order")
	// ErrTornWrite means an append failed after writing part of its bytes,
	// and they could not be cut: the file holds a partial batch past the
	// segment's end until recovery cuts it.
	ErrTornWrite = errors.New("segment: partial write left in the file")
	// ErrClosed means the segment was used after Close.
	ErrClosed = errors.New("segment: closed")
	// ErrCorruptTxnIndex means a .txnindex file holds bytes that are not
	// a valid entry where one should be: a torn write, or damage. The
	// file is never trusted past them; the partition rebuilds it from the
	// log (see partition's doc).
	ErrCorruptTxnIndex = errors.New("segment: corrupt transaction index")
)

// CorruptionError says where a log file stops being valid and why. It
// matches ErrCorrupt with errors.Is, and the underlying record error too.
type CorruptionError struct {
	// Path is the log file's path.
	Path string
	// Pos is the byte position in the file where the valid bytes end:
	// where the bad batch starts, or, for a file larger than a segment
	// may be, the largest size a segment may have.
	Pos int64
	// Err is what is wrong: a record error (record.ErrCorrupt,
	// record.ErrTruncated, ...) or a description.
	Err error
}

// Error names the file, the position and the cause.
func (e *CorruptionError) Error() string {
	return fmt.Sprintf("segment: corrupt record batch in %s at position %d: %v", e.Path, e.Pos, e.Err)
}

// Unwrap returns ErrCorrupt and the cause.
func (e *CorruptionError) Unwrap() []error { return []error{ErrCorrupt, e.Err} }
