package log

// Read appends to dst whole record batches starting with the one that holds
// offset, as many as fit in maxBytes — but at least one, however large — and
// none that does not end below maxOffset (a high watermark, say; the log end
// offset caps it). It returns dst unchanged when offset is at maxOffset or
// beyond. An offset below the log start offset or above the log end offset
// is an *OffsetOutOfRangeError.
//
// The first batch may begin before offset: a reader skips the records below
// it. Batches are returned as stored; record.Decode checks their CRCs.
func (l *Log) Read(dst []byte, offset, maxOffset int64, maxBytes int) ([]byte, error) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.closed {
		return dst, ErrClosed
	}
	leo := l.leo.Load()
	if offset < l.logStartOffset || offset > leo {
		return dst, &OffsetOutOfRangeError{Offset: offset, LogStartOffset: l.logStartOffset, LogEndOffset: leo}
	}
	maxOffset = min(maxOffset, leo)
	if offset >= maxOffset {
		return dst, nil
	}
	for i := l.floor(offset); i < len(l.segments); i++ {
		out, err := l.segments[i].Read(dst, offset, maxOffset, maxBytes)
		if err != nil || len(out) > len(dst) {
			return out, err
		}
	}
	return dst, nil
}

// FindOffsetByTimestamp returns the offset and timestamp of the first record
// whose timestamp is at or above timestamp, as Kafka's ListOffsets does.
// found is false when there is none.
func (l *Log) FindOffsetByTimestamp(timestamp int64) (offset, recordTimestamp int64, found bool, err error) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.closed {
		return 0, 0, false, ErrClosed
	}
	for _, s := range l.segments {
		if s.MaxTimestamp() < timestamp {
			continue
		}
		offset, ts, ok, err := s.FindOffsetByTimestamp(timestamp)
		if err != nil || ok {
			if ok && offset < l.logStartOffset {
				offset = l.logStartOffset
			}
			return offset, ts, ok, err
		}
	}
	return 0, 0, false, nil
}
