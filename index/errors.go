package index

import (
	"errors"
	"fmt"
)

var (
	// ErrFull means the index has no room for another entry: the segment
	// must roll.
	ErrFull = errors.New("index: full")
	// ErrCorrupt means the index file's contents are inconsistent; rebuild it
	// from the log.
	ErrCorrupt = errors.New("index: corrupt index")
	// ErrOutOfOrder means an entry was appended below the last one.
	ErrOutOfOrder = errors.New("index: entry out of order")
	// ErrClosed means the index was used after Close.
	ErrClosed = errors.New("index: closed")
)

// CorruptionError says which index file is damaged and how. It matches
// ErrCorrupt with errors.Is.
type CorruptionError struct {
	// Path is the index file's path.
	Path string
	// Reason says what is inconsistent, such as a size that is not a
	// whole number of entries.
	Reason string
}

// Error names the file and the reason.
func (e *CorruptionError) Error() string {
	return fmt.Sprintf("index: corrupt index %s: %s", e.Path, e.Reason)
}

// Unwrap returns ErrCorrupt.
func (e *CorruptionError) Unwrap() error { return ErrCorrupt }

func corruptf(path, format string, args ...any) error {
	return &CorruptionError{Path: path, Reason: fmt.Sprintf(format, args...)}
}
