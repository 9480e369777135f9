package main

import (
	"context"
	"errors"

	"github.com/partlog/partlog/consumer"
	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/transport"
)

// describeConsumerProtocol describes group with ConsumerGroupDescribe,
// in the shape DescribeGroups gives a classic group (the assignments
// encoded as the consumer protocol encodes them), so that the rest of
// describe serves both, as Kafka's tool prints both alike. ok is false when the group is not one of the
// consumer protocol, or the target cannot say.
func describeConsumerProtocol(ctx context.Context, n groupTarget, group string) (g transport.DescribedGroup, ok bool, err error) {
	cg, isCG := n.GroupClient.(transport.ConsumerGroupClient)
	if !isCG {
		return g, false, nil
	}
	resp, err := cg.ConsumerGroupDescribe(ctx, &transport.ConsumerGroupDescribeRequest{Groups: []string{group}})
	if err != nil || len(resp.Groups) == 0 {
		return g, false, nil // an older node: DescribeGroups says
	}
	d := resp.Groups[0]
	if errors.Is(d.Err, kafka.ErrGroupIDNotFound) || errors.Is(d.Err, kafka.ErrUnsupportedVersion) {
		return g, false, nil
	}
	if d.Err != nil {
		return g, false, d.Err
	}
	names, err := topicNamesByID(ctx, n)
	if err != nil {
		return g, false, err
	}
	g = transport.DescribedGroup{Group: group, State: d.State, ProtocolType: consumer.ProtocolType, Protocol: d.AssignorName}
	for _, m := range d.Members {
		var a consumer.Assignment
		for _, t := range m.Assignment {
			for _, p := range t.Partitions {
				a.Partitions = append(a.Partitions, kafka.TopicPartition{Topic: names[t.TopicID], Partition: p})
			}
		}
		g.Members = append(g.Members, transport.DescribedMember{
			MemberID: m.MemberID, GroupInstanceID: m.InstanceID, ClientID: m.ClientID, ClientHost: m.ClientHost,
			Assignment: a.Encode(),
		})
	}
	return g, true, nil
}

// topicNamesByID returns every topic's name by its id.
func topicNamesByID(ctx context.Context, n groupTarget) (map[[16]byte]string, error) {
	md, err := n.client().Metadata(ctx, &transport.MetadataRequest{})
	if err != nil {
		return nil, err
	}
	names := map[[16]byte]string{}
	for _, t := range md.Topics {
		if t.Err == nil {
			names[t.TopicID] = t.Topic
		}
	}
	return names, nil
}
