package share

import (
	"fmt"
	"math"
	"slices"

	"github.com/partlog/partlog/kafka"
)

// RecordState is the delivery state of an in-flight record, with the ids
// of Kafka's RecordState: the values the share coordinator stores in
// ShareSnapshotValue and ShareUpdateValue (DeliveryState).
type RecordState int8

// The record states. A record moves Available → Acquired when a member
// acquires it, and Acquired → Available, Acknowledged or Archived when
// the member acknowledges it, releases it or its lock expires.
// Acknowledged and Archived are terminal.
const (
	// Available: no member holds the record; the next fetch may acquire
	// it (again).
	Available RecordState = 0
	// Acquired: one member holds the record under an acquisition lock
	// until it acknowledges it or the lock expires. It is never stored:
	// what is stored for an acquired record is Available with its
	// delivery count (see Update).
	Acquired RecordState = 1
	// Acknowledged: a member accepted the record; it is done.
	Acknowledged RecordState = 2
	// Archived: the record will not be delivered again — rejected,
	// delivered DeliveryCountLimit times, absent from the log (a gap left
	// by compaction, a control batch) or below the log start offset.
	Archived RecordState = 4
)

// String returns the state as Kafka spells it.
func (s RecordState) String() string {
	switch s {
	case Available:
		return "AVAILABLE"
	case Acquired:
		return "ACQUIRED"
	case Acknowledged:
		return "ACKNOWLEDGED"
	case Archived:
		return "ARCHIVED"
	}
	return fmt.Sprintf("RecordState(%d)", int8(s))
}

// terminal reports whether a record in state s is done with: it is never
// delivered again, and the start offset may move past it.
func (s RecordState) terminal() bool { return s == Acknowledged || s == Archived }

// valid reports whether s is one of Kafka's record state ids.
func (s RecordState) valid() bool {
	return s == Available || s == Acquired || s == Acknowledged || s == Archived
}

// StateBatch is a run of consecutive offsets in the same delivery state
// with the same delivery count: the StateBatch of Kafka's
// ShareSnapshotValue, ShareUpdateValue and WriteShareGroupState.
type StateBatch struct {
	// FirstOffset is the first offset of the run.
	FirstOffset int64
	// LastOffset is the last offset of the run, inclusive.
	LastOffset int64
	// DeliveryState is the records' state: Available, Acknowledged or
	// Archived (an Acquired record is stored as Available).
	DeliveryState RecordState
	// DeliveryCount is how many times the records were acquired.
	DeliveryCount int16
}

// String returns the batch as "first-last STATE/count".
func (b StateBatch) String() string {
	return fmt.Sprintf("%d-%d %s/%d", b.FirstOffset, b.LastOffset, b.DeliveryState, b.DeliveryCount)
}

// State is what the share coordinator stores for one share partition,
// Kafka's ShareSnapshotValue: the share-partition start offset and the
// state of the in-flight records from it. Offsets below StartOffset are
// done with; offsets from StartOffset that no batch covers have never
// been delivered (Available with delivery count 0).
//
// The zero State, with StartOffset set, is the state of a share partition
// no member has consumed yet (see New).
type State struct {
	// StateEpoch is the state epoch, which the share coordinator bumps
	// when it initializes or resets the share partition's state; a write
	// with an older one is fenced (FENCED_STATE_EPOCH).
	StateEpoch int32
	// LeaderEpoch is the leader epoch of the partition's leader that
	// last wrote the state; a write with an older one is fenced
	// (FENCED_LEADER_EPOCH).
	LeaderEpoch int32
	// StartOffset is the share-partition start offset (SPSO).
	StartOffset int64
	// StateBatches are the in-flight records' states, in offset order,
	// not overlapping, none below StartOffset.
	StateBatches []StateBatch
}

// Update is what one call changed, to be written to the share coordinator
// before the call is answered, Kafka's WriteShareGroupState for one
// partition (stored as a ShareUpdateValue): the state batches of the
// records that changed, and the start offset if it moved. State.Apply
// applies it.
type Update struct {
	// StateEpoch is the state epoch the partition was restored with.
	StateEpoch int32
	// LeaderEpoch is the leader epoch the partition was restored with.
	LeaderEpoch int32
	// StartOffset is the new share-partition start offset, or -1 when it
	// did not move (Kafka's convention in WriteShareGroupState).
	StartOffset int64
	// StateBatches are the new states of the records that changed, in
	// offset order, not overlapping. An acquired record is written as
	// Available with its new delivery count, so that a new leader knows
	// how often it was delivered.
	StateBatches []StateBatch
}

// Empty reports whether u changes nothing, so there is nothing to write.
func (u Update) Empty() bool { return u.StartOffset < 0 && len(u.StateBatches) == 0 }

// validate checks s as New restores it: a start offset that is not
// negative, and batches in order, not overlapping, none below the start
// offset, with known states and delivery counts that are not negative.
func (s State) validate() error {
	if s.StartOffset < 0 {
		return fmt.Errorf("%w: start offset %d is negative", ErrInvalidState, s.StartOffset)
	}
	return validateBatches(s.StateBatches, s.StartOffset)
}

// validateBatches checks that batches are well formed, in order, not
// overlapping and none below from.
func validateBatches(batches []StateBatch, from int64) error {
	next := from
	for i, b := range batches {
		switch {
		case b.FirstOffset > b.LastOffset:
			return fmt.Errorf("%w: batch %d (%v) ends before it starts", ErrInvalidState, i, b)
		case b.FirstOffset < next:
			return fmt.Errorf("%w: batch %d (%v) starts below offset %d", ErrInvalidState, i, b, next)
		case !b.DeliveryState.valid():
			return fmt.Errorf("%w: batch %d (%v) has an unknown delivery state", ErrInvalidState, i, b)
		case b.DeliveryCount < 0:
			return fmt.Errorf("%w: batch %d (%v) has a negative delivery count", ErrInvalidState, i, b)
		}
		next = b.LastOffset + 1
	}
	return nil
}

// Apply returns s with u applied, as the share coordinator applies a
// WriteShareGroupState: u's batches replace the states of the offsets
// they cover, the start offset moves if u moves it, and what lies below
// the start offset is dropped. Adjacent batches with the same state and
// delivery count are merged, so applying every Update a Partition
// returned to the State it was restored from gives what its State method
// returns. s is not modified.
//
// The errors: kafka.ErrFencedLeaderEpoch if u's leader epoch is older
// than s's, kafka.ErrFencedStateEpoch if its state epoch is, and
// ErrInvalidState if its batches are malformed. (Kafka's coordinator
// merges overlapping batches keeping the greater delivery count, then the
// greater state; a Partition's updates only ever raise an offset's
// (count, state), so the newest write is also the greatest.)
func (s State) Apply(u Update) (State, error) {
	switch {
	case u.LeaderEpoch < s.LeaderEpoch:
		return s, fmt.Errorf("%w: the write's leader epoch %d is older than the state's %d", kafka.ErrFencedLeaderEpoch, u.LeaderEpoch, s.LeaderEpoch)
	case u.StateEpoch < s.StateEpoch:
		return s, fmt.Errorf("%w: the write's state epoch %d is older than the state's %d", kafka.ErrFencedStateEpoch, u.StateEpoch, s.StateEpoch)
	}
	if err := validateBatches(u.StateBatches, math.MinInt64); err != nil {
		return s, err
	}
	out := State{StateEpoch: s.StateEpoch, LeaderEpoch: u.LeaderEpoch, StartOffset: s.StartOffset}
	if u.StartOffset >= 0 {
		out.StartOffset = u.StartOffset
	}
	batches := overlay(s.StateBatches, u.StateBatches)
	out.StateBatches = normalize(prune(batches, out.StartOffset))
	return out, nil
}

// overlay returns old with each batch of upd painted over it: the offsets
// upd covers take upd's states, the others keep old's. Both are in order
// and not overlapping; neither is modified.
func overlay(old, upd []StateBatch) []StateBatch {
	if len(upd) == 0 {
		return slices.Clone(old)
	}
	out := make([]StateBatch, 0, len(old)+len(upd))
	rest := slices.Clone(old)
	i := 0
	for _, nb := range upd {
		// Keep what of old lies before nb.
		for i < len(rest) && rest[i].FirstOffset < nb.FirstOffset {
			o := rest[i]
			if o.LastOffset < nb.FirstOffset {
				out = append(out, o)
				i++
				continue
			}
			head := o
			head.LastOffset = nb.FirstOffset - 1
			out = append(out, head)
			rest[i].FirstOffset = nb.FirstOffset
		}
		out = append(out, nb)
		// Drop what of old nb covers.
		for i < len(rest) && rest[i].FirstOffset <= nb.LastOffset {
			if rest[i].LastOffset > nb.LastOffset {
				rest[i].FirstOffset = nb.LastOffset + 1
				break
			}
			i++
		}
	}
	return append(out, rest[i:]...)
}

// prune drops what of batches lies below start, cutting the batch that
// holds it. It modifies batches in place.
func prune(batches []StateBatch, start int64) []StateBatch {
	i := 0
	for i < len(batches) && batches[i].LastOffset < start {
		i++
	}
	batches = batches[i:]
	if len(batches) > 0 && batches[0].FirstOffset < start {
		batches[0].FirstOffset = start
	}
	return batches
}

// normalize merges adjacent batches that are contiguous with the same
// state and delivery count, and returns nil for no batches. It modifies
// batches in place.
func normalize(batches []StateBatch) []StateBatch {
	if len(batches) == 0 {
		return nil
	}
	out := batches[:1]
	for _, b := range batches[1:] {
		out = appendBatch(out, b)
	}
	return out
}

// appendBatch appends b to batches, extending the last batch instead when
// b continues it with the same state and delivery count.
func appendBatch(batches []StateBatch, b StateBatch) []StateBatch {
	if n := len(batches); n > 0 {
		last := &batches[n-1]
		if last.LastOffset+1 == b.FirstOffset && last.DeliveryState == b.DeliveryState && last.DeliveryCount == b.DeliveryCount {
			last.LastOffset = b.LastOffset
			return batches
		}
	}
	return append(batches, b)
}
