package main

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/partlog/partlog/transport"
)

// nodeClient is what a member's consumer and producer use of a node: the
// requests of producing and fetching, of the group and of transactions.
type nodeClient interface {
	transport.TxnClient
	transport.GroupClient
}

// errProcessDead is what a request of a crashed member gets: no answer.
var errProcessDead = errors.New("no answer: the process is dead")

// link is a member's connection to the node, through which its consumer
// and its producer send every request. Crashing it is the member's
// process dying: from then on nothing the member's goroutines send
// reaches the node — no heartbeat, no fetch, no EndTxn, no LeaveGroup —
// and the node learns of the death only as Kafka does, from the silence:
// the group's session timeout and the transaction's timeout.
type link struct {
	node nodeClient
	dead atomic.Bool

	mu      sync.Mutex
	refused map[string]int // requests sent after the crash, by name
}

func newLink(node nodeClient) *link { return &link{node: node, refused: map[string]int{}} }

// crash cuts the link for good.
func (l *link) crash() { l.dead.Store(true) }

// refusedSummary says which requests the dead member's goroutines tried
// to send after the crash: "Heartbeat 9, Fetch 2", or "none".
func (l *link) refusedSummary() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.refused) == 0 {
		return "none"
	}
	var parts []string
	for _, name := range slices.Sorted(maps.Keys(l.refused)) {
		parts = append(parts, fmt.Sprintf("%s %d", name, l.refused[name]))
	}
	return strings.Join(parts, ", ")
}

// send passes a request on to the node, unless the process is dead.
func send[Req, Resp any](l *link, name string, call func(context.Context, *Req) (*Resp, error), ctx context.Context, req *Req) (*Resp, error) {
	if l.dead.Load() {
		l.mu.Lock()
		l.refused[name]++
		l.mu.Unlock()
		return nil, fmt.Errorf("%s: %w", name, errProcessDead)
	}
	return call(ctx, req)
}

// The requests of transport.Client.

func (l *link) Metadata(ctx context.Context, req *transport.MetadataRequest) (*transport.MetadataResponse, error) {
	return send(l, "Metadata", l.node.Metadata, ctx, req)
}

func (l *link) Produce(ctx context.Context, req *transport.ProduceRequest) (*transport.ProduceResponse, error) {
	return send(l, "Produce", l.node.Produce, ctx, req)
}

func (l *link) Fetch(ctx context.Context, req *transport.FetchRequest) (*transport.FetchResponse, error) {
	return send(l, "Fetch", l.node.Fetch, ctx, req)
}

func (l *link) ListOffsets(ctx context.Context, req *transport.ListOffsetsRequest) (*transport.ListOffsetsResponse, error) {
	return send(l, "ListOffsets", l.node.ListOffsets, ctx, req)
}

// The request of transport.ProducerIDClient.

func (l *link) InitProducerID(ctx context.Context, req *transport.InitProducerIDRequest) (*transport.InitProducerIDResponse, error) {
	return send(l, "InitProducerId", l.node.InitProducerID, ctx, req)
}

// The requests of transport.GroupClient.

func (l *link) FindCoordinator(ctx context.Context, req *transport.FindCoordinatorRequest) (*transport.FindCoordinatorResponse, error) {
	return send(l, "FindCoordinator", l.node.FindCoordinator, ctx, req)
}

func (l *link) JoinGroup(ctx context.Context, req *transport.JoinGroupRequest) (*transport.JoinGroupResponse, error) {
	return send(l, "JoinGroup", l.node.JoinGroup, ctx, req)
}

func (l *link) SyncGroup(ctx context.Context, req *transport.SyncGroupRequest) (*transport.SyncGroupResponse, error) {
	return send(l, "SyncGroup", l.node.SyncGroup, ctx, req)
}

func (l *link) Heartbeat(ctx context.Context, req *transport.HeartbeatRequest) (*transport.HeartbeatResponse, error) {
	return send(l, "Heartbeat", l.node.Heartbeat, ctx, req)
}

func (l *link) LeaveGroup(ctx context.Context, req *transport.LeaveGroupRequest) (*transport.LeaveGroupResponse, error) {
	return send(l, "LeaveGroup", l.node.LeaveGroup, ctx, req)
}

func (l *link) OffsetCommit(ctx context.Context, req *transport.OffsetCommitRequest) (*transport.OffsetCommitResponse, error) {
	return send(l, "OffsetCommit", l.node.OffsetCommit, ctx, req)
}

func (l *link) OffsetFetch(ctx context.Context, req *transport.OffsetFetchRequest) (*transport.OffsetFetchResponse, error) {
	return send(l, "OffsetFetch", l.node.OffsetFetch, ctx, req)
}

func (l *link) DescribeGroups(ctx context.Context, req *transport.DescribeGroupsRequest) (*transport.DescribeGroupsResponse, error) {
	return send(l, "DescribeGroups", l.node.DescribeGroups, ctx, req)
}

func (l *link) ListGroups(ctx context.Context, req *transport.ListGroupsRequest) (*transport.ListGroupsResponse, error) {
	return send(l, "ListGroups", l.node.ListGroups, ctx, req)
}

func (l *link) DeleteGroups(ctx context.Context, req *transport.DeleteGroupsRequest) (*transport.DeleteGroupsResponse, error) {
	return send(l, "DeleteGroups", l.node.DeleteGroups, ctx, req)
}

// The requests of transport.TxnClient.

func (l *link) AddPartitionsToTxn(ctx context.Context, req *transport.AddPartitionsToTxnRequest) (*transport.AddPartitionsToTxnResponse, error) {
	return send(l, "AddPartitionsToTxn", l.node.AddPartitionsToTxn, ctx, req)
}

func (l *link) AddOffsetsToTxn(ctx context.Context, req *transport.AddOffsetsToTxnRequest) (*transport.AddOffsetsToTxnResponse, error) {
	return send(l, "AddOffsetsToTxn", l.node.AddOffsetsToTxn, ctx, req)
}

func (l *link) EndTxn(ctx context.Context, req *transport.EndTxnRequest) (*transport.EndTxnResponse, error) {
	return send(l, "EndTxn", l.node.EndTxn, ctx, req)
}

func (l *link) WriteTxnMarkers(ctx context.Context, req *transport.WriteTxnMarkersRequest) (*transport.WriteTxnMarkersResponse, error) {
	return send(l, "WriteTxnMarkers", l.node.WriteTxnMarkers, ctx, req)
}

func (l *link) TxnOffsetCommit(ctx context.Context, req *transport.TxnOffsetCommitRequest) (*transport.TxnOffsetCommitResponse, error) {
	return send(l, "TxnOffsetCommit", l.node.TxnOffsetCommit, ctx, req)
}

func (l *link) DescribeTransactions(ctx context.Context, req *transport.DescribeTransactionsRequest) (*transport.DescribeTransactionsResponse, error) {
	return send(l, "DescribeTransactions", l.node.DescribeTransactions, ctx, req)
}

func (l *link) ListTransactions(ctx context.Context, req *transport.ListTransactionsRequest) (*transport.ListTransactionsResponse, error) {
	return send(l, "ListTransactions", l.node.ListTransactions, ctx, req)
}

// A link is what the consumer and the producer take.
var _ nodeClient = (*link)(nil)
