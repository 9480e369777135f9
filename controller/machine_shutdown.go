package controller

// ShutdownNode fences node id at once, in brokerEpoch, as Kafka's
// controller does for a broker's controlled shutdown: the leadership of its
// partitions moves to other ISR members now, not a session timeout later,
// and it leaves the ISRs (never emptying one). A node already fenced, or
// registered since in another broker epoch, changes nothing. The node
// unfences by heartbeating again in the same broker epoch, or by
// registering anew.
func (c *Machine) ShutdownNode(id int32, brokerEpoch int64) error {
	n, err := c.registered(id, brokerEpoch, "shutting down")
	if err != nil || n.Fenced {
		return err
	}
	return c.commit(c.fenceRecords(id))
}
