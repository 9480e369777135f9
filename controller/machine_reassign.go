package controller

import (
	"fmt"
	"slices"

	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/replica"
)

// Reassignment and membership: moving a partition's replicas to other
// nodes as Kafka's controller does (KIP-455), and removing a node from the
// cluster.

// ReassignPartition moves partition tp's replicas to target, in that
// order (the first the preferred leader), as Kafka's
// AlterPartitionReassignments does: the replicas become target and the
// current ones together, the new ones (AddingReplicas) catch up from the
// leader, and once every target replica is in the ISR the partition keeps
// target alone — leadership moves to a target replica if it was elsewhere —
// and the nodes of the others (RemovingReplicas) delete their replicas. A
// nil target cancels a reassignment in progress, back to the replicas
// before it. A new target replaces one in progress, moving from all the
// partition's replicas of the moment; the target in progress asked for
// again (a node's controller client retrying a request whose answer was
// lost) changes nothing.
func (c *Machine) ReassignPartition(tp kafka.TopicPartition, target []int32) error {
	cur, err := c.Partition(tp)
	if err != nil {
		return err
	}
	if target == nil {
		return c.cancelReassignment(tp, cur)
	}
	if err := c.checkTarget(target); err != nil {
		return fmt.Errorf("%s: %w", tp, err)
	}
	inProgress := slices.DeleteFunc(slices.Clone(cur.Replicas), func(id int32) bool { return slices.Contains(cur.RemovingReplicas, id) })
	if (cur.AddingReplicas != nil || cur.RemovingReplicas != nil) && slices.Equal(inProgress, target) {
		return nil
	}
	s := cur.Clone()
	s.Replicas = slices.Clone(target)
	s.AddingReplicas, s.RemovingReplicas = nil, nil
	for _, id := range target {
		if !slices.Contains(cur.Replicas, id) {
			s.AddingReplicas = append(s.AddingReplicas, id)
		}
	}
	for _, id := range cur.Replicas {
		if !slices.Contains(target, id) {
			s.Replicas = append(s.Replicas, id)
			s.RemovingReplicas = append(s.RemovingReplicas, id)
		}
	}
	s.ISR = inOrder(s.Replicas, cur.ISR)
	s.PartitionEpoch++
	c.completeReassignment(&s)
	return c.commit([]Record{partitionRecord(tp, s)})
}

// cancelReassignment takes a partition being reassigned back to its
// replicas before, at once: those of its ISR stay in it, and leadership
// moves to one of them if it was on a replica being added.
func (c *Machine) cancelReassignment(tp kafka.TopicPartition, cur replica.LeaderAndISR) error {
	if cur.AddingReplicas == nil && cur.RemovingReplicas == nil {
		return fmt.Errorf("%w: %s", kafka.ErrNoReassignmentInProgress, tp)
	}
	s := cur.Clone()
	s.Replicas = slices.DeleteFunc(slices.Clone(cur.Replicas), func(id int32) bool { return slices.Contains(cur.AddingReplicas, id) })
	s.ISR = inOrder(s.Replicas, cur.ISR)
	if len(s.ISR) == 0 {
		return fmt.Errorf("%w: %s: no replica of the assignment before the reassignment is in sync", kafka.ErrInvalidReplicaAssignment, tp)
	}
	s.AddingReplicas, s.RemovingReplicas = nil, nil
	c.leadAmongISR(&s)
	s.PartitionEpoch++
	return c.commit([]Record{partitionRecord(tp, s)})
}

// checkTarget checks a reassignment's target replicas: some, none twice,
// each a registered node.
func (c *Machine) checkTarget(target []int32) error {
	if len(target) == 0 {
		return fmt.Errorf("%w: no target replicas", kafka.ErrInvalidReplicaAssignment)
	}
	for i, id := range target {
		if slices.Index(target, id) != i {
			return fmt.Errorf("%w: node %d twice in %v", kafka.ErrInvalidReplicaAssignment, id, target)
		}
		if _, ok := c.nodes[id]; !ok {
			return fmt.Errorf("%w: node %d is not registered", kafka.ErrInvalidReplicaAssignment, id)
		}
	}
	return nil
}

// completeReassignment finishes the reassignment s is in once every
// target replica is in the ISR: the partition keeps the target replicas
// only, its ISR those of them in it, and a leader among them — the first
// live one in the ISR, in a new leader epoch, if it led elsewhere.
func (c *Machine) completeReassignment(s *replica.LeaderAndISR) {
	if s.AddingReplicas == nil && s.RemovingReplicas == nil {
		return
	}
	target := slices.DeleteFunc(slices.Clone(s.Replicas), func(id int32) bool { return slices.Contains(s.RemovingReplicas, id) })
	for _, id := range target {
		if !slices.Contains(s.ISR, id) {
			return
		}
	}
	s.Replicas, s.ISR = target, inOrder(target, s.ISR)
	s.AddingReplicas, s.RemovingReplicas = nil, nil
	c.leadAmongISR(s)
}

// leadAmongISR gives s, whose ISR is its replicas' and not empty, a leader
// among its replicas when its leader is not one any more: the first live
// ISR member, or none, in a new leader epoch.
func (c *Machine) leadAmongISR(s *replica.LeaderAndISR) {
	if slices.Contains(s.Replicas, s.Leader) {
		return
	}
	s.Leader = replica.NoLeader
	for _, id := range s.ISR {
		if c.live(id) {
			s.Leader = id
			break
		}
	}
	s.LeaderEpoch++
}

// inOrder returns the members of set in the order of order.
func inOrder(order, set []int32) []int32 {
	var out []int32
	for _, id := range order {
		if slices.Contains(set, id) {
			out = append(out, id)
		}
	}
	return out
}

// UnregisterNode removes node id from the cluster (Kafka's
// UnregisterBroker): a live node is fenced first, so that its leaderships
// move, and its registration goes. Partitions keep it among their replicas
// (offline) until they are reassigned.
func (c *Machine) UnregisterNode(id int32) error {
	n, ok := c.nodes[id]
	if !ok {
		return fmt.Errorf("%w: node %d", kafka.ErrBrokerIDNotRegistered, id)
	}
	var recs []Record
	if !n.Fenced {
		recs = c.fenceRecords(id)
	}
	return c.commit(append(recs, Record{Type: RecordUnregisterNode, Node: id}))
}
