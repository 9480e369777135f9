package transport

// tcp_client_group.go makes TCPClient a GroupClient and a
// ProducerIDClient.

import (
	"context"
	"fmt"

	"github.com/partlog/partlog/kafka"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// maxIdleGroupConns is how many idle connections for waiting group calls
// a client keeps; more are closed once their call is answered.
const maxIdleGroupConns = 4

// groupConn returns a connection on which nothing else waits, for a group
// call that may wait for the rest of the group: an idle one of the pool,
// or a new one. A node answers a connection's requests one at a time, so
// two members of a group sharing a client, each waiting in JoinGroup for
// the other, need a connection each. Give it back with putGroupConn.
func (c *TCPClient) groupConn(ctx context.Context) (*wireConn, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, kafka.ErrClosed
	}
	for wc, idle := range c.groupConns {
		if wc.dead() {
			delete(c.groupConns, wc)
			continue
		}
		if idle {
			c.groupConns[wc] = false
			return wc, nil
		}
	}
	wc, err := c.redial(ctx, connGroup)
	if err != nil {
		return nil, err
	}
	if c.groupConns == nil {
		c.groupConns = map[*wireConn]bool{}
	}
	c.groupConns[wc] = false
	return wc, nil
}

// putGroupConn gives back a connection from groupConn. One whose call got
// no answer (ctx ended while it waited) is closed: its answer would still
// come, and hold up the next call.
func (c *TCPClient) putGroupConn(wc *wireConn, answered bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	idle := 0
	for _, i := range c.groupConns {
		if i {
			idle++
		}
	}
	if c.closed || !answered || wc.dead() || idle >= maxIdleGroupConns {
		delete(c.groupConns, wc)
		wc.fail(fmt.Errorf("%w: connection closed by the client", kafka.ErrNetwork))
		return
	}
	c.groupConns[wc] = true
}

// sendWaiting sends a request that may wait for the rest of the group on a
// connection of its own, in a header f makes.
func (c *TCPClient) sendWaiting(ctx context.Context, f *kmsg.RequestFormatter, req kmsg.Request) (kmsg.Response, error) {
	wc, err := c.groupConn(ctx)
	if err != nil {
		return nil, err
	}
	resp, err := wc.requestAs(ctx, f, req)
	c.putGroupConn(wc, err == nil)
	return resp, err
}

// FindCoordinator sends a FindCoordinator request.
func (c *TCPClient) FindCoordinator(ctx context.Context, req *FindCoordinatorRequest) (*FindCoordinatorResponse, error) {
	v, err := c.version(10)
	if err != nil {
		return nil, err
	}
	resp, err := c.send(ctx, connOther, findCoordinatorToWire(req, v))
	if err != nil {
		return nil, err
	}
	return findCoordinatorResponseFromWire(resp.(*kmsg.FindCoordinatorResponse), req.Key), nil
}

// JoinGroup sends a JoinGroup request on a connection of its own, as the
// answer waits for the rest of the group. The request's ClientID goes in
// the request header (the client's own when empty); ClientHost does not
// travel: the node sees the connection's address.
func (c *TCPClient) JoinGroup(ctx context.Context, req *JoinGroupRequest) (*JoinGroupResponse, error) {
	v, err := c.version(11)
	if err != nil {
		return nil, err
	}
	f := c.fmt
	if req.ClientID != "" && req.ClientID != c.opts.ClientID {
		f = kmsg.NewRequestFormatter(kmsg.FormatterClientID(req.ClientID))
	}
	resp, err := c.sendWaiting(ctx, f, joinGroupToWire(req, v))
	if err != nil {
		return nil, err
	}
	return joinGroupResponseFromWire(resp.(*kmsg.JoinGroupResponse)), nil
}

// SyncGroup sends a SyncGroup request on a connection of its own, as the
// answer of a member that is not the leader waits for the leader's.
func (c *TCPClient) SyncGroup(ctx context.Context, req *SyncGroupRequest) (*SyncGroupResponse, error) {
	v, err := c.version(14)
	if err != nil {
		return nil, err
	}
	resp, err := c.sendWaiting(ctx, c.fmt, syncGroupToWire(req, v))
	if err != nil {
		return nil, err
	}
	return syncGroupResponseFromWire(resp.(*kmsg.SyncGroupResponse)), nil
}

// Heartbeat sends a Heartbeat request.
func (c *TCPClient) Heartbeat(ctx context.Context, req *HeartbeatRequest) (*HeartbeatResponse, error) {
	return roundTrip(ctx, c, connOther, 12, req, heartbeatToWire, heartbeatResponseFromWire)
}

// LeaveGroup sends a LeaveGroup request. To a node that speaks only
// versions before 3, it can name only one member, by member id, else it
// fails with kafka.ErrUnsupportedVersion.
func (c *TCPClient) LeaveGroup(ctx context.Context, req *LeaveGroupRequest) (*LeaveGroupResponse, error) {
	v, err := c.version(13)
	if err != nil {
		return nil, err
	}
	if !leaveGroupFits(req, v) {
		return nil, fmt.Errorf("%w: LeaveGroup v%d names one member, by member id", kafka.ErrUnsupportedVersion, v)
	}
	resp, err := c.send(ctx, connOther, leaveGroupToWire(req, v))
	if err != nil {
		return nil, err
	}
	return leaveGroupResponseFromWire(req, resp.(*kmsg.LeaveGroupResponse)), nil
}

// OffsetCommit sends an OffsetCommit request.
func (c *TCPClient) OffsetCommit(ctx context.Context, req *OffsetCommitRequest) (*OffsetCommitResponse, error) {
	return roundTrip(ctx, c, connOther, 8, req, offsetCommitToWire, offsetCommitResponseFromWire)
}

// OffsetFetch sends an OffsetFetch request.
func (c *TCPClient) OffsetFetch(ctx context.Context, req *OffsetFetchRequest) (*OffsetFetchResponse, error) {
	v, err := c.version(9)
	if err != nil {
		return nil, err
	}
	resp, err := c.send(ctx, connOther, offsetFetchToWire(req, v))
	if err != nil {
		return nil, err
	}
	return offsetFetchResponseFromWire(resp.(*kmsg.OffsetFetchResponse), req.Group), nil
}

// DescribeGroups sends a DescribeGroups request. Kafka's answer carries no
// generation or leader: a group described over TCP has GenerationID
// NoGeneration and no Leader.
func (c *TCPClient) DescribeGroups(ctx context.Context, req *DescribeGroupsRequest) (*DescribeGroupsResponse, error) {
	return roundTrip(ctx, c, connOther, 15, req, describeGroupsToWire, describeGroupsResponseFromWire)
}

// ListGroups sends a ListGroups request.
func (c *TCPClient) ListGroups(ctx context.Context, req *ListGroupsRequest) (*ListGroupsResponse, error) {
	v, err := c.version(16)
	if err != nil {
		return nil, err
	}
	if len(req.StatesFilter) > 0 && v < 4 {
		return nil, fmt.Errorf("%w: ListGroups v%d has no states filter", kafka.ErrUnsupportedVersion, v)
	}
	resp, err := c.send(ctx, connOther, listGroupsToWire(req, v))
	if err != nil {
		return nil, err
	}
	return listGroupsResponseFromWire(resp.(*kmsg.ListGroupsResponse)), nil
}

// DeleteGroups sends a DeleteGroups request.
func (c *TCPClient) DeleteGroups(ctx context.Context, req *DeleteGroupsRequest) (*DeleteGroupsResponse, error) {
	return roundTrip(ctx, c, connOther, 42, req, deleteGroupsToWire, deleteGroupsResponseFromWire)
}

// InitProducerID sends an InitProducerId request.
func (c *TCPClient) InitProducerID(ctx context.Context, req *InitProducerIDRequest) (*InitProducerIDResponse, error) {
	return roundTrip(ctx, c, connOther, 22, req, initProducerIDToWire, initProducerIDResponseFromWire)
}
