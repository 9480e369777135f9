package segment

import (
	"fmt"
	"math"

	"github.com/partlog/partlog/record"
)

// Recovery reports what Recover found.
type Recovery struct {
	// Batches is how many valid batches the segment holds.
	Batches int
	// ValidBytes is their size: where the segment now ends.
	ValidBytes int64
	// Truncated is how many bytes after them were cut.
	Truncated int64
	// Cause says why the bytes were cut (a *CorruptionError), or is nil.
	Cause error
}

// Recover reads every batch of the log, checking length bounds, magic, CRC
// and that offsets increase, cuts the file at the first byte that is not
// part of a valid batch, and rebuilds both indexes from the batches kept.
// Recovering a recovered segment changes nothing. visit, when not nil, sees
// the header of every batch kept, in order (the log rebuilds its leader
// epoch cache from them).
//
// The .txnindex is checked against the batches kept, not rebuilt: its
// entries need the producer state, which the partition rebuilds it from
// (TxnIndexErr reports what the check found).
func (s *Segment) Recover(visit func(record.Header)) (Recovery, error) {
	r, err := s.rebuild(true, visit)
	if err == nil {
		s.txnIndex.check(s.base, s.nextOffset.Load())
	}
	return r, err
}

// rebuild scans the log and rebuilds the indexes. With cut it truncates the
// log after the last valid batch; without, invalid bytes are an error and
// nothing changes on disk.
func (s *Segment) rebuild(cut bool, visit func(record.Header)) (Recovery, error) {
	if s.closed {
		return Recovery{}, ErrClosed
	}
	fileSize, err := s.log.Size()
	if err != nil {
		return Recovery{}, fmt.Errorf("segment: size of %s: %w", s.Path(LogSuffix), err)
	}
	end := min(fileSize, MaxSize)
	s.offsetIndex.Reset()
	s.timeIndex.Reset()
	if err := s.Activate(); err != nil { // room for every entry the scan adds
		return Recovery{}, err
	}
	s.setMaxTimestamp(-1, s.base)
	s.firstTimestamp = -1
	s.bytesSinceIndexEntry = 0
	next := s.base
	var r Recovery
	sc := NewScanner(s.log, 0, end, ScanVerified)
	for sc.Next() {
		h := sc.Header()
		if h.BaseOffset < next || h.LastOffset()-s.base > math.MaxInt32 {
			r.Cause = &CorruptionError{Path: s.Path(LogSuffix), Pos: sc.Pos(),
				Err: fmt.Errorf("%w: batch %d..%d after offset %d", ErrOffsetOrder, h.BaseOffset, h.LastOffset(), next-1)}
			break
		}
		pos := sc.Pos()
		s.noteTimestamp(h)
		if pos == 0 {
			s.firstTimestamp = h.MaxTimestamp
		}
		s.maybeIndex(h, pos)
		if visit != nil {
			visit(h)
		}
		next = h.NextOffset()
		r.Batches++
		r.ValidBytes = pos + int64(h.Size())
	}
	if r.Cause == nil {
		r.Cause = sc.Err()
	}
	if r.Cause != nil && !isFormatError(r.Cause) {
		return r, r.Cause // an I/O error: nothing is known about the bytes
	}
	if r.Cause == nil && end < fileSize {
		r.Cause = &CorruptionError{Path: s.Path(LogSuffix), Pos: end, Err: fmt.Errorf("log file of %d bytes is larger than a segment may be", fileSize)}
	}
	r.Truncated = fileSize - r.ValidBytes
	if r.Truncated > 0 {
		if !cut {
			return r, r.Cause
		}
		if err := s.log.Truncate(r.ValidBytes); err != nil {
			return r, fmt.Errorf("segment: truncate %s to %d: %w", s.Path(LogSuffix), r.ValidBytes, err)
		}
	} else {
		r.Cause = nil
	}
	s.size.Store(r.ValidBytes)
	s.nextOffset.Store(next)
	return r, nil
}
