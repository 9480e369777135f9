package broker

import (
	"context"
	"maps"
	"slices"

	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/transport"
)

// The Broker forwards reassignments and unregistrations to the active
// controller, as a KRaft broker forwards admin requests (KIP-590).
var _ transport.ClusterAdminClient = (*Broker)(nil)

// AlterPartitionReassignments moves partitions' replicas to other nodes,
// or cancels a move (nil Replicas), through the controller (see
// controller.Machine.ReassignPartition), and answers once this node has the
// metadata that records each: the new replicas then catch up, and the old
// ones are deleted once the new ones are all in the ISR.
func (n *Broker) AlterPartitionReassignments(ctx context.Context, req *transport.AlterPartitionReassignmentsRequest) (*transport.AlterPartitionReassignmentsResponse, error) {
	if err := n.begin(); err != nil {
		return nil, err
	}
	n.end()
	resp := &transport.AlterPartitionReassignmentsResponse{}
	for _, p := range req.Partitions {
		err := n.awaitChange(ctx)(n.member.ctl.ReassignPartition(ctx, p.TopicPartition, p.Replicas))
		resp.Partitions = append(resp.Partitions, transport.ReassignmentResult{TopicPartition: p.TopicPartition, Err: err})
	}
	return resp, nil
}

// ListPartitionReassignments lists the partitions being reassigned, of
// those asked about (all when Partitions is nil), from the metadata this
// node has.
func (n *Broker) ListPartitionReassignments(ctx context.Context, req *transport.ListPartitionReassignmentsRequest) (*transport.ListPartitionReassignmentsResponse, error) {
	if err := n.begin(); err != nil {
		return nil, err
	}
	defer n.end()
	md, _ := n.member.metadata()
	resp := &transport.ListPartitionReassignmentsResponse{}
	for _, name := range slices.Sorted(maps.Keys(md.Topics)) {
		for p, s := range md.Topics[name].Partitions {
			tp := kafka.TopicPartition{Topic: name, Partition: int32(p)}
			if s.AddingReplicas == nil && s.RemovingReplicas == nil || req.Partitions != nil && !slices.Contains(req.Partitions, tp) {
				continue
			}
			resp.Reassignments = append(resp.Reassignments, transport.OngoingReassignment{TopicPartition: tp,
				Replicas: slices.Clone(s.Replicas), AddingReplicas: slices.Clone(s.AddingReplicas), RemovingReplicas: slices.Clone(s.RemovingReplicas)})
		}
	}
	return resp, nil
}

// UnregisterBroker removes a node from the cluster through the controller
// (see controller.Machine.UnregisterNode).
func (n *Broker) UnregisterBroker(ctx context.Context, req *transport.UnregisterBrokerRequest) (*transport.UnregisterBrokerResponse, error) {
	if err := n.begin(); err != nil {
		return nil, err
	}
	n.end()
	return &transport.UnregisterBrokerResponse{Err: n.awaitChange(ctx)(n.member.ctl.UnregisterNode(ctx, req.BrokerID))}, nil
}
