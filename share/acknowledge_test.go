package share

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/partlog/partlog/kafka"
)

// acquired0to4 returns a partition where member a holds 0-4 (delivery
// count 1) and member b holds 5-6, both locked until t0+30s.
func acquired0to4(t *testing.T, config Config) *Partition {
	p := newPartition(t, config, State{})
	acquire(t, p, "a", 0, batches(0, 4), 10, t0)
	acquire(t, p, "b", 5, batches(5, 6), 10, t0)
	return p
}

func TestAcknowledge(t *testing.T) {
	tests := []struct {
		name       string
		acks       []AckBatch
		at         time.Duration
		wantDump   string
		wantUpdate Update
	}{
		{
			name:     "accept all",
			acks:     []AckBatch{ackAll(0, 4, Accept)},
			wantDump: "[5,7) 5-6 acquired(b)#1",
			// The accepted records are below the new start offset: the
			// start offset alone says they are done with.
			wantUpdate: Update{StartOffset: 5},
		},
		{
			name:     "one type per offset",
			acks:     []AckBatch{{0, 4, []AckType{Accept, Release, Reject, Gap, Accept}}},
			wantDump: "[1,7) 1 available#1, 2-3 archived#1, 4 acknowledged#1, 5-6 acquired(b)#1",
			wantUpdate: Update{StartOffset: 1, StateBatches: []StateBatch{
				{1, 1, Available, 1}, {2, 3, Archived, 1}, {4, 4, Acknowledged, 1},
			}},
		},
		{
			name:     "several batches",
			acks:     []AckBatch{ackAll(1, 1, Reject), ackAll(3, 4, Accept)},
			wantDump: "[0,7) 0 acquired(a)#1, 1 archived#1, 2 acquired(a)#1, 3-4 acknowledged#1, 5-6 acquired(b)#1",
			wantUpdate: Update{StartOffset: -1, StateBatches: []StateBatch{
				{1, 1, Archived, 1}, {3, 4, Acknowledged, 1},
			}},
		},
		{
			name:     "release",
			acks:     []AckBatch{ackAll(0, 4, Release)},
			wantDump: "[0,7) 0-4 available#1, 5-6 acquired(b)#1",
			wantUpdate: Update{StartOffset: -1, StateBatches: []StateBatch{
				{0, 4, Available, 1},
			}},
		},
		{
			name:       "just before the lock expires",
			acks:       []AckBatch{ackAll(0, 4, Accept)},
			at:         30*time.Second - time.Nanosecond,
			wantDump:   "[5,7) 5-6 acquired(b)#1",
			wantUpdate: Update{StartOffset: 5},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := acquired0to4(t, Config{})
			u := ack(t, p, "a", at(tt.at), tt.acks...)
			if d := dump(p); d != tt.wantDump {
				t.Errorf("partition:\n got %s\nwant %s", d, tt.wantDump)
			}
			if !equalUpdates(u, tt.wantUpdate) {
				t.Errorf("update %+v, want %+v", u, tt.wantUpdate)
			}
		})
	}
}

func TestAcknowledgeReleaseAtTheLimit(t *testing.T) {
	p := newPartition(t, Config{DeliveryCountLimit: 2}, State{})
	acquire(t, p, "a", 0, batches(0, 1), 10, t0)
	ack(t, p, "a", t0, ackAll(0, 1, Release))
	got, _ := acquire(t, p, "b", p.FetchOffset(), batches(0, 1), 10, t0)
	if want := []AcquiredRecords{{0, 1, 2}}; len(got) != 1 || got[0] != want[0] {
		t.Fatalf("second delivery: %v, want %v", got, want)
	}
	// The second release is the last: the records were delivered twice.
	u := ack(t, p, "b", t0, ackAll(0, 0, Release))
	if want := (Update{StartOffset: 1}); !equalUpdates(u, want) {
		t.Fatalf("update %+v, want %+v", u, want)
	}
	// So is the lock expiring.
	u = p.Expire(at(time.Minute))
	checkInvariants(t, p)
	if want := (Update{StartOffset: 2}); !equalUpdates(u, want) {
		t.Fatalf("update %+v, want %+v", u, want)
	}
	if d := dump(p); d != "[2,2)" {
		t.Fatalf("got %s", d)
	}
}

func TestAcknowledgeErrors(t *testing.T) {
	tests := []struct {
		name    string
		member  string
		acks    []AckBatch
		at      time.Duration
		wantErr error
	}{
		{"another member's records", "b", []AckBatch{ackAll(0, 0, Accept)}, 0, kafka.ErrInvalidRecordState},
		{"an unknown member", "c", []AckBatch{ackAll(5, 6, Accept)}, 0, kafka.ErrInvalidRecordState},
		{"a valid batch and one of another member's", "a", []AckBatch{ackAll(0, 1, Accept), ackAll(4, 5, Accept)}, 0, kafka.ErrInvalidRecordState},
		{"records never acquired", "b", []AckBatch{ackAll(5, 7, Accept)}, 0, kafka.ErrInvalidRecordState},
		{"a record already acknowledged", "a", []AckBatch{ackAll(2, 2, Accept)}, 0, kafka.ErrInvalidRecordState},
		{"an expired lock", "a", []AckBatch{ackAll(0, 0, Accept)}, 30 * time.Second, kafka.ErrInvalidRecordState},
		{"too few types", "a", []AckBatch{{0, 2, []AckType{Accept, Accept}}}, 0, kafka.ErrInvalidRequest},
		{"no types", "a", []AckBatch{{0, 0, nil}}, 0, kafka.ErrInvalidRequest},
		{"an unknown type", "a", []AckBatch{ackAll(0, 0, 5)}, 0, kafka.ErrInvalidRequest},
		{"a renewal of another member's records", "b", []AckBatch{ackAll(0, 0, Renew)}, 0, kafka.ErrInvalidRecordState},
		{"a renewal of records never acquired", "b", []AckBatch{ackAll(5, 7, Renew)}, 0, kafka.ErrInvalidRecordState},
		{"a renewal of a record already acknowledged", "a", []AckBatch{ackAll(2, 2, Renew)}, 0, kafka.ErrInvalidRecordState},
		{"a renewal after the lock expired", "a", []AckBatch{ackAll(0, 0, Renew)}, 30 * time.Second, kafka.ErrInvalidRecordState},
		{"a valid acceptance with an invalid renewal", "a", []AckBatch{ackAll(0, 1, Accept), ackAll(4, 5, Renew)}, 0, kafka.ErrInvalidRecordState},
		{"a valid renewal with an invalid acceptance", "a", []AckBatch{{0, 2, []AckType{Renew, Renew, Accept}}}, 0, kafka.ErrInvalidRecordState},
		{"a range ending before it starts", "a", []AckBatch{ackAll(1, 0, Accept)}, 0, kafka.ErrInvalidRequest},
		{"overlapping batches", "a", []AckBatch{ackAll(0, 1, Accept), ackAll(1, 1, Accept)}, 0, kafka.ErrInvalidRequest},
		{"batches out of order", "a", []AckBatch{ackAll(3, 3, Accept), ackAll(0, 0, Accept)}, 0, kafka.ErrInvalidRequest},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := acquired0to4(t, Config{})
			ack(t, p, "a", t0, ackAll(2, 2, Accept))
			before, deadlines := dump(p), lockDeadlines(p)
			u, err := p.Acknowledge(tt.member, tt.acks, at(tt.at))
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			if !u.Empty() {
				t.Fatalf("update %+v on an error", u)
			}
			checkInvariants(t, p)
			if d := dump(p); d != before {
				t.Fatalf("changed on an error:\n got %s\nwant %s", d, before)
			}
			if d := lockDeadlines(p); d != deadlines {
				t.Fatalf("locks changed on an error:\n got %s\nwant %s", d, deadlines)
			}
		})
	}
}

// lockDeadlines renders the lock of each acquired offset as the seconds
// after t0 it expires at, with the number of locks: "3 locks: 0:30 1:40".
func lockDeadlines(p *Partition) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d locks:", len(p.locks))
	for i := range p.records {
		if l := p.records[i].lock; l != nil {
			fmt.Fprintf(&b, " %d:%d", p.start+int64(i), int(l.deadline.Sub(t0)/time.Second))
		}
	}
	return b.String()
}

func TestAcknowledgeRenew(t *testing.T) {
	tests := []struct {
		name string
		acks []AckBatch
		// at is when the acknowledgements are sent.
		at            time.Duration
		wantDump      string
		wantDeadlines string
		wantUpdate    Update
	}{
		{
			name:          "all of an acquisition",
			acks:          []AckBatch{ackAll(0, 4, Renew)},
			at:            10 * time.Second,
			wantDump:      "[0,7) 0-4 acquired(a)#1, 5-6 acquired(b)#1",
			wantDeadlines: "2 locks: 0:40 1:40 2:40 3:40 4:40 5:30 6:30",
			// Nothing is written for a renewal.
			wantUpdate: Update{StartOffset: -1},
		},
		{
			name:          "part of an acquisition splits its lock",
			acks:          []AckBatch{ackAll(1, 2, Renew)},
			at:            10 * time.Second,
			wantDump:      "[0,7) 0-4 acquired(a)#1, 5-6 acquired(b)#1",
			wantDeadlines: "3 locks: 0:30 1:40 2:40 3:30 4:30 5:30 6:30",
			wantUpdate:    Update{StartOffset: -1},
		},
		{
			name:          "renewals in several batches share one lock",
			acks:          []AckBatch{ackAll(0, 0, Renew), ackAll(3, 4, Renew)},
			at:            20 * time.Second,
			wantDump:      "[0,7) 0-4 acquired(a)#1, 5-6 acquired(b)#1",
			wantDeadlines: "3 locks: 0:50 1:30 2:30 3:50 4:50 5:30 6:30",
			wantUpdate:    Update{StartOffset: -1},
		},
		{
			name:          "mixed with the other types in one batch",
			acks:          []AckBatch{{0, 4, []AckType{Accept, Renew, Release, Renew, Reject}}},
			at:            5 * time.Second,
			wantDump:      "[1,7) 1 acquired(a)#1, 2 available#1, 3 acquired(a)#1, 4 archived#1, 5-6 acquired(b)#1",
			wantDeadlines: "2 locks: 1:35 3:35 5:30 6:30",
			wantUpdate: Update{StartOffset: 1, StateBatches: []StateBatch{
				{2, 2, Available, 1}, {4, 4, Archived, 1},
			}},
		},
		{
			name:          "mixed with the other types across batches",
			acks:          []AckBatch{ackAll(0, 1, Accept), ackAll(2, 2, Renew), ackAll(4, 4, Release)},
			at:            5 * time.Second,
			wantDump:      "[2,7) 2-3 acquired(a)#1, 4 available#1, 5-6 acquired(b)#1",
			wantDeadlines: "3 locks: 2:35 3:30 5:30 6:30",
			wantUpdate: Update{StartOffset: 2, StateBatches: []StateBatch{
				{4, 4, Available, 1},
			}},
		},
		{
			name:          "just before the lock expires",
			acks:          []AckBatch{ackAll(0, 4, Renew)},
			at:            30*time.Second - time.Nanosecond,
			wantDump:      "[0,7) 0-4 acquired(a)#1, 5-6 acquired(b)#1",
			wantDeadlines: "2 locks: 0:59 1:59 2:59 3:59 4:59 5:30 6:30",
			wantUpdate:    Update{StartOffset: -1},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := acquired0to4(t, Config{})
			u := ack(t, p, "a", at(tt.at), tt.acks...)
			if d := dump(p); d != tt.wantDump {
				t.Errorf("partition:\n got %s\nwant %s", d, tt.wantDump)
			}
			// "just before the lock expires" renews at 29.999…s, which
			// lockDeadlines rounds down.
			if d := lockDeadlines(p); d != tt.wantDeadlines {
				t.Errorf("locks:\n got %s\nwant %s", d, tt.wantDeadlines)
			}
			if !equalUpdates(u, tt.wantUpdate) {
				t.Errorf("update %+v, want %+v", u, tt.wantUpdate)
			}
		})
	}
}

func TestAcknowledgeRenewHoldsPastTheOldDeadline(t *testing.T) {
	p := acquired0to4(t, Config{})
	// a renews 1-2 at 20s: they are held until 50s, the rest of its
	// acquisition until 30s.
	ack(t, p, "a", at(20*time.Second), ackAll(1, 2, Renew))
	if d, _ := p.NextDeadline(); !d.Equal(at(30 * time.Second)) {
		t.Fatalf("NextDeadline = %v, want t0+30s", d)
	}
	u := p.Expire(at(30 * time.Second))
	checkInvariants(t, p)
	if want := (Update{StartOffset: -1, StateBatches: []StateBatch{{0, 0, Available, 1}, {3, 6, Available, 1}}}); !equalUpdates(u, want) {
		t.Fatalf("Expire at 30s: %+v, want %+v", u, want)
	}
	if d, _ := p.NextDeadline(); !d.Equal(at(50 * time.Second)) {
		t.Fatalf("NextDeadline = %v, want t0+50s", d)
	}
	// Another member fetching at 40s does not get them.
	got, _ := acquire(t, p, "b", p.FetchOffset(), batches(0, 6), 10, at(40*time.Second))
	if want := []AcquiredRecords{{0, 0, 2}, {3, 6, 2}}; !slices.Equal(got, want) {
		t.Fatalf("b acquired %v, want %v", got, want)
	}
	// a renews again, then accepts after its first renewal's deadline.
	ack(t, p, "a", at(45*time.Second), ackAll(1, 2, Renew))
	ack(t, p, "a", at(70*time.Second), ackAll(1, 2, Accept))
	if got, want := dump(p), "[0,7) 0 available#2, 1-2 acknowledged#1, 3-6 available#2"; got != want {
		t.Fatalf("got %s\nwant %s", got, want)
	}
	// Once the renewed lock runs out, a renewal fails like any other
	// acknowledgement.
	acquire(t, p, "a", p.FetchOffset(), batches(0, 0), 10, at(70*time.Second))
	if _, err := p.Acknowledge("a", []AckBatch{ackAll(0, 0, Renew)}, at(100*time.Second)); !errors.Is(err, kafka.ErrInvalidRecordState) {
		t.Fatalf("renewing an expired lock: err = %v", err)
	}
}

func TestAckTypeString(t *testing.T) {
	for typ, want := range map[AckType]string{Gap: "GAP", Accept: "ACCEPT", Release: "RELEASE", Reject: "REJECT", Renew: "RENEW", 9: "AckType(9)"} {
		if got := typ.String(); got != want {
			t.Errorf("%d: %q, want %q", int8(typ), got, want)
		}
	}
}

func TestAcknowledgeBelowStartOffset(t *testing.T) {
	p := acquired0to4(t, Config{})
	ack(t, p, "a", t0, ackAll(0, 1, Accept))
	// 0-1 are done with; acknowledging them again is not an error.
	u := ack(t, p, "a", t0, ackAll(0, 2, Accept))
	if want := (Update{StartOffset: 3}); !equalUpdates(u, want) {
		t.Fatalf("update %+v, want %+v", u, want)
	}
}

func TestReleaseMember(t *testing.T) {
	p := acquired0to4(t, Config{DeliveryCountLimit: 2})
	ack(t, p, "a", t0, ackAll(1, 1, Accept))
	// b's records go at their second delivery; a keeps its own.
	ack(t, p, "b", t0, ackAll(5, 5, Release))
	acquire(t, p, "b", 5, batches(5, 5), 10, t0)
	u := p.ReleaseMember("b", at(time.Second))
	checkInvariants(t, p)
	want := Update{StartOffset: -1, StateBatches: []StateBatch{{5, 5, Archived, 2}, {6, 6, Available, 1}}}
	if !equalUpdates(u, want) {
		t.Fatalf("update %+v, want %+v", u, want)
	}
	if got, want := dump(p), "[0,7) 0 acquired(a)#1, 1 acknowledged#1, 2-4 acquired(a)#1, 5 archived#2, 6 available#1"; got != want {
		t.Fatalf("got %s\nwant %s", got, want)
	}
	if u := p.ReleaseMember("nobody", at(time.Second)); !u.Empty() {
		t.Fatalf("releasing an unknown member: %+v", u)
	}
	// a's session closes: everything is available again.
	u = p.ReleaseMember("a", at(time.Second))
	checkInvariants(t, p)
	if got, want := dump(p), "[0,7) 0 available#1, 1 acknowledged#1, 2-4 available#1, 5 archived#2, 6 available#1"; got != want {
		t.Fatalf("got %s\nwant %s", got, want)
	}
	if _, ok := p.NextDeadline(); ok {
		t.Fatal("a lock is left")
	}
	if p.FetchOffset() != 0 {
		t.Fatalf("FetchOffset = %d, want 0", p.FetchOffset())
	}
}
