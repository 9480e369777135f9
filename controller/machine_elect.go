package controller

import (
	"fmt"
	"slices"

	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/replica"
)

// ElectReplica moves the leadership of tp to node id, which must be an
// unfenced member of its ISR, in a new leader epoch: the election a
// controlled shutdown or a reassignment makes, which ElectPreferredLeaders
// makes only for the first replica. The leader epoch grows even when id
// already leads, so that its followers start over from a new epoch. It
// refuses any other node with kafka.ErrIneligibleReplica.
func (c *Machine) ElectReplica(tp kafka.TopicPartition, id int32) (replica.LeaderAndISR, error) {
	cur, err := c.Partition(tp)
	if err != nil {
		return replica.LeaderAndISR{}, err
	}
	if !c.live(id) || !slices.Contains(cur.ISR, id) {
		return replica.LeaderAndISR{}, fmt.Errorf("%w: %s: node %d is fenced or outside the ISR %v",
			kafka.ErrIneligibleReplica, tp, id, cur.ISR)
	}
	s := cur.Clone()
	s.Leader = id
	s.LeaderEpoch++
	s.PartitionEpoch++
	if err := c.commit([]Record{partitionRecord(tp, s)}); err != nil {
		return replica.LeaderAndISR{}, err
	}
	return s.Clone(), nil
}
