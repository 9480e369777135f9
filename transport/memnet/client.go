package memnet

import (
	"context"

	"github.com/partlog/partlog/transport"
)

// The client forwards every request a transport.ClusterClient sends,
// group and transaction requests included, so that producers, consumers,
// consumer groups and transactions run over the network.

func (c client) Metadata(ctx context.Context, req *transport.MetadataRequest) (*transport.MetadataResponse, error) {
	return call(ctx, c, req, Endpoint.Metadata)
}

func (c client) Produce(ctx context.Context, req *transport.ProduceRequest) (*transport.ProduceResponse, error) {
	return call(ctx, c, req, Endpoint.Produce)
}

func (c client) Fetch(ctx context.Context, req *transport.FetchRequest) (*transport.FetchResponse, error) {
	return call(ctx, c, req, Endpoint.Fetch)
}

func (c client) ListOffsets(ctx context.Context, req *transport.ListOffsetsRequest) (*transport.ListOffsetsResponse, error) {
	return call(ctx, c, req, Endpoint.ListOffsets)
}

func (c client) InitProducerID(ctx context.Context, req *transport.InitProducerIDRequest) (*transport.InitProducerIDResponse, error) {
	return call(ctx, c, req, Endpoint.InitProducerID)
}

// A client forwards the group requests to its node too, so that a
// transport.ClusterClient over a MemNetwork runs consumer groups; a node
// that closed is unreachable (kafka.ErrNetwork), as for the other
// requests.

func (c client) FindCoordinator(ctx context.Context, req *transport.FindCoordinatorRequest) (*transport.FindCoordinatorResponse, error) {
	return call(ctx, c, req, Endpoint.FindCoordinator)
}

func (c client) JoinGroup(ctx context.Context, req *transport.JoinGroupRequest) (*transport.JoinGroupResponse, error) {
	return call(ctx, c, req, Endpoint.JoinGroup)
}

func (c client) SyncGroup(ctx context.Context, req *transport.SyncGroupRequest) (*transport.SyncGroupResponse, error) {
	return call(ctx, c, req, Endpoint.SyncGroup)
}

func (c client) Heartbeat(ctx context.Context, req *transport.HeartbeatRequest) (*transport.HeartbeatResponse, error) {
	return call(ctx, c, req, Endpoint.Heartbeat)
}

func (c client) LeaveGroup(ctx context.Context, req *transport.LeaveGroupRequest) (*transport.LeaveGroupResponse, error) {
	return call(ctx, c, req, Endpoint.LeaveGroup)
}

func (c client) OffsetCommit(ctx context.Context, req *transport.OffsetCommitRequest) (*transport.OffsetCommitResponse, error) {
	return call(ctx, c, req, Endpoint.OffsetCommit)
}

func (c client) OffsetFetch(ctx context.Context, req *transport.OffsetFetchRequest) (*transport.OffsetFetchResponse, error) {
	return call(ctx, c, req, Endpoint.OffsetFetch)
}

func (c client) DescribeGroups(ctx context.Context, req *transport.DescribeGroupsRequest) (*transport.DescribeGroupsResponse, error) {
	return call(ctx, c, req, Endpoint.DescribeGroups)
}

func (c client) ListGroups(ctx context.Context, req *transport.ListGroupsRequest) (*transport.ListGroupsResponse, error) {
	return call(ctx, c, req, Endpoint.ListGroups)
}

func (c client) DeleteGroups(ctx context.Context, req *transport.DeleteGroupsRequest) (*transport.DeleteGroupsResponse, error) {
	return call(ctx, c, req, Endpoint.DeleteGroups)
}

func (c client) AddPartitionsToTxn(ctx context.Context, req *transport.AddPartitionsToTxnRequest) (*transport.AddPartitionsToTxnResponse, error) {
	return call(ctx, c, req, Endpoint.AddPartitionsToTxn)
}

func (c client) AddOffsetsToTxn(ctx context.Context, req *transport.AddOffsetsToTxnRequest) (*transport.AddOffsetsToTxnResponse, error) {
	return call(ctx, c, req, Endpoint.AddOffsetsToTxn)
}

func (c client) EndTxn(ctx context.Context, req *transport.EndTxnRequest) (*transport.EndTxnResponse, error) {
	return call(ctx, c, req, Endpoint.EndTxn)
}

func (c client) WriteTxnMarkers(ctx context.Context, req *transport.WriteTxnMarkersRequest) (*transport.WriteTxnMarkersResponse, error) {
	return call(ctx, c, req, Endpoint.WriteTxnMarkers)
}

func (c client) TxnOffsetCommit(ctx context.Context, req *transport.TxnOffsetCommitRequest) (*transport.TxnOffsetCommitResponse, error) {
	return call(ctx, c, req, Endpoint.TxnOffsetCommit)
}

func (c client) DescribeTransactions(ctx context.Context, req *transport.DescribeTransactionsRequest) (*transport.DescribeTransactionsResponse, error) {
	return call(ctx, c, req, Endpoint.DescribeTransactions)
}

func (c client) ListTransactions(ctx context.Context, req *transport.ListTransactionsRequest) (*transport.ListTransactionsResponse, error) {
	return call(ctx, c, req, Endpoint.ListTransactions)
}
