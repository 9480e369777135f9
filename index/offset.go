package index

import (
	"encoding/binary"
	"fmt"

	"github.com/partlog/partlog/vfs"
)

// OffsetEntrySize is the size of an offset index entry: relative offset
// uint32 and file position uint32.
const OffsetEntrySize = 8

// OffsetPosition is an offset index entry: the batch whose last offset is
// Offset starts at byte Pos of the segment's log.
type OffsetPosition struct {
	// Offset is an absolute offset: the index stores it relative to the
	// segment's base offset, as a uint32.
	Offset int64
	// Pos is a byte position in the segment's .log file, stored as a
	// uint32.
	Pos int64
}

// OffsetIndex maps offsets to file positions in one segment's log. It is
// Kafka's .index file.
type OffsetIndex struct {
	x *file
}

// OpenOffsetIndex opens the offset index at path for a segment whose base
// offset is base, creating it, with room for maxBytes of entries, if it does not
// exist. An existing index is mapped at its size, which makes it full until
// Resize; its contents are trusted only after SanityCheck.
//
// A size that is not a whole number of entries returns a
// *CorruptionError; the caller rebuilds the index with CreateOffsetIndex.
func OpenOffsetIndex(fsys vfs.FS, path string, base int64, maxBytes int) (*OffsetIndex, error) {
	x, err := openFile(fsys, path, base, OffsetEntrySize, maxBytes)
	if err != nil {
		return nil, err
	}
	return &OffsetIndex{x: x}, nil
}

// CreateOffsetIndex creates an empty offset index at path, replacing any file
// there, with room for maxBytes of entries.
func CreateOffsetIndex(fsys vfs.FS, path string, base int64, maxBytes int) (*OffsetIndex, error) {
	if err := fsys.Remove(path); err != nil && !isNotExist(err) {
		return nil, fmt.Errorf("index: remove %s: %w", path, err)
	}
	return OpenOffsetIndex(fsys, path, base, maxBytes)
}

// Path returns the index file's path.
func (o *OffsetIndex) Path() string { return o.x.path }

// BaseOffset returns the base offset relative offsets are counted from.
func (o *OffsetIndex) BaseOffset() int64 { return o.x.base }

// Len returns the number of entries.
func (o *OffsetIndex) Len() int { return int(o.x.entries.Load()) }

// MaxEntries returns how many entries fit before the index is full.
func (o *OffsetIndex) MaxEntries() int { return o.x.maxEntries }

// Full reports whether Append would return ErrFull.
func (o *OffsetIndex) Full() bool { return o.Len() >= o.x.maxEntries }

// Entry returns entry i, 0 <= i < Len().
func (o *OffsetIndex) Entry(i int) OffsetPosition {
	e := o.x.entry(i)
	return OffsetPosition{
		Offset: o.x.base + int64(binary.BigEndian.Uint32(e[0:4])),
		Pos:    int64(binary.BigEndian.Uint32(e[4:8])),
	}
}

// LastEntry returns the newest entry, or {BaseOffset, 0} when there is none.
func (o *OffsetIndex) LastEntry() OffsetPosition {
	n := o.Len()
	if n == 0 {
		return OffsetPosition{Offset: o.x.base, Pos: 0}
	}
	return o.Entry(n - 1)
}

// Append adds an entry: the batch whose last offset is offset starts at pos.
// Both must be above the last entry's.
func (o *OffsetIndex) Append(offset, pos int64) error {
	rel := offset - o.x.base
	if rel < 0 || rel > maxInt32 || pos < 0 || pos > maxInt32 {
		return fmt.Errorf("%w: offset %d at position %d does not fit index %s (base %d)", ErrOutOfOrder, offset, pos, o.x.path, o.x.base)
	}
	if n := o.Len(); n > 0 {
		if last := o.Entry(n - 1); offset <= last.Offset || pos <= last.Pos {
			return fmt.Errorf("%w: offset %d at position %d after offset %d at position %d in %s", ErrOutOfOrder, offset, pos, last.Offset, last.Pos, o.x.path)
		}
	}
	e, err := o.x.slot()
	if err != nil {
		return err
	}
	binary.BigEndian.PutUint32(e[0:4], uint32(rel))
	binary.BigEndian.PutUint32(e[4:8], uint32(pos))
	o.x.publish()
	return nil
}

// Lookup returns the greatest entry whose offset is at or below offset, or
// {BaseOffset, 0} when there is none: the batch holding offset starts at or
// after the returned position.
func (o *OffsetIndex) Lookup(offset int64) OffsetPosition {
	n := o.Len()
	i := o.x.search(n, offset, func(i int) int64 {
		return o.x.base + int64(binary.BigEndian.Uint32(o.x.entry(i)[0:4]))
	})
	if i < 0 {
		return OffsetPosition{Offset: o.x.base, Pos: 0}
	}
	return o.Entry(i)
}

// TruncateTo removes every entry whose offset is at or above offset.
func (o *OffsetIndex) TruncateTo(offset int64) {
	n := o.Len()
	i := o.x.search(n, offset-1, func(i int) int64 {
		return o.x.base + int64(binary.BigEndian.Uint32(o.x.entry(i)[0:4]))
	})
	o.x.truncateEntries(i + 1)
}

// Reset removes every entry, keeping the room for them.
func (o *OffsetIndex) Reset() { o.x.truncateEntries(0) }

// Resize makes room for maxBytes of entries (never fewer than it holds),
// growing or shrinking the file.
func (o *OffsetIndex) Resize(maxBytes int) error { return o.x.resize(maxBytes) }

// Trim shrinks the file to its entries; the index is then full.
func (o *OffsetIndex) Trim() error { return o.x.resize(0) }

// Flush makes the entries durable.
func (o *OffsetIndex) Flush() error { return o.x.flush() }

// SanityCheck verifies that offsets and positions increase entry by entry
// and that every position lies inside a log of logSize bytes. It returns a
// *CorruptionError describing the first problem.
func (o *OffsetIndex) SanityCheck(logSize int64) error {
	n := o.Len()
	prev := OffsetPosition{Offset: -1, Pos: -1}
	for i := 0; i < n; i++ {
		e := o.Entry(i)
		if e.Offset <= prev.Offset || e.Pos <= prev.Pos {
			return corruptf(o.x.path, "entry %d (offset %d, position %d) does not follow entry %d (offset %d, position %d)",
				i, e.Offset, e.Pos, i-1, prev.Offset, prev.Pos)
		}
		if e.Pos >= logSize {
			return corruptf(o.x.path, "entry %d points at position %d, past the log's %d bytes", i, e.Pos, logSize)
		}
		prev = e
	}
	return nil
}

// Close trims the file to its entries and closes it. It does not flush.
func (o *OffsetIndex) Close() error { return o.x.close() }
