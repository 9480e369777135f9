package share

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/partlog/partlog/kafka"
)

// shareMachine drives a Partition as a broker would, with random members
// fetching from a log that grows, loses its head to retention and has
// holes (compaction, control batches), acknowledging, leaving, letting
// locks expire, and leaders failing over. Next to it runs a model of what
// the partition promised: who holds which record until when, which
// records were accepted, how often each was delivered, and the state the
// share coordinator has from the Updates written.
type shareMachine struct {
	config Config
	p      *Partition
	now    time.Time

	// The log: offsets [logStart, logEnd), less the absent ones.
	logStart, logEnd int64
	absent           map[int64]bool

	// holders are the records acquired and not since acknowledged,
	// released or dropped, with who acquired them and until when. A
	// holding is live until its deadline.
	holders map[int64]holding
	// accepted are the offsets acknowledged with Accept.
	accepted map[int64]bool
	// deliveries count how many times each offset was acquired.
	deliveries map[int64]int
	// written is the coordinator's state: the restored State with every
	// Update applied.
	written State
	// lastStart is the start offset after the previous action.
	lastStart int64
}

type holding struct {
	member   string
	deadline time.Time
}

var members = []string{"a", "b", "c"}

func newShareMachine(t *rapid.T) *shareMachine {
	m := &shareMachine{
		config: Config{
			RecordLockDuration: 10 * time.Second,
			DeliveryCountLimit: rapid.IntRange(1, 4).Draw(t, "deliveryCountLimit"),
			MaxInFlightRecords: rapid.IntRange(1, 40).Draw(t, "maxInFlightRecords"),
		},
		now:        t0,
		absent:     map[int64]bool{},
		holders:    map[int64]holding{},
		accepted:   map[int64]bool{},
		deliveries: map[int64]int{},
	}
	start := rapid.Int64Range(0, 5).Draw(t, "startOffset")
	m.logStart, m.logEnd = start, start
	m.written = State{StateEpoch: 1, StartOffset: start}
	p, err := New(m.config, m.written)
	if err != nil {
		t.Fatal(err)
	}
	m.p, m.lastStart = p, start
	return m
}

// live returns who holds off, if anyone does at now.
func (m *shareMachine) live(off int64) (holding, bool) {
	h, ok := m.holders[off]
	return h, ok && m.now.Before(h.deadline)
}

// write applies u as the share coordinator would.
func (m *shareMachine) write(t *rapid.T, u Update) {
	s, err := m.written.Apply(u)
	if err != nil {
		t.Fatalf("the coordinator refuses %+v: %v", u, err)
	}
	m.written = s
}

// tick moves the clock on by up to max.
func (m *shareMachine) tick(t *rapid.T, max time.Duration) {
	m.now = m.now.Add(time.Duration(rapid.Int64Range(0, int64(max/time.Second)).Draw(t, "tick")) * time.Second)
}

// forget drops the holdings that are no longer live, or below the start
// offset, or whose member matches drop.
func (m *shareMachine) forget(drop func(off int64, h holding) bool) {
	for off, h := range m.holders {
		if !m.now.Before(h.deadline) || off < m.p.StartOffset() || drop(off, h) {
			delete(m.holders, off)
		}
	}
}

// Produce appends records to the log, some of them absent.
func (m *shareMachine) Produce(t *rapid.T) {
	n := rapid.Int64Range(1, 30).Draw(t, "records")
	for range n {
		if rapid.IntRange(0, 5).Draw(t, "hole") == 0 {
			m.absent[m.logEnd] = true
		}
		m.logEnd++
	}
}

// read returns the batches a log read from off returns: the records from
// off, up to n offsets, in batches that end at absent offsets (or span
// them, as a compacted batch does) or split at random. The first batch
// may start before off, as the batch holding off does.
func (m *shareMachine) read(t *rapid.T, off, n int64) []Batch {
	from := off
	if t != nil {
		for k := rapid.Int64Range(0, 3).Draw(t, "batchStartsBefore"); k > 0 && from > m.logStart && !m.absent[from-1]; k-- {
			from--
		}
	}
	var bs []Batch
	open := false
	for o := from; o < min(off+n, m.logEnd); o++ {
		if o < m.logStart {
			continue
		}
		if m.absent[o] && (t == nil || !rapid.Bool().Draw(t, "spanGap")) {
			open = false
			continue
		}
		if open && (t == nil || !rapid.Bool().Draw(t, "split")) {
			bs[len(bs)-1].LastOffset = o
			continue
		}
		bs = append(bs, Batch{FirstOffset: o, LastOffset: o})
		open = true
	}
	return bs
}

// fetch reads the log from FetchOffset and acquires for member in mode,
// checking what it acquires against the model.
func (m *shareMachine) fetch(t *rapid.T, member string, maxRecords int, mode AcquireMode, bs func(fo int64) []Batch) []AcquiredRecords {
	fo := m.p.FetchOffset()
	if fo < m.logStart {
		// The read would be out of range: the broker moves the start.
		m.write(t, m.p.AdvanceStartOffset(m.logStart, m.now))
		m.forget(func(int64, holding) bool { return false })
		fo = m.p.FetchOffset()
	}
	batches := bs(fo)
	got, u, err := m.p.AcquireWith(member, fo, batches, maxRecords, mode, m.now)
	if err != nil {
		t.Fatalf("AcquireWith(%s, %d, %v, %d, %v): %v", member, fo, batches, maxRecords, mode, err)
	}
	var offs []int64
	for _, r := range got {
		for off := r.FirstOffset; off <= r.LastOffset; off++ {
			offs = append(offs, off)
			if !inBatches(batches, off) {
				t.Fatalf("acquired %d, which no batch of %v holds", off, batches)
			}
			if h, ok := m.live(off); ok {
				t.Fatalf("%s acquired %d, which %s holds until %v (now %v)", member, off, h.member, h.deadline, m.now)
			}
			if m.accepted[off] {
				t.Fatalf("%s acquired %d, which was accepted", member, off)
			}
			m.deliveries[off]++
			if c := m.deliveries[off]; c > m.config.DeliveryCountLimit || int16(c) != r.DeliveryCount {
				t.Fatalf("%d delivered %d times (the partition says %d), the limit is %d", off, c, r.DeliveryCount, m.config.DeliveryCountLimit)
			}
			m.holders[off] = holding{member: member, deadline: m.now.Add(m.config.RecordLockDuration)}
		}
	}
	if n := len(offs); n > maxRecords {
		// Only a batch-optimized fetch goes past maxRecords, and only to
		// finish the batch it was in when it reached them.
		if mode == RecordLimit || maxRecords == 0 {
			t.Fatalf("acquired %d records in %v mode, at most %d asked for", n, mode, maxRecords)
		}
		b := batchOf(batches, offs[maxRecords-1])
		if last := offs[n-1]; last > b.LastOffset {
			t.Fatalf("acquired %v in %v mode: past the batch %v holding the %dth, %d", offs, mode, b, maxRecords, offs[maxRecords-1])
		}
	}
	m.write(t, u)
	return got
}

// batchOf returns the batch of batches holding off, which one does.
func batchOf(batches []Batch, off int64) Batch {
	for _, b := range batches {
		if b.FirstOffset <= off && off <= b.LastOffset {
			return b
		}
	}
	panic(fmt.Sprintf("no batch of %v holds %d", batches, off))
}

func inBatches(batches []Batch, off int64) bool {
	for _, b := range batches {
		if b.FirstOffset <= off && off <= b.LastOffset {
			return true
		}
	}
	return false
}

// Fetch is a member's ShareFetch.
func (m *shareMachine) Fetch(t *rapid.T) {
	m.tick(t, 5*time.Second)
	member := rapid.SampledFrom(members).Draw(t, "member")
	maxRecords := rapid.IntRange(0, 25).Draw(t, "maxRecords")
	readLen := rapid.Int64Range(1, 30).Draw(t, "readLen")
	mode := rapid.SampledFrom([]AcquireMode{BatchOptimized, RecordLimit}).Draw(t, "mode")
	m.fetch(t, member, maxRecords, mode, func(fo int64) []Batch { return m.read(t, fo, readLen) })
}

// Acknowledge acknowledges some of what a member holds, renewals among
// the other types — and now and then offsets it does not hold, which must
// fail the whole request.
func (m *shareMachine) Acknowledge(t *rapid.T) { m.acknowledge(t, false) }

// Renew renews the locks of some of what a member holds — and now and
// then of offsets it does not hold, which must fail and change nothing.
func (m *shareMachine) Renew(t *rapid.T) { m.acknowledge(t, true) }

// acknowledge sends a member's acknowledgements, only renewals if
// renewOnly, and checks the outcome against the model: a renewed record
// stays with the member until RecordLockDuration from now.
func (m *shareMachine) acknowledge(t *rapid.T, renewOnly bool) {
	m.tick(t, 5*time.Second)
	member := rapid.SampledFrom(members).Draw(t, "member")
	var held []int64
	for off := m.p.StartOffset(); off < m.p.EndOffset(); off++ {
		if h, ok := m.live(off); ok && h.member == member {
			held = append(held, off)
		}
	}
	lo, hi := m.p.StartOffset()-2, m.p.EndOffset()+2
	if len(held) > 0 && rapid.IntRange(0, 3).Draw(t, "stray") > 0 {
		lo, hi = held[0], held[len(held)-1]
	}
	typ := func() AckType {
		if renewOnly {
			return Renew
		}
		return AckType(rapid.IntRange(0, 4).Draw(t, "type"))
	}
	var batches []AckBatch
	next := lo
	for i := rapid.IntRange(1, 3).Draw(t, "batches"); i > 0 && next <= hi; i-- {
		first := rapid.Int64Range(next, hi).Draw(t, "first")
		last := rapid.Int64Range(first, min(hi, first+8)).Draw(t, "last")
		types := []AckType{typ()}
		if rapid.Bool().Draw(t, "perOffset") {
			types = types[:0]
			for range last - first + 1 {
				types = append(types, typ())
			}
		}
		if first < 0 {
			continue
		}
		batches = append(batches, AckBatch{FirstOffset: first, LastOffset: last, AcknowledgeTypes: types})
		next = last + 1
	}
	ok := true
	for _, b := range batches {
		for off := max(b.FirstOffset, m.p.StartOffset()); off <= b.LastOffset; off++ {
			if h, live := m.live(off); !live || h.member != member {
				ok = false
			}
		}
	}
	before, locks := dump(m.p), lockDeadlines(m.p)
	u, err := m.p.Acknowledge(member, batches, m.now)
	switch {
	case ok && err != nil:
		t.Fatalf("Acknowledge(%s, %v) of records it holds: %v", member, batches, err)
	case !ok && !errors.Is(err, kafka.ErrInvalidRecordState):
		t.Fatalf("Acknowledge(%s, %v) of records it does not hold: err = %v", member, batches, err)
	case !ok:
		if !u.Empty() {
			t.Fatalf("a failed Acknowledge returned %+v", u)
		}
		if after, afterLocks := dump(m.p), lockDeadlines(m.p); after != before || afterLocks != locks {
			t.Fatalf("a failed Acknowledge(%s, %v) changed\n%s (%s) to\n%s (%s)", member, batches, before, locks, after, afterLocks)
		}
		return
	}
	for _, b := range batches {
		for off := max(b.FirstOffset, m.lastStart); off <= b.LastOffset; off++ {
			switch b.typeAt(off) {
			case Renew:
				m.holders[off] = holding{member: member, deadline: m.now.Add(m.config.RecordLockDuration)}
			case Accept:
				m.accepted[off] = true
				delete(m.holders, off)
			default:
				delete(m.holders, off)
			}
		}
	}
	m.write(t, u)
	m.forget(func(int64, holding) bool { return false })
}

// Leave releases what a member holds: it left, or its session closed.
func (m *shareMachine) Leave(t *rapid.T) {
	m.tick(t, 5*time.Second)
	member := rapid.SampledFrom(members).Draw(t, "member")
	m.write(t, m.p.ReleaseMember(member, m.now))
	m.forget(func(_ int64, h holding) bool { return h.member == member })
}

// Expire lets time pass, and locks expire.
func (m *shareMachine) Expire(t *rapid.T) {
	m.tick(t, 15*time.Second)
	m.write(t, m.p.Expire(m.now))
	m.forget(func(int64, holding) bool { return false })
}

// Retain moves the log start offset, as retention does.
func (m *shareMachine) Retain(t *rapid.T) {
	m.logStart = min(m.logEnd, m.logStart+rapid.Int64Range(0, 10).Draw(t, "retained"))
	m.write(t, m.p.AdvanceStartOffset(m.logStart, m.now))
	m.forget(func(int64, holding) bool { return false })
}

// Failover restores the partition on a new leader, from the
// coordinator's state or from the old leader's State: they must be the
// same.
func (m *shareMachine) Failover(t *rapid.T) {
	state := m.p.State()
	if rapid.Bool().Draw(t, "fromWrites") {
		state = m.written
	}
	state.LeaderEpoch++
	// The new leader's read records its epoch at the coordinator.
	m.written.LeaderEpoch = state.LeaderEpoch
	p, err := New(m.config, state)
	if err != nil {
		t.Fatalf("New from %+v: %v", state, err)
	}
	m.p = p
	clear(m.holders)
}

// Check checks the partition against the model after every action.
func (m *shareMachine) Check(t *rapid.T) {
	checkInvariants(t, m.p)
	p := m.p
	if p.StartOffset() < m.lastStart {
		t.Fatalf("the start offset went back from %d to %d", m.lastStart, p.StartOffset())
	}
	m.lastStart = p.StartOffset()
	if s := p.State(); !equalStates(s, m.written) {
		t.Fatalf("the writes give\n%+v\nState gives\n%+v", m.written, s)
	}
	if fo := p.FetchOffset(); fo < p.StartOffset() || fo > p.EndOffset() {
		t.Fatalf("FetchOffset %d outside [%d, %d)", fo, p.StartOffset(), p.EndOffset())
	}
	for off, h := range m.holders {
		if _, ok := m.live(off); !ok {
			continue
		}
		if off < p.start || off >= p.end() {
			t.Fatalf("%s holds %d, outside the window %s", h.member, off, dump(p))
		}
		if r := p.rec(off); r.lock == nil || r.lock.member != h.member {
			t.Fatalf("%s holds %d, which the partition has as %s", h.member, off, dump(p))
		} else if !r.lock.deadline.Equal(h.deadline) {
			t.Fatalf("%s holds %d until %v, the partition says until %v", h.member, off, h.deadline, r.lock.deadline)
		}
	}
	for off := p.start; off < p.end(); off++ {
		r := p.rec(off)
		if r.lock != nil && m.now.Before(r.lock.deadline) {
			if h, ok := m.live(off); !ok || h.member != r.lock.member {
				t.Fatalf("the partition has %d held by %s, the model by %+v", off, r.lock.member, h)
			}
		}
		if int(r.count) != m.deliveries[off] {
			t.Fatalf("%d has delivery count %d, was delivered %d times", off, r.count, m.deliveries[off])
		}
		if m.accepted[off] && r.state != Acknowledged {
			t.Fatalf("%d was accepted, is %v", off, r.state)
		}
	}
}

// drain has a member fetch everything and accept it, with every lock
// expired in between, until the start offset passes the last record of
// the log: everything must end up Acknowledged or Archived.
func (m *shareMachine) drain(t *rapid.T) {
	target := m.p.StartOffset()
	for off := max(m.logStart, target); off < m.logEnd; off++ {
		if !m.absent[off] {
			target = off + 1
		}
	}
	for i := int64(0); m.p.StartOffset() < target; i++ {
		if i > m.logEnd+10 {
			t.Fatalf("after %d fetches the start offset is %d, not past %d: %s", i, m.p.StartOffset(), target, dump(m.p))
		}
		m.now = m.now.Add(m.config.RecordLockDuration)
		got := m.fetch(t, "drain", 1000, BatchOptimized, func(fo int64) []Batch { return m.read(nil, fo, m.logEnd) })
		var acks []AckBatch
		for _, r := range got {
			acks = append(acks, ackAll(r.FirstOffset, r.LastOffset, Accept))
		}
		u, err := m.p.Acknowledge("drain", acks, m.now)
		if err != nil {
			t.Fatalf("accepting %v: %v", got, err)
		}
		m.write(t, u)
		clear(m.holders)
		m.Check(t)
	}
}

func TestPartitionProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		m := newShareMachine(t)
		m.Produce(t)
		// Fetches and acknowledgements are twice as likely as the rest;
		// renewals are acknowledgements too.
		t.Repeat(map[string]func(*rapid.T){
			"Produce":     m.Produce,
			"Fetch":       m.Fetch,
			"FetchMore":   m.Fetch,
			"Acknowledge": m.Acknowledge,
			"AckMore":     m.Acknowledge,
			"Renew":       m.Renew,
			"Leave":       m.Leave,
			"Expire":      m.Expire,
			"Retain":      m.Retain,
			"Failover":    m.Failover,
			"":            m.Check,
		})
		m.drain(t)
	})
}

// String renders the machine for rapid's failure reports.
func (m *shareMachine) String() string {
	return fmt.Sprintf("log [%d,%d) partition %s", m.logStart, m.logEnd, dump(m.p))
}
