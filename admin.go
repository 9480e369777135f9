package partlog

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/partlog/partlog/transport"
)

// The Node answers the admin requests too, so that the topic tools work
// over TCP.
var _ transport.AdminClient = (*Node)(nil)

// CreateTopics creates each topic as CreateTopic does and answers topic by
// topic. ValidateOnly is refused (INVALID_REQUEST) rather than ignored.
func (n *Node) CreateTopics(ctx context.Context, req *transport.CreateTopicsRequest) (*transport.CreateTopicsResponse, error) {
	if err := n.begin(); err != nil {
		return nil, err
	}
	n.end()
	resp := &transport.CreateTopicsResponse{}
	for _, t := range req.Topics {
		res := transport.TopicResult{Name: t.Name}
		switch {
		case req.ValidateOnly:
			res.Err = fmt.Errorf("%w: validate_only is not supported", transport.ErrInvalidRequest)
		case t.Partitions == 0 || t.Partitions < -1:
			res.Err = fmt.Errorf("%w: %d partitions; a topic has at least 1 (-1 asks for the default)", transport.ErrInvalidPartitions, t.Partitions)
		case t.ReplicationFactor == 0 || t.ReplicationFactor < -1:
			res.Err = fmt.Errorf("%w: replication factor %d; at least 1 (-1 asks for the default)", transport.ErrInvalidReplicationFactor, t.ReplicationFactor)
		default:
			// NewTopic's zero is the default that -1 asks for.
			res.Err = n.CreateTopic(ctx, NewTopic{Name: t.Name, Partitions: max(t.Partitions, 0),
				ReplicationFactor: max(t.ReplicationFactor, 0), Configs: t.Configs})
		}
		resp.Topics = append(resp.Topics, res)
	}
	return resp, nil
}

// DeleteTopics deletes each topic as DeleteTopic does and answers topic by
// topic.
func (n *Node) DeleteTopics(ctx context.Context, req *transport.DeleteTopicsRequest) (*transport.DeleteTopicsResponse, error) {
	if err := n.begin(); err != nil {
		return nil, err
	}
	n.end()
	resp := &transport.DeleteTopicsResponse{}
	for _, name := range req.Topics {
		resp.Topics = append(resp.Topics, transport.TopicResult{Name: name, Err: n.DeleteTopic(ctx, name)})
	}
	return resp, nil
}

// DescribeConfigs answers every config in force for each topic, sorted by
// name, marking those the topic does not set as defaults.
func (n *Node) DescribeConfigs(ctx context.Context, req *transport.DescribeConfigsRequest) (*transport.DescribeConfigsResponse, error) {
	if err := n.begin(); err != nil {
		return nil, err
	}
	defer n.end()
	resp := &transport.DescribeConfigsResponse{}
	for _, name := range req.Topics {
		tc := transport.TopicConfigs{Name: name}
		var effective, own map[string]string
		if t := n.topic(name); t != nil {
			effective, own = t.config.values, t.rec.Configs
		} else if n.cluster != nil {
			effective, own = n.cluster.topicConfigs(name)
		}
		if effective == nil {
			tc.Err = fmt.Errorf("%w: %q", transport.ErrUnknownTopicOrPartition, name)
			resp.Topics = append(resp.Topics, tc)
			continue
		}
		// The topic's configs only: not DescribeTopics, which also
		// measures every partition's log.
		for _, k := range slices.Sorted(maps.Keys(effective)) {
			_, set := own[k]
			tc.Configs = append(tc.Configs, transport.ConfigEntry{Name: k, Value: effective[k], IsDefault: !set})
		}
		resp.Topics = append(resp.Topics, tc)
	}
	return resp, nil
}
