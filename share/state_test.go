package share

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/partlog/partlog/kafka"
)

func TestNew(t *testing.T) {
	tests := []struct {
		name     string
		state    State
		wantDump string
		// wantFirst is the update of the first call after New.
		wantFirst Update
	}{
		{
			name:      "never consumed",
			state:     State{StartOffset: 7},
			wantDump:  "[7,7)",
			wantFirst: Update{StartOffset: -1},
		},
		{
			name: "acquired records come back available",
			state: State{StartOffset: 3, StateBatches: []StateBatch{
				{3, 4, Acquired, 2}, {5, 5, Acknowledged, 1}, {6, 7, Available, 1}, {8, 8, Archived, 5},
			}},
			wantDump:  "[3,9) 3-4 available#2, 5 acknowledged#1, 6-7 available#1, 8 archived#5",
			wantFirst: Update{StartOffset: -1},
		},
		{
			name: "offsets no batch covers were never delivered",
			state: State{StartOffset: 3, StateBatches: []StateBatch{
				{5, 5, Acknowledged, 1}, {8, 8, Available, 3},
			}},
			wantDump:  "[3,9) 3-4 available#0, 5 acknowledged#1, 6-7 available#0, 8 available#3",
			wantFirst: Update{StartOffset: -1},
		},
		{
			name: "leading records done with move the start offset, written at the next call",
			state: State{StartOffset: 3, StateBatches: []StateBatch{
				{3, 4, Acknowledged, 1}, {5, 5, Archived, 0}, {6, 6, Available, 1},
			}},
			wantDump:  "[6,7) 6 available#1",
			wantFirst: Update{StartOffset: 6},
		},
		{
			name:      "everything done with",
			state:     State{StartOffset: 3, StateBatches: []StateBatch{{3, 4, Acknowledged, 1}}},
			wantDump:  "[5,5)",
			wantFirst: Update{StartOffset: 5},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := newPartition(t, Config{}, tt.state)
			if d := dump(p); d != tt.wantDump {
				t.Errorf("partition:\n got %s\nwant %s", d, tt.wantDump)
			}
			if u := p.Expire(t0); !equalUpdates(u, tt.wantFirst) {
				t.Errorf("first update %+v, want %+v", u, tt.wantFirst)
			}
		})
	}
}

func TestNewErrors(t *testing.T) {
	tests := []struct {
		name    string
		config  Config
		state   State
		wantErr error
	}{
		{"negative start offset", Config{}, State{StartOffset: -1}, ErrInvalidState},
		{"batch below the start offset", Config{}, State{StartOffset: 5, StateBatches: []StateBatch{{4, 6, Available, 1}}}, ErrInvalidState},
		{"batch ending before it starts", Config{}, State{StateBatches: []StateBatch{{4, 3, Available, 1}}}, ErrInvalidState},
		{"overlapping batches", Config{}, State{StateBatches: []StateBatch{{0, 3, Available, 1}, {3, 4, Archived, 1}}}, ErrInvalidState},
		{"batches out of order", Config{}, State{StateBatches: []StateBatch{{5, 6, Available, 1}, {0, 1, Archived, 1}}}, ErrInvalidState},
		{"unknown state", Config{}, State{StateBatches: []StateBatch{{0, 1, 3, 1}}}, ErrInvalidState},
		{"negative delivery count", Config{}, State{StateBatches: []StateBatch{{0, 1, Available, -1}}}, ErrInvalidState},
		{"too wide", Config{}, State{StateBatches: []StateBatch{{0, 0, Available, 1}, {10000, 10000, Available, 1}}}, ErrInvalidState},
		{"negative lock duration", Config{RecordLockDuration: -time.Second}, State{}, ErrInvalidConfig},
		{"negative delivery count limit", Config{DeliveryCountLimit: -1}, State{}, ErrInvalidConfig},
		{"delivery count limit too high", Config{DeliveryCountLimit: 1 << 15}, State{}, ErrInvalidConfig},
		{"negative max in-flight records", Config{MaxInFlightRecords: -1}, State{}, ErrInvalidConfig},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := New(tt.config, tt.state); !errors.Is(err, tt.wantErr) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
		})
	}
	// The widest state restored: 10000 offsets, though more than
	// MaxInFlightRecords.
	if _, err := New(Config{}, State{StateBatches: []StateBatch{{0, 0, Available, 1}, {9999, 9999, Available, 1}}}); err != nil {
		t.Fatalf("restoring 10000 offsets: %v", err)
	}
}

func TestStateApply(t *testing.T) {
	base := State{StateEpoch: 2, LeaderEpoch: 5, StartOffset: 10, StateBatches: []StateBatch{
		{10, 14, Available, 1}, {15, 19, Acknowledged, 1}, {20, 20, Archived, 3},
	}}
	tests := []struct {
		name string
		u    Update
		want State
	}{
		{
			name: "nothing",
			u:    Update{StateEpoch: 2, LeaderEpoch: 5, StartOffset: -1},
			want: base,
		},
		{
			name: "a batch inside another splits it",
			u:    Update{StateEpoch: 2, LeaderEpoch: 5, StartOffset: -1, StateBatches: []StateBatch{{12, 12, Archived, 1}}},
			want: State{StateEpoch: 2, LeaderEpoch: 5, StartOffset: 10, StateBatches: []StateBatch{
				{10, 11, Available, 1}, {12, 12, Archived, 1}, {13, 14, Available, 1}, {15, 19, Acknowledged, 1}, {20, 20, Archived, 3},
			}},
		},
		{
			name: "batches across others, merged with their neighbours",
			u: Update{StateEpoch: 2, LeaderEpoch: 6, StartOffset: -1, StateBatches: []StateBatch{
				{13, 16, Acknowledged, 1}, {19, 22, Available, 1},
			}},
			want: State{StateEpoch: 2, LeaderEpoch: 6, StartOffset: 10, StateBatches: []StateBatch{
				{10, 12, Available, 1}, {13, 18, Acknowledged, 1}, {19, 22, Available, 1},
			}},
		},
		{
			name: "the start offset moves and prunes",
			u:    Update{StateEpoch: 2, LeaderEpoch: 5, StartOffset: 17, StateBatches: []StateBatch{{12, 12, Archived, 1}, {21, 21, Available, 1}}},
			want: State{StateEpoch: 2, LeaderEpoch: 5, StartOffset: 17, StateBatches: []StateBatch{
				{17, 19, Acknowledged, 1}, {20, 20, Archived, 3}, {21, 21, Available, 1},
			}},
		},
		{
			name: "the start offset moves past everything",
			u:    Update{StateEpoch: 2, LeaderEpoch: 5, StartOffset: 30},
			want: State{StateEpoch: 2, LeaderEpoch: 5, StartOffset: 30},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := slices.Clone(base.StateBatches)
			got, err := base.Apply(tt.u)
			if err != nil {
				t.Fatal(err)
			}
			if !equalStates(got, tt.want) {
				t.Fatalf("got %+v\nwant %+v", got, tt.want)
			}
			if !slices.Equal(base.StateBatches, before) {
				t.Fatalf("Apply modified the state: %v", base.StateBatches)
			}
		})
	}

	fenced := []struct {
		name    string
		u       Update
		wantErr error
	}{
		{"old leader epoch", Update{StateEpoch: 2, LeaderEpoch: 4, StartOffset: -1}, kafka.ErrFencedLeaderEpoch},
		{"old state epoch", Update{StateEpoch: 1, LeaderEpoch: 5, StartOffset: -1}, kafka.ErrFencedStateEpoch},
		{"overlapping batches", Update{StateEpoch: 2, LeaderEpoch: 5, StartOffset: -1, StateBatches: []StateBatch{{1, 3, Archived, 1}, {3, 4, Archived, 1}}}, ErrInvalidState},
	}
	for _, tt := range fenced {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := base.Apply(tt.u); !errors.Is(err, tt.wantErr) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
		})
	}
}

func TestDescribe(t *testing.T) {
	p := acquired0to4(t, Config{MaxInFlightRecords: 8})
	ack(t, p, "a", t0, ackAll(1, 1, Accept), ackAll(2, 2, Release), ackAll(3, 3, Reject))
	got := p.Describe()
	want := Summary{StartOffset: 0, EndOffset: 7, Available: 1, Acquired: 4, Acknowledged: 1, Archived: 1, Locks: 2}
	if got != want {
		t.Fatalf("Describe = %+v, want %+v", got, want)
	}
	for _, tt := range []struct{ logEnd, want int64 }{{0, 0}, {3, 2}, {7, 5}, {10, 8}} {
		if got := p.Lag(tt.logEnd); got != tt.want {
			t.Errorf("Lag(%d) = %d, want %d", tt.logEnd, got, tt.want)
		}
	}
	if p.FetchOffset() != 2 || !p.CanAcquire() {
		t.Fatalf("FetchOffset = %d, CanAcquire = %v; want 2, true", p.FetchOffset(), p.CanAcquire())
	}
	acquire(t, p, "c", 2, batches(0, 9), 10, t0)
	if p.FetchOffset() != 8 || p.CanAcquire() {
		t.Fatalf("at the in-flight limit: FetchOffset = %d, CanAcquire = %v; want 8, false", p.FetchOffset(), p.CanAcquire())
	}
}

// equalStates reports whether two states are the same, nil and empty
// batches alike.
func equalStates(a, b State) bool {
	return a.StateEpoch == b.StateEpoch && a.LeaderEpoch == b.LeaderEpoch &&
		a.StartOffset == b.StartOffset && slices.Equal(a.StateBatches, b.StateBatches)
}
