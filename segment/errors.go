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
)

// CorruptionError says where a log file stops being valid and why. It
// matches ErrCorrupt with errors.Is, and the underlying record error too.
type CorruptionError struct {
	Path string
	Pos  int64
	Err  error
}

func (e *CorruptionError) Error() string {
	return fmt.Sprintf("segment: corrupt record batch in %s at position %d: %v", e.Path, e.Pos, e.Err)
}

// Unwrap returns ErrCorrupt and the cause.
func (e *CorruptionError) Unwrap() []error { return []error{ErrCorrupt, e.Err} }
