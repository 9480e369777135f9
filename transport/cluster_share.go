package transport

import (
	"context"
	"fmt"

	"github.com/partlog/partlog/kafka"
)

// ShareCoordinatorClient is the part of ShareGroupClient that a share
// group's coordinator answers: the members' heartbeats and the group's
// description. A ClusterClient implements it, sending each request to
// the group's coordinator; ShareFetch and ShareAcknowledge go to each
// partition's leader within a share session kept per node, which the
// caller opens on the node's own client (see NodeRouter).
type ShareCoordinatorClient interface {
	ShareGroupHeartbeat(ctx context.Context, req *ShareGroupHeartbeatRequest) (*ShareGroupHeartbeatResponse, error)
	ShareGroupDescribe(ctx context.Context, req *ShareGroupDescribeRequest) (*ShareGroupDescribeResponse, error)
}

// NodeRouter is implemented by a Client that reaches the nodes of a
// cluster, as ClusterClient does. A caller whose requests keep state on
// one node — a share consumer's share sessions — asks it which node
// leads each partition and sends the requests on that node's own client.
type NodeRouter interface {
	// Leader returns the id of the node that leads tp, as the client
	// last learnt it, and false when it knows none. It asks Metadata
	// first when the client knows nothing of the topic, or was told its
	// view is stale (NoteError).
	Leader(ctx context.Context, tp kafka.TopicPartition) (int32, bool)
	// Node returns the client of node id, dialling it when needed: a
	// NodeClient, and whatever optional interfaces the node's connection
	// speaks (ShareGroupClient, ...). The router owns it: the caller
	// never closes it.
	Node(ctx context.Context, id int32) (Client, error)
	// NoteError tells the router how a request to node id ended: an
	// error saying the node no longer leads a partition or could not be
	// reached makes the next Leader ask Metadata again.
	NoteError(id int32, err error)
}

var (
	_ ShareCoordinatorClient = (*ClusterClient)(nil)
	_ NodeRouter             = (*ClusterClient)(nil)
)

// shareGroupNode is n as a ShareGroupClient, or kafka.ErrUnsupportedVersion
// when its connection cannot speak share groups.
func shareGroupNode(n NodeClient) (ShareGroupClient, error) {
	sg, ok := n.(ShareGroupClient)
	if !ok {
		return nil, fmt.Errorf("%w: the node's client does not speak ShareGroupHeartbeat", kafka.ErrUnsupportedVersion)
	}
	return sg, nil
}

// ShareGroupHeartbeat sends a share group member's heartbeat to the
// group's coordinator: share groups share the group coordinators and
// their key with consumer groups.
func (c *ClusterClient) ShareGroupHeartbeat(ctx context.Context, req *ShareGroupHeartbeatRequest) (*ShareGroupHeartbeatResponse, error) {
	return toCoordinator(ctx, c, groupKey(req.Group), func(n NodeClient) (*ShareGroupHeartbeatResponse, error) {
		sg, err := shareGroupNode(n)
		if err != nil {
			return nil, err
		}
		return sg.ShareGroupHeartbeat(ctx, req)
	}, func(r *ShareGroupHeartbeatResponse) []error { return []error{r.Err} })
}

// ShareGroupDescribe asks each share group's coordinator to describe it.
func (c *ClusterClient) ShareGroupDescribe(ctx context.Context, req *ShareGroupDescribeRequest) (*ShareGroupDescribeResponse, error) {
	groups, err := perCoordinator(ctx, c, CoordinatorGroup, req.Groups,
		func(ctx context.Context, n NodeClient, groups []string) ([]ShareGroupDescription, error) {
			sg, err := shareGroupNode(n)
			if err != nil {
				return nil, err
			}
			r, err := sg.ShareGroupDescribe(ctx, &ShareGroupDescribeRequest{Groups: groups})
			if err != nil {
				return nil, err
			}
			return r.Groups, nil
		},
		func(d ShareGroupDescription) (string, error) { return d.Group, d.Err },
		func(g string, err error) ShareGroupDescription {
			return ShareGroupDescription{Group: g, Err: err, State: "Dead"}
		})
	if err != nil {
		return nil, err
	}
	return &ShareGroupDescribeResponse{Groups: groups}, nil
}

// Leader returns the node that leads tp, learning the topic's leaders
// first when the client knows none or its view is stale.
func (c *ClusterClient) Leader(ctx context.Context, tp kafka.TopicPartition) (int32, bool) {
	c.refresh(ctx, []string{tp.Topic})
	c.mu.Lock()
	defer c.mu.Unlock()
	leaders := c.leaders[tp.Topic]
	if tp.Partition < 0 || int(tp.Partition) >= len(leaders) || leaders[tp.Partition] < 0 {
		return -1, false
	}
	if _, ok := c.addrs[leaders[tp.Partition]]; !ok {
		return -1, false
	}
	return leaders[tp.Partition], true
}

// Node returns the client of node id, dialling it when needed.
func (c *ClusterClient) Node(ctx context.Context, id int32) (Client, error) {
	c.mu.Lock()
	addr, ok := c.addrs[id]
	c.mu.Unlock()
	if !ok {
		return nil, fmt.Errorf("%w: the client knows no address of node %d", kafka.ErrLeaderNotAvailable, id)
	}
	n, err := c.node(ctx, addr)
	c.noteReach(addr, err)
	if err != nil {
		return nil, err
	}
	return n, nil
}

// NoteError notes how a request to node id ended: whether it reached the
// node, and whether the client's view of the leaders is stale.
func (c *ClusterClient) NoteError(id int32, err error) {
	c.mu.Lock()
	addr, ok := c.addrs[id]
	c.mu.Unlock()
	if ok {
		c.noteReach(addr, err)
	}
	c.noteAnswer(err)
}
