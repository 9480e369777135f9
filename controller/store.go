package controller

import (
	"fmt"
	"slices"

	"github.com/partlog/partlog/log"
	"github.com/partlog/partlog/record"
)

// Store is where a Machine persists its metadata records: a log it
// appends to and replays from the start when it restarts. LogStore keeps
// them in a *log.Log; a Raft-replicated log could stand behind the same
// two methods.
type Store interface {
	// Append writes records durably, all or none, in order: the Machine
	// applies them only once Append returns nil.
	Append(records []Record) error
	// Replay calls fn with every record appended so far, in order,
	// stopping at fn's first error.
	Replay(fn func(Record) error) error
}

// MemStore is a Store in memory, holding each record encoded (so
// that it goes through the codec as a log would). Its zero value is empty
// and ready.
type MemStore struct {
	records [][]byte
}

// Append implements Store.
func (s *MemStore) Append(records []Record) error {
	for _, r := range records {
		s.records = append(s.records, AppendRecord(nil, r))
	}
	return nil
}

// Replay implements Store.
func (s *MemStore) Replay(fn func(Record) error) error {
	for _, b := range s.records {
		r, err := DecodeRecord(b)
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
// store of a Machine that stopped after n records.
func (s *MemStore) Truncated(n int) *MemStore {
	return &MemStore{records: slices.Clone(s.records[:n])}
}

// LogStore is a Store over a partition log, like KRaft's
// __cluster_metadata: each Append is one record batch, synced before
// Append returns.
type LogStore struct {
	log *log.Log
}

// NewLogStore returns a Store writing to l. l is the caller's to
// close.
func NewLogStore(l *log.Log) *LogStore { return &LogStore{log: l} }

// Append implements Store.
func (s *LogStore) Append(records []Record) error {
	if len(records) == 0 {
		return nil
	}
	b := record.NewBuilder(record.DefaultBatchOptions())
	var buf []byte
	for _, r := range records {
		buf = AppendRecord(buf[:0], r)
		b.Append(record.Record{Value: buf}) // Append copies the value into the batch
	}
	if _, err := s.log.Append(b.Build()); err != nil {
		return fmt.Errorf("controller: append metadata: %w", err)
	}
	if err := s.log.Flush(); err != nil {
		return fmt.Errorf("controller: sync metadata: %w", err)
	}
	return nil
}

// Replay implements Store.
func (s *LogStore) Replay(fn func(Record) error) error {
	from, end := s.log.LogStartOffset(), s.log.LogEndOffset()
	for from < end {
		buf, err := s.log.Read(nil, from, end, 1<<20)
		if err != nil {
			return fmt.Errorf("controller: read metadata at %d: %w", from, err)
		}
		if len(buf) == 0 {
			return fmt.Errorf("%w: nothing read at offset %d before the log end %d", ErrCorruptMetadata, from, end)
		}
		for len(buf) > 0 {
			h, err := record.ParseHeader(buf)
			if err != nil {
				return fmt.Errorf("controller: metadata batch at %d: %w", from, err)
			}
			b, err := record.Decode(buf[:h.Size()])
			if err != nil {
				return fmt.Errorf("controller: metadata batch at %d: %w", from, err)
			}
			for _, rec := range b.Records {
				r, err := DecodeRecord(rec.Value)
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
