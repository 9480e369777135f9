package segment

import (
	"fmt"

	"github.com/partlog/partlog/index"
	"github.com/partlog/partlog/record"
)

// Locate finds the first batch whose last offset is at or above offset: its
// file position and header. found is false when every batch ends below
// offset.
func (s *Segment) Locate(offset int64) (pos int64, h record.Header, found bool, err error) {
	return s.locate(offset, s.size.Load())
}

// locate is Locate among the batches before end.
func (s *Segment) locate(offset, end int64) (pos int64, h record.Header, found bool, err error) {
	if s.closed {
		return 0, h, false, ErrClosed
	}
	err = s.scanFromIndex(offset, end, false, func(p int64, bh record.Header) bool {
		if bh.LastOffset() >= offset {
			pos, h, found = p, bh, true
			return false
		}
		return true
	})
	if found {
		return pos, h, true, nil
	}
	return 0, h, false, err
}

// scanFromIndex calls visit with the position and header of each batch
// before end, from the one the offset index names at or below offset on,
// until visit returns false, and returns the scan's error. With big the
// scanner reads each header alone (see Scanner.big).
//
// The entry is checked as the scan starts: the batch it names must start
// at its position and end at its offset. An index damaged in a way its
// sanity check cannot see (an entry pointing elsewhere) would otherwise
// make a read fail, or start past batches the log holds and skip them;
// the log is the truth, so the scan then starts at the segment's first
// batch instead.
func (s *Segment) scanFromIndex(offset, end int64, big bool, visit func(pos int64, h record.Header) bool) error {
	e := s.offsetIndex.Lookup(offset)
	// An append indexes its batch before publishing the new size; skip
	// entries newer than the size this read started from.
	for e.Pos >= end && e.Pos > 0 {
		e = s.offsetIndex.Lookup(e.Offset - 1)
	}
	for {
		indexed := e.Pos > 0 // else the scan starts at the first batch anyway
		sc := newPooledScanner(s.log, e.Pos, end, ScanHeaders)
		sc.big = big
		first, misplaced := true, false
		for sc.Next() {
			h := sc.Header()
			if first && indexed && h.LastOffset() != e.Offset {
				misplaced = true
				break
			}
			first = false
			if !visit(sc.Pos(), h) {
				break
			}
		}
		err := sc.Err()
		sc.release()
		if first && indexed && err != nil {
			misplaced = true // no batch starts where the entry says
		}
		if !misplaced {
			return err
		}
		e = index.OffsetPosition{Offset: s.base, Pos: 0}
	}
}

// Read appends to dst the whole batches that follow the batch holding
// startOffset (that batch included), as long as they end below maxOffset and
// fit in maxBytes — but at least the first batch, however large, so that a
// reader always makes progress (as Kafka's fetch does). It returns dst
// unchanged when the segment holds no batch ending at or above startOffset
// or the first one does not end below maxOffset.
//
// Read walks the batch headers from the nearest index entry to find the
// byte range, then reads exactly that range. The bytes are the log's as
// written; their CRCs are not checked here (a decoder does that). Bytes that
// do not parse as a batch header end the range; when they come first, they
// are the error.
func (s *Segment) Read(dst []byte, startOffset, maxOffset int64, maxBytes int) ([]byte, error) {
	pos, size, err := s.Range(startOffset, maxOffset, maxBytes)
	if err != nil || size == 0 {
		return dst, err
	}
	start := len(dst)
	dst = grow(dst, int(size))
	if got, err := s.log.ReadAt(dst[start:], pos); got < int(size) {
		return dst[:start], fmt.Errorf("segment: read %s at %d: %w", s.Path(LogSuffix), pos, err)
	}
	return dst, nil
}

// Range returns the byte range of the log file that Read would read: its
// position and size, a size of zero when Read would read nothing. A
// network server sends such a range with sendfile, from File, without
// reading it.
func (s *Segment) Range(startOffset, maxOffset int64, maxBytes int) (pos, size int64, err error) {
	pos, size, _, err = s.RangeTo(startOffset, maxOffset, maxBytes)
	return pos, size, err
}

// RangeTo is Range that also returns the offset after the range's last
// batch (zero with an empty range): the upper bound of the offsets it
// holds, which a read_committed fetch gathers aborted transactions up to.
func (s *Segment) RangeTo(startOffset, maxOffset int64, maxBytes int) (pos, size, next int64, err error) {
	if s.closed {
		return 0, 0, 0, ErrClosed
	}
	end := s.size.Load()
	// Read the first header alone, not with a chunk of the batch behind
	// it: a range sent with sendfile then copies almost nothing into
	// memory, and Read reads the range again anyway.
	pos = -1
	err = s.scanFromIndex(startOffset, end, true, func(p int64, h record.Header) bool {
		if pos < 0 {
			if h.LastOffset() < startOffset {
				return true
			}
			if h.LastOffset() >= maxOffset {
				return false
			}
			pos, size, next = p, int64(h.Size()), h.NextOffset()
			return true
		}
		if h.LastOffset() >= maxOffset || size+int64(h.Size()) > int64(maxBytes) {
			return false
		}
		size += int64(h.Size())
		next = h.NextOffset()
		return true
	})
	if pos < 0 {
		return 0, 0, 0, err
	}
	return pos, size, next, nil
}

// grow extends dst by n bytes, reallocating when it lacks the room.
func grow(dst []byte, n int) []byte {
	if cap(dst)-len(dst) < n {
		nd := make([]byte, len(dst), len(dst)+n)
		copy(nd, dst)
		dst = nd
	}
	return dst[:len(dst)+n]
}

// FindOffsetByTimestamp returns the offset and timestamp of the first record
// whose timestamp is at or above timestamp. found is false when there is
// none in this segment.
func (s *Segment) FindOffsetByTimestamp(timestamp int64) (offset, recordTimestamp int64, found bool, err error) {
	if s.closed {
		return 0, 0, false, ErrClosed
	}
	end := s.size.Load()
	// No record at or below the entry's offset has a timestamp above the
	// entry's, which is below timestamp: the answer lies after it.
	te := s.timeIndex.Lookup(timestamp - 1)
	start, _, ok, err := s.locate(te.Offset, end)
	if err != nil || !ok {
		return 0, 0, false, err
	}
	sc := NewScanner(s.log, start, end, ScanBatches)
	for sc.Next() {
		if sc.Header().MaxTimestamp < timestamp {
			continue
		}
		b, err := record.Decode(sc.Batch())
		if err != nil {
			return 0, 0, false, &CorruptionError{Path: s.Path(LogSuffix), Pos: sc.Pos(), Err: err}
		}
		for _, r := range b.Records {
			if r.Timestamp >= timestamp {
				return r.Offset, r.Timestamp, true, nil
			}
		}
	}
	return 0, 0, false, sc.Err()
}

// TruncateTo removes every batch whose last offset is at or above offset —
// a batch straddling offset goes entirely — and returns how many bytes went.
// The segment then ends at the base offset of the first batch removed. The
// .txnindex loses the entries of markers at or above offset, and
// whatever damage follows the entries it keeps.
func (s *Segment) TruncateTo(offset int64) (int64, error) {
	end := s.size.Load()
	pos, _, found, err := s.locate(offset, end)
	if err != nil || !found {
		return 0, err
	}
	s.offsetIndex.TruncateTo(offset)
	s.timeIndex.TruncateTo(offset)
	if _, err := s.txnIndex.truncate(offset, s.base, s.nextOffset.Load()); err != nil {
		return 0, err
	}
	if err := s.log.Truncate(pos); err != nil {
		return 0, fmt.Errorf("segment: truncate %s to %d: %w", s.Path(LogSuffix), pos, err)
	}
	s.size.Store(pos)
	if err := s.loadTail(); err != nil {
		return end - pos, err
	}
	return end - pos, nil
}
