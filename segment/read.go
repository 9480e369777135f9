package segment

import (
	"fmt"

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
	e := s.offsetIndex.Lookup(offset)
	// An append indexes its batch before publishing the new size; skip
	// entries newer than the size this read started from.
	for e.Pos >= end && e.Pos > 0 {
		e = s.offsetIndex.Lookup(e.Offset - 1)
	}
	sc := NewScanner(s.log, e.Pos, end, ScanHeaders)
	for sc.Next() {
		if h := sc.Header(); h.LastOffset() >= offset {
			return sc.Pos(), h, true, nil
		}
	}
	return 0, h, false, sc.Err()
}

// Read appends to dst the whole batches that follow the batch holding
// startOffset (that batch included), as long as they end below maxOffset and
// fit in maxBytes — but at least the first batch, however large, so that a
// reader always makes progress (as Kafka's fetch does). It returns dst
// unchanged when the segment holds no batch ending at or above startOffset
// or the first one does not end below maxOffset.
//
// The bytes are the log's as written; their CRCs are not checked here (a
// decoder does that). Bytes that do not parse as batch headers are an error.
func (s *Segment) Read(dst []byte, startOffset, maxOffset int64, maxBytes int) ([]byte, error) {
	end := s.size.Load()
	pos, h, found, err := s.locate(startOffset, end)
	if err != nil || !found || h.LastOffset() >= maxOffset {
		return dst, err
	}
	n := min(int64(maxBytes), end-pos)
	if n < int64(h.Size()) {
		n = int64(h.Size())
	}
	start := len(dst)
	dst = grow(dst, int(n))
	buf := dst[start : start+int(n)]
	if got, err := s.log.ReadAt(buf, pos); got < len(buf) {
		return dst[:start], fmt.Errorf("segment: read %s at %d: %w", s.Path(LogSuffix), pos, err)
	}
	p := 0
	for p+record.HeaderSize <= len(buf) {
		bh, err := record.ParseHeader(buf[p:])
		if err != nil {
			return dst[:start], &CorruptionError{Path: s.Path(LogSuffix), Pos: pos + int64(p), Err: err}
		}
		if p+bh.Size() > len(buf) || bh.LastOffset() >= maxOffset {
			break
		}
		p += bh.Size()
	}
	return dst[:start+p], nil
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
// The segment then ends at the base offset of the first batch removed.
func (s *Segment) TruncateTo(offset int64) (int64, error) {
	end := s.size.Load()
	pos, _, found, err := s.locate(offset, end)
	if err != nil || !found {
		return 0, err
	}
	s.offsetIndex.TruncateTo(offset)
	s.timeIndex.TruncateTo(offset)
	if err := s.log.Truncate(pos); err != nil {
		return 0, fmt.Errorf("segment: truncate %s to %d: %w", s.Path(LogSuffix), pos, err)
	}
	s.size.Store(pos)
	if err := s.loadTail(); err != nil {
		return end - pos, err
	}
	return end - pos, nil
}
