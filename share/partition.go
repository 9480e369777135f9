package share

import (
	"fmt"
	"math"
	"time"
)

// Config configures a share partition. Its zero value works: each zero
// field takes Kafka's default.
type Config struct {
	// RecordLockDuration is group.share.record.lock.duration.ms: how long
	// a member holds the records it acquires before they become
	// available again. Zero means 30s.
	RecordLockDuration time.Duration
	// DeliveryCountLimit is group.share.delivery.count.limit: a record
	// is delivered at most this many times, then archived. Zero means 5
	// (Kafka accepts 2 to 10).
	DeliveryCountLimit int
	// MaxInFlightRecords is group.share.partition.max.record.locks: the
	// most offsets the share partition keeps in flight, from the start
	// offset to the end offset; no new record is acquired beyond it.
	// Zero means 2000 (Kafka 4.1's default; Kafka accepts 100 to 10000).
	MaxInFlightRecords int
}

// maxRestoredSpan is the most offsets a restored State may span when
// Config.MaxInFlightRecords is lower: the upper bound Kafka accepts for
// group.share.partition.max.record.locks, so that a state written under
// a larger limit can still be restored.
const maxRestoredSpan = 10000

// withDefaults returns c with its zero fields set to their defaults.
func (c Config) withDefaults() Config {
	if c.RecordLockDuration == 0 {
		c.RecordLockDuration = 30 * time.Second
	}
	if c.DeliveryCountLimit == 0 {
		c.DeliveryCountLimit = 5
	}
	if c.MaxInFlightRecords == 0 {
		c.MaxInFlightRecords = 2000
	}
	return c
}

// validate checks a Config with its defaults filled in.
func (c Config) validate() error {
	switch {
	case c.RecordLockDuration < 0:
		return fmt.Errorf("%w: RecordLockDuration %v is negative", ErrInvalidConfig, c.RecordLockDuration)
	case c.DeliveryCountLimit < 1 || c.DeliveryCountLimit > math.MaxInt16:
		return fmt.Errorf("%w: DeliveryCountLimit %d is outside [1, %d]", ErrInvalidConfig, c.DeliveryCountLimit, math.MaxInt16)
	case c.MaxInFlightRecords < 1:
		return fmt.Errorf("%w: MaxInFlightRecords %d is below 1", ErrInvalidConfig, c.MaxInFlightRecords)
	}
	return nil
}

// Partition is one share partition — a share group's view of one topic
// partition — as its leader keeps it: Kafka's SharePartition, as a pure
// state machine. It does no I/O and reads no clock: time comes in as
// arguments, and every call that changes it returns the Update to write to
// the share coordinator before the call is answered. It is not safe for
// concurrent use.
//
// Its state is the in-flight window [StartOffset, EndOffset): every
// offset in it is Available, Acquired (by one member, until a deadline),
// Acknowledged or Archived, with a delivery count. Below the window every
// record is done with; from EndOffset on, nothing has been acquired yet.
// The first record of the window is never Acknowledged or Archived: the
// start offset moves past such records as soon as they are, and the
// window shrinks.
type Partition struct {
	config      Config
	stateEpoch  int32
	leaderEpoch int32

	// start is the share-partition start offset (SPSO); records[i] is the
	// record at offset start+i, and start+len(records) is the end offset.
	start   int64
	records []record
	// locks are the acquisitions that hold at least one record.
	locks []*lock

	// written is the start offset the share coordinator has: the one of
	// the State restored, or of the last Update that moved it.
	written int64
	// dirtyLo and dirtyHi bound the offsets of the records marked dirty,
	// changed since the last Update; dirtyLo > dirtyHi when none is.
	dirtyLo, dirtyHi int64
}

// record is the state of one in-flight offset.
type record struct {
	// lock is the acquisition holding the record; nil unless it is
	// Acquired.
	lock *lock
	// count is the delivery count: how many times it was acquired.
	count int16
	state RecordState
	// dirty marks a record changed since the last Update.
	dirty bool
}

// persisted returns the state a record is written in: Acquired is
// written as Available.
func (r *record) persisted() RecordState {
	if r.state == Acquired {
		return Available
	}
	return r.state
}

// lock is one acquisition: the records one Acquire call gave a member,
// held until deadline.
type lock struct {
	member   string
	deadline time.Time
	// first and last bound the offsets acquired under the lock.
	first, last int64
	// held is how many records the lock still holds.
	held int
}

// New returns the share partition that state describes, as a new leader
// restores it from the share coordinator (Kafka's ReadShareGroupState):
// the start offset, and each record from it Available, Acknowledged or
// Archived with its delivery count. No record is Acquired: the locks of
// the old leader are gone, so what it had acquired comes back Available
// with the delivery count it was written with (or Archived, at the next
// fetch, if that count reached the limit). Offsets from the start offset
// that no batch covers are Available with delivery count 0.
//
// For a share partition no member has consumed, state is just a
// StartOffset: the offset share.auto.offset.reset gives (the log end by
// default, or the log start for earliest), which the caller also writes
// to the share coordinator first. The partition writes its Updates with
// state's epochs: a new leader sets state.LeaderEpoch to its own leader
// epoch.
//
// The errors: ErrInvalidConfig for a config field out of range, and
// ErrInvalidState for batches that overlap, are out of order, lie below
// the start offset, have an unknown state or span more than
// MaxInFlightRecords offsets (or 10000, if that is more).
func New(config Config, state State) (*Partition, error) {
	config = config.withDefaults()
	if err := config.validate(); err != nil {
		return nil, err
	}
	if err := state.validate(); err != nil {
		return nil, err
	}
	p := &Partition{
		config:      config,
		stateEpoch:  state.StateEpoch,
		leaderEpoch: state.LeaderEpoch,
		start:       state.StartOffset,
		written:     state.StartOffset,
	}
	p.clean()
	if n := len(state.StateBatches); n > 0 {
		span := state.StateBatches[n-1].LastOffset + 1 - state.StartOffset
		if limit := max(int64(config.MaxInFlightRecords), maxRestoredSpan); span > limit {
			return nil, fmt.Errorf("%w: the batches span %d offsets from the start offset %d, more than %d", ErrInvalidState, span, state.StartOffset, limit)
		}
		p.records = make([]record, span)
		for _, b := range state.StateBatches {
			s := b.DeliveryState
			if s == Acquired {
				s = Available
			}
			for off := b.FirstOffset; off <= b.LastOffset; off++ {
				p.records[off-p.start] = record{state: s, count: b.DeliveryCount}
			}
		}
	}
	p.trim()
	return p, nil
}

// StartOffset returns the share-partition start offset (SPSO): every
// record below it is Acknowledged or Archived.
func (p *Partition) StartOffset() int64 { return p.start }

// EndOffset returns the share-partition end offset: the offset after the
// last one in flight, from which new records are acquired. (Kafka's
// endOffset is the last in-flight offset, one less.)
func (p *Partition) EndOffset() int64 { return p.end() }

// end returns the end offset.
func (p *Partition) end() int64 { return p.start + int64(len(p.records)) }

// rec returns the record at off, which is in the window.
func (p *Partition) rec(off int64) *record { return &p.records[off-p.start] }

// FetchOffset returns the offset the next fetch reads the log from: the
// lowest Available offset in flight, for redelivery, else the end offset.
func (p *Partition) FetchOffset() int64 {
	for i := range p.records {
		if p.records[i].state == Available {
			return p.start + int64(i)
		}
	}
	return p.end()
}

// CanAcquire reports whether a fetch could acquire anything: some
// in-flight record is Available, or the window holds fewer than
// MaxInFlightRecords offsets. When it is false, the caller need not read
// the log (Kafka's canAcquireRecords).
func (p *Partition) CanAcquire() bool {
	return p.FetchOffset() < p.end() || len(p.records) < p.config.MaxInFlightRecords
}

// NextDeadline returns the earliest deadline of an acquisition lock, when
// Expire has work to do; false when no record is Acquired.
func (p *Partition) NextDeadline() (time.Time, bool) {
	var next time.Time
	for _, l := range p.locks {
		if next.IsZero() || l.deadline.Before(next) {
			next = l.deadline
		}
	}
	return next, len(p.locks) > 0
}

// Summary describes a share partition for DescribeShareGroupOffsets and
// metrics.
type Summary struct {
	// StartOffset is the share-partition start offset.
	StartOffset int64
	// EndOffset is the share-partition end offset (exclusive).
	EndOffset int64
	// Available, Acquired, Acknowledged and Archived count the in-flight
	// records in each state; they sum to EndOffset - StartOffset.
	Available, Acquired, Acknowledged, Archived int
	// Locks is the number of acquisition locks held.
	Locks int
}

// Describe returns the partition's offsets and how many in-flight
// records are in each state.
func (p *Partition) Describe() Summary {
	s := Summary{StartOffset: p.start, EndOffset: p.end(), Locks: len(p.locks)}
	for i := range p.records {
		switch p.records[i].state {
		case Available:
			s.Available++
		case Acquired:
			s.Acquired++
		case Acknowledged:
			s.Acknowledged++
		case Archived:
			s.Archived++
		}
	}
	return s
}

// Lag returns how many records below logEnd (the high watermark, or the
// last stable offset when reading committed) are not yet Acknowledged or
// Archived: from the start offset to logEnd, less the in-flight records
// that are done with — the share-partition lag of Kafka's
// DescribeShareGroupOffsets (KIP-1226). It is 0 when the start offset is
// at or past logEnd.
func (p *Partition) Lag(logEnd int64) int64 {
	if logEnd <= p.start {
		return 0
	}
	lag := logEnd - p.start
	for i := range p.records {
		if p.start+int64(i) >= logEnd {
			break
		}
		if p.records[i].state.terminal() {
			lag--
		}
	}
	return lag
}

// State returns the partition's state as the share coordinator would
// store it after every Update so far: the start offset and the state of
// each in-flight record, Acquired written as Available.
func (p *Partition) State() State {
	s := State{StateEpoch: p.stateEpoch, LeaderEpoch: p.leaderEpoch, StartOffset: p.start}
	for i := range p.records {
		r := &p.records[i]
		off := p.start + int64(i)
		s.StateBatches = appendBatch(s.StateBatches, StateBatch{FirstOffset: off, LastOffset: off, DeliveryState: r.persisted(), DeliveryCount: r.count})
	}
	return s
}

// trim moves the start offset past the leading records that are
// Acknowledged or Archived, shrinking the window.
func (p *Partition) trim() {
	k := 0
	for k < len(p.records) && p.records[k].state.terminal() {
		k++
	}
	if k == 0 {
		return
	}
	p.start += int64(k)
	p.records = p.records[k:]
}

// mark marks the record at off changed since the last Update.
func (p *Partition) mark(off int64, r *record) {
	r.dirty = true
	p.dirtyLo = min(p.dirtyLo, off)
	p.dirtyHi = max(p.dirtyHi, off)
}

// clean resets the dirty range to empty.
func (p *Partition) clean() { p.dirtyLo, p.dirtyHi = math.MaxInt64, math.MinInt64 }

// noChange returns the Update of a call that changed nothing.
func (p *Partition) noChange() Update {
	return Update{StateEpoch: p.stateEpoch, LeaderEpoch: p.leaderEpoch, StartOffset: -1}
}

// flush returns the Update for what changed since the last one — the
// dirty records still in flight and the start offset, if it moved — and
// marks everything clean. Dirty records the start offset has passed need
// no batch: the coordinator drops what lies below the start offset.
func (p *Partition) flush() Update {
	u := p.noChange()
	if p.start != p.written {
		u.StartOffset = p.start
		p.written = p.start
	}
	for off := max(p.dirtyLo, p.start); off <= min(p.dirtyHi, p.end()-1); off++ {
		r := p.rec(off)
		if !r.dirty {
			continue
		}
		r.dirty = false
		u.StateBatches = appendBatch(u.StateBatches, StateBatch{FirstOffset: off, LastOffset: off, DeliveryState: r.persisted(), DeliveryCount: r.count})
	}
	p.clean()
	return u
}
