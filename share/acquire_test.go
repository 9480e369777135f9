package share

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/partlog/partlog/kafka"
)

func TestAcquire(t *testing.T) {
	type fetch struct {
		member  string
		batches []Batch
		max     int
		at      time.Duration
	}
	tests := []struct {
		name   string
		config Config
		state  State
		// setup runs before the fetch.
		setup func(t *testing.T, p *Partition)
		// fetch reads from FetchOffset.
		fetch      fetch
		want       []AcquiredRecords
		wantDump   string
		wantUpdate Update
	}{
		{
			name:     "new records",
			fetch:    fetch{member: "a", batches: batches(0, 2, 3, 4), max: 10},
			want:     []AcquiredRecords{{0, 4, 1}},
			wantDump: "[0,5) 0-4 acquired(a)#1",
			wantUpdate: Update{StartOffset: -1, StateBatches: []StateBatch{
				{0, 4, Available, 1},
			}},
		},
		{
			name:     "a share partition starting at the log end",
			state:    State{StartOffset: 42, LeaderEpoch: 3, StateEpoch: 1},
			fetch:    fetch{member: "a", batches: batches(40, 44), max: 10},
			want:     []AcquiredRecords{{42, 44, 1}},
			wantDump: "[42,45) 42-44 acquired(a)#1",
			wantUpdate: Update{StateEpoch: 1, LeaderEpoch: 3, StartOffset: -1, StateBatches: []StateBatch{
				{42, 44, Available, 1},
			}},
		},
		{
			name:     "max records splits a batch",
			fetch:    fetch{member: "a", batches: batches(0, 9), max: 3},
			want:     []AcquiredRecords{{0, 2, 1}},
			wantDump: "[0,3) 0-2 acquired(a)#1",
			wantUpdate: Update{StartOffset: -1, StateBatches: []StateBatch{
				{0, 2, Available, 1},
			}},
		},
		{
			name:       "zero max records acquires nothing",
			fetch:      fetch{member: "a", batches: batches(0, 9), max: 0},
			wantDump:   "[0,0)",
			wantUpdate: Update{StartOffset: -1},
		},
		{
			name:     "max in-flight records",
			config:   Config{MaxInFlightRecords: 4},
			fetch:    fetch{member: "a", batches: batches(0, 9), max: 100},
			want:     []AcquiredRecords{{0, 3, 1}},
			wantDump: "[0,4) 0-3 acquired(a)#1",
			wantUpdate: Update{StartOffset: -1, StateBatches: []StateBatch{
				{0, 3, Available, 1},
			}},
		},
		{
			name:   "max in-flight records still lets released records be acquired",
			config: Config{MaxInFlightRecords: 4},
			setup: func(t *testing.T, p *Partition) {
				acquire(t, p, "a", 0, batches(0, 3), 10, t0)
				ack(t, p, "a", t0, ackAll(1, 2, Release))
			},
			fetch:    fetch{member: "b", batches: batches(0, 9), max: 100},
			want:     []AcquiredRecords{{1, 2, 2}},
			wantDump: "[0,4) 0 acquired(a)#1, 1-2 acquired(b)#2, 3 acquired(a)#1",
			wantUpdate: Update{StartOffset: -1, StateBatches: []StateBatch{
				{1, 2, Available, 2},
			}},
		},
		{
			name: "records another member holds are skipped",
			setup: func(t *testing.T, p *Partition) {
				acquire(t, p, "a", 0, batches(0, 4), 10, t0)
			},
			// The batch holding the fetch offset starts before it.
			fetch:    fetch{member: "b", batches: batches(0, 9), max: 10},
			want:     []AcquiredRecords{{5, 9, 1}},
			wantDump: "[0,10) 0-4 acquired(a)#1, 5-9 acquired(b)#1",
			wantUpdate: Update{StartOffset: -1, StateBatches: []StateBatch{
				{5, 9, Available, 1},
			}},
		},
		{
			name: "acknowledged and archived records are skipped, available ones redelivered",
			setup: func(t *testing.T, p *Partition) {
				acquire(t, p, "a", 0, batches(0, 4), 10, t0)
				ack(t, p, "a", t0, ackAll(1, 1, Accept), ackAll(2, 2, Reject))
			},
			// a's lock on 0, 3 and 4 expires.
			fetch:    fetch{member: "b", batches: batches(0, 4), max: 10, at: 30 * time.Second},
			want:     []AcquiredRecords{{0, 0, 2}, {3, 4, 2}},
			wantDump: "[0,5) 0 acquired(b)#2, 1 acknowledged#1, 2 archived#1, 3-4 acquired(b)#2",
			wantUpdate: Update{StartOffset: -1, StateBatches: []StateBatch{
				{0, 0, Available, 2}, {3, 4, Available, 2},
			}},
		},
		{
			name:     "offsets between batches are archived",
			fetch:    fetch{member: "a", batches: batches(0, 2, 5, 6), max: 10},
			want:     []AcquiredRecords{{0, 2, 1}, {5, 6, 1}},
			wantDump: "[0,7) 0-2 acquired(a)#1, 3-4 archived#0, 5-6 acquired(a)#1",
			wantUpdate: Update{StartOffset: -1, StateBatches: []StateBatch{
				{0, 2, Available, 1}, {3, 4, Archived, 0}, {5, 6, Available, 1},
			}},
		},
		{
			name: "released records the log no longer has are archived",
			setup: func(t *testing.T, p *Partition) {
				acquire(t, p, "a", 0, batches(0, 4), 10, t0)
				ack(t, p, "a", t0, ackAll(0, 4, Release))
			},
			// Compaction removed 0-2.
			fetch:    fetch{member: "b", batches: batches(3, 4), max: 10},
			want:     []AcquiredRecords{{3, 4, 2}},
			wantDump: "[3,5) 3-4 acquired(b)#2",
			wantUpdate: Update{StartOffset: 3, StateBatches: []StateBatch{
				{3, 4, Available, 2},
			}},
		},
		{
			name:     "the start offset jumps a gap when nothing is in flight",
			fetch:    fetch{member: "a", batches: batches(100, 101), max: 10},
			want:     []AcquiredRecords{{100, 101, 1}},
			wantDump: "[100,102) 100-101 acquired(a)#1",
			wantUpdate: Update{StartOffset: 100, StateBatches: []StateBatch{
				{100, 101, Available, 1},
			}},
		},
		{
			name:   "a gap that does not fit in flight stops the fetch",
			config: Config{MaxInFlightRecords: 5},
			setup: func(t *testing.T, p *Partition) {
				acquire(t, p, "a", 0, batches(0, 1), 10, t0)
			},
			fetch:      fetch{member: "b", batches: batches(10, 12), max: 10},
			wantDump:   "[0,2) 0-1 acquired(a)#1",
			wantUpdate: Update{StartOffset: -1},
		},
		{
			name:     "a record at the delivery count limit is archived, not acquired",
			state:    State{StartOffset: 0, StateBatches: []StateBatch{{0, 0, Available, 5}, {1, 1, Available, 4}}},
			fetch:    fetch{member: "a", batches: batches(0, 1), max: 10},
			want:     []AcquiredRecords{{1, 1, 5}},
			wantDump: "[1,2) 1 acquired(a)#5",
			wantUpdate: Update{StartOffset: 1, StateBatches: []StateBatch{
				{1, 1, Available, 5},
			}},
		},
		{
			name:     "batches below the start offset are ignored",
			state:    State{StartOffset: 10},
			fetch:    fetch{member: "a", batches: batches(0, 4, 8, 11), max: 10},
			want:     []AcquiredRecords{{10, 11, 1}},
			wantDump: "[10,12) 10-11 acquired(a)#1",
			wantUpdate: Update{StartOffset: -1, StateBatches: []StateBatch{
				{10, 11, Available, 1},
			}},
		},
		{
			name: "an expired lock is released before acquiring",
			setup: func(t *testing.T, p *Partition) {
				acquire(t, p, "a", 0, batches(0, 1), 10, t0)
			},
			fetch:    fetch{member: "b", batches: batches(0, 3), max: 10, at: time.Minute},
			want:     []AcquiredRecords{{0, 1, 2}, {2, 3, 1}},
			wantDump: "[0,4) 0-1 acquired(b)#2, 2-3 acquired(b)#1",
			wantUpdate: Update{StartOffset: -1, StateBatches: []StateBatch{
				{0, 1, Available, 2}, {2, 3, Available, 1},
			}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := newPartition(t, tt.config, tt.state)
			if tt.setup != nil {
				tt.setup(t, p)
			}
			f := tt.fetch
			got, u := acquire(t, p, f.member, p.FetchOffset(), f.batches, f.max, at(f.at))
			if !slices.Equal(got, tt.want) {
				t.Errorf("acquired %v, want %v", got, tt.want)
			}
			if d := dump(p); d != tt.wantDump {
				t.Errorf("partition:\n got %s\nwant %s", d, tt.wantDump)
			}
			if !equalUpdates(u, tt.wantUpdate) {
				t.Errorf("update %+v, want %+v", u, tt.wantUpdate)
			}
		})
	}
}

func TestAcquireModes(t *testing.T) {
	tests := []struct {
		name   string
		config Config
		// setup runs before the fetch.
		setup   func(t *testing.T, p *Partition)
		batches []Batch
		max     int
		// wantRecordLimit and wantBatchOptimized are what a fetch in
		// each mode acquires.
		wantRecordLimit, wantBatchOptimized []AcquiredRecords
	}{
		{
			name:               "one batch larger than max records",
			batches:            batches(0, 9),
			max:                3,
			wantRecordLimit:    []AcquiredRecords{{0, 2, 1}},
			wantBatchOptimized: []AcquiredRecords{{0, 9, 1}},
		},
		{
			name:               "a batch begun is finished, the next is not begun",
			batches:            batches(0, 1, 2, 4, 5, 9),
			max:                3,
			wantRecordLimit:    []AcquiredRecords{{0, 2, 1}},
			wantBatchOptimized: []AcquiredRecords{{0, 4, 1}},
		},
		{
			name:               "max records on a batch boundary",
			batches:            batches(0, 2, 3, 5),
			max:                3,
			wantRecordLimit:    []AcquiredRecords{{0, 2, 1}},
			wantBatchOptimized: []AcquiredRecords{{0, 2, 1}},
		},
		{
			name:    "zero max records acquires nothing",
			batches: batches(0, 9),
			max:     0,
		},
		{
			name:               "max in-flight records stops both",
			config:             Config{MaxInFlightRecords: 4},
			batches:            batches(0, 9),
			max:                2,
			wantRecordLimit:    []AcquiredRecords{{0, 1, 1}},
			wantBatchOptimized: []AcquiredRecords{{0, 3, 1}},
		},
		{
			name: "released records of a batch, others skipped",
			setup: func(t *testing.T, p *Partition) {
				acquire(t, p, "a", 0, batches(0, 9), 10, t0)
				ack(t, p, "a", t0, ackAll(2, 3, Release), ackAll(6, 7, Release))
			},
			batches:            batches(0, 9),
			max:                3,
			wantRecordLimit:    []AcquiredRecords{{2, 3, 2}, {6, 6, 2}},
			wantBatchOptimized: []AcquiredRecords{{2, 3, 2}, {6, 7, 2}},
		},
	}
	for _, tt := range tests {
		for _, mode := range []AcquireMode{RecordLimit, BatchOptimized} {
			t.Run(tt.name+"/"+mode.String(), func(t *testing.T) {
				p := newPartition(t, tt.config, State{})
				if tt.setup != nil {
					tt.setup(t, p)
				}
				got, _, err := p.AcquireWith("b", p.FetchOffset(), tt.batches, tt.max, mode, t0)
				if err != nil {
					t.Fatal(err)
				}
				checkInvariants(t, p)
				want := tt.wantRecordLimit
				if mode == BatchOptimized {
					want = tt.wantBatchOptimized
				}
				if !slices.Equal(got, want) {
					t.Errorf("acquired %v, want %v\n%s", got, want, dump(p))
				}
			})
		}
	}
}

func TestAcquireModeString(t *testing.T) {
	for m, want := range map[AcquireMode]string{BatchOptimized: "batch_optimized", RecordLimit: "record_limit", 7: "AcquireMode(7)"} {
		if got := m.String(); got != want {
			t.Errorf("%d: %q, want %q", int8(m), got, want)
		}
	}
}

func TestAcquireLocks(t *testing.T) {
	p := newPartition(t, Config{RecordLockDuration: 10 * time.Second}, State{})
	if _, ok := p.NextDeadline(); ok {
		t.Fatal("NextDeadline with nothing acquired")
	}
	acquire(t, p, "a", 0, batches(0, 1), 10, at(0))
	acquire(t, p, "b", p.FetchOffset(), batches(2, 3), 10, at(time.Second))
	if d, ok := p.NextDeadline(); !ok || !d.Equal(at(10*time.Second)) {
		t.Fatalf("NextDeadline = %v, %v; want %v", d, ok, at(10*time.Second))
	}
	// A second before a's deadline nothing expires.
	if u := p.Expire(at(9 * time.Second)); !u.Empty() {
		t.Fatalf("Expire before the deadline: %+v", u)
	}
	u := p.Expire(at(10 * time.Second))
	checkInvariants(t, p)
	if want := (Update{StartOffset: -1, StateBatches: []StateBatch{{0, 1, Available, 1}}}); !equalUpdates(u, want) {
		t.Fatalf("Expire: %+v, want %+v", u, want)
	}
	if d, ok := p.NextDeadline(); !ok || !d.Equal(at(11*time.Second)) {
		t.Fatalf("NextDeadline = %v, %v; want %v", d, ok, at(11*time.Second))
	}
	if got, want := dump(p), "[0,4) 0-1 available#1, 2-3 acquired(b)#1"; got != want {
		t.Fatalf("got %s, want %s", got, want)
	}
}

func TestAcquireErrors(t *testing.T) {
	p := newPartition(t, Config{}, State{StartOffset: 5})
	tests := []struct {
		name        string
		member      string
		fetchOffset int64
		batches     []Batch
		max         int
	}{
		{"empty member id", "", 5, batches(5, 6), 1},
		{"negative max records", "a", 5, batches(5, 6), -1},
		{"fetch offset beyond the end offset", "a", 6, batches(6, 7), 1},
		{"batch ends before it starts", "a", 5, batches(7, 6), 1},
		{"negative offset", "a", 5, batches(-2, 6), 1},
		{"batches out of order", "a", 5, batches(8, 9, 5, 6), 1},
		{"batches overlap", "a", 5, batches(5, 7, 7, 9), 1},
	}
	if _, _, err := p.AcquireWith("a", 5, batches(5, 6), 1, 2, t0); !errors.Is(err, kafka.ErrInvalidRequest) {
		t.Errorf("an unknown acquire mode: err = %v, want INVALID_REQUEST", err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, u, err := p.Acquire(tt.member, tt.fetchOffset, tt.batches, tt.max, t0)
			if !errors.Is(err, kafka.ErrInvalidRequest) {
				t.Fatalf("err = %v, want INVALID_REQUEST", err)
			}
			if got != nil || !u.Empty() {
				t.Fatalf("got %v, %+v on an error", got, u)
			}
			if d := dump(p); d != "[5,5)" {
				t.Fatalf("changed to %s", d)
			}
		})
	}
}

func TestAdvanceStartOffset(t *testing.T) {
	tests := []struct {
		name       string
		logStart   int64
		wantDump   string
		wantUpdate Update
	}{
		{
			name:       "below the start offset",
			logStart:   3,
			wantDump:   "[5,11) 5-6 acquired(a)#1, 7-8 available#1, 9-10 acquired(b)#1",
			wantUpdate: Update{StartOffset: -1},
		},
		{
			name:       "into the window",
			logStart:   6,
			wantDump:   "[6,11) 6 acquired(a)#1, 7-8 available#1, 9-10 acquired(b)#1",
			wantUpdate: Update{StartOffset: 6},
		},
		{
			name:       "past a's records",
			logStart:   8,
			wantDump:   "[8,11) 8 available#1, 9-10 acquired(b)#1",
			wantUpdate: Update{StartOffset: 8},
		},
		{
			name:       "past the end offset",
			logStart:   20,
			wantDump:   "[20,20)",
			wantUpdate: Update{StartOffset: 20},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := newPartition(t, Config{}, State{StartOffset: 5})
			acquire(t, p, "a", 5, batches(5, 8), 10, t0)
			ack(t, p, "a", t0, ackAll(7, 8, Release))
			acquire(t, p, "b", 9, batches(9, 10), 10, t0)
			u := p.AdvanceStartOffset(tt.logStart, t0)
			checkInvariants(t, p)
			if d := dump(p); d != tt.wantDump {
				t.Errorf("partition:\n got %s\nwant %s", d, tt.wantDump)
			}
			if !equalUpdates(u, tt.wantUpdate) {
				t.Errorf("update %+v, want %+v", u, tt.wantUpdate)
			}
			// An acknowledgement of a dropped record is ignored.
			if _, err := p.Acknowledge("a", []AckBatch{ackAll(5, 6, Accept)}, t0); tt.logStart >= 7 && err != nil {
				t.Errorf("acknowledging records below the start offset: %v", err)
			}
		})
	}
}

// equalUpdates reports whether two updates are the same, nil and empty
// batches alike.
func equalUpdates(a, b Update) bool {
	return a.StateEpoch == b.StateEpoch && a.LeaderEpoch == b.LeaderEpoch &&
		a.StartOffset == b.StartOffset && slices.Equal(a.StateBatches, b.StateBatches)
}
