package broker

import (
	"context"
	"strconv"
	"time"

	"github.com/partlog/partlog/kafka"
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
	hws := map[kafka.TopicPartition]int64{}
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
			if p.HighWatermark >= 0 {
				hws[kafka.TopicPartition{Topic: t.Name, Partition: p.Partition}] = p.HighWatermark
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
	s.GroupLag = n.groupLag(hws)
	return s
}

// groupLag returns the lag of the groups this node coordinates on the
// partitions whose high watermarks hws gives.
func (n *Broker) groupLag(hws map[kafka.TopicPartition]int64) []metrics.GroupLag {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	groups, err := n.ListGroups(ctx, &transport.ListGroupsRequest{})
	if err != nil || groups.Err != nil {
		return nil
	}
	var lags []metrics.GroupLag
	for _, g := range groups.Groups {
		offsets, err := n.OffsetFetch(ctx, &transport.OffsetFetchRequest{Group: g.Group})
		if err != nil || offsets.Err != nil {
			continue
		}
		for _, t := range offsets.Topics {
			for _, p := range t.Partitions {
				hw, ok := hws[kafka.TopicPartition{Topic: t.Topic, Partition: p.Partition}]
				if !ok || p.Err != nil || p.Offset < 0 {
					continue
				}
				lags = append(lags, metrics.GroupLag{Group: g.Group, Topic: t.Topic, Partition: p.Partition, Lag: max(hw-p.Offset, 0)})
			}
		}
	}
	return lags
}
