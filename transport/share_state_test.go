package transport

import (
	"context"
	"fmt"
	"reflect"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/partlog/partlog/auth"
	"github.com/partlog/partlog/kafka"
)

// fakeShareStateNode answers the share state APIs with what resp holds,
// and keeps the requests.
type fakeShareStateNode struct {
	*fakeGroupNode
}

func newFakeShareStateNode(resp map[string]any) fakeShareStateNode {
	return fakeShareStateNode{&fakeGroupNode{resp: resp}}
}

func (f fakeShareStateNode) InitializeShareGroupState(_ context.Context, req *InitializeShareGroupStateRequest) (*InitializeShareGroupStateResponse, error) {
	return handle[InitializeShareGroupStateResponse](f.fakeGroupNode, "initialize", req), nil
}

func (f fakeShareStateNode) ReadShareGroupState(_ context.Context, req *ReadShareGroupStateRequest) (*ReadShareGroupStateResponse, error) {
	return handle[ReadShareGroupStateResponse](f.fakeGroupNode, "read", req), nil
}

func (f fakeShareStateNode) WriteShareGroupState(_ context.Context, req *WriteShareGroupStateRequest) (*WriteShareGroupStateResponse, error) {
	return handle[WriteShareGroupStateResponse](f.fakeGroupNode, "write", req), nil
}

func (f fakeShareStateNode) DeleteShareGroupState(_ context.Context, req *DeleteShareGroupStateRequest) (*DeleteShareGroupStateResponse, error) {
	return handle[DeleteShareGroupStateResponse](f.fakeGroupNode, "delete", req), nil
}

// Requests and answers with every field set.

func fullInitializeShareGroupState() *InitializeShareGroupStateRequest {
	return &InitializeShareGroupStateRequest{Group: "g", Topics: []InitializeShareGroupStateTopic{
		{TopicID: openTopic, Partitions: []InitializeShareGroupStatePartition{{Partition: 3, StateEpoch: 2, StartOffset: 17}, {Partition: 2, StateEpoch: 1, StartOffset: -1}}},
		{TopicID: secretTopic, Partitions: []InitializeShareGroupStatePartition{{Partition: 1, StateEpoch: 5, StartOffset: 4}}},
	}}
}

func fullShareStateResults() []ShareStateTopicResult {
	return []ShareStateTopicResult{
		{TopicID: openTopic, Partitions: []ShareStatePartitionResult{{Partition: 3, Err: kafka.ErrFencedStateEpoch}, {Partition: 2, Err: kafka.ErrNotCoordinator}}},
		{TopicID: secretTopic, Partitions: []ShareStatePartitionResult{{Partition: 1, Err: kafka.ErrFencedLeaderEpoch}}},
	}
}

func fullReadShareGroupState() *ReadShareGroupStateRequest {
	return &ReadShareGroupStateRequest{Group: "g", Topics: []ReadShareGroupStateTopic{
		{TopicID: openTopic, Partitions: []ReadShareGroupStatePartition{{Partition: 3, LeaderEpoch: 7}, {Partition: 1, LeaderEpoch: -1}}},
	}}
}

func fullReadShareGroupStateResponse() *ReadShareGroupStateResponse {
	return &ReadShareGroupStateResponse{Topics: []ReadShareGroupStateTopicResult{{TopicID: openTopic, Partitions: []ReadShareGroupStatePartitionResult{
		{Partition: 3, Err: kafka.ErrCoordinatorLoadInProgress, StateEpoch: 2, StartOffset: 17, StateBatches: []ShareStateBatch{
			{FirstOffset: 17, LastOffset: 20, DeliveryState: 2, DeliveryCount: 1}, {FirstOffset: 21, LastOffset: 21, DeliveryState: 4, DeliveryCount: 5}}},
	}}}}
}

func fullWriteShareGroupState() *WriteShareGroupStateRequest {
	return &WriteShareGroupStateRequest{Group: "g", Topics: []WriteShareGroupStateTopic{{TopicID: openTopic, Partitions: []WriteShareGroupStatePartition{
		{Partition: 3, StateEpoch: 2, LeaderEpoch: 7, StartOffset: 18, StateBatches: []ShareStateBatch{
			{FirstOffset: 18, LastOffset: 30, DeliveryState: 4, DeliveryCount: 2}, {FirstOffset: 31, LastOffset: 31, DeliveryState: 2, DeliveryCount: 1}}},
		{Partition: 4, StateEpoch: 1, LeaderEpoch: -1, StartOffset: -1, StateBatches: []ShareStateBatch{}},
	}}}}
}

func fullDeleteShareGroupState() *DeleteShareGroupStateRequest {
	return &DeleteShareGroupStateRequest{Group: "g", Topics: []TopicIDPartitions{{TopicID: openTopic, Partitions: []int32{3, 2}}, {TopicID: secretTopic, Partitions: []int32{1}}}}
}

// TestShareStateWire round-trips each request and answer of the share
// state APIs (83-86), with every field set, through kmsg's bytes in each
// version kmsg knows. WriteShareGroupState v1 adds KIP-1226's delivery
// complete count, which partlog does not carry (it speaks v0): the rest
// survives.
func TestShareStateWire(t *testing.T) {
	for _, full := range []any{fullInitializeShareGroupState(), &InitializeShareGroupStateResponse{Topics: fullShareStateResults()},
		fullReadShareGroupState(), fullReadShareGroupStateResponse(), fullWriteShareGroupState(), fullDeleteShareGroupState()} {
		require.Empty(t, unset(reflect.ValueOf(full), reflect.TypeOf(full).Elem().Name(), nil), "set every field")
	}
	versions := func(t *testing.T, key int16, run func(t *testing.T, v int16)) {
		rng, ok := findRange(supportedAPIs, key)
		require.True(t, ok)
		require.Equal(t, apiRange{key: key}, rng, "version 0 only")
		for v := int16(0); v <= kmsg.RequestForKey(key).MaxVersion(); v++ {
			t.Run(fmt.Sprintf("%s v%d", kmsg.NameForKey(key), v), func(t *testing.T) { run(t, v) })
		}
	}
	versions(t, 83, func(t *testing.T, v int16) {
		requireSame(t, fullInitializeShareGroupState(), initializeShareGroupStateFromWire(reqWire(initializeShareGroupStateToWire(fullInitializeShareGroupState(), v))))
		want := &InitializeShareGroupStateResponse{Topics: fullShareStateResults()}
		requireSame(t, want, initializeShareGroupStateResponseFromWire(respWire(initializeShareGroupStateResponseToWire(want, v))))
	})
	versions(t, 84, func(t *testing.T, v int16) {
		requireSame(t, fullReadShareGroupState(), readShareGroupStateFromWire(reqWire(readShareGroupStateToWire(fullReadShareGroupState(), v))))
		requireSame(t, fullReadShareGroupStateResponse(), readShareGroupStateResponseFromWire(respWire(readShareGroupStateResponseToWire(fullReadShareGroupStateResponse(), v))))
	})
	versions(t, 85, func(t *testing.T, v int16) {
		w := writeShareGroupStateToWire(fullWriteShareGroupState(), v)
		require.EqualValues(t, -1, w.Topics[0].Partitions[0].DeliveryCompleteCount, "Kafka's default: not set")
		requireSame(t, fullWriteShareGroupState(), writeShareGroupStateFromWire(reqWire(w)))
		want := &WriteShareGroupStateResponse{Topics: fullShareStateResults()}
		requireSame(t, want, writeShareGroupStateResponseFromWire(respWire(writeShareGroupStateResponseToWire(want, v))))
	})
	versions(t, 86, func(t *testing.T, v int16) {
		requireSame(t, fullDeleteShareGroupState(), deleteShareGroupStateFromWire(reqWire(deleteShareGroupStateToWire(fullDeleteShareGroupState(), v))))
		want := &DeleteShareGroupStateResponse{Topics: fullShareStateResults()}
		requireSame(t, want, deleteShareGroupStateResponseFromWire(respWire(deleteShareGroupStateResponseToWire(want, v))))
	})
}

// TestTCPShareState carries the share state APIs both ways over TCP, from
// a TCPClient and from a Kafka broker's requests as kmsg makes them; a
// server lists them in ApiVersions, version 0, for a ShareStateClient
// only.
func TestTCPShareState(t *testing.T) {
	f := newFakeShareStateNode(map[string]any{
		"initialize": &InitializeShareGroupStateResponse{Topics: fullShareStateResults()},
		"read":       fullReadShareGroupStateResponse(),
		"write":      &WriteShareGroupStateResponse{Topics: fullShareStateResults()},
		"delete":     &DeleteShareGroupStateResponse{Topics: fullShareStateResults()},
	})
	_, addr := serve(t, f, ServerOptions{})
	c := dial(t, addr)
	ctx := context.Background()

	ir, err := c.InitializeShareGroupState(ctx, fullInitializeShareGroupState())
	require.NoError(t, err)
	requireSame(t, &InitializeShareGroupStateResponse{Topics: fullShareStateResults()}, ir)
	require.Equal(t, fullInitializeShareGroupState(), f.last())

	rr, err := c.ReadShareGroupState(ctx, fullReadShareGroupState())
	require.NoError(t, err)
	requireSame(t, fullReadShareGroupStateResponse(), rr)
	require.Equal(t, fullReadShareGroupState(), f.last())

	wr, err := c.WriteShareGroupState(ctx, fullWriteShareGroupState())
	require.NoError(t, err)
	requireSame(t, &WriteShareGroupStateResponse{Topics: fullShareStateResults()}, wr)
	require.Equal(t, fullWriteShareGroupState(), f.last())

	dr, err := c.DeleteShareGroupState(ctx, fullDeleteShareGroupState())
	require.NoError(t, err)
	requireSame(t, &DeleteShareGroupStateResponse{Topics: fullShareStateResults()}, dr)
	require.Equal(t, fullDeleteShareGroupState(), f.last())

	// A Kafka broker's request, as kmsg makes it.
	nc, r := rawConn(t, addr)
	req := kmsg.NewPtrReadShareGroupStateRequest()
	req.GroupID = "g"
	rt := kmsg.NewReadShareGroupStateRequestTopic()
	rt.TopicID, rt.Partitions = openTopic, []kmsg.ReadShareGroupStateRequestTopicPartition{{Partition: 3, LeaderEpoch: 9}}
	req.Topics = []kmsg.ReadShareGroupStateRequestTopic{rt}
	_, err = nc.Write(kmsg.NewRequestFormatter(kmsg.FormatterClientID("broker-2")).AppendRequest(nil, req, 7))
	require.NoError(t, err)
	frame, err := readFrame(r, nil, 1<<20)
	require.NoError(t, err)
	resp := kmsg.NewPtrReadShareGroupStateResponse()
	require.NoError(t, resp.ReadFrom(frame[5:])) // the flexible header's empty tags
	require.Equal(t, kafka.ErrCoordinatorLoadInProgress.Code, resp.Topics[0].Partitions[0].ErrorCode)
	require.Len(t, resp.Topics[0].Partitions[0].StateBatches, 2)
	require.Equal(t, &ReadShareGroupStateRequest{Group: "g", Topics: []ReadShareGroupStateTopic{{TopicID: openTopic,
		Partitions: []ReadShareGroupStatePartition{{Partition: 3, LeaderEpoch: 9}}}}}, f.last())

	// Advertised for a ShareStateClient only; a client of another server
	// is told the API is not supported.
	listed := map[int16]apiRange{}
	for _, r := range apisFor(f) {
		listed[r.key] = r
	}
	for _, k := range []int16{83, 84, 85, 86} {
		require.Equal(t, apiRange{key: k}, listed[k], "%s for a ShareStateClient", kmsg.NameForKey(k))
		require.NotContains(t, apisFor(&fakeNode{}), apiRange{key: k})
	}
	_, plain := serve(t, &fakeNode{}, ServerOptions{})
	_, err = dial(t, plain).ReadShareGroupState(ctx, fullReadShareGroupState())
	require.ErrorIs(t, err, kafka.ErrUnsupportedVersion)
}

// TestAuthorizeShareState: the share state APIs need CLUSTER_ACTION on
// the cluster, as Kafka's KafkaApis asks; without it every share
// partition of the request is answered CLUSTER_AUTHORIZATION_FAILED and
// the handler sees nothing. FindCoordinator for a share partition's key
// needs CLUSTER_ACTION too, and version 6: an older one is answered
// INVALID_REQUEST.
func TestAuthorizeShareState(t *testing.T) {
	f := newFakeShareStateNode(map[string]any{})
	s := &Server{handler: f, opts: ServerOptions{Authorizer: shareACLs}}
	p := &peer{principal: auth.User("u"), clientHost: "127.0.0.1", ctx: context.Background()}
	allowed, err := s.authorize(readShareGroupStateToWire(fullReadShareGroupState(), 0), 0, p)
	require.NoError(t, err)
	require.Zero(t, allowed, "shareACLs allow CLUSTER_ACTION")

	refuseCluster := allowFunc(func(op auth.Operation, rt auth.ResourceType, _ string) bool {
		return !(rt == auth.ClusterResource && op == auth.ClusterActionOperation)
	})
	_, addr := serve(t, f, ServerOptions{Authorizer: refuseCluster})
	c := dial(t, addr)
	ctx := context.Background()
	before := len(f.got)
	refused := func(topics []ShareStateTopicResult) {
		t.Helper()
		require.Len(t, topics, 2)
		for _, tr := range topics {
			for _, pr := range tr.Partitions {
				require.ErrorIs(t, pr.Err, kafka.ErrClusterAuthorizationFailed)
			}
		}
		require.Equal(t, []int32{3, 2}, []int32{topics[0].Partitions[0].Partition, topics[0].Partitions[1].Partition})
	}
	ir, err := c.InitializeShareGroupState(ctx, fullInitializeShareGroupState())
	require.NoError(t, err)
	refused(ir.Topics)
	wr, err := c.WriteShareGroupState(ctx, &WriteShareGroupStateRequest{Group: "g", Topics: []WriteShareGroupStateTopic{
		{TopicID: openTopic, Partitions: []WriteShareGroupStatePartition{{Partition: 3}, {Partition: 2}}}, {TopicID: secretTopic, Partitions: []WriteShareGroupStatePartition{{Partition: 1}}}}})
	require.NoError(t, err)
	refused(wr.Topics)
	dr, err := c.DeleteShareGroupState(ctx, fullDeleteShareGroupState())
	require.NoError(t, err)
	refused(dr.Topics)
	rr, err := c.ReadShareGroupState(ctx, fullReadShareGroupState())
	require.NoError(t, err)
	require.Len(t, rr.Topics[0].Partitions, 2)
	for _, pr := range rr.Topics[0].Partitions {
		require.ErrorIs(t, pr.Err, kafka.ErrClusterAuthorizationFailed)
	}
	require.Len(t, f.got, before, "the handler saw none of them")

	// FindCoordinator for a share partition's key.
	f.set("FindCoordinator", &FindCoordinatorResponse{NodeID: 2, Host: "h", Port: 9092})
	key := "g:AQEAAAAAAAAAAAAAAAAAAA:3"
	fc, err := c.FindCoordinator(ctx, &FindCoordinatorRequest{Key: key, KeyType: CoordinatorShare})
	require.NoError(t, err)
	require.ErrorIs(t, fc.Err, kafka.ErrClusterAuthorizationFailed)
	require.Len(t, f.got, before)
	_, open := serve(t, f, ServerOptions{})
	fc, err = dial(t, open).FindCoordinator(ctx, &FindCoordinatorRequest{Key: key, KeyType: CoordinatorShare})
	require.NoError(t, err)
	require.NoError(t, fc.Err)
	require.EqualValues(t, 2, fc.NodeID)
	require.Equal(t, &FindCoordinatorRequest{Key: key, KeyType: CoordinatorShare}, f.last())

	// Version 5 cannot ask about share partitions.
	authz, err := s.authorize(findCoordinatorToWire(&FindCoordinatorRequest{Key: key, KeyType: CoordinatorShare}, 5), 5, p)
	require.NoError(t, err)
	require.Zero(t, authz, "INVALID_REQUEST comes before any ACL")
	resp, err := findCoordinator(ctx, f, findCoordinatorToWire(&FindCoordinatorRequest{Key: key, KeyType: CoordinatorShare}, 5), 5, *p)
	require.NoError(t, err)
	require.Equal(t, kafka.ErrInvalidRequest.Code, resp.(*kmsg.FindCoordinatorResponse).Coordinators[0].ErrorCode)
	require.Len(t, f.got, before+1, "the handler was not asked")
}
