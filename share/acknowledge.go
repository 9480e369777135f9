package share

import (
	"fmt"
	"slices"
	"time"

	"github.com/partlog/partlog/kafka"
)

// AckType is how a member acknowledges a record: the AcknowledgeTypes of
// Kafka's ShareAcknowledge and ShareFetch requests.
type AckType int8

// The acknowledgement types, with their ids on the wire.
const (
	// Gap: the offset has no record (a gap in a compacted batch); it is
	// archived.
	Gap AckType = 0
	// Accept: the member processed the record; it is Acknowledged.
	Accept AckType = 1
	// Release: the member gives the record back for redelivery; it is
	// Available again, or Archived if its delivery count reached the
	// limit.
	Release AckType = 2
	// Reject: the record cannot be processed; it is Archived.
	Reject AckType = 3
	// Renew: the member is still processing the record (KIP-1222, Kafka
	// 4.2); its acquisition lock starts again from now, for a fresh
	// RecordLockDuration. It stays Acquired by the member with the same
	// delivery count, and nothing is written.
	Renew AckType = 4
)

// String returns the type as Kafka's AcknowledgeType spells it.
func (t AckType) String() string {
	switch t {
	case Gap:
		return "GAP"
	case Accept:
		return "ACCEPT"
	case Release:
		return "RELEASE"
	case Reject:
		return "REJECT"
	case Renew:
		return "RENEW"
	}
	return fmt.Sprintf("AckType(%d)", int8(t))
}

// AckBatch acknowledges a range of offsets: an AcknowledgementBatch of
// Kafka's ShareAcknowledge and ShareFetch requests.
type AckBatch struct {
	// FirstOffset is the first offset acknowledged.
	FirstOffset int64
	// LastOffset is the last offset acknowledged, inclusive.
	LastOffset int64
	// AcknowledgeTypes is one type for the whole range, or one per
	// offset from FirstOffset to LastOffset.
	AcknowledgeTypes []AckType
}

// typeAt returns how b acknowledges off, an offset of its range.
func (b AckBatch) typeAt(off int64) AckType {
	if len(b.AcknowledgeTypes) == 1 {
		return b.AcknowledgeTypes[0]
	}
	return b.AcknowledgeTypes[off-b.FirstOffset]
}

// Acknowledge applies member's acknowledgements at time now, as a
// ShareAcknowledge (or the acknowledgements of a ShareFetch) does:
// Kafka's SharePartition.acknowledge. Each offset of each batch must be
// Acquired by member under a lock that has not expired at now. Accept
// makes it Acknowledged; Reject and Gap make it Archived; Release makes it
// Available again, or Archived when its delivery count has reached the
// limit. Renew leaves it Acquired by member, with the same delivery
// count, under a lock that runs RecordLockDuration from now: the records
// renewed by one call share a new lock, and the locks they leave keep
// their other records and deadlines. Renew may be mixed with the other
// types, in one batch or across batches, as Kafka allows. Offsets below
// the start offset are ignored: they are done with already. Then the
// start offset moves past the leading records that are Acknowledged or
// Archived.
//
// The request is applied whole or not at all, as Kafka answers it with
// one error for the partition: kafka.ErrInvalidRequest for batches out
// of order or overlapping, a range that ends before it starts, a number
// of types neither 1 nor the range's length, or an unknown type; and
// kafka.ErrInvalidRecordState, naming the batch and offset, when an
// offset is not Acquired by member (never delivered to it, already
// acknowledged, or its lock expired) — for Renew as for the other types.
// On an error nothing changes — not even the locks that expired at now —
// and the Update is empty.
//
// It returns the Update to write before the member is answered; it also
// holds what expired at now. A renewal writes nothing of its own: a lock
// is never stored.
func (p *Partition) Acknowledge(member string, batches []AckBatch, now time.Time) (Update, error) {
	if err := validateAcks(batches); err != nil {
		return p.noChange(), err
	}
	for _, b := range batches {
		for off := max(b.FirstOffset, p.start); off <= b.LastOffset; off++ {
			if err := p.checkHeld(member, off, now); err != nil {
				return p.noChange(), fmt.Errorf("%w: batch %d-%d: %v", kafka.ErrInvalidRecordState, b.FirstOffset, b.LastOffset, err)
			}
		}
	}
	p.expire(now)
	var renewed *lock
	for _, b := range batches {
		for off := max(b.FirstOffset, p.start); off <= b.LastOffset; off++ {
			r := p.rec(off)
			t := b.typeAt(off)
			if t == Renew {
				renewed = p.renew(renewed, member, off, r, now)
				continue
			}
			p.unlock(r)
			switch t {
			case Accept:
				r.state = Acknowledged
			case Gap, Reject:
				r.state = Archived
			case Release:
				p.makeAvailable(r)
			}
			p.mark(off, r)
		}
	}
	p.trim()
	return p.flush(), nil
}

// validateAcks checks acknowledgement batches as Kafka's request
// validation does.
func validateAcks(batches []AckBatch) error {
	invalid := func(b AckBatch, format string, args ...any) error {
		return fmt.Errorf("%w: acknowledgement batch %d-%d: %s", kafka.ErrInvalidRequest, b.FirstOffset, b.LastOffset, fmt.Sprintf(format, args...))
	}
	for i, b := range batches {
		switch {
		case b.FirstOffset < 0 || b.FirstOffset > b.LastOffset:
			return invalid(b, "malformed range")
		case i > 0 && b.FirstOffset <= batches[i-1].LastOffset:
			return invalid(b, "overlaps or precedes batch %d-%d", batches[i-1].FirstOffset, batches[i-1].LastOffset)
		case len(b.AcknowledgeTypes) != 1 && int64(len(b.AcknowledgeTypes)) != b.LastOffset-b.FirstOffset+1:
			return invalid(b, "%d acknowledge types for %d offsets", len(b.AcknowledgeTypes), b.LastOffset-b.FirstOffset+1)
		}
		for _, t := range b.AcknowledgeTypes {
			if t < Gap || t > Renew {
				return invalid(b, "unknown acknowledge type %d", int8(t))
			}
		}
	}
	return nil
}

// checkHeld returns an error unless the record at off, an offset at or
// above the start offset, is Acquired by member under a lock that has not
// expired at now.
func (p *Partition) checkHeld(member string, off int64, now time.Time) error {
	if off >= p.end() {
		return fmt.Errorf("offset %d was never acquired (the end offset is %d)", off, p.end())
	}
	r := p.rec(off)
	switch {
	case r.state != Acquired:
		return fmt.Errorf("offset %d is %v", off, r.state)
	case r.lock.member != member:
		return fmt.Errorf("offset %d is acquired by another member", off)
	case !now.Before(r.lock.deadline):
		return fmt.Errorf("the lock on offset %d expired at %v", off, r.lock.deadline)
	}
	return nil
}

// renew moves r, the record at off that member holds, to l: the lock of
// the records one Acknowledge renews, which it creates on first use with
// a deadline RecordLockDuration from now. It returns l. The lock r leaves
// keeps the rest of its records, or is dropped when r was its last, so
// renewing part of an acquisition splits it in two. Offsets come in
// increasing order, so off is the last l holds.
func (p *Partition) renew(l *lock, member string, off int64, r *record, now time.Time) *lock {
	if l == nil {
		l = &lock{member: member, deadline: now.Add(p.config.RecordLockDuration), first: off}
		p.locks = append(p.locks, l)
	}
	p.unlock(r)
	r.lock = l
	l.held++
	l.last = off
	return l
}

// Expire ends the acquisition locks whose deadline is at or before now:
// their records become Available for redelivery, or Archived when their
// delivery count has reached the limit. The driver calls it when the
// NextDeadline timer fires; every other call expires locks itself first,
// so the result does not depend on when it is called. It returns the
// Update to write.
func (p *Partition) Expire(now time.Time) Update {
	p.expire(now)
	p.trim()
	return p.flush()
}

// ReleaseMember releases every record member holds, when it leaves the
// share group or its share session closes: they become Available for
// redelivery, or Archived when their delivery count has reached the
// limit, as if their locks expired (Kafka's releaseAcquiredRecords). It
// returns the Update to write, which also holds what expired at now.
func (p *Partition) ReleaseMember(member string, now time.Time) Update {
	p.expire(now)
	// release drops the lock it ends from p.locks, so walk them backwards.
	for i := len(p.locks) - 1; i >= 0; i-- {
		if l := p.locks[i]; l.member == member {
			p.release(l)
		}
	}
	p.trim()
	return p.flush()
}

// expire releases the locks whose deadline is at or before now.
func (p *Partition) expire(now time.Time) {
	for i := len(p.locks) - 1; i >= 0; i-- {
		if l := p.locks[i]; !now.Before(l.deadline) {
			p.release(l)
		}
	}
}

// release ends lock l: its records become Available, or Archived at the
// delivery count limit. It drops l from p.locks, and no other lock.
func (p *Partition) release(l *lock) {
	for off := max(l.first, p.start); off <= min(l.last, p.end()-1) && l.held > 0; off++ {
		if r := p.rec(off); r.lock == l {
			p.unlock(r)
			p.makeAvailable(r)
			p.mark(off, r)
		}
	}
}

// makeAvailable makes a record no member holds Available, or Archived if
// its delivery count has reached the limit.
func (p *Partition) makeAvailable(r *record) {
	if int(r.count) >= p.config.DeliveryCountLimit {
		r.state = Archived
	} else {
		r.state = Available
	}
}

// unlock takes r, an Acquired record, out of its lock, and drops the lock
// when it holds nothing more. It leaves r's state to the caller.
func (p *Partition) unlock(r *record) {
	l := r.lock
	r.lock = nil
	l.held--
	if l.held == 0 {
		i := slices.Index(p.locks, l)
		p.locks = slices.Delete(p.locks, i, i+1)
	}
}
