package log

import (
	"fmt"

	"golang.org/x/sys/unix"

	"github.com/partlog/partlog/segment"
	"github.com/partlog/partlog/vfs"
)

// ReadRange is Read without the reading: it returns where the batches Read
// would return lie, as a vfs.FileRange the caller must Close, or a zero
// FileRange when Read would return nothing. The bytes may only be read
// positionally (pread, sendfile with an offset): the descriptor shares its
// file offset with the log's. It returns ErrNoDescriptor on a filesystem
// without file descriptors.
func (l *Log) ReadRange(offset, maxOffset int64, maxBytes int) (vfs.FileRange, error) {
	r, _, err := l.ReadRangeTo(offset, maxOffset, maxBytes)
	return r, err
}

// ReadRangeTo is ReadRange that also returns the offset after the range's
// last batch (zero with an empty range), as a read_committed fetch needs to
// gather the aborted transactions its records may hold.
func (l *Log) ReadRangeTo(offset, maxOffset int64, maxBytes int) (r vfs.FileRange, next int64, err error) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.closed {
		return vfs.FileRange{}, 0, ErrClosed
	}
	leo := l.leo.Load()
	if offset < l.logStartOffset || offset > leo {
		return vfs.FileRange{}, 0, &OffsetOutOfRangeError{Offset: offset, LogStartOffset: l.logStartOffset, LogEndOffset: leo}
	}
	maxOffset = min(maxOffset, leo)
	if offset >= maxOffset {
		return vfs.FileRange{}, 0, nil
	}
	for i := l.floor(offset); i < len(l.segments); i++ {
		seg := l.segments[i]
		pos, size, next, err := seg.RangeTo(offset, maxOffset, maxBytes)
		if err != nil {
			return vfs.FileRange{}, 0, err
		}
		if size == 0 {
			continue
		}
		f, ok := seg.File().(interface{ Fd() uintptr })
		if !ok {
			return vfs.FileRange{}, 0, ErrNoDescriptor
		}
		fd, err := unix.FcntlInt(f.Fd(), unix.F_DUPFD_CLOEXEC, 0)
		if err != nil {
			return vfs.FileRange{}, 0, fmt.Errorf("log: duplicate the descriptor of %s: %w", seg.Path(segment.LogSuffix), err)
		}
		return vfs.FileRange{FD: fd, Pos: pos, Size: size}, next, nil
	}
	return vfs.FileRange{}, 0, nil
}
