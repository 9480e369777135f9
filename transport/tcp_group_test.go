package transport

import (
	"context"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/partlog/partlog/kafka"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// fakeGroupNode is a fakeNode that is also a GroupClient and a
// ProducerIDClient: it keeps each request and answers what the test set.
type fakeGroupNode struct {
	fakeNode

	gmu  sync.Mutex
	got  []any // the requests, in the order they came
	resp map[string]any
	// joinGate, when set, holds every JoinGroup until it is closed;
	// joinArrived gets a value as each arrives.
	joinGate    chan struct{}
	joinArrived chan string
}

// handle keeps req and returns the answer set for name, or a zero one.
func handle[R any](f *fakeGroupNode, name string, req any) *R {
	f.gmu.Lock()
	defer f.gmu.Unlock()
	f.got = append(f.got, req)
	if r, ok := f.resp[name]; ok {
		return r.(*R)
	}
	return new(R)
}

// set sets the answer for name.
func (f *fakeGroupNode) set(name string, resp any) {
	f.gmu.Lock()
	defer f.gmu.Unlock()
	f.resp[name] = resp
}

// last returns the last request that came.
func (f *fakeGroupNode) last() any {
	f.gmu.Lock()
	defer f.gmu.Unlock()
	return f.got[len(f.got)-1]
}

func (f *fakeGroupNode) FindCoordinator(ctx context.Context, req *FindCoordinatorRequest) (*FindCoordinatorResponse, error) {
	return handle[FindCoordinatorResponse](f, "FindCoordinator", req), nil
}

func (f *fakeGroupNode) JoinGroup(ctx context.Context, req *JoinGroupRequest) (*JoinGroupResponse, error) {
	resp := handle[JoinGroupResponse](f, "JoinGroup", req)
	if f.joinArrived != nil {
		f.joinArrived <- req.MemberID
	}
	if f.joinGate != nil {
		select {
		case <-f.joinGate:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if resp.MemberID == "" { // echo the member, for telling joins apart
		return &JoinGroupResponse{MemberID: req.MemberID, GenerationID: 1}, nil
	}
	return resp, nil
}

func (f *fakeGroupNode) SyncGroup(ctx context.Context, req *SyncGroupRequest) (*SyncGroupResponse, error) {
	return handle[SyncGroupResponse](f, "SyncGroup", req), nil
}

func (f *fakeGroupNode) Heartbeat(ctx context.Context, req *HeartbeatRequest) (*HeartbeatResponse, error) {
	return handle[HeartbeatResponse](f, "Heartbeat", req), nil
}

func (f *fakeGroupNode) LeaveGroup(ctx context.Context, req *LeaveGroupRequest) (*LeaveGroupResponse, error) {
	return handle[LeaveGroupResponse](f, "LeaveGroup", req), nil
}

func (f *fakeGroupNode) OffsetCommit(ctx context.Context, req *OffsetCommitRequest) (*OffsetCommitResponse, error) {
	return handle[OffsetCommitResponse](f, "OffsetCommit", req), nil
}

func (f *fakeGroupNode) OffsetFetch(ctx context.Context, req *OffsetFetchRequest) (*OffsetFetchResponse, error) {
	return handle[OffsetFetchResponse](f, "OffsetFetch", req), nil
}

func (f *fakeGroupNode) DescribeGroups(ctx context.Context, req *DescribeGroupsRequest) (*DescribeGroupsResponse, error) {
	return handle[DescribeGroupsResponse](f, "DescribeGroups", req), nil
}

func (f *fakeGroupNode) ListGroups(ctx context.Context, req *ListGroupsRequest) (*ListGroupsResponse, error) {
	return handle[ListGroupsResponse](f, "ListGroups", req), nil
}

func (f *fakeGroupNode) DeleteGroups(ctx context.Context, req *DeleteGroupsRequest) (*DeleteGroupsResponse, error) {
	return handle[DeleteGroupsResponse](f, "DeleteGroups", req), nil
}

func (f *fakeGroupNode) InitProducerID(ctx context.Context, req *InitProducerIDRequest) (*InitProducerIDResponse, error) {
	return handle[InitProducerIDResponse](f, "InitProducerID", req), nil
}

var (
	_ GroupClient      = (*fakeGroupNode)(nil)
	_ ProducerIDClient = (*fakeGroupNode)(nil)
)

// withMessage is what a response field holds for sentinel e sent with the
// text of err: e, wrapped with the text.
func withMessage(e *kafka.Error, err error) error { return wireError(e.Code, errorMessage(err)) }

// TestTCPGroupRoundTrip sends every GroupClient and ProducerIDClient
// request through a TCPClient to a server, in the newest versions both
// speak: the handler gets exactly the request sent, and the client exactly
// the handler's answer, errors as the transport's sentinels.
func TestTCPGroupRoundTrip(t *testing.T) {
	notCoord := fmt.Errorf("%w: moved to node 2", kafka.ErrNotCoordinator)
	unknownGroup := fmt.Errorf("%w: no group %q", kafka.ErrGroupIDNotFound, "gone")
	nonEmpty := fmt.Errorf("%w: 2 members", kafka.ErrNonEmptyGroup)
	f := &fakeGroupNode{resp: map[string]any{
		"FindCoordinator": &FindCoordinatorResponse{NodeID: 7, Port: -1},
		"JoinGroup": &JoinGroupResponse{Err: nil, GenerationID: 4, ProtocolType: "consumer", ProtocolName: "range",
			Leader: "m1", MemberID: "m2", Members: []JoinGroupMember{{MemberID: "m1", GroupInstanceID: "i1", Metadata: []byte("sub1")},
				{MemberID: "m2", Metadata: []byte("sub2")}}},
		"SyncGroup":    &SyncGroupResponse{ProtocolType: "consumer", ProtocolName: "range", Assignment: []byte("yours")},
		"Heartbeat":    &HeartbeatResponse{Err: kafka.ErrRebalanceInProgress},
		"LeaveGroup":   &LeaveGroupResponse{Members: []LeaveGroupMemberResponse{{MemberID: "m1"}, {GroupInstanceID: "i2", Err: kafka.ErrUnknownMemberID}}},
		"OffsetCommit": &OffsetCommitResponse{Topics: []OffsetCommitTopicResponse{{Topic: "t", Partitions: []OffsetCommitPartitionResponse{{Partition: 0}, {Partition: 3, Err: kafka.ErrIllegalGeneration}}}}},
		"OffsetFetch": &OffsetFetchResponse{Topics: []OffsetFetchTopicResponse{{Topic: "t", Partitions: []OffsetFetchPartitionResponse{
			{Partition: 0, Offset: 42, LeaderEpoch: 3, Metadata: "meta"}, {Partition: 1, Offset: -1, LeaderEpoch: -1, Err: kafka.ErrUnstableOffsetCommit}}}}},
		"DescribeGroups": &DescribeGroupsResponse{Groups: []DescribedGroup{
			{Group: "g", State: "Stable", ProtocolType: "consumer", Protocol: "range", GenerationID: 4, Leader: "m1", Members: []DescribedMember{
				{MemberID: "m1", GroupInstanceID: "i1", ClientID: "c1", ClientHost: "10.0.0.1", Metadata: []byte("sub"), Assignment: []byte("asg")}}},
			{Err: unknownGroup, Group: "gone", State: "Dead"}}},
		"ListGroups":     &ListGroupsResponse{Groups: []ListedGroup{{Group: "g", ProtocolType: "consumer", State: "Stable"}, {Group: "h", State: "Empty"}}},
		"DeleteGroups":   &DeleteGroupsResponse{Results: []DeletedGroup{{Group: "g", Err: nonEmpty}, {Group: "h"}}},
		"InitProducerID": &InitProducerIDResponse{ProducerID: 9000, ProducerEpoch: 2},
	}}
	_, addr := serve(t, f, ServerOptions{})
	c, err := Dial(context.Background(), addr, DialOptions{ClientID: "cid"})
	require.NoError(t, err)
	defer c.Close()
	ctx := context.Background()
	host, portText, _ := net.SplitHostPort(addr)
	var port int32
	fmt.Sscan(portText, &port)

	fc, err := c.FindCoordinator(ctx, &FindCoordinatorRequest{Key: "g", KeyType: CoordinatorGroup})
	require.NoError(t, err)
	require.Equal(t, &FindCoordinatorRequest{Key: "g"}, f.last())
	require.Equal(t, &FindCoordinatorResponse{NodeID: 7, Host: host, Port: port}, fc, "a coordinator without an address gets the listener's")
	f.set("FindCoordinator", &FindCoordinatorResponse{Err: notCoord, NodeID: -1, Port: -1})
	fc, err = c.FindCoordinator(ctx, &FindCoordinatorRequest{Key: "tx", KeyType: CoordinatorTransaction})
	require.NoError(t, err)
	require.Equal(t, &FindCoordinatorRequest{Key: "tx", KeyType: CoordinatorTransaction}, f.last())
	require.Equal(t, &FindCoordinatorResponse{Err: withMessage(kafka.ErrNotCoordinator, notCoord), NodeID: -1, Port: -1}, fc)
	require.ErrorIs(t, fc.Err, kafka.ErrNotCoordinator)

	join := &JoinGroupRequest{Group: "g", SessionTimeout: 10 * time.Second, RebalanceTimeout: time.Minute, MemberID: "m2",
		GroupInstanceID: "i2", ProtocolType: "consumer", Protocols: []JoinGroupProtocol{{Name: "range", Metadata: []byte("r")}, {Name: "sticky", Metadata: []byte("s")}},
		ClientID: "member-2", ClientHost: "ignored", Reason: "first poll"}
	jr, err := c.JoinGroup(ctx, join)
	require.NoError(t, err)
	want := *join
	want.ClientHost = host // the server sees the connection's
	require.Equal(t, &want, f.last())
	require.Equal(t, f.resp["JoinGroup"], jr)
	join.ClientID = ""
	_, err = c.JoinGroup(ctx, join)
	require.NoError(t, err)
	require.Equal(t, "cid", f.last().(*JoinGroupRequest).ClientID, "no client id: the client's own")

	sync := &SyncGroupRequest{Group: "g", GenerationID: 4, MemberID: "m1", GroupInstanceID: "i1", ProtocolType: "consumer", ProtocolName: "range",
		Assignments: []SyncGroupAssignment{{MemberID: "m1", Assignment: []byte("a1")}, {MemberID: "m2", Assignment: []byte("a2")}}}
	sr, err := c.SyncGroup(ctx, sync)
	require.NoError(t, err)
	require.Equal(t, sync, f.last())
	require.Equal(t, f.resp["SyncGroup"], sr)

	hb := &HeartbeatRequest{Group: "g", GenerationID: 4, MemberID: "m1", GroupInstanceID: "i1"}
	hr, err := c.Heartbeat(ctx, hb)
	require.NoError(t, err)
	require.Equal(t, hb, f.last())
	require.Equal(t, f.resp["Heartbeat"], hr)
	require.ErrorIs(t, hr.Err, kafka.ErrRebalanceInProgress)

	leave := &LeaveGroupRequest{Group: "g", Members: []LeaveGroupMember{{MemberID: "m1", Reason: "closing"}, {GroupInstanceID: "i2"}}}
	lr, err := c.LeaveGroup(ctx, leave)
	require.NoError(t, err)
	require.Equal(t, leave, f.last())
	require.Equal(t, f.resp["LeaveGroup"], lr)

	commit := &OffsetCommitRequest{Group: "g", GenerationID: 4, MemberID: "m1", GroupInstanceID: "i1", Topics: []OffsetCommitTopic{{Topic: "t",
		Partitions: []OffsetCommitPartition{{Partition: 0, Offset: 42, LeaderEpoch: 3, Metadata: "meta"}, {Partition: 3, Offset: 7, LeaderEpoch: -1}}}}}
	cr, err := c.OffsetCommit(ctx, commit)
	require.NoError(t, err)
	require.Equal(t, commit, f.last())
	require.Equal(t, f.resp["OffsetCommit"], cr)
	require.ErrorIs(t, cr.Topics[0].Partitions[1].Err, kafka.ErrIllegalGeneration)

	fetch := &OffsetFetchRequest{Group: "g", Topics: []OffsetFetchTopic{{Topic: "t", Partitions: []int32{0, 1}}}}
	fr, err := c.OffsetFetch(ctx, fetch)
	require.NoError(t, err)
	require.Equal(t, fetch, f.last())
	require.Equal(t, f.resp["OffsetFetch"], fr)
	_, err = c.OffsetFetch(ctx, &OffsetFetchRequest{Group: "g"})
	require.NoError(t, err)
	require.Equal(t, &OffsetFetchRequest{Group: "g"}, f.last(), "nil topics, for all of them, stays nil")
	f.set("OffsetFetch", &OffsetFetchResponse{Err: kafka.ErrCoordinatorLoadInProgress})
	fr, err = c.OffsetFetch(ctx, fetch)
	require.NoError(t, err)
	require.Equal(t, &OffsetFetchResponse{Err: kafka.ErrCoordinatorLoadInProgress}, fr)

	dr, err := c.DescribeGroups(ctx, &DescribeGroupsRequest{Groups: []string{"g", "gone"}})
	require.NoError(t, err)
	require.Equal(t, &DescribeGroupsRequest{Groups: []string{"g", "gone"}}, f.last())
	wantDescribed := &DescribeGroupsResponse{Groups: []DescribedGroup{
		{Group: "g", State: "Stable", ProtocolType: "consumer", Protocol: "range", GenerationID: NoGeneration, Members: []DescribedMember{
			{MemberID: "m1", GroupInstanceID: "i1", ClientID: "c1", ClientHost: "10.0.0.1", Metadata: []byte("sub"), Assignment: []byte("asg")}}},
		{Err: withMessage(kafka.ErrGroupIDNotFound, unknownGroup), Group: "gone", State: "Dead", GenerationID: NoGeneration}}}
	require.Equal(t, wantDescribed, dr, "Kafka's DescribeGroups has no generation or leader")

	lg, err := c.ListGroups(ctx, &ListGroupsRequest{StatesFilter: []string{"Stable", "Empty"}})
	require.NoError(t, err)
	require.Equal(t, &ListGroupsRequest{StatesFilter: []string{"Stable", "Empty"}}, f.last())
	require.Equal(t, f.resp["ListGroups"], lg)
	_, err = c.ListGroups(ctx, &ListGroupsRequest{})
	require.NoError(t, err)
	require.Equal(t, &ListGroupsRequest{}, f.last())

	del, err := c.DeleteGroups(ctx, &DeleteGroupsRequest{Groups: []string{"g", "h"}})
	require.NoError(t, err)
	require.Equal(t, &DeleteGroupsRequest{Groups: []string{"g", "h"}}, f.last())
	require.Equal(t, &DeleteGroupsResponse{Results: []DeletedGroup{{Group: "g", Err: withMessage(kafka.ErrNonEmptyGroup, nonEmpty)}, {Group: "h"}}}, del)
	require.ErrorIs(t, del.Results[0].Err, kafka.ErrNonEmptyGroup)

	init := &InitProducerIDRequest{Version: 5, TransactionalID: "tx", TransactionTimeout: time.Minute, ProducerID: 12, ProducerEpoch: 1}
	ir, err := c.InitProducerID(ctx, init)
	require.NoError(t, err)
	require.Equal(t, init, f.last())
	require.Equal(t, f.resp["InitProducerID"], ir)
	f.set("InitProducerID", &InitProducerIDResponse{Err: kafka.ErrKafkaStorage, ProducerID: -1, ProducerEpoch: -1})
	ir, err = c.InitProducerID(ctx, &InitProducerIDRequest{ProducerID: -1, ProducerEpoch: -1})
	require.NoError(t, err)
	require.Equal(t, &InitProducerIDRequest{Version: 5, ProducerID: -1, ProducerEpoch: -1}, f.last(), "the newest version both speak")
	_, err = c.InitProducerID(ctx, &InitProducerIDRequest{Version: 3, ProducerID: -1, ProducerEpoch: -1})
	require.NoError(t, err)
	require.Equal(t, &InitProducerIDRequest{Version: 3, ProducerID: -1, ProducerEpoch: -1}, f.last(), "Version caps the version sent")
	require.Equal(t, f.resp["InitProducerID"], ir)
	require.True(t, kafka.IsRetriable(ir.Err))
}

// TestTCPGroupAPIsAdvertised checks that a server advertises the group
// and producer id APIs only for a handler that implements them, and that a
// client of one that does not fails those calls with
// kafka.ErrUnsupportedVersion, without sending them.
func TestTCPGroupAPIsAdvertised(t *testing.T) {
	keys := func(apis []apiRange) map[int16]bool {
		m := map[int16]bool{}
		for _, r := range apis {
			m[r.key] = true
		}
		return m
	}
	plain, group := keys(apisFor(&fakeNode{})), keys(apisFor(&fakeGroupNode{}))
	for _, k := range []int16{8, 9, 10, 11, 12, 13, 14, 15, 16, 22, 42} {
		require.False(t, plain[k], "%s for a plain Client", kmsg.NameForKey(k))
		require.True(t, group[k], "%s for a GroupClient", kmsg.NameForKey(k))
	}
	_, addr := serve(t, &fakeNode{}, ServerOptions{})
	c := dial(t, addr)
	_, err := c.JoinGroup(context.Background(), &JoinGroupRequest{Group: "g"})
	require.ErrorIs(t, err, kafka.ErrUnsupportedVersion)
	_, err = c.InitProducerID(context.Background(), &InitProducerIDRequest{})
	require.ErrorIs(t, err, kafka.ErrUnsupportedVersion)
	_, err = c.Metadata(context.Background(), &MetadataRequest{})
	require.NoError(t, err, "the connection is fine")
}

// TestTCPJoinGroupDoesNotHoldUp checks that JoinGroups waiting for the
// rest of the group hold up nothing: neither the client's other requests
// nor each other, though they share one TCPClient. A join whose ctx ends
// returns at once, and the next join works.
func TestTCPJoinGroupDoesNotHoldUp(t *testing.T) {
	gate, arrived := make(chan struct{}), make(chan string, 4)
	f := &fakeGroupNode{joinGate: gate, joinArrived: arrived}
	_, addr := serve(t, f, ServerOptions{})
	c := dial(t, addr)
	ctx := context.Background()
	joined := make(chan *JoinGroupResponse, 2)
	for _, id := range []string{"a", "b"} {
		go func() {
			r, err := c.JoinGroup(ctx, &JoinGroupRequest{Group: "g", MemberID: id})
			if err != nil {
				r = &JoinGroupResponse{Err: err}
			}
			joined <- r
		}()
	}
	// Both joins reach the handler while neither is answered: each has a
	// connection of its own.
	require.ElementsMatch(t, []string{"a", "b"}, []string{<-arrived, <-arrived})
	hr, err := c.Heartbeat(ctx, &HeartbeatRequest{Group: "g", MemberID: "a"})
	require.NoError(t, err)
	require.NoError(t, hr.Err)
	_, err = c.Metadata(ctx, &MetadataRequest{})
	require.NoError(t, err)

	cctx, cancel := context.WithCancel(ctx)
	errc := make(chan error, 1)
	go func() {
		_, err := c.JoinGroup(cctx, &JoinGroupRequest{Group: "g", MemberID: "c"})
		errc <- err
	}()
	require.Equal(t, "c", <-arrived)
	cancel()
	require.ErrorIs(t, <-errc, context.Canceled)

	close(gate)
	got := map[string]bool{}
	for range 2 {
		r := <-joined
		require.NoError(t, r.Err)
		got[r.MemberID] = true
	}
	require.Equal(t, map[string]bool{"a": true, "b": true}, got, "each join got its own answer")
	r, err := c.JoinGroup(ctx, &JoinGroupRequest{Group: "g", MemberID: "d"})
	require.NoError(t, err)
	require.Equal(t, "d", r.MemberID)
	require.Equal(t, "d", <-arrived)

	c.mu.Lock()
	idle := 0
	for _, i := range c.groupConns {
		if i {
			idle++
		}
	}
	c.mu.Unlock()
	require.Equal(t, 2, idle, "the answered joins' connections are kept, the cancelled one's closed")
}
