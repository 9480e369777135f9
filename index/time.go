package index

import (
	"encoding/binary"
	"fmt"

	"github.com/partlog/partlog/vfs"
)

// TimeEntrySize is the size of a time index entry: timestamp int64 and
// relative offset uint32.
const TimeEntrySize = 12

// TimestampOffset is a time index entry: the batch ending at Offset holds
// the largest timestamp so far, Timestamp, so no record at or below Offset
// has a later one.
type TimestampOffset struct {
	// Timestamp is a record timestamp in milliseconds since the Unix
	// epoch, or -1 in the entry returned when there is none.
	Timestamp int64
	// Offset is an absolute offset: the index stores it relative to the
	// segment's base offset, as a uint32.
	Offset int64
}

// TimeIndex maps timestamps to offsets in one segment. It is Kafka's
// .timeindex file. Its timestamps increase strictly: an entry is added only
// when a batch raises the segment's largest timestamp.
type TimeIndex struct {
	x *file
}

// OpenTimeIndex opens the time index at path for a segment whose base offset
// is base, creating it, with room for maxBytes of entries, if it does not exist;
// see OpenOffsetIndex.
func OpenTimeIndex(fsys vfs.FS, path string, base int64, maxBytes int) (*TimeIndex, error) {
	x, err := openFile(fsys, path, base, TimeEntrySize, maxBytes)
	if err != nil {
		return nil, err
	}
	return &TimeIndex{x: x}, nil
}

// CreateTimeIndex creates an empty time index at path, replacing any file
// there, with room for maxBytes of entries.
func CreateTimeIndex(fsys vfs.FS, path string, base int64, maxBytes int) (*TimeIndex, error) {
	if err := fsys.Remove(path); err != nil && !isNotExist(err) {
		return nil, fmt.Errorf("index: remove %s: %w", path, err)
	}
	return OpenTimeIndex(fsys, path, base, maxBytes)
}

// Path returns the index file's path.
func (t *TimeIndex) Path() string { return t.x.path }

// Len returns the number of entries.
func (t *TimeIndex) Len() int { return int(t.x.entries.Load()) }

// Full reports whether the segment must roll: only the slot kept for the
// final entry is left. One slot is always kept free so that a segment being
// sealed can record its largest timestamp.
func (t *TimeIndex) Full() bool { return t.Len() >= t.x.maxEntries-1 }

// Entry returns entry i, 0 <= i < Len().
func (t *TimeIndex) Entry(i int) TimestampOffset {
	e := t.x.entry(i)
	return TimestampOffset{
		Timestamp: int64(binary.BigEndian.Uint64(e[0:8])),
		Offset:    t.x.base + int64(binary.BigEndian.Uint32(e[8:12])),
	}
}

// LastEntry returns the newest entry, or {-1, BaseOffset} when there is none.
func (t *TimeIndex) LastEntry() TimestampOffset {
	n := t.Len()
	if n == 0 {
		return TimestampOffset{Timestamp: -1, Offset: t.x.base}
	}
	return t.Entry(n - 1)
}

// MaybeAppend adds an entry when timestamp is above the last entry's and
// reports whether it did. offset must not be below the last entry's. When
// final is set the slot kept for sealing may be used.
func (t *TimeIndex) MaybeAppend(timestamp, offset int64, final bool) (bool, error) {
	rel := offset - t.x.base
	if rel < 0 || rel > maxInt32 {
		return false, fmt.Errorf("%w: offset %d does not fit index %s (base %d)", ErrOutOfOrder, offset, t.x.path, t.x.base)
	}
	n := t.Len()
	if n > 0 {
		last := t.Entry(n - 1)
		if offset < last.Offset {
			return false, fmt.Errorf("%w: offset %d after offset %d in %s", ErrOutOfOrder, offset, last.Offset, t.x.path)
		}
		if timestamp <= last.Timestamp {
			return false, nil
		}
	}
	if !final && t.Full() {
		return false, ErrFull
	}
	e, err := t.x.slot()
	if err != nil {
		return false, err
	}
	binary.BigEndian.PutUint64(e[0:8], uint64(timestamp))
	binary.BigEndian.PutUint32(e[8:12], uint32(rel))
	t.x.publish()
	return true, nil
}

// Lookup returns the greatest entry whose timestamp is at or below
// timestamp, or {-1, BaseOffset} when there is none. Records at or after
// timestamp lie at or after the returned offset.
func (t *TimeIndex) Lookup(timestamp int64) TimestampOffset {
	n := t.Len()
	i := t.x.search(n, timestamp, func(i int) int64 {
		return int64(binary.BigEndian.Uint64(t.x.entry(i)[0:8]))
	})
	if i < 0 {
		return TimestampOffset{Timestamp: -1, Offset: t.x.base}
	}
	return t.Entry(i)
}

// TruncateTo removes every entry whose offset is at or above offset.
func (t *TimeIndex) TruncateTo(offset int64) {
	n := t.Len()
	// Offsets do not decrease, so the entries to keep are a prefix.
	keep := n
	for keep > 0 && t.Entry(keep-1).Offset >= offset {
		keep--
	}
	t.x.truncateEntries(keep)
}

// Reset removes every entry, keeping the room for them.
func (t *TimeIndex) Reset() { t.x.truncateEntries(0) }

// Resize makes room for maxBytes of entries; see OffsetIndex.Resize.
func (t *TimeIndex) Resize(maxBytes int) error { return t.x.resize(maxBytes) }

// Trim shrinks the file to its entries.
func (t *TimeIndex) Trim() error { return t.x.resize(0) }

// Flush makes the entries durable.
func (t *TimeIndex) Flush() error { return t.x.flush() }

// SanityCheck verifies that timestamps increase strictly and offsets never
// decrease entry by entry, and that every offset is below nextOffset, the
// offset after the segment's last record. It returns a *CorruptionError
// describing the first problem.
func (t *TimeIndex) SanityCheck(nextOffset int64) error {
	n := t.Len()
	prev := TimestampOffset{Timestamp: -1 << 63, Offset: t.x.base}
	for i := 0; i < n; i++ {
		e := t.Entry(i)
		if i > 0 && e.Timestamp <= prev.Timestamp {
			return corruptf(t.x.path, "entry %d timestamp %d does not follow %d", i, e.Timestamp, prev.Timestamp)
		}
		if e.Offset < prev.Offset {
			return corruptf(t.x.path, "entry %d offset %d is below %d", i, e.Offset, prev.Offset)
		}
		if e.Offset >= nextOffset {
			return corruptf(t.x.path, "entry %d offset %d is past the segment's end %d", i, e.Offset, nextOffset)
		}
		prev = e
	}
	return nil
}

// Close trims the file to its entries and closes it. It does not flush.
func (t *TimeIndex) Close() error { return t.x.close() }
