package replica

import (
	"fmt"
	"slices"
)

// Role is what a replica does for its partition.
type Role uint8

// The roles.
const (
	// RoleNone: the replica neither leads nor follows (no leader is known,
	// or the partition is offline).
	RoleNone Role = iota
	// RoleFollower: the replica fetches from the leader.
	RoleFollower
	// RoleLeader: the replica takes appends and serves fetches.
	RoleLeader
)

// String returns the role's name.
func (r Role) String() string {
	switch r {
	case RoleNone:
		return "none"
	case RoleFollower:
		return "follower"
	case RoleLeader:
		return "leader"
	}
	return fmt.Sprintf("Role(%d)", r)
}

// NoLeader is the Leader of a partition that has none (Kafka's -1).
const NoLeader int32 = -1

// LeaderAndISR is a partition's state as its controller decides it (Kafka's
// LeaderAndIsr, or KRaft's PartitionRecord): a controller commands a
// replica with it through Apply.
type LeaderAndISR struct {
	// Leader is the leading replica's node id, or NoLeader.
	Leader int32
	// LeaderEpoch grows with every change of leader. Batches carry the
	// epoch of the leader that appended them.
	LeaderEpoch int32
	// PartitionEpoch grows with every change of the state, ISR changes
	// included (Kafka's partition epoch).
	PartitionEpoch int32
	// Replicas is the assignment, preferred leader first.
	Replicas []int32
	// ISR is the in-sync replicas, in assignment order.
	ISR []int32
	// AddingReplicas and RemovingReplicas are, while the partition is
	// being reassigned, the replicas it is moving to that it did not have,
	// and those it is moving from that it will not keep (Kafka's
	// adding_replicas and removing_replicas); Replicas holds both. Nil
	// otherwise.
	AddingReplicas   []int32 `json:",omitempty"`
	RemovingReplicas []int32 `json:",omitempty"`
}

// validate checks that s is a state replica id can take.
func (s LeaderAndISR) validate(id int32) error {
	if !slices.Contains(s.Replicas, id) {
		return fmt.Errorf("%w: node %d is not among replicas %v", ErrNotAssigned, id, s.Replicas)
	}
	if s.Leader != NoLeader && !slices.Contains(s.Replicas, s.Leader) {
		return fmt.Errorf("%w: leader %d is not among replicas %v", ErrNotAssigned, s.Leader, s.Replicas)
	}
	for _, m := range s.ISR {
		if !slices.Contains(s.Replicas, m) {
			return fmt.Errorf("%w: ISR member %d is not among replicas %v", ErrNotAssigned, m, s.Replicas)
		}
	}
	if s.LeaderEpoch < 0 {
		return fmt.Errorf("replica: leader epoch %d is negative", s.LeaderEpoch)
	}
	return nil
}

// Clone returns a copy of s that shares no slices with it.
func (s LeaderAndISR) Clone() LeaderAndISR {
	s.Replicas = slices.Clone(s.Replicas)
	s.ISR = slices.Clone(s.ISR)
	s.AddingReplicas = slices.Clone(s.AddingReplicas)
	s.RemovingReplicas = slices.Clone(s.RemovingReplicas)
	return s
}

// Status is a replica's state, for tests, metrics and tools.
type Status struct {
	// ID is the replica's node id.
	ID int32
	// Role is leader, follower or none.
	Role Role
	// State is the leader, ISR and epochs the replica last applied.
	State LeaderAndISR
	// HighWatermark is the replica's high watermark.
	HighWatermark int64
	// LogEndOffset is where the log ends once every Ready handed out and
	// pending is written.
	LogEndOffset int64
	// Ticks is how many times Tick was called.
	Ticks int64
	// Followers is the leader's view of each follower (leaders only).
	Followers map[int32]FollowerStatus
	// PendingISR is an ISR change proposed and not yet answered.
	PendingISR *ISRChange
}

// FollowerStatus is a leader's view of one follower.
type FollowerStatus struct {
	// LogEndOffset is the offset of the follower's last fetch in this
	// leader epoch, or -1.
	LogEndOffset int64
	// LastCaughtUp is the tick at which the follower was last caught up
	// to the leader's log end offset (Kafka's lastCaughtUpTimeMs).
	LastCaughtUp int64
}
