package replica

import (
	"fmt"
	"iter"
	"slices"

	"github.com/partlog/partlog/kafka"
)

// Replica is one replica of one partition as a deterministic state machine,
// in the manner of etcd raft's RawNode: inputs come in through Step
// (messages from other replicas), Tick (time), Propose (appends, as leader)
// and Apply (the controller's commands); outputs come out of Ready, which
// the driver carries out before calling Advance. A Replica starts no
// goroutine, reads no clock and writes nothing; it reads its log through
// Storage.
//
// A Replica is not safe for concurrent use: one driver loop owns it.
type Replica struct {
	id      int32
	tp      kafka.TopicPartition
	storage Storage
	opts    Options

	lagTicks, waitTicks, timeoutTicks, backoffTicks int64

	now   int64
	state LeaderAndISR
	role  Role

	hw      int64
	hwMoved bool
	// logStart is a log start offset for the next Ready to raise the log's
	// to, or -1.
	logStart int64

	// The log as the replica sees it: stableEnd is the end after the last
	// Advance, persistedEnd the end once the Ready handed out is written,
	// logEnd the end once the unstable truncation and appends below are.
	stableEnd    int64
	persistedEnd int64
	logEnd       int64
	truncate     *Truncation
	appends      []unstableBatch
	inflight     *inflight

	msgs      []Message
	completed []Completion
	alter     *ISRChange
	alterSent bool
	alterAt   int64 // tick the pending change was last handed out

	leader   leaderState
	follower followerState
	// brokerEpochs is the newest broker epoch each peer fetched with:
	// fetches from an older incarnation are refused (KIP-903).
	brokerEpochs map[int32]int64
}

type unstableBatch struct {
	base, last int64
	data       []byte
	// proposal is the acks=1 proposal to complete once it is written, or 0.
	proposal uint64
}

type inflight struct {
	end     int64
	written []Completion // acks=1 appends in the Ready
}

// New returns the replica id of partition tp over its log. It starts with
// RoleNone until the controller's first Apply.
func New(id int32, tp kafka.TopicPartition, storage Storage, opts Options) (*Replica, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	leo := storage.LogEndOffset()
	r := &Replica{
		id: id, tp: tp, storage: storage, opts: opts,
		lagTicks:     opts.ticks(opts.ReplicaLagTimeMax),
		waitTicks:    max(opts.ticks(opts.FetchWaitMax), 1),
		timeoutTicks: max(opts.ticks(opts.FetchTimeout), 1),
		backoffTicks: opts.ticks(opts.FetchBackoff),
		state:        LeaderAndISR{Leader: NoLeader, LeaderEpoch: -1, PartitionEpoch: -1},
		hw:           min(opts.HighWatermark, leo),
		logStart:     -1,
		stableEnd:    leo,
		persistedEnd: leo,
		logEnd:       leo,
		follower:     followerState{seq: uint64(opts.BrokerEpoch) << 32},
		brokerEpochs: map[int32]int64{},
	}
	return r, nil
}

// ID returns the replica's node id.
func (r *Replica) ID() int32 { return r.id }

// TopicPartition returns the replica's partition.
func (r *Replica) TopicPartition() kafka.TopicPartition { return r.tp }

// HighWatermark returns the replica's high watermark.
func (r *Replica) HighWatermark() int64 { return r.hw }

// Role returns what the replica does now.
func (r *Replica) Role() Role { return r.role }

// Status returns the replica's state.
func (r *Replica) Status() Status {
	s := Status{ID: r.id, Role: r.role, State: r.state.Clone(), HighWatermark: r.hw, LogEndOffset: r.logEnd, Ticks: r.now}
	if r.role == RoleLeader {
		s.Followers = map[int32]FollowerStatus{}
		for id, f := range r.leader.followers {
			s.Followers[id] = FollowerStatus{LogEndOffset: f.leo, LastCaughtUp: f.lastCaughtUp}
		}
	}
	if r.alter != nil {
		s.PendingISR = r.alter.clone()
	}
	return s
}

// Tick advances the replica's clock by one TickInterval: a leader shrinks
// the ISR of followers that stopped keeping up and answers fetches it held
// for FetchWaitMax; a follower gives up on a fetch after FetchTimeout.
func (r *Replica) Tick() {
	r.now++
	switch r.role {
	case RoleLeader:
		if r.alter != nil && r.alterSent && r.now-r.alterAt >= r.timeoutTicks {
			r.alterSent = false // unanswered: ask again
		}
		r.maybeShrinkISR()
		r.answerParked()
	case RoleFollower:
		if r.follower.fetching && r.now >= r.follower.deadline {
			r.follower.fetching = false
		}
		r.maybeFetch()
	}
}

// Step takes a message from another replica of the partition. It returns an
// error only for a message that is malformed (a missing payload); messages
// that are stale or misdirected are answered or ignored, as Kafka does. A
// fetch response's records are kept, not copied, for the Ready that writes
// them: the message's bytes must stay unchanged until that Ready is
// advanced (DecodeMessages' output does, as nothing else refers to it).
func (r *Replica) Step(m Message) error {
	switch m.Type {
	case MsgFetch:
		if m.Fetch == nil {
			return fmt.Errorf("replica: %s without a fetch", m.Type)
		}
		r.stepFetch(m)
	case MsgFetchResponse:
		if m.FetchResponse == nil {
			return fmt.Errorf("replica: %s without a fetch response", m.Type)
		}
		r.stepFetchResponse(m)
	case MsgOffsetsForLeaderEpoch:
		if m.EpochRequest == nil {
			return fmt.Errorf("replica: %s without a request", m.Type)
		}
		r.stepEpochRequest(m)
	case MsgOffsetsForLeaderEpochResponse:
		// Followers truncate by the diverging epoch of fetch answers; an
		// answer to someone else's OffsetsForLeaderEpoch is theirs.
	default:
		return fmt.Errorf("replica: unknown message type %s", m.Type)
	}
	return nil
}

// SetMinInsyncReplicas changes min.insync.replicas (below 1 means 1): from
// the next Propose, acks=all appends need that many in-sync replicas, and
// the high watermark moves by the new rule at its next computation.
func (r *Replica) SetMinInsyncReplicas(v int) {
	r.opts.MinInsyncReplicas = max(v, 1)
}

// Apply takes the controller's state for the partition. A new leader epoch
// makes the replica the leader or a follower of the named leader (or idle,
// with NoLeader); the same epoch with a newer partition epoch changes the
// ISR, answering a proposed ISRChange. The current state again changes
// nothing; older states fail with ErrStaleLeaderEpoch.
func (r *Replica) Apply(s LeaderAndISR) error {
	if err := s.validate(r.id); err != nil {
		return err
	}
	cur := r.state
	switch {
	case s.LeaderEpoch < cur.LeaderEpoch:
		return fmt.Errorf("%w: leader epoch %d, replica is at %d", ErrStaleLeaderEpoch, s.LeaderEpoch, cur.LeaderEpoch)
	case s.LeaderEpoch == cur.LeaderEpoch && s.PartitionEpoch == cur.PartitionEpoch:
		return nil // already applied
	case s.LeaderEpoch == cur.LeaderEpoch:
		if s.PartitionEpoch < cur.PartitionEpoch {
			return fmt.Errorf("%w: partition epoch %d, replica is at %d", ErrStaleLeaderEpoch, s.PartitionEpoch, cur.PartitionEpoch)
		}
		if s.Leader != cur.Leader {
			return fmt.Errorf("replica: leader changed from %d to %d within leader epoch %d", cur.Leader, s.Leader, s.LeaderEpoch)
		}
		r.state = s.Clone()
		r.alter, r.alterSent = nil, false
		if r.role == RoleLeader {
			r.syncFollowers()
			r.maybeAdvanceHighWatermark()
			r.maybeShrinkISR()
		}
		return nil
	}
	r.failPending()
	r.state = s.Clone()
	r.alter, r.alterSent = nil, false
	switch s.Leader {
	case r.id:
		r.becomeLeader()
	case NoLeader:
		r.role = RoleNone
		r.leader = leaderState{}
		r.follower = followerState{seq: r.follower.seq}
	default:
		r.becomeFollower()
	}
	r.opts.Logger.Debug("replica state", "partition", r.tp.String(), "replica", r.id, "role", r.role.String(),
		"leader", s.Leader, "epoch", s.LeaderEpoch, "isr", s.ISR)
	return nil
}

// RejectISRChange tells a leader that the controller refused the ISR
// change it proposed (Kafka's AlterPartition errors: a stale partition
// epoch, an ineligible replica). If c is the change still pending, the
// leader drops it and may propose another; a refusal of an older proposal
// changes nothing — dropping a newer pending expansion would let the high
// watermark pass a replica the controller may yet add.
func (r *Replica) RejectISRChange(c ISRChange) {
	a := r.alter
	if a == nil || a.LeaderEpoch != c.LeaderEpoch || a.PartitionEpoch != c.PartitionEpoch || !slices.Equal(a.ISR, c.ISR) {
		return
	}
	r.opts.Logger.Debug("ISR change rejected", "partition", r.tp.String(), "replica", r.id, "isr", c.ISR)
	r.alter, r.alterSent = nil, false
	if r.role == RoleLeader {
		// The followers it would have added wait for their next fetch
		// before they are proposed again.
		for _, id := range c.ISR {
			if p := r.leader.followers[id]; p != nil && !slices.Contains(r.state.ISR, id) {
				p.refusedAfter = p.lastFetch
			}
		}
		r.maybeAdvanceHighWatermark()
	}
}

// HasReady reports whether Ready has something to do.
func (r *Replica) HasReady() bool {
	if r.inflight != nil {
		return false
	}
	return r.truncate != nil || len(r.appends) > 0 || len(r.msgs) > 0 || r.hwMoved ||
		(r.alter != nil && !r.alterSent) || len(r.completed) > 0 || r.logStart >= 0
}

// Ready returns what the driver must do now, and takes it as handed out:
// the next Ready has only what came after. The driver must call Advance
// once it has done it, before the next Ready; until then HasReady is false.
func (r *Replica) Ready() Ready {
	rd := Ready{HighWatermark: -1, Truncate: r.truncate, Messages: r.msgs, Completed: r.completed, LogStartOffset: r.logStart}
	in := &inflight{end: r.logEnd}
	for _, b := range r.appends {
		rd.Append = append(rd.Append, b.data)
		if b.proposal != 0 {
			in.written = append(in.written, Completion{ID: b.proposal, BaseOffset: b.base, LastOffset: b.last})
		}
	}
	rd.MustSync = rd.Truncate != nil || len(rd.Append) > 0
	if r.hwMoved {
		rd.HighWatermark = r.hw
	}
	if r.alter != nil && !r.alterSent {
		rd.AlterPartition = r.alter.clone()
		r.alterSent = true
		r.alterAt = r.now
	}
	r.truncate, r.appends, r.msgs, r.completed, r.hwMoved, r.logStart = nil, nil, nil, nil, false, -1
	r.persistedEnd = r.logEnd
	r.inflight = in
	return rd
}

// Advance tells the replica that the driver did what the last Ready asked:
// its log now ends where the Ready left it. A leader counts the new end
// toward the high watermark and answers the fetches waiting for it; a
// follower fetches again.
func (r *Replica) Advance() error {
	in := r.inflight
	if in == nil {
		return ErrNoReady
	}
	r.inflight = nil
	r.stableEnd = in.end
	if r.role == RoleLeader {
		r.completed = append(r.completed, in.written...)
	} else {
		for _, c := range in.written {
			c.Err = fmt.Errorf("%w: replica %d stopped leading %s before the append was written", kafka.ErrNotLeaderOrFollower, r.id, r.tp)
			r.completed = append(r.completed, c)
		}
	}
	switch r.role {
	case RoleLeader:
		r.maybeAdvanceHighWatermark()
		r.answerParked()
	case RoleFollower:
		r.maybeFetch()
	}
	return nil
}

// truncateTo cuts the log at offset (a batch boundary, or the whole batch
// holding it goes): unstable batches are dropped, and a cut below what the
// driver has written becomes the next Ready's Truncate.
func (r *Replica) truncateTo(offset int64) {
	if offset >= r.logEnd {
		return
	}
	keep := 0
	for keep < len(r.appends) && r.appends[keep].last < offset {
		keep++
	}
	r.failTruncated(r.appends[keep:])
	if keep < len(r.appends) {
		offset = min(offset, r.appends[keep].base)
	}
	r.appends = r.appends[:keep]
	if offset < r.persistedEnd {
		if r.truncate == nil || offset < r.truncate.Offset {
			r.truncate = &Truncation{Offset: offset}
		}
		r.appends = nil
	}
	r.logEnd = offset
	if r.hw > offset {
		r.hw = offset
		r.hwMoved = true
	}
}

// truncateFully empties the log, to restart it at offset.
func (r *Replica) truncateFully(offset int64) {
	r.failTruncated(r.appends)
	r.appends = nil
	r.truncate = &Truncation{Offset: offset, Fully: true}
	r.logEnd = offset
	r.hw = offset
	r.hwMoved = true
}

// failTruncated answers the acks=1 appends among bs, cut before they were
// written.
func (r *Replica) failTruncated(bs []unstableBatch) {
	for _, b := range bs {
		if b.proposal != 0 {
			r.completed = append(r.completed, Completion{ID: b.proposal, BaseOffset: b.base, LastOffset: b.last,
				Err: fmt.Errorf("%w: append to %s truncated before it was written", kafka.ErrNotLeaderOrFollower, r.tp)})
		}
	}
}

// failPending answers every append still waiting with NotLeaderOrFollower:
// the replica stops leading in this epoch.
func (r *Replica) failPending() {
	for _, p := range r.leader.waiting {
		r.completed = append(r.completed, Completion{ID: p.id, BaseOffset: p.base, LastOffset: p.last,
			Err: fmt.Errorf("%w: replica %d stopped leading %s in epoch %d", kafka.ErrNotLeaderOrFollower, r.id, r.tp, r.state.LeaderEpoch)})
	}
	r.leader.waiting = nil
	for i := range r.appends {
		p := &r.appends[i]
		if p.proposal != 0 {
			r.completed = append(r.completed, Completion{ID: p.proposal, BaseOffset: p.base, LastOffset: p.last,
				Err: fmt.Errorf("%w: replica %d stopped leading %s in epoch %d", kafka.ErrNotLeaderOrFollower, r.id, r.tp, r.state.LeaderEpoch)})
			p.proposal = 0
		}
	}
}

// setHighWatermark moves the high watermark up to hw.
func (r *Replica) setHighWatermark(hw int64) bool {
	if hw <= r.hw {
		return false
	}
	r.hw = hw
	r.hwMoved = true
	return true
}

// clean reports whether everything the replica appended is written.
func (r *Replica) clean() bool {
	return r.inflight == nil && r.truncate == nil && len(r.appends) == 0
}

func (r *Replica) send(m Message) { r.msgs = append(r.msgs, m) }

// followerIDs yields the other replicas, in assignment order, without
// allocating: a leader walks them on every Advance and follower fetch.
func (r *Replica) followerIDs() iter.Seq[int32] {
	return func(yield func(int32) bool) {
		for _, id := range r.state.Replicas {
			if id != r.id && !yield(id) {
				return
			}
		}
	}
}
