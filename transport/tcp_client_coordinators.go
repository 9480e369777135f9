package transport

// tcp_client_coordinators.go makes TCPClient a GroupClient, a
// ProducerIDClient and a TxnClient: the calls that go to a group's or a
// transactional id's coordinator, and the transaction markers a
// coordinator sends partition leaders. FindCoordinator serves both kinds
// of coordinator.

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

// versionUpTo returns the version to send an API in: the newest both
// sides speak, and at most upTo when upTo is above zero (a request's
// Version: see TxnClient).
func (c *TCPClient) versionUpTo(key, upTo int16) (int16, error) {
	v, err := c.version(key)
	if err != nil {
		return 0, err
	}
	if upTo > 0 && upTo < v {
		if rng, _ := findRange(supportedAPIs, key); upTo < rng.min {
			return 0, fmt.Errorf("%w: %s v%d is below the versions partlog sends", kafka.ErrUnsupportedVersion, apiName(key), upTo)
		}
		v = upTo
	}
	return v, nil
}

// roundTripUpTo is roundTrip in the version versionUpTo gives for upTo.
// A request that does not fit that version (fits, which nil skips) fails
// with kafka.ErrUnsupportedVersion, unsent.
func roundTripUpTo[Req any, W kmsg.Request, WR kmsg.Response, Resp any](ctx context.Context, c *TCPClient, kind int, key, upTo int16, req Req,
	fits func(Req, int16) bool, toWire func(Req, int16) W, fromWire func(WR) Resp) (Resp, error) {
	var none Resp
	v, err := c.versionUpTo(key, upTo)
	if err != nil {
		return none, err
	}
	if fits != nil && !fits(req, v) {
		return none, fmt.Errorf("%w: %s v%d cannot carry this request", kafka.ErrUnsupportedVersion, apiName(key), v)
	}
	return roundTripIn(ctx, c, kind, v, req, toWire, fromWire)
}

// InitProducerID sends an InitProducerId request in the newest version
// both sides speak, up to req.Version when it is set. One with a
// transactional id goes to the id's coordinator (a ClusterClient routes
// it).
func (c *TCPClient) InitProducerID(ctx context.Context, req *InitProducerIDRequest) (*InitProducerIDResponse, error) {
	return roundTripUpTo(ctx, c, connOther, 22, req.Version, req, nil, initProducerIDToWire, initProducerIDResponseFromWire)
}

// AddPartitionsToTxn sends an AddPartitionsToTxn request to the
// transactional ids' coordinator. A producer's request (one transaction,
// not VerifyOnly) goes in version 3 at most unless req.Version asks for
// more, as Kafka's producers send it; any other needs version 4, else it
// fails with kafka.ErrUnsupportedVersion.
func (c *TCPClient) AddPartitionsToTxn(ctx context.Context, req *AddPartitionsToTxnRequest) (*AddPartitionsToTxnResponse, error) {
	upTo := req.Version
	if upTo == 0 && addPartitionsToTxnFits(req, 3) {
		upTo = 3
	}
	return roundTripUpTo(ctx, c, connOther, 24, upTo, req, addPartitionsToTxnFits, addPartitionsToTxnToWire,
		func(w *kmsg.AddPartitionsToTxnResponse) *AddPartitionsToTxnResponse {
			return addPartitionsToTxnResponseFromWire(req, w)
		})
}

// AddOffsetsToTxn sends an AddOffsetsToTxn request to the transactional
// id's coordinator.
func (c *TCPClient) AddOffsetsToTxn(ctx context.Context, req *AddOffsetsToTxnRequest) (*AddOffsetsToTxnResponse, error) {
	return roundTripUpTo(ctx, c, connOther, 25, req.Version, req, nil, addOffsetsToTxnToWire, addOffsetsToTxnResponseFromWire)
}

// EndTxn sends an EndTxn request to the transactional id's coordinator:
// in version 5 (transaction version 2) with a node that speaks it, unless
// req.Version caps it lower.
func (c *TCPClient) EndTxn(ctx context.Context, req *EndTxnRequest) (*EndTxnResponse, error) {
	return roundTripUpTo(ctx, c, connOther, 26, req.Version, req, nil, endTxnToWire, endTxnResponseFromWire)
}

// WriteTxnMarkers sends a WriteTxnMarkers request to the leader of its
// partitions, on a connection of its own: the answer waits for the
// markers to be replicated, and would hold up other calls. A marker with a
// TransactionVersion fails with kafka.ErrUnsupportedVersion to a node that
// speaks only versions below 2.
func (c *TCPClient) WriteTxnMarkers(ctx context.Context, req *WriteTxnMarkersRequest) (*WriteTxnMarkersResponse, error) {
	return roundTripUpTo(ctx, c, connMarkers, 27, 0, req, writeTxnMarkersFits, writeTxnMarkersToWire, writeTxnMarkersResponseFromWire)
}

// TxnOffsetCommit sends a TxnOffsetCommit request to the group's
// coordinator. With group membership (a generation, member id or group
// instance id) it fails with kafka.ErrUnsupportedVersion to a node that
// speaks only versions below 3.
func (c *TCPClient) TxnOffsetCommit(ctx context.Context, req *TxnOffsetCommitRequest) (*TxnOffsetCommitResponse, error) {
	return roundTripUpTo(ctx, c, connOther, 28, req.Version, req, txnOffsetCommitFits, txnOffsetCommitToWire, txnOffsetCommitResponseFromWire)
}

// DescribeTransactions sends a DescribeTransactions request to the
// transactional ids' coordinator.
func (c *TCPClient) DescribeTransactions(ctx context.Context, req *DescribeTransactionsRequest) (*DescribeTransactionsResponse, error) {
	return roundTrip(ctx, c, connOther, 65, req, describeTransactionsToWire, describeTransactionsResponseFromWire)
}

// ListTransactions sends a ListTransactions request: the answer lists the
// connected node's transactional ids. A MinDuration fails with
// kafka.ErrUnsupportedVersion to a node that speaks only version 0, and a
// TransactionalIDPattern to one that speaks no version 2.
func (c *TCPClient) ListTransactions(ctx context.Context, req *ListTransactionsRequest) (*ListTransactionsResponse, error) {
	return roundTripUpTo(ctx, c, connOther, 66, 0, req, listTransactionsFits, listTransactionsToWire, listTransactionsResponseFromWire)
}
