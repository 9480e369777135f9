package broker

import (
	"strconv"

	"github.com/partlog/partlog/metrics"
	"github.com/partlog/partlog/record"
	"github.com/partlog/partlog/transport"
)

// Metrics returns the node's metrics (see package metrics): their
// Registry to scrape, and the transport.RequestObserver a server of the
// node reports its requests to.
func (n *Broker) Metrics() *metrics.Node { return n.metrics }

// produced counts a client's batch appended to topic.
func (n *Broker) produced(topic string, batch []byte) {
	records := 0
	if h, err := record.ParseHeader(batch); err == nil {
		records = int(h.NumRecords)
	}
	n.metrics.Produced(topic, len(batch), records)
}

// fetched counts the record bytes of a fetch's answer, by topic.
func (n *Broker) fetched(resp *transport.FetchResponse) {
	for _, t := range resp.Topics {
		bytes := 0
		for _, p := range t.Partitions {
			bytes += len(p.Records) + int(p.File.Size)
		}
		n.metrics.Fetched(t.Topic, bytes)
	}
}

// metricsState reads the node's partitions for a scrape of its metrics.
func (n *Broker) metricsState() metrics.State {
	var s metrics.State
	if c := n.controller; c != nil && c.Active() {
		s.ActiveController = true
	}
	topics, err := n.DescribeTopics()
	if err != nil {
		return s // closed
	}
	self := n.meta.NodeID
	for _, t := range topics {
		minISR, _ := strconv.Atoi(t.Effective["min.insync.replicas"])
		for _, p := range t.Partitions {
			hosted := false
			for _, r := range p.Replicas {
				hosted = hosted || r == self
			}
			if !hosted {
				continue
			}
			s.Partitions++
			if p.Leader < 0 || p.Offline != nil {
				s.Offline++
			}
			if p.Leader != self {
				continue
			}
			s.Leaders++
			if len(p.ISR) < len(p.Replicas) {
				s.UnderReplicated++
			}
			if len(p.ISR) < minISR {
				s.UnderMinISR++
			}
		}
	}
	return s
}
