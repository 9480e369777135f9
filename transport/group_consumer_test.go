package transport

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/partlog/partlog/kafka"
)

// fakeConsumerGroupNode answers the consumer group protocol's APIs with
// what resp holds, and keeps the requests.
type fakeConsumerGroupNode struct {
	*fakeGroupNode
}

func (f fakeConsumerGroupNode) ConsumerGroupHeartbeat(_ context.Context, req *ConsumerGroupHeartbeatRequest) (*ConsumerGroupHeartbeatResponse, error) {
	return handle[ConsumerGroupHeartbeatResponse](f.fakeGroupNode, "heartbeat", req), nil
}

func (f fakeConsumerGroupNode) ConsumerGroupDescribe(_ context.Context, req *ConsumerGroupDescribeRequest) (*ConsumerGroupDescribeResponse, error) {
	return handle[ConsumerGroupDescribeResponse](f.fakeGroupNode, "describe", req), nil
}

// TestTCPConsumerGroup carries ConsumerGroupHeartbeat and
// ConsumerGroupDescribe both ways over TCP: every field of the request
// reaches the handler as sent (nil fields stay nil: "unchanged"), with
// the client id and address the server fills in, and
// every field of the answer reaches the client, errors as their sentinels.
func TestTCPConsumerGroup(t *testing.T) {
	topic := [16]byte{1, 2, 3}
	f := fakeConsumerGroupNode{&fakeGroupNode{resp: map[string]any{
		"heartbeat": &ConsumerGroupHeartbeatResponse{MemberID: "m1", MemberEpoch: 7, HeartbeatIntervalMillis: 5000,
			Assignment: []TopicIDPartitions{{TopicID: topic, Partitions: []int32{0, 2}}}},
		"describe": &ConsumerGroupDescribeResponse{Groups: []ConsumerGroupDescription{
			{Group: "g", State: "Stable", Epoch: 7, AssignmentEpoch: 7, AssignorName: "uniform", Members: []ConsumerGroupMemberDescription{{
				MemberID: "m1", InstanceID: "i1", MemberEpoch: 7, ClientID: "c", ClientHost: "/127.0.0.1",
				SubscribedTopicNames: []string{"t"}, Assignment: []TopicIDPartitions{{TopicID: topic, Partitions: []int32{0, 2}}},
				TargetAssignment: []TopicIDPartitions{{TopicID: topic, Partitions: []int32{0, 2}}}}}},
			{Group: "gone", Err: kafka.ErrGroupIDNotFound},
		}},
	}}}
	_, addr := serve(t, f, ServerOptions{})
	c := dial(t, addr)
	ctx := context.Background()
	assignor, instance := "uniform", "i1"
	req := &ConsumerGroupHeartbeatRequest{Group: "g", MemberID: "m1", MemberEpoch: 0, InstanceID: &instance, RebalanceTimeoutMillis: 30000,
		SubscribedTopicNames: []string{"t"}, ServerAssignor: &assignor, Owned: []TopicIDPartitions{}}
	resp, err := c.ConsumerGroupHeartbeat(ctx, req)
	require.NoError(t, err)
	require.Equal(t, &ConsumerGroupHeartbeatResponse{MemberID: "m1", MemberEpoch: 7, HeartbeatIntervalMillis: 5000,
		Assignment: []TopicIDPartitions{{TopicID: topic, Partitions: []int32{0, 2}}}}, resp)
	// A keepalive: nothing changed, every optional field nil.
	_, err = c.ConsumerGroupHeartbeat(ctx, &ConsumerGroupHeartbeatRequest{Group: "g", MemberID: "m1", MemberEpoch: 7, RebalanceTimeoutMillis: -1})
	require.NoError(t, err)
	got := f.got
	// The server fills in who sent it.
	req.ClientID, req.ClientHost = "partlog", "127.0.0.1"
	require.Equal(t, req, got[0])
	require.Equal(t, &ConsumerGroupHeartbeatRequest{Group: "g", MemberID: "m1", MemberEpoch: 7, RebalanceTimeoutMillis: -1,
		ClientID: "partlog", ClientHost: "127.0.0.1"}, got[1])

	described, err := c.ConsumerGroupDescribe(ctx, &ConsumerGroupDescribeRequest{Groups: []string{"g", "gone"}})
	require.NoError(t, err)
	require.Len(t, described.Groups, 2)
	require.Equal(t, f.resp["describe"].(*ConsumerGroupDescribeResponse).Groups[0], described.Groups[0])
	require.ErrorIs(t, described.Groups[1].Err, kafka.ErrGroupIDNotFound)
}
