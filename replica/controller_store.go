package replica

import (
	"fmt"
	"slices"

	"github.com/partlog/partlog/log"
	"github.com/partlog/partlog/record"
)

// MetadataStore is where a controller persists its metadata records: a log
// it appends to and replays from the start when it restarts. LogStore
// keeps them in a *log.Log; a Raft-replicated log could stand behind the
// same two methods.
type MetadataStore interface {
	// Append writes records durably, all or none, in order: the
	// controller applies them only once Append returns nil.
	Append(records []MetadataRecord) error
	// Replay calls fn with every record appended so far, in order,
	// stopping at fn's first error.
	Replay(fn func(MetadataRecord) error) error
}

// MemStore is a MetadataStore in memory, holding each record encoded (so
// that it goes through the codec as a log would). Its zero value is empty
// and ready.
type MemStore struct {
	records [][]byte
}

// Append implements MetadataStore.
func (s *MemStore) Append(records []MetadataRecord) error {
	for _, r := range records {
		s.records = append(s.records, EncodeMetadataRecord(nil, r))
	}
	return nil
}

// Replay implements MetadataStore.
func (s *MemStore) Replay(fn func(MetadataRecord) error) error {
	for _, b := range s.records {
		r, err := DecodeMetadataRecord(b)
		if err != nil {
			return err
		}
		if err := fn(r); err != nil {
			return err
		}
	}
	return nil
}

// Len returns how many records s holds.
func (s *MemStore) Len() int { return len(s.records) }

// Truncated returns a copy of s holding only its first n records: the
// store of a controller that stopped after n records.
func (s *MemStore) Truncated(n int) *MemStore {
	return &MemStore{records: slices.Clone(s.records[:n])}
}

// LogStore is a MetadataStore over a partition log, like KRaft's
// __cluster_metadata: each Append is one record batch, synced before
// Append returns.
type LogStore struct {
	log *log.Log
}

// NewLogStore returns a MetadataStore writing to l. l is the caller's to
// close.
func NewLogStore(l *log.Log) *LogStore { return &LogStore{log: l} }

// Append implements MetadataStore.
func (s *LogStore) Append(records []MetadataRecord) error {
	if len(records) == 0 {
		return nil
	}
	b := record.NewBuilder(record.DefaultBatchOptions())
	var buf []byte
	for _, r := range records {
		buf = EncodeMetadataRecord(buf[:0], r)
		b.Append(record.Record{Value: buf}) // Append copies the value into the batch
	}
	if _, err := s.log.Append(b.Build()); err != nil {
		return fmt.Errorf("replica: append metadata: %w", err)
	}
	if err := s.log.Flush(); err != nil {
		return fmt.Errorf("replica: sync metadata: %w", err)
	}
	return nil
}

// Replay implements MetadataStore.
func (s *LogStore) Replay(fn func(MetadataRecord) error) error {
	from, end := s.log.LogStartOffset(), s.log.LogEndOffset()
	for from < end {
		buf, err := s.log.Read(nil, from, end, 1<<20)
		if err != nil {
			return fmt.Errorf("replica: read metadata at %d: %w", from, err)
		}
		if len(buf) == 0 {
			return fmt.Errorf("%w: nothing read at offset %d before the log end %d", ErrCorruptMetadata, from, end)
		}
		for len(buf) > 0 {
			h, err := record.ParseHeader(buf)
			if err != nil {
				return fmt.Errorf("replica: metadata batch at %d: %w", from, err)
			}
			b, err := record.Decode(buf[:h.Size()])
			if err != nil {
				return fmt.Errorf("replica: metadata batch at %d: %w", from, err)
			}
			for _, rec := range b.Records {
				r, err := DecodeMetadataRecord(rec.Value)
				if err != nil {
					return fmt.Errorf("metadata record at %d: %w", rec.Offset, err)
				}
				if err := fn(r); err != nil {
					return err
				}
			}
			buf = buf[h.Size():]
			from = h.NextOffset()
		}
	}
	return nil
}
