package vfs

import "golang.org/x/sys/unix"

// A FileRange is bytes left where they are, in a file: Size bytes at
// position Pos of the file open as FD — for partlog, record batches in a
// segment file (log.Log.ReadRange), which a network server writes to a
// socket with sendfile, so the bytes never pass through user space, then
// closes.
type FileRange struct {
	// FD is a duplicate of the segment file's descriptor: the segment may
	// be deleted (retention) or replaced (compaction) meanwhile, and the
	// range still reads the bytes it named. A truncation of the segment
	// (TruncateTo) changes the file itself, and a range over what it cut
	// reads short, or what was appended after; ranges end at the high
	// watermark, and nothing below it is truncated while a leader serves
	// them. The caller closes it.
	FD int
	// Pos is the byte position in the file where the range starts, and
	// Size its length in bytes; a Size of zero is no bytes and no
	// descriptor.
	Pos, Size int64
}

// Close closes the range's descriptor; a range of no bytes has none.
func (r FileRange) Close() error {
	if r.Size == 0 {
		return nil
	}
	return unix.Close(r.FD)
}
