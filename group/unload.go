package group

import (
	"fmt"

	"github.com/partlog/partlog/kafka"
)

// Unload forgets the groups of one partition of __consumer_offsets, as
// Kafka's coordinator does when its node stops leading the partition: the
// JoinGroup and SyncGroup calls that wait in those groups are answered
// with kafka.ErrNotCoordinator, so that their members find the new
// coordinator. The groups of other partitions are left as they are. Load
// the partition again to coordinate its groups once more.
func (c *Coordinator) Unload(partition int32) {
	c.mu.Lock()
	defer c.mu.Unlock()
	err := fmt.Errorf("%w: %s-%d moved to another coordinator", kafka.ErrNotCoordinator, OffsetsTopic, partition)
	for id, g := range c.groups {
		if g.partition != partition {
			continue
		}
		for _, m := range g.members {
			m.failWaits(err)
		}
		delete(c.groups, id)
	}
	delete(c.pending, partition)
}
