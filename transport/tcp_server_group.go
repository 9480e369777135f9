package transport

// tcp_server_group.go answers the group coordinator's requests for a
// handler that is a GroupClient, and FindCoordinator for one that is a
// GroupClient or a TxnClient.

import (
	"context"
	"fmt"

	"github.com/partlog/partlog/kafka"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// isGroupRequest reports whether req is one of GroupClient's, but for
// FindCoordinator, which TxnClient shares.
func isGroupRequest(req kmsg.Request) bool {
	switch req.(type) {
	case *kmsg.JoinGroupRequest, *kmsg.SyncGroupRequest, *kmsg.HeartbeatRequest,
		*kmsg.LeaveGroupRequest, *kmsg.OffsetCommitRequest, *kmsg.OffsetFetchRequest, *kmsg.DescribeGroupsRequest,
		*kmsg.ListGroupsRequest, *kmsg.DeleteGroupsRequest:
		return true
	}
	return false
}

// dispatchGroup calls a GroupClient handler for one decoded request with
// header h, from the client at p.
//
// A JoinGroup or SyncGroup may wait for the other members, up to the
// rebalance timeout; the connection answers nothing else meanwhile, so
// clients send them on a connection of their own.
func (s *Server) dispatchGroup(ctx context.Context, gc GroupClient, req kmsg.Request, h requestHeader, p peer) (kmsg.Response, error) {
	version := h.apiVersion
	switch req := req.(type) {
	case *kmsg.JoinGroupRequest:
		r := joinGroupFromWire(req)
		r.ClientID, r.ClientHost = deref(h.clientID), p.clientHost
		return answerWith(ctx, gc.JoinGroup, r, joinGroupResponseToWire, version)
	case *kmsg.SyncGroupRequest:
		return answerWith(ctx, gc.SyncGroup, syncGroupFromWire(req), syncGroupResponseToWire, version)
	case *kmsg.HeartbeatRequest:
		return answerWith(ctx, gc.Heartbeat, heartbeatFromWire(req), heartbeatResponseToWire, version)
	case *kmsg.LeaveGroupRequest:
		return answerWith(ctx, gc.LeaveGroup, leaveGroupFromWire(req), leaveGroupResponseToWire, version)
	case *kmsg.OffsetCommitRequest:
		return answerWith(ctx, gc.OffsetCommit, offsetCommitFromWire(req), offsetCommitResponseToWire, version)
	case *kmsg.OffsetFetchRequest:
		reqs := offsetFetchFromWire(req)
		resps, err := askEach(ctx, "OffsetFetch names no group", reqs, gc.OffsetFetch)
		if err != nil {
			return nil, err
		}
		return offsetFetchResponseToWire(reqs, resps, version), nil
	case *kmsg.DescribeGroupsRequest:
		return answerWith(ctx, gc.DescribeGroups, describeGroupsFromWire(req), describeGroupsResponseToWire, version)
	case *kmsg.ListGroupsRequest:
		return answerWith(ctx, gc.ListGroups, listGroupsFromWire(req), listGroupsResponseToWire, version)
	case *kmsg.DeleteGroupsRequest:
		return answerWith(ctx, gc.DeleteGroups, deleteGroupsFromWire(req), deleteGroupsResponseToWire, version)
	}
	return nil, fmt.Errorf("%w: %s is not supported", kafka.ErrInvalidRequest, kmsg.NameForKey(req.Key()))
}

// coordinatorFinder answers FindCoordinator: GroupClient and TxnClient
// share the method.
type coordinatorFinder interface {
	FindCoordinator(ctx context.Context, req *FindCoordinatorRequest) (*FindCoordinatorResponse, error)
}

// findCoordinator answers a FindCoordinator from the client at p, asking
// the handler once for each key (many from version 4).
func findCoordinator(ctx context.Context, fc coordinatorFinder, req *kmsg.FindCoordinatorRequest, version int16, p peer) (kmsg.Response, error) {
	reqs := findCoordinatorFromWire(req)
	call := fc.FindCoordinator
	if CoordinatorType(req.CoordinatorType) == CoordinatorShare && version < firstShareFindCoordinator {
		call = shareKeyTooOld
	}
	resps, err := askEach(ctx, "FindCoordinator names no key", reqs, call)
	if err != nil {
		return nil, err
	}
	for _, resp := range resps {
		fillCoordinator(resp, p.advertised)
	}
	return findCoordinatorResponseToWire(reqs, resps, version), nil
}

// askEach asks call about each of reqs, in order, and returns the answers,
// or the first error: a Kafka request batched over keys (FindCoordinator,
// OffsetFetch) that partlog's handlers take one at a time. No reqs is a
// malformed request, which none says why.
func askEach[Req, Resp any](ctx context.Context, none string, reqs []Req, call func(context.Context, Req) (Resp, error)) ([]Resp, error) {
	if len(reqs) == 0 {
		return nil, fmt.Errorf("%w: %s", kafka.ErrInvalidRequest, none)
	}
	resps := make([]Resp, len(reqs))
	for i, r := range reqs {
		resp, err := call(ctx, r)
		if err != nil {
			return nil, err
		}
		resps[i] = resp
	}
	return resps, nil
}

// fillCoordinator gives a FindCoordinator answer that names a coordinator
// without an address the server's: a single node does not know its
// listener.
func fillCoordinator(resp *FindCoordinatorResponse, advertised string) {
	if resp.Err != nil || resp.Host != "" {
		return
	}
	if host, port, ok := splitAdvertised(advertised); ok {
		resp.Host, resp.Port = host, port
	}
}
