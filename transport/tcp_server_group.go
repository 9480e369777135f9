package transport

// tcp_server_group.go answers the group coordinator's requests for a
// handler that is a GroupClient.

import (
	"context"
	"fmt"

	"github.com/partlog/partlog/kafka"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// isGroupRequest reports whether req is one of GroupClient's.
func isGroupRequest(req kmsg.Request) bool {
	switch req.(type) {
	case *kmsg.FindCoordinatorRequest, *kmsg.JoinGroupRequest, *kmsg.SyncGroupRequest, *kmsg.HeartbeatRequest,
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
	case *kmsg.FindCoordinatorRequest:
		reqs := findCoordinatorFromWire(req)
		if len(reqs) == 0 {
			return nil, fmt.Errorf("%w: FindCoordinator names no key", kafka.ErrInvalidRequest)
		}
		resps := make([]*FindCoordinatorResponse, len(reqs))
		for i, r := range reqs {
			resp, err := gc.FindCoordinator(ctx, r)
			if err != nil {
				return nil, err
			}
			fillCoordinator(resp, p.advertised)
			resps[i] = resp
		}
		return findCoordinatorResponseToWire(reqs, resps, version), nil
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
		if len(reqs) == 0 {
			return nil, fmt.Errorf("%w: OffsetFetch names no group", kafka.ErrInvalidRequest)
		}
		resps := make([]*OffsetFetchResponse, len(reqs))
		for i, r := range reqs {
			resp, err := gc.OffsetFetch(ctx, r)
			if err != nil {
				return nil, err
			}
			resps[i] = resp
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
