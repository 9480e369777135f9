package sharecoord

import (
	"fmt"
	"io"
	"log/slog"
	"maps"
	"math"
	"slices"
	"time"

	"github.com/partlog/partlog/internal/xsync"
	"github.com/partlog/partlog/kafka"
)

// Log is where the coordinator keeps its state: the partitions of
// __share_group_state.
type Log interface {
	// Append writes recs, in order, to a partition of __share_group_state
	// and returns once they are as durable as an acks=all produce. The
	// records are the log's from then on: the coordinator neither reads
	// nor modifies them after the call.
	Append(partition int32, recs []Record) error
}

// Options configures a Coordinator. The zero value works: each field's
// zero means Kafka's default.
type Options struct {
	// Partitions is share.coordinator.state.topic.num.partitions, the
	// partitions of __share_group_state; zero means 50.
	Partitions int32
	// SnapshotUpdateRecords is
	// share.coordinator.snapshot.update.records.per.snapshot: how many
	// ShareUpdate records a share partition gets between ShareSnapshots.
	// Zero means 500; negative means none (Kafka's 0): every write is a
	// snapshot.
	SnapshotUpdateRecords int
	// Now is the clock that stamps snapshots; nil means time.Now.
	Now func() time.Time
	// Logger reports fenced writes and failed appends; nil discards.
	Logger *slog.Logger
}

func (o Options) withDefaults() Options {
	if o.Partitions <= 0 {
		o.Partitions = DefaultStateTopicPartitions
	}
	switch {
	case o.SnapshotUpdateRecords == 0:
		o.SnapshotUpdateRecords = 500
	case o.SnapshotUpdateRecords < 0:
		o.SnapshotUpdateRecords = 0
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return o
}

// State is a share partition's persisted state, as a ReadShareGroupState
// answers it.
type State struct {
	// StateEpoch is the state epoch.
	StateEpoch int32
	// LeaderEpoch is the latest leader epoch the coordinator saw.
	LeaderEpoch int32
	// StartOffset is the share-partition start offset; -1 when it was
	// initialized without one.
	StartOffset int64
	// Batches are the states of the offsets from StartOffset on, sorted
	// and not overlapping; offsets they leave out are Available and were
	// never delivered.
	Batches []StateBatch
}

// Summary is what a ReadShareGroupStateSummary answers.
type Summary struct {
	// StateEpoch is the state epoch; 0 for a share partition never
	// initialized.
	StateEpoch int32
	// LeaderEpoch is the latest leader epoch the coordinator saw; -1 when
	// none.
	LeaderEpoch int32
	// StartOffset is the share-partition start offset; -1 for a share
	// partition never initialized.
	StartOffset int64
	// DeliveryCompleteCount is how many offsets from StartOffset on are
	// done with — Acknowledged or Archived (KIP-1226, version 1 on): the
	// share partition's lag is the records between StartOffset and the
	// high watermark less these. -1 when there is no start offset.
	DeliveryCompleteCount int32
}

// Write is a WriteShareGroupState of one share partition.
type Write struct {
	// StateEpoch is the writer's state epoch; older than the stored one
	// is refused with kafka.ErrFencedStateEpoch, newer makes the write a
	// ShareSnapshot carrying it.
	StateEpoch int32
	// LeaderEpoch is the share partition leader's epoch; older than the
	// latest seen is refused with kafka.ErrFencedLeaderEpoch. -1 keeps
	// the stored one (and is fenced once a leader has written).
	LeaderEpoch int32
	// StartOffset is the new share-partition start offset; -1 leaves it.
	StartOffset int64
	// Batches are the states to record, combined over the stored ones
	// (see CombineBatches); the coordinator copies them.
	Batches []StateBatch
}

// Coordinator is Kafka's share coordinator (KIP-932) for the partitions of
// __share_group_state one node leads: it keeps the durable state of share
// partitions — start offset, state and leader epochs, and the delivery
// state of the in-flight records — writing every change to the share
// partition's partition of __share_group_state before it answers.
//
// Each change is a record: a ShareSnapshot of the whole state on
// Initialize, and a ShareUpdate for each Write until
// Options.SnapshotUpdateRecords updates have piled up, when the next
// write is a new ShareSnapshot. Unlike Kafka's, each ShareUpdate carries
// everything written since the latest snapshot (combined), not only its
// write, and a write that moves the start offset back is a snapshot, so
// that the latest ShareSnapshot and ShareUpdate of a share partition alone
// give its state: the topic may be compacted, which Kafka's stream does
// not survive (Kafka deletes below a snapshot instead). Kafka replays
// these records to the same state, combining being idempotent.
//
// It has no goroutine and reads no clock but Options.Now. It is safe for
// concurrent use; calls are serialized, and the lock is held while records
// are appended, so that the state a call sees is the state the log holds.
type Coordinator struct {
	log  Log
	opts Options

	// mu is held across the appends to the log, which wait for
	// replication: an xsync.Mutex, so that a bubble's clock moves on while
	// calls wait for it.
	mu     xsync.Mutex
	states map[SharePartition]*shareState
}

// shareState is what the coordinator holds of one share partition: the
// state replayed from its records (Kafka's shareStateMap,
// leaderEpochMap, stateEpochMap and snapshotUpdateCount).
type shareState struct {
	// partition is the partition of __share_group_state it lives in.
	partition int32
	// value is the state: the latest snapshot with the updates since
	// applied. value.StateEpoch is the snapshot's; value.LeaderEpoch the
	// latest written.
	value SnapshotValue
	// leaderEpoch and stateEpoch are the highest epochs seen in its
	// records, against which requests are fenced.
	leaderEpoch, stateEpoch int32
	// updates counts the ShareUpdates since the latest snapshot as Kafka
	// does: the first update after a share partition appears counts 0,
	// and a snapshot resets the count only once it reached the limit.
	// counted says updates holds a count.
	updates int
	counted bool
	// pending are the batches written since the latest snapshot,
	// combined: what the next ShareUpdate carries with its write.
	pending []StateBatch
}

// New returns a coordinator that writes to log. Load replays what log
// holds before requests come in.
func New(log Log, opts Options) *Coordinator {
	return &Coordinator{log: log, opts: opts.withDefaults(), states: map[SharePartition]*shareState{}}
}

// Partitions returns the number of partitions of __share_group_state.
func (c *Coordinator) Partitions() int32 { return c.opts.Partitions }

// PartitionFor returns the partition of __share_group_state that holds
// sp's state.
func (c *Coordinator) PartitionFor(sp SharePartition) int32 {
	return PartitionFor(sp.Group, sp.TopicID, sp.Partition, c.opts.Partitions)
}

// Initialize handles an InitializeShareGroupState: sp's state starts over
// at stateEpoch and startOffset (-1 for none), with no batches — a
// ShareSnapshot, the share partition's first or one more. A state epoch
// older than the stored one is refused with kafka.ErrFencedStateEpoch.
// The snapshot keeps the latest leader epoch seen (-1 for a new share
// partition), so that it alone still fences old leaders after the log is
// compacted.
func (c *Coordinator) Initialize(sp SharePartition, stateEpoch int32, startOffset int64) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := validate(sp); err != nil {
		return err
	}
	snapshotEpoch, leaderEpoch := int32(0), int32(-1)
	if st := c.states[sp]; st != nil {
		if st.stateEpoch > stateEpoch {
			return fmt.Errorf("%w: initialize %s with state epoch %d, stored %d", kafka.ErrFencedStateEpoch, sp, stateEpoch, st.stateEpoch)
		}
		snapshotEpoch, leaderEpoch = st.value.SnapshotEpoch+1, st.leaderEpoch
	}
	now := c.opts.Now().UnixMilli()
	return c.storeLocked(Entry{Key: Key{Type: SnapshotRecord, SharePartition: sp}, Snapshot: &SnapshotValue{
		SnapshotEpoch: snapshotEpoch, StateEpoch: stateEpoch, LeaderEpoch: leaderEpoch, StartOffset: startOffset,
		CreateTimestamp: now, WriteTimestamp: now,
	}})
}

// Read handles a ReadShareGroupState: sp's state, the latest snapshot
// with the updates since combined. A share partition never initialized is
// refused with kafka.ErrInvalidRequest, a leader epoch older than the
// latest seen with kafka.ErrFencedLeaderEpoch (-1 is never fenced). A
// newer leader epoch is recorded — a record is written — before the state
// is returned, as Kafka does: a leader reads the state when it takes the
// share partition over, which fences the old leader's writes. The batches
// returned are the caller's.
func (c *Coordinator) Read(sp SharePartition, leaderEpoch int32) (State, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	st, err := c.initializedLocked(sp, leaderEpoch)
	if err != nil {
		return State{}, err
	}
	if leaderEpoch != -1 && leaderEpoch != st.leaderEpoch {
		e := c.writeEntryLocked(sp, st, Write{StateEpoch: -1, LeaderEpoch: leaderEpoch, StartOffset: -1})
		if err := c.storeLocked(e); err != nil {
			return State{}, err
		}
		st = c.states[sp]
	}
	return State{
		StateEpoch: st.value.StateEpoch, LeaderEpoch: st.leaderEpoch, StartOffset: st.value.StartOffset,
		Batches: slices.Clone(st.value.StateBatches),
	}, nil
}

// ReadSummary handles a ReadShareGroupStateSummary: sp's start offset and
// epochs, without writing anything. A share partition never initialized
// reads as start offset -1, state epoch 0 and leader epoch -1; a leader
// epoch older than the latest seen is refused with
// kafka.ErrFencedLeaderEpoch (-1 is never fenced).
func (c *Coordinator) ReadSummary(sp SharePartition, leaderEpoch int32) (Summary, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := validate(sp); err != nil {
		return Summary{}, err
	}
	st := c.states[sp]
	if st == nil {
		return Summary{StateEpoch: 0, LeaderEpoch: -1, StartOffset: -1, DeliveryCompleteCount: -1}, nil
	}
	if leaderEpoch != -1 && st.leaderEpoch > leaderEpoch {
		return Summary{}, fmt.Errorf("%w: read %s with leader epoch %d, latest %d", kafka.ErrFencedLeaderEpoch, sp, leaderEpoch, st.leaderEpoch)
	}
	return Summary{StateEpoch: st.value.StateEpoch, LeaderEpoch: st.leaderEpoch, StartOffset: st.value.StartOffset,
		DeliveryCompleteCount: deliveryComplete(st.value.StartOffset, st.value.StateBatches)}, nil
}

// DeliveryCompleteCount counts the offsets from StartOffset on that are
// done with, Acknowledged or Archived, as a ReadShareGroupStateSummary
// of version 1 answers it; -1 without a start offset.
func (s State) DeliveryCompleteCount() int32 { return deliveryComplete(s.StartOffset, s.Batches) }

// deliveryComplete counts the offsets from start on that batches say are
// Acknowledged or Archived; -1 without a start offset.
func deliveryComplete(start int64, batches []StateBatch) int32 {
	if start < 0 {
		return -1
	}
	var n int64
	for _, b := range batches {
		if b.DeliveryState != Acknowledged && b.DeliveryState != Archived || b.LastOffset < start {
			continue
		}
		n += b.LastOffset - max(b.FirstOffset, start) + 1
	}
	return int32(min(n, math.MaxInt32))
}

// Write handles a WriteShareGroupState of sp. A share partition never
// initialized, or batches with a first offset below 0 or above their last,
// are refused with kafka.ErrInvalidRequest; then, as Kafka checks them, a
// leader epoch older than the latest seen with kafka.ErrFencedLeaderEpoch,
// and a state epoch older than the stored one with
// kafka.ErrFencedStateEpoch. A fenced write writes nothing. Otherwise the
// write is a ShareUpdate, or a ShareSnapshot when SnapshotUpdateRecords
// updates have piled up or the state epoch is newer.
func (c *Coordinator) Write(sp SharePartition, w Write) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := validate(sp); err != nil {
		return err
	}
	for _, b := range w.Batches {
		if b.FirstOffset < 0 || b.FirstOffset > b.LastOffset || b.LastOffset == 1<<63-1 {
			return fmt.Errorf("%w: %s: state batch [%d, %d]", kafka.ErrInvalidRequest, sp, b.FirstOffset, b.LastOffset)
		}
	}
	st := c.states[sp]
	switch {
	case st == nil:
		return fmt.Errorf("%w: write of %s, which was never initialized", kafka.ErrInvalidRequest, sp)
	case st.leaderEpoch > w.LeaderEpoch:
		c.opts.Logger.Info("write fenced: old leader epoch", "share_partition", sp.String(), "leader_epoch", w.LeaderEpoch, "latest", st.leaderEpoch)
		return fmt.Errorf("%w: write of %s with leader epoch %d, latest %d", kafka.ErrFencedLeaderEpoch, sp, w.LeaderEpoch, st.leaderEpoch)
	case st.stateEpoch > w.StateEpoch:
		c.opts.Logger.Info("write fenced: old state epoch", "share_partition", sp.String(), "state_epoch", w.StateEpoch, "stored", st.stateEpoch)
		return fmt.Errorf("%w: write of %s with state epoch %d, stored %d", kafka.ErrFencedStateEpoch, sp, w.StateEpoch, st.stateEpoch)
	}
	return c.storeLocked(c.writeEntryLocked(sp, st, w))
}

// Delete handles a DeleteShareGroupState: sp's state is deleted with a
// tombstone of its ShareSnapshot key, as Kafka writes. Deleting a share
// partition that has no state does nothing.
func (c *Coordinator) Delete(sp SharePartition) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := validate(sp); err != nil {
		return err
	}
	if c.states[sp] == nil {
		return nil
	}
	return c.storeLocked(Entry{Key: Key{Type: SnapshotRecord, SharePartition: sp}})
}

// Load replays one partition of __share_group_state, read in offset order
// through recs, into the coordinator's state, forgetting what it held of
// that partition before. Call it for each partition before requests come
// in, as Kafka loads a partition when it becomes its coordinator. It stops
// at the first record that does not parse, with an error that matches
// ErrCorrupt or ErrUnknownVersion, and then holds nothing of the
// partition.
//
// A ShareUpdate of a share partition that has no snapshot — its state was
// deleted, or a compaction dropped the tombstone's snapshot but kept the
// update — is ignored, where Kafka would start a state from it.
func (c *Coordinator) Load(partition int32, recs func(yield func(Record) bool) error) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.unloadLocked(partition)
	var bad error
	err := recs(func(r Record) bool {
		e, err := DecodeRecord(r)
		if err != nil {
			bad = err
			return false
		}
		c.applyLocked(partition, e)
		return true
	})
	if err == nil {
		err = bad
	}
	if err != nil {
		c.unloadLocked(partition)
		return fmt.Errorf("sharecoord: load %s-%d: %w", StateTopic, partition, err)
	}
	return nil
}

// Unload forgets the share partitions of one partition of
// __share_group_state, as Kafka's coordinator does when its node stops
// leading the partition. Load it again to coordinate them once more.
func (c *Coordinator) Unload(partition int32) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.unloadLocked(partition)
}

func (c *Coordinator) unloadLocked(partition int32) {
	maps.DeleteFunc(c.states, func(_ SharePartition, st *shareState) bool { return st.partition == partition })
}

// validate refuses a share partition Kafka's coordinator refuses.
func validate(sp SharePartition) error {
	if sp.Partition < 0 {
		return fmt.Errorf("%w: %s: negative partition", kafka.ErrInvalidRequest, sp)
	}
	return nil
}

// initializedLocked returns sp's state for a read at leaderEpoch, or the
// error Kafka answers.
func (c *Coordinator) initializedLocked(sp SharePartition, leaderEpoch int32) (*shareState, error) {
	if err := validate(sp); err != nil {
		return nil, err
	}
	st := c.states[sp]
	if st == nil {
		return nil, fmt.Errorf("%w: read of %s, which was never initialized", kafka.ErrInvalidRequest, sp)
	}
	if leaderEpoch != -1 && st.leaderEpoch > leaderEpoch {
		return nil, fmt.Errorf("%w: read of %s with leader epoch %d, latest %d", kafka.ErrFencedLeaderEpoch, sp, leaderEpoch, st.leaderEpoch)
	}
	return st, nil
}

// writeEntryLocked returns the record of a write to sp, which the caller
// checked: a ShareSnapshot once the updates reached the limit, for a
// newer state epoch, or for a start offset moved back; a ShareUpdate
// otherwise. -1 in StateEpoch, LeaderEpoch or StartOffset keeps the
// stored one.
func (c *Coordinator) writeEntryLocked(sp SharePartition, st *shareState, w Write) Entry {
	cur := &st.value
	leaderEpoch, startOffset := cur.LeaderEpoch, cur.StartOffset
	if w.LeaderEpoch != -1 {
		leaderEpoch = w.LeaderEpoch
	}
	if w.StartOffset != -1 {
		startOffset = w.StartOffset
	}
	updates := 0
	if st.counted {
		updates = st.updates
	}
	movedBack := w.StartOffset != -1 && cur.StartOffset != -1 && w.StartOffset < cur.StartOffset
	if updates >= c.opts.SnapshotUpdateRecords || w.StateEpoch > cur.StateEpoch || movedBack {
		stateEpoch := cur.StateEpoch
		if w.StateEpoch != -1 {
			stateEpoch = w.StateEpoch
		}
		now := c.opts.Now().UnixMilli()
		return Entry{Key: Key{Type: SnapshotRecord, SharePartition: sp}, Snapshot: &SnapshotValue{
			SnapshotEpoch: cur.SnapshotEpoch + 1, StateEpoch: stateEpoch, LeaderEpoch: leaderEpoch, StartOffset: startOffset,
			CreateTimestamp: now, WriteTimestamp: now,
			StateBatches: CombineBatches(cur.StateBatches, w.Batches, startOffset),
		}}
	}
	return Entry{Key: Key{Type: UpdateRecord, SharePartition: sp}, Update: &UpdateValue{
		SnapshotEpoch: cur.SnapshotEpoch, LeaderEpoch: leaderEpoch, StartOffset: startOffset,
		StateBatches: CombineBatches(st.pending, w.Batches, startOffset),
	}}
}

// storeLocked appends e to its share partition's partition of
// __share_group_state and, once it is durable, applies it.
func (c *Coordinator) storeLocked(e Entry) error {
	partition := c.PartitionFor(e.Key.SharePartition)
	if err := c.log.Append(partition, []Record{e.Record()}); err != nil {
		c.opts.Logger.Error("writing share state failed", "share_partition", e.Key.SharePartition.String(), "record", e.Key.Type.String(), "err", err)
		return fmt.Errorf("%w: writing the %s record of %s failed: %v", kafka.ErrCoordinatorNotAvailable, e.Key.Type, e.Key.SharePartition, err)
	}
	c.applyLocked(partition, e)
	return nil
}

// applyLocked replays a record of partition into the state, as Kafka's
// ShareCoordinatorShard.replay does; Load and the calls that write share
// it, so that what is answered is what a reload gives.
func (c *Coordinator) applyLocked(partition int32, e Entry) {
	sp := e.Key.SharePartition
	st := c.states[sp]
	switch {
	case e.Snapshot != nil:
		v := *e.Snapshot
		v.StateBatches = slices.Clone(v.StateBatches)
		if st == nil {
			st = &shareState{leaderEpoch: v.LeaderEpoch, stateEpoch: v.StateEpoch}
			c.states[sp] = st
		}
		st.partition = partition
		st.leaderEpoch = max(st.leaderEpoch, v.LeaderEpoch)
		st.stateEpoch = max(st.stateEpoch, v.StateEpoch)
		st.value = v
		st.pending = nil
		if st.counted && st.updates >= c.opts.SnapshotUpdateRecords {
			st.updates = 0
		}
	case e.Update != nil:
		if st == nil {
			return // an orphan update: see Load
		}
		u := e.Update
		st.leaderEpoch = max(st.leaderEpoch, u.LeaderEpoch)
		if u.LeaderEpoch != -1 {
			st.value.LeaderEpoch = u.LeaderEpoch
		}
		if u.StartOffset != -1 {
			st.value.StartOffset = u.StartOffset
		}
		st.value.StateBatches = CombineBatches(st.value.StateBatches, u.StateBatches, st.value.StartOffset)
		st.pending = CombineBatches(st.pending, u.StateBatches, st.value.StartOffset)
		if st.counted {
			st.updates++
		} else {
			st.updates, st.counted = 0, true
		}
	case e.Key.Type == SnapshotRecord:
		delete(c.states, sp) // a tombstone
	}
	// A tombstone of a ShareUpdate key, which Kafka never writes, is
	// ignored.
}
