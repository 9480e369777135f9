package partlog

import (
	"context"

	"github.com/partlog/partlog/transport"
)

// A memClient forwards the group requests to its node too, so that a
// transport.ClusterClient over a MemNetwork runs consumer groups; a node
// that closed is unreachable (transport.ErrNetwork), as for the other
// requests.

func (c memClient) FindCoordinator(ctx context.Context, req *transport.FindCoordinatorRequest) (*transport.FindCoordinatorResponse, error) {
	return memGroupCall(ctx, c, req, (*Node).FindCoordinator)
}

func (c memClient) JoinGroup(ctx context.Context, req *transport.JoinGroupRequest) (*transport.JoinGroupResponse, error) {
	return memGroupCall(ctx, c, req, (*Node).JoinGroup)
}

func (c memClient) SyncGroup(ctx context.Context, req *transport.SyncGroupRequest) (*transport.SyncGroupResponse, error) {
	return memGroupCall(ctx, c, req, (*Node).SyncGroup)
}

func (c memClient) Heartbeat(ctx context.Context, req *transport.HeartbeatRequest) (*transport.HeartbeatResponse, error) {
	return memGroupCall(ctx, c, req, (*Node).Heartbeat)
}

func (c memClient) LeaveGroup(ctx context.Context, req *transport.LeaveGroupRequest) (*transport.LeaveGroupResponse, error) {
	return memGroupCall(ctx, c, req, (*Node).LeaveGroup)
}

func (c memClient) OffsetCommit(ctx context.Context, req *transport.OffsetCommitRequest) (*transport.OffsetCommitResponse, error) {
	return memGroupCall(ctx, c, req, (*Node).OffsetCommit)
}

func (c memClient) OffsetFetch(ctx context.Context, req *transport.OffsetFetchRequest) (*transport.OffsetFetchResponse, error) {
	return memGroupCall(ctx, c, req, (*Node).OffsetFetch)
}

func (c memClient) DescribeGroups(ctx context.Context, req *transport.DescribeGroupsRequest) (*transport.DescribeGroupsResponse, error) {
	return memGroupCall(ctx, c, req, (*Node).DescribeGroups)
}

func (c memClient) ListGroups(ctx context.Context, req *transport.ListGroupsRequest) (*transport.ListGroupsResponse, error) {
	return memGroupCall(ctx, c, req, (*Node).ListGroups)
}

func (c memClient) DeleteGroups(ctx context.Context, req *transport.DeleteGroupsRequest) (*transport.DeleteGroupsResponse, error) {
	return memGroupCall(ctx, c, req, (*Node).DeleteGroups)
}

// memGroupCall calls a group method of the client's node.
func memGroupCall[Req, Resp any](ctx context.Context, c memClient, req Req, call func(*Node, context.Context, Req) (Resp, error)) (Resp, error) {
	n, err := c.node()
	if err != nil {
		var zero Resp
		return zero, err
	}
	return unreachable(call(n, ctx, req))
}
