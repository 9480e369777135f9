package log

import (
	"fmt"

	"golang.org/x/sys/unix"

	"github.com/partlog/partlog/segment"
)

// A FileRange is record batches left where they are, in a segment file: Size
// bytes at position Pos of the file open as FD. A network server writes it
// to a socket with sendfile, so the bytes never pass through user space,
// then closes it.
type FileRange struct {
	// FD is a duplicate of the segment file's descriptor: the segment may
	// be deleted (retention) or replaced (compaction) meanwhile, and the
	// range still reads the bytes it named. A truncation of the segment
	// (TruncateTo) changes the file itself, and a range over what it cut
	// reads short, or what was appended after; ranges end at the high
	// watermark, and nothing below it is truncated while a leader serves
	// them. The caller closes it.
	FD        int
	Pos, Size int64
}

// Close closes the range's descriptor; a range of no bytes has none.
func (r FileRange) Close() error {
	if r.Size == 0 {
		return nil
	}
	return unix.Close(r.FD)
}

// ReadRange is Read without the reading: it returns where the batches Read
// would return lie, as a FileRange the caller must Close, or a zero
// FileRange when Read would return nothing. The bytes may only be read
// positionally (pread, sendfile with an offset): the descriptor shares its
// file offset with the log's. It returns ErrNoDescriptor on a filesystem
// without file descriptors.
func (l *Log) ReadRange(offset, maxOffset int64, maxBytes int) (FileRange, error) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.closed {
		return FileRange{}, ErrClosed
	}
	leo := l.leo.Load()
	if offset < l.logStartOffset || offset > leo {
		return FileRange{}, &OffsetOutOfRangeError{Offset: offset, LogStartOffset: l.logStartOffset, LogEndOffset: leo}
	}
	maxOffset = min(maxOffset, leo)
	if offset >= maxOffset {
		return FileRange{}, nil
	}
	for i := l.floor(offset); i < len(l.segments); i++ {
		seg := l.segments[i]
		pos, size, err := seg.Range(offset, maxOffset, maxBytes)
		if err != nil {
			return FileRange{}, err
		}
		if size == 0 {
			continue
		}
		f, ok := seg.File().(interface{ Fd() uintptr })
		if !ok {
			return FileRange{}, ErrNoDescriptor
		}
		fd, err := unix.FcntlInt(f.Fd(), unix.F_DUPFD_CLOEXEC, 0)
		if err != nil {
			return FileRange{}, fmt.Errorf("log: duplicate the descriptor of %s: %w", seg.Path(segment.LogSuffix), err)
		}
		return FileRange{FD: fd, Pos: pos, Size: size}, nil
	}
	return FileRange{}, nil
}
