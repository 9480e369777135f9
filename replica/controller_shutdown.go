package replica

import (
	"fmt"

	"github.com/partlog/partlog/transport"
)

// ShutdownNode fences node id at once, in brokerEpoch, as Kafka's
// controller does for a broker's controlled shutdown: the leadership of its
// partitions moves to other ISR members now, not a session timeout later,
// and it leaves the ISRs (never emptying one). A node already fenced, or
// registered since in another broker epoch, changes nothing. The node
// unfences by heartbeating again in the same broker epoch, or by
// registering anew.
func (c *LocalController) ShutdownNode(id int32, brokerEpoch int64) error {
	n, ok := c.nodes[id]
	switch {
	case !ok:
		return fmt.Errorf("%w: node %d", transport.ErrBrokerIDNotRegistered, id)
	case n.BrokerEpoch != brokerEpoch:
		return fmt.Errorf("%w: node %d shutting down in broker epoch %d, registered in %d",
			transport.ErrStaleBrokerEpoch, id, brokerEpoch, n.BrokerEpoch)
	case n.Fenced:
		return nil
	}
	return c.commit(c.fenceRecords(id))
}
