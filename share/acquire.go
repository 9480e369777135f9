package share

import (
	"fmt"
	"time"

	"github.com/partlog/partlog/kafka"
)

// Batch is the offset range of one record batch read from the log: the
// base offset and the last offset of its header. Some offsets inside it
// may have no record (compaction keeps a batch's offsets but drops
// records); the member that gets them acknowledges them as Gap.
type Batch struct {
	// FirstOffset is the batch's base offset.
	FirstOffset int64
	// LastOffset is the batch's last offset, inclusive.
	LastOffset int64
}

// AcquiredRecords is a range of offsets a member acquired, all with the
// same delivery count: the AcquiredRecords of Kafka's ShareFetchResponse.
// The member may deliver the records in it and must acknowledge each of
// its offsets before the lock expires.
type AcquiredRecords struct {
	// FirstOffset is the first offset acquired.
	FirstOffset int64
	// LastOffset is the last offset acquired, inclusive.
	LastOffset int64
	// DeliveryCount is how many times these records have been acquired,
	// this time included: 1 on the first delivery.
	DeliveryCount int16
}

// AcquireMode is how a fetch's maxRecords bounds what it acquires:
// Kafka's ShareAcquireMode (KIP-1206, Kafka 4.2), the consumer's
// share.acquire.mode, with its ids on the wire.
type AcquireMode int8

// The acquire modes.
const (
	// BatchOptimized makes maxRecords a soft limit, checked between
	// batches: once maxRecords records are acquired no further batch is
	// begun, but a batch begun is acquired whole, so a fetch may get more
	// than maxRecords. It is Kafka's default, and what a ShareFetch
	// before version 2 asks for.
	BatchOptimized AcquireMode = 0
	// RecordLimit makes maxRecords a hard limit: acquisition stops at
	// maxRecords records, in the middle of a batch if need be.
	RecordLimit AcquireMode = 1
)

// String returns the mode as share.acquire.mode spells it.
func (m AcquireMode) String() string {
	switch m {
	case BatchOptimized:
		return "batch_optimized"
	case RecordLimit:
		return "record_limit"
	}
	return fmt.Sprintf("AcquireMode(%d)", int8(m))
}

// Acquire is AcquireWith in RecordLimit mode: it never acquires more
// than maxRecords records.
func (p *Partition) Acquire(member string, fetchOffset int64, batches []Batch, maxRecords int, now time.Time) ([]AcquiredRecords, Update, error) {
	return p.AcquireWith(member, fetchOffset, batches, maxRecords, RecordLimit, now)
}

// AcquireWith acquires for member the records of batches it may have, as
// a ShareFetch does once the caller has read the log: Kafka's
// SharePartition.acquire. fetchOffset is the offset the caller read the
// log from, FetchOffset when it started the read; batches are the
// offset ranges of the batches the read returned, in order, not
// overlapping (a batch may start before fetchOffset). maxRecords is the
// most records to acquire (the request's MaxRecords), a hard or a soft
// limit as mode says; now is the time, from which the lock of the records
// acquired runs RecordLockDuration.
//
// Every Available offset in the batches is acquired, in order: it becomes
// Acquired by member and its delivery count goes up by one. An offset
// another member holds, or one Acknowledged or Archived, is skipped. New
// offsets (from the end offset on) are acquired while the window holds
// fewer than MaxInFlightRecords offsets. With maxRecords records
// acquired, a RecordLimit fetch stops at once, so a batch may be acquired
// in part (a member fetching from Kafka gets the whole batch, and skips
// the records outside its acquired ranges); a BatchOptimized fetch
// finishes the batch it is in and stops there. Zero maxRecords acquires
// nothing in either mode. An Available record whose delivery count has
// reached the limit — left so by a leader that failed while it was
// acquired — is archived instead of acquired.
//
// The offsets from fetchOffset to the last batch's end that no batch
// covers are not in the log (compacted away, control batches, aborted
// transactions the caller skipped): they are archived, so the start
// offset can move past them. When nothing is in flight, the start offset
// jumps past them instead.
//
// It returns the ranges acquired, in offset order (the caller's to keep),
// and the Update to write before the member gets them; the Update also
// holds what expired at now. The errors, for which nothing changes:
// kafka.ErrInvalidRequest for an empty member id, a negative maxRecords,
// an unknown mode, malformed or unordered batches, or a fetchOffset
// beyond the end offset (the window never shrinks from the end, so the
// caller did not get it from FetchOffset).
func (p *Partition) AcquireWith(member string, fetchOffset int64, batches []Batch, maxRecords int, mode AcquireMode, now time.Time) ([]AcquiredRecords, Update, error) {
	if err := p.validateFetch(member, fetchOffset, batches, maxRecords, mode); err != nil {
		return nil, p.noChange(), err
	}
	p.expire(now)
	var (
		acquired []AcquiredRecords
		l        *lock
		n        int
	)
	pos := max(fetchOffset, p.start)
fetch:
	for _, b := range batches {
		// Both modes stop between batches once they have maxRecords.
		if n >= maxRecords {
			break
		}
		if b.FirstOffset > pos && !p.archiveAbsent(pos, b.FirstOffset) {
			break
		}
		for off := max(b.FirstOffset, p.start); off <= b.LastOffset; off++ {
			if mode == RecordLimit && n == maxRecords {
				break fetch
			}
			if off == p.end() {
				if len(p.records) >= p.config.MaxInFlightRecords {
					break fetch
				}
				p.records = append(p.records, record{state: Available})
			}
			r := p.rec(off)
			if r.state != Available {
				continue
			}
			if int(r.count) >= p.config.DeliveryCountLimit {
				r.state = Archived
				p.mark(off, r)
				continue
			}
			if l == nil {
				l = &lock{member: member, deadline: now.Add(p.config.RecordLockDuration), first: off}
				p.locks = append(p.locks, l)
			}
			r.state, r.lock = Acquired, l
			r.count++
			l.held++
			l.last = off
			p.mark(off, r)
			acquired = appendAcquired(acquired, off, r.count)
			n++
		}
		pos = max(pos, b.LastOffset+1)
	}
	p.trim()
	return acquired, p.flush(), nil
}

// validateFetch checks AcquireWith's arguments.
func (p *Partition) validateFetch(member string, fetchOffset int64, batches []Batch, maxRecords int, mode AcquireMode) error {
	invalid := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", kafka.ErrInvalidRequest, fmt.Sprintf(format, args...))
	}
	switch {
	case member == "":
		return invalid("member id can't be empty")
	case maxRecords < 0:
		return invalid("max records %d is negative", maxRecords)
	case mode != BatchOptimized && mode != RecordLimit:
		return invalid("unknown share acquire mode %d", int8(mode))
	case fetchOffset > p.end():
		return invalid("fetch offset %d is beyond the share-partition end offset %d", fetchOffset, p.end())
	}
	for i, b := range batches {
		switch {
		case b.FirstOffset < 0 || b.FirstOffset > b.LastOffset:
			return invalid("batch %d-%d is malformed", b.FirstOffset, b.LastOffset)
		case i > 0 && b.FirstOffset <= batches[i-1].LastOffset:
			return invalid("batch %d-%d does not follow batch %d-%d", b.FirstOffset, b.LastOffset, batches[i-1].FirstOffset, batches[i-1].LastOffset)
		}
	}
	return nil
}

// archiveAbsent archives the offsets [from, to), which a fetch showed are
// not in the log: the Available ones in flight, and those from the end
// offset on, which join the window Archived. When nothing is left in
// flight, the start offset jumps to to instead. It returns false, and
// leaves the offsets from the end offset on as they are, when they do not
// fit in MaxInFlightRecords. from is at least the start offset and at
// most the end offset.
func (p *Partition) archiveAbsent(from, to int64) bool {
	for off := from; off < min(to, p.end()); off++ {
		if r := p.rec(off); r.state == Available {
			r.state = Archived
			p.mark(off, r)
		}
	}
	if to <= p.end() {
		return true
	}
	p.trim()
	if len(p.records) == 0 {
		p.start = to
		return true
	}
	if to-p.start > int64(p.config.MaxInFlightRecords) {
		return false
	}
	for off := p.end(); off < to; off++ {
		p.records = append(p.records, record{state: Archived})
		p.mark(off, p.rec(off))
	}
	return true
}

// appendAcquired appends offset off, acquired with delivery count count,
// to ranges, extending the last range when off continues it.
func appendAcquired(ranges []AcquiredRecords, off int64, count int16) []AcquiredRecords {
	if n := len(ranges); n > 0 && ranges[n-1].LastOffset+1 == off && ranges[n-1].DeliveryCount == count {
		ranges[n-1].LastOffset = off
		return ranges
	}
	return append(ranges, AcquiredRecords{FirstOffset: off, LastOffset: off, DeliveryCount: count})
}

// AdvanceStartOffset moves the start offset up to logStartOffset when the
// log's start has moved past it (retention, DeleteRecords): the records
// below are gone, so they are dropped from the window, acquired ones
// included — a member's acknowledgement of them is then ignored. It
// returns the Update to write (with what expired at now); nothing changes
// when logStartOffset is not above the start offset.
//
// (Kafka archives the Available records below the new start and leaves
// the Acquired ones until their locks expire; either way none of them is
// delivered again.)
func (p *Partition) AdvanceStartOffset(logStartOffset int64, now time.Time) Update {
	p.expire(now)
	if logStartOffset > p.start {
		k := min(logStartOffset-p.start, int64(len(p.records)))
		for i := range k {
			if r := &p.records[i]; r.lock != nil {
				p.unlock(r)
			}
		}
		p.records = p.records[k:]
		p.start = logStartOffset
		if len(p.records) == 0 {
			p.records = nil
		}
	}
	p.trim()
	return p.flush()
}
