package replica

import (
	"testing"

	"github.com/partlog/partlog/kafka"
)

func TestHighWatermarkMath(t *testing.T) {
	leos := map[int32]int64{1: 10, 2: 7, 3: 12, 4: -1}
	for _, tc := range []struct {
		name      string
		isr       []int32
		committed int
		minISR    int
		hw        int64
		ok        bool
	}{
		{"smallest LEO of the ISR", []int32{1, 2, 3}, 3, 2, 7, true},
		{"only the ISR counts", []int32{1, 3}, 2, 2, 10, true},
		{"strict min ISR", []int32{1}, 1, 2, 0, false},
		{"maximal ISR larger than committed", []int32{1, 3}, 1, 2, 0, false},
		{"unknown follower LEO", []int32{1, 4}, 2, 1, 0, false},
		{"member without a view", []int32{1, 9}, 2, 1, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hw, ok := highWatermark(tc.isr, tc.committed, tc.minISR, func(id int32) (int64, bool) { v, ok := leos[id]; return v, ok })
			if hw != tc.hw || ok != tc.ok {
				t.Fatalf("highWatermark = %d, %v; want %d, %v", hw, ok, tc.hw, tc.ok)
			}
		})
	}
}

// Kafka's lastCaughtUpTime: a fetch at the leader's end is caught up now;
// one at the leader's end as of the previous fetch was caught up then;
// anything else leaves it.
func TestCaughtUpTime(t *testing.T) {
	for _, tc := range []struct {
		name                                                   string
		last, fetchOffset, leaderLEO, prevLeaderLEO, prevFetch int64
		want                                                   int64
	}{
		{"at the end", 3, 50, 50, 40, 8, 10},
		{"at the previous end", 3, 40, 50, 40, 8, 8},
		{"behind both", 3, 39, 50, 40, 8, 3},
		{"first fetch behind", 3, 39, 50, -1, 0, 3},
		{"never moves back", 9, 40, 50, 40, 8, 9},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := caughtUpTime(tc.last, tc.fetchOffset, tc.leaderLEO, tc.prevLeaderLEO, tc.prevFetch, 10); got != tc.want {
				t.Fatalf("caughtUpTime = %d, want %d", got, tc.want)
			}
		})
	}
	if !isCaughtUp(50, 50, 0, 1000, 30) {
		t.Fatalf("a follower at the leader's end is in sync however long ago it last fetched behind")
	}
	if isCaughtUp(49, 50, 0, 31, 30) || !isCaughtUp(49, 50, 1, 31, 30) {
		t.Fatalf("the lag limit is time since last caught up, inclusive")
	}
}

// fakeEpochs is a Storage with only an epoch cache, answering as log does.
type fakeEpochs struct {
	entries []struct {
		epoch int32
		start int64
	}
	leo int64
}

func (f *fakeEpochs) LogStartOffset() int64 { return 0 }
func (f *fakeEpochs) LogEndOffset() int64   { return f.leo }
func (f *fakeEpochs) Read(dst []byte, offset, maxOffset int64, maxBytes int) ([]byte, error) {
	return dst, nil
}
func (f *fakeEpochs) LatestEpoch() int32 {
	if len(f.entries) == 0 {
		return kafka.UndefinedEpoch
	}
	return f.entries[len(f.entries)-1].epoch
}
func (f *fakeEpochs) EndOffsetForEpoch(epoch int32) (int32, int64) {
	n := len(f.entries)
	switch {
	case n == 0 || epoch == kafka.UndefinedEpoch || epoch > f.entries[n-1].epoch:
		return kafka.UndefinedEpoch, -1
	case epoch == f.entries[n-1].epoch:
		return epoch, f.leo
	}
	i := 0
	for f.entries[i].epoch <= epoch {
		i++
	}
	if i == 0 {
		return epoch, f.entries[0].start
	}
	return f.entries[i-1].epoch, f.entries[i].start
}

func epochs(leo int64, pairs ...int64) *fakeEpochs {
	f := &fakeEpochs{leo: leo}
	for i := 0; i < len(pairs); i += 2 {
		f.entries = append(f.entries, struct {
			epoch int32
			start int64
		}{int32(pairs[i]), pairs[i+1]})
	}
	return f
}

// A new leader answers for its own epoch from where it began, before it
// writes there (KIP-279's assign on becoming leader).
func TestLeaderEpochEndOffset(t *testing.T) {
	for _, tc := range []struct {
		name    string
		s       *fakeEpochs
		ask     int32
		current int32
		start   int64
		epoch   int32
		end     int64
	}{
		{"own epoch", epochs(20, 0, 0, 3, 10), 3, 3, 10, 3, 20},
		{"older epoch, cache has current", epochs(20, 0, 0, 3, 10), 1, 3, 10, 0, 10},
		{"previous epoch, nothing written yet", epochs(15, 0, 0, 2, 10), 2, 5, 15, 2, 15},
		{"follower epoch the leader never had", epochs(15, 0, 0, 2, 10), 4, 5, 15, 2, 15},
		{"epoch between known ones", epochs(15, 0, 0, 2, 10), 1, 5, 15, 0, 10},
		{"empty cache", epochs(0), 2, 5, 0, 2, 0},
		{"future epoch", epochs(15, 0, 0), 6, 5, 15, kafka.UndefinedEpoch, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			epoch, end := leaderEpochEndOffset(tc.s, tc.ask, tc.current, tc.start, tc.s.leo)
			if epoch != tc.epoch || end != tc.end {
				t.Fatalf("leaderEpochEndOffset(%d) = %d@%d, want %d@%d", tc.ask, epoch, end, tc.epoch, tc.end)
			}
		})
	}
}

// The follower truncates to the smaller of the leader's end and its own end
// for the diverging epoch — never to its high watermark, unless the leader
// knows no end at all.
func TestFollowerTruncationOffset(t *testing.T) {
	for _, tc := range []struct {
		name string
		s    *fakeEpochs
		d    kafka.EpochEndOffset
		hw   int64
		want int64
	}{
		{"leader's end is smaller", epochs(10, 0, 0), kafka.EpochEndOffset{LeaderEpoch: 0, EndOffset: 5}, 8, 5},
		{"own end is smaller", epochs(20, 0, 0, 2, 7), kafka.EpochEndOffset{LeaderEpoch: 0, EndOffset: 9}, 3, 7},
		{"follower lacks the epoch: own end below it, compare again", epochs(20, 0, 0, 3, 12), kafka.EpochEndOffset{LeaderEpoch: 2, EndOffset: 15}, 3, 12},
		{"undefined epoch: leader's end", epochs(20, 0, 0), kafka.EpochEndOffset{LeaderEpoch: kafka.UndefinedEpoch, EndOffset: 11}, 3, 11},
		{"no end at all: high watermark", epochs(20, 0, 0), kafka.EpochEndOffset{LeaderEpoch: kafka.UndefinedEpoch, EndOffset: -1}, 3, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := followerTruncationOffset(tc.s, tc.d, tc.s.leo, tc.hw); got != tc.want {
				t.Fatalf("followerTruncationOffset = %d, want %d", got, tc.want)
			}
		})
	}
}
