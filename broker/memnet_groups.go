package broker

import (
	"context"

	"github.com/partlog/partlog/transport"
)

// A memClient forwards the group requests to its node too, so that a
// transport.ClusterClient over a MemNetwork runs consumer groups; a node
// that closed is unreachable (kafka.ErrNetwork), as for the other
// requests.

func (c memClient) FindCoordinator(ctx context.Context, req *transport.FindCoordinatorRequest) (*transport.FindCoordinatorResponse, error) {
	return memCall(ctx, c, req, (*Broker).FindCoordinator)
}

func (c memClient) JoinGroup(ctx context.Context, req *transport.JoinGroupRequest) (*transport.JoinGroupResponse, error) {
	return memCall(ctx, c, req, (*Broker).JoinGroup)
}

func (c memClient) SyncGroup(ctx context.Context, req *transport.SyncGroupRequest) (*transport.SyncGroupResponse, error) {
	return memCall(ctx, c, req, (*Broker).SyncGroup)
}

func (c memClient) Heartbeat(ctx context.Context, req *transport.HeartbeatRequest) (*transport.HeartbeatResponse, error) {
	return memCall(ctx, c, req, (*Broker).Heartbeat)
}

func (c memClient) LeaveGroup(ctx context.Context, req *transport.LeaveGroupRequest) (*transport.LeaveGroupResponse, error) {
	return memCall(ctx, c, req, (*Broker).LeaveGroup)
}

func (c memClient) OffsetCommit(ctx context.Context, req *transport.OffsetCommitRequest) (*transport.OffsetCommitResponse, error) {
	return memCall(ctx, c, req, (*Broker).OffsetCommit)
}

func (c memClient) OffsetFetch(ctx context.Context, req *transport.OffsetFetchRequest) (*transport.OffsetFetchResponse, error) {
	return memCall(ctx, c, req, (*Broker).OffsetFetch)
}

func (c memClient) DescribeGroups(ctx context.Context, req *transport.DescribeGroupsRequest) (*transport.DescribeGroupsResponse, error) {
	return memCall(ctx, c, req, (*Broker).DescribeGroups)
}

func (c memClient) ListGroups(ctx context.Context, req *transport.ListGroupsRequest) (*transport.ListGroupsResponse, error) {
	return memCall(ctx, c, req, (*Broker).ListGroups)
}

func (c memClient) DeleteGroups(ctx context.Context, req *transport.DeleteGroupsRequest) (*transport.DeleteGroupsResponse, error) {
	return memCall(ctx, c, req, (*Broker).DeleteGroups)
}
