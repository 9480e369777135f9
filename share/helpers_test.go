package share

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// t0 is the time tests start at.
var t0 = time.Unix(1_700_000_000, 0)

// at returns the time d after t0.
func at(d time.Duration) time.Time { return t0.Add(d) }

// newPartition returns a partition restored from state, failing the test
// on an error.
func newPartition(t testing.TB, config Config, state State) *Partition {
	t.Helper()
	p, err := New(config, state)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	checkInvariants(t, p)
	return p
}

// dump renders p's window as runs of records in the same state, held by
// the same member, with the same delivery count:
// "[0,5) 0-2 acquired(a)#1, 3 available#1, 4 archived#1".
func dump(p *Partition) string {
	var b strings.Builder
	fmt.Fprintf(&b, "[%d,%d)", p.start, p.end())
	name := func(r *record) string {
		s := strings.ToLower(r.state.String())
		if r.lock != nil {
			s += "(" + r.lock.member + ")"
		}
		return fmt.Sprintf("%s#%d", s, r.count)
	}
	for i := 0; i < len(p.records); {
		j := i
		for j+1 < len(p.records) && name(&p.records[j+1]) == name(&p.records[i]) {
			j++
		}
		sep := " "
		if i > 0 {
			sep = ", "
		}
		first, last := p.start+int64(i), p.start+int64(j)
		if first == last {
			fmt.Fprintf(&b, "%s%d %s", sep, first, name(&p.records[i]))
		} else {
			fmt.Fprintf(&b, "%s%d-%d %s", sep, first, last, name(&p.records[i]))
		}
		i = j + 1
	}
	return b.String()
}

// acquire calls Acquire, failing the test on an error, and checks the
// partition's invariants after it.
func acquire(t testing.TB, p *Partition, member string, fetchOffset int64, batches []Batch, maxRecords int, now time.Time) ([]AcquiredRecords, Update) {
	t.Helper()
	got, u, err := p.Acquire(member, fetchOffset, batches, maxRecords, now)
	if err != nil {
		t.Fatalf("Acquire(%s, %d, %v, %d): %v", member, fetchOffset, batches, maxRecords, err)
	}
	checkInvariants(t, p)
	return got, u
}

// ack calls Acknowledge, failing the test on an error.
func ack(t testing.TB, p *Partition, member string, now time.Time, batches ...AckBatch) Update {
	t.Helper()
	u, err := p.Acknowledge(member, batches, now)
	if err != nil {
		t.Fatalf("Acknowledge(%s, %v): %v", member, batches, err)
	}
	checkInvariants(t, p)
	return u
}

// ackAll returns a batch acknowledging first to last with one type.
func ackAll(first, last int64, typ AckType) AckBatch {
	return AckBatch{FirstOffset: first, LastOffset: last, AcknowledgeTypes: []AckType{typ}}
}

// batches returns the fetched batches with the given first and last
// offsets: batches(0, 4, 7, 9) is 0-4 and 7-9.
func batches(offsets ...int64) []Batch {
	var bs []Batch
	for i := 0; i+1 < len(offsets); i += 2 {
		bs = append(bs, Batch{FirstOffset: offsets[i], LastOffset: offsets[i+1]})
	}
	return bs
}

// fataler is what checkInvariants needs of a *testing.T or a *rapid.T.
type fataler interface {
	Helper()
	Fatalf(format string, args ...any)
}

// checkInvariants checks what must hold of p between calls.
func checkInvariants(t fataler, p *Partition) {
	t.Helper()
	fail := func(format string, args ...any) {
		t.Helper()
		t.Fatalf("invariant broken: "+format+"\n%s", append(args, dump(p))...)
	}
	if p.start < 0 {
		fail("start offset %d is negative", p.start)
	}
	if p.dirtyLo <= p.dirtyHi {
		fail("records marked dirty between calls: %d-%d", p.dirtyLo, p.dirtyHi)
	}
	if len(p.records) > 0 && p.records[0].state.terminal() {
		fail("the first in-flight record is %v", p.records[0].state)
	}
	if limit := max(p.config.MaxInFlightRecords, maxRestoredSpan); len(p.records) > limit {
		fail("%d records in flight, more than %d", len(p.records), limit)
	}
	held := map[*lock]int{}
	for i := range p.records {
		r := &p.records[i]
		off := p.start + int64(i)
		switch {
		case r.dirty:
			fail("offset %d is dirty between calls", off)
		case !r.state.valid():
			fail("offset %d has state %d", off, r.state)
		case (r.state == Acquired) != (r.lock != nil):
			fail("offset %d is %v with lock %v", off, r.state, r.lock)
		case r.count < 0 || r.state == Acquired && int(r.count) > p.config.DeliveryCountLimit:
			fail("offset %d is %v with delivery count %d", off, r.state, r.count)
		case r.state == Acquired && r.count < 1:
			fail("offset %d is acquired with delivery count %d", off, r.count)
		}
		if r.lock != nil {
			held[r.lock]++
			if off < r.lock.first || off > r.lock.last {
				fail("offset %d lies outside its lock's range %d-%d", off, r.lock.first, r.lock.last)
			}
		}
	}
	seen := map[*lock]bool{}
	for _, l := range p.locks {
		switch {
		case seen[l]:
			fail("lock of %s listed twice", l.member)
		case l.held <= 0:
			fail("lock of %s holds %d records", l.member, l.held)
		case held[l] != l.held:
			fail("lock of %s counts %d records, holds %d", l.member, l.held, held[l])
		}
		seen[l] = true
	}
	for l := range held {
		if !seen[l] {
			fail("lock of %s holds records but is not listed", l.member)
		}
	}
}
