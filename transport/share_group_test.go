package transport

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/partlog/partlog/auth"
	"github.com/partlog/partlog/kafka"
)

// The topics of fakeShareGroupNode: "open" anyone may use in the ACL
// tests, "secret" no one.
var (
	openTopic   = [16]byte{1, 1}
	secretTopic = [16]byte{2, 2}
	lostTopic   = [16]byte{9, 9} // a topic the node does not know
)

// fakeShareGroupNode answers the share group APIs with what resp holds,
// and keeps the requests.
type fakeShareGroupNode struct {
	*fakeGroupNode
}

func newFakeShareGroupNode(resp map[string]any) fakeShareGroupNode {
	return fakeShareGroupNode{&fakeGroupNode{resp: resp}}
}

func (f fakeShareGroupNode) ShareGroupHeartbeat(_ context.Context, req *ShareGroupHeartbeatRequest) (*ShareGroupHeartbeatResponse, error) {
	return handle[ShareGroupHeartbeatResponse](f.fakeGroupNode, "heartbeat", req), nil
}

func (f fakeShareGroupNode) ShareGroupDescribe(_ context.Context, req *ShareGroupDescribeRequest) (*ShareGroupDescribeResponse, error) {
	return handle[ShareGroupDescribeResponse](f.fakeGroupNode, "describe", req), nil
}

func (f fakeShareGroupNode) ShareFetch(_ context.Context, req *ShareFetchRequest) (*ShareFetchResponse, error) {
	return handle[ShareFetchResponse](f.fakeGroupNode, "fetch", req), nil
}

func (f fakeShareGroupNode) ShareAcknowledge(_ context.Context, req *ShareAcknowledgeRequest) (*ShareAcknowledgeResponse, error) {
	return handle[ShareAcknowledgeResponse](f.fakeGroupNode, "acknowledge", req), nil
}

// Metadata names the node's topics: open and secret.
func (f fakeShareGroupNode) Metadata(context.Context, *MetadataRequest) (*MetadataResponse, error) {
	return &MetadataResponse{Topics: []TopicMetadata{
		{Topic: "open", TopicID: openTopic}, {Topic: "secret", TopicID: secretTopic},
		{Topic: "gone", TopicID: lostTopic, Err: kafka.ErrUnknownTopicOrPartition},
	}}, nil
}

// Requests and answers with every field set.

func fullShareGroupHeartbeat() *ShareGroupHeartbeatRequest {
	return &ShareGroupHeartbeatRequest{Group: "g", MemberID: "m1", MemberEpoch: 3, RackID: kmsg.StringPtr("r1"),
		SubscribedTopicNames: []string{"open", "t2"}, ClientID: "c", ClientHost: "127.0.0.1"}
}

func fullShareGroupHeartbeatResponse() *ShareGroupHeartbeatResponse {
	return &ShareGroupHeartbeatResponse{Err: kafka.ErrGroupMaxSizeReached, MemberID: "m1", MemberEpoch: 4, HeartbeatIntervalMillis: 5000,
		Assignment: []TopicIDPartitions{{TopicID: openTopic, Partitions: []int32{0, 2}}, {TopicID: secretTopic, Partitions: []int32{}}}}
}

func fullShareGroupDescribe() *ShareGroupDescribeRequest {
	return &ShareGroupDescribeRequest{Groups: []string{"g", "h"}}
}

func fullShareGroupDescribeResponse() *ShareGroupDescribeResponse {
	return &ShareGroupDescribeResponse{Groups: []ShareGroupDescription{
		{Group: "g", Err: kafka.ErrCoordinatorLoadInProgress, State: "Stable", Epoch: 7, AssignmentEpoch: 6, AssignorName: "simple",
			Members: []ShareGroupMemberDescription{{MemberID: "m1", RackID: "r1", MemberEpoch: 7, ClientID: "c", ClientHost: "/127.0.0.1",
				SubscribedTopicNames: []string{"open"},
				Assignment:           []NamedTopicIDPartitions{{TopicID: openTopic, Topic: "open", Partitions: []int32{0, 1}}}}}},
	}}
}

func fullShareFetch() *ShareFetchRequest {
	return &ShareFetchRequest{Group: "g", MemberID: "m1", ShareSessionEpoch: 2, MaxWait: 500 * time.Millisecond,
		MinBytes: 1, MaxBytes: 1 << 20, MaxRecords: 500, BatchSize: 100, ShareAcquireMode: ShareAcquireRecordLimit, IsRenewAck: true,
		Topics: []ShareFetchTopic{{TopicID: openTopic, Partitions: []ShareFetchPartition{
			{Partition: 3, AcknowledgementBatches: []AcknowledgementBatch{
				{FirstOffset: 10, LastOffset: 12, AcknowledgeTypes: []AcknowledgeType{AcknowledgeAccept, AcknowledgeGap, AcknowledgeRenew}},
				{FirstOffset: 13, LastOffset: 20, AcknowledgeTypes: []AcknowledgeType{AcknowledgeRelease}},
			}},
			{Partition: 1, AcknowledgementBatches: []AcknowledgementBatch{}},
		}}},
		ForgottenTopics: []TopicIDPartitions{{TopicID: secretTopic, Partitions: []int32{3}}},
	}
}

func fullShareFetchResponse() *ShareFetchResponse {
	return &ShareFetchResponse{Err: kafka.ErrInvalidShareSessionEpoch, AcquisitionLockTimeout: 30 * time.Second,
		Topics: []ShareFetchTopicResponse{{TopicID: openTopic, Partitions: []ShareFetchPartitionResponse{
			{Partition: 3, Err: kafka.ErrNotLeaderOrFollower, AcknowledgeErr: kafka.ErrInvalidRecordState,
				CurrentLeader: LeaderIDAndEpoch{LeaderID: 2, LeaderEpoch: 5}, Records: []byte("batches"),
				AcquiredRecords: []AcquiredRecords{{FirstOffset: 21, LastOffset: 30, DeliveryCount: 1}, {FirstOffset: 32, LastOffset: 32, DeliveryCount: 3}}},
		}}},
		NodeEndpoints: []Broker{{NodeID: 2, Host: "h2", Port: 9092, Rack: "r2"}},
	}
}

func fullShareAcknowledge() *ShareAcknowledgeRequest {
	return &ShareAcknowledgeRequest{Group: "g", MemberID: "m1", ShareSessionEpoch: 3, IsRenewAck: true, Topics: []ShareAcknowledgeTopic{{TopicID: openTopic,
		Partitions: []ShareAcknowledgePartition{{Partition: 3, AcknowledgementBatches: []AcknowledgementBatch{
			{FirstOffset: 21, LastOffset: 22, AcknowledgeTypes: []AcknowledgeType{AcknowledgeAccept, AcknowledgeRelease}},
			{FirstOffset: 23, LastOffset: 23, AcknowledgeTypes: []AcknowledgeType{AcknowledgeRenew}}}}}}}}
}

func fullShareAcknowledgeResponse() *ShareAcknowledgeResponse {
	return &ShareAcknowledgeResponse{Err: kafka.ErrShareSessionNotFound, AcquisitionLockTimeout: 15 * time.Second, Topics: []ShareAcknowledgeTopicResponse{{TopicID: openTopic,
		Partitions: []ShareAcknowledgePartitionResponse{{Partition: 3, Err: kafka.ErrNotLeaderOrFollower, CurrentLeader: LeaderIDAndEpoch{LeaderID: 2, LeaderEpoch: 5}}}}},
		NodeEndpoints: []Broker{{NodeID: 2, Host: "h2", Port: 9092, Rack: "r2"}}}
}

// unset lists the fields of v left at their zero value (a nil slice, not
// an empty one), but those named in skip, depth-first, by path.
func unset(v reflect.Value, path string, skip map[string]bool) []string {
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			return []string{path}
		}
		return unset(v.Elem(), path, skip)
	case reflect.Interface:
		if v.IsNil() {
			return []string{path}
		}
	case reflect.Struct:
		var out []string
		for i := range v.NumField() {
			name := v.Type().Field(i).Name
			if !skip[name] {
				out = append(out, unset(v.Field(i), path+"."+name, skip)...)
			}
		}
		return out
	case reflect.Slice:
		if v.IsNil() {
			return []string{path}
		}
		if k := v.Type().Elem().Kind(); k != reflect.Struct && k != reflect.Pointer {
			return nil // partitions, types: a zero is a value
		}
		var out []string
		for i := range v.Len() {
			out = append(out, unset(v.Index(i), fmt.Sprintf("%s[%d]", path, i), skip)...)
		}
		return out
	default:
		if v.IsZero() {
			return []string{path}
		}
	}
	return nil
}

// sameErrors checks that each error of got wraps the error of want at the
// same place (the wire adds the message), and sets it to want's, so that
// the two may be compared whole.
func sameErrors(t testing.TB, want, got reflect.Value, path string) {
	t.Helper()
	if want.Type() == reflect.TypeFor[error]() {
		w, _ := want.Interface().(error)
		g, _ := got.Interface().(error)
		if w == nil {
			require.NoError(t, g, path)
		} else {
			require.ErrorIs(t, g, w, path)
		}
		got.Set(want)
		return
	}
	switch want.Kind() {
	case reflect.Pointer:
		if !want.IsNil() && !got.IsNil() {
			sameErrors(t, want.Elem(), got.Elem(), path)
		}
	case reflect.Struct:
		for i := range want.NumField() {
			sameErrors(t, want.Field(i), got.Field(i), path+"."+want.Type().Field(i).Name)
		}
	case reflect.Slice:
		for i := range min(want.Len(), got.Len()) {
			sameErrors(t, want.Index(i), got.Index(i), fmt.Sprintf("%s[%d]", path, i))
		}
	}
}

// requireSame checks that got is want, errors by errors.Is.
func requireSame[T any](t testing.TB, want, got *T, msgs ...any) {
	t.Helper()
	sameErrors(t, reflect.ValueOf(want), reflect.ValueOf(got), "")
	require.Equal(t, want, got, msgs...)
}

// TestShareGroupWire round-trips each request and answer of the share
// group APIs, with every field set, through kmsg's bytes in each
// version kmsg knows: every field survives in the versions partlog
// speaks, and in the others all but those the version lacks (version 0
// has no MaxRecords, BatchSize or acquisition lock timeout; versions
// before 2 no ShareAcquireMode, IsRenewAck, or lock timeout in a
// ShareAcknowledge answer).
func TestShareGroupWire(t *testing.T) {
	serverFilled := map[string]bool{"ClientID": true, "ClientHost": true, "MayRead": true}
	trip := func(t *testing.T, key int16, run func(t *testing.T, v int16, supported bool)) {
		rng, ok := findRange(supportedAPIs, key)
		require.True(t, ok)
		for v := int16(0); v <= kmsg.RequestForKey(key).MaxVersion(); v++ {
			t.Run(fmt.Sprintf("%s v%d", kmsg.NameForKey(key), v), func(t *testing.T) {
				run(t, v, v >= rng.min && v <= rng.max)
			})
		}
	}
	for _, full := range []any{fullShareGroupHeartbeat(), fullShareGroupHeartbeatResponse(), fullShareGroupDescribe(),
		fullShareGroupDescribeResponse(), fullShareFetch(), fullShareFetchResponse(), fullShareAcknowledge(), fullShareAcknowledgeResponse()} {
		require.Empty(t, unset(reflect.ValueOf(full), reflect.TypeOf(full).Elem().Name(), serverFilled), "set every field")
	}
	trip(t, 76, func(t *testing.T, v int16, _ bool) {
		want := fullShareGroupHeartbeat()
		want.ClientID, want.ClientHost = "", "" // the server's to fill
		requireSame(t, want, shareGroupHeartbeatFromWire(reqWire(shareGroupHeartbeatToWire(fullShareGroupHeartbeat(), v))))
		requireSame(t, fullShareGroupHeartbeatResponse(),
			shareGroupHeartbeatResponseFromWire(respWire(shareGroupHeartbeatResponseToWire(fullShareGroupHeartbeatResponse(), v))))
		// Nil is "unchanged": it stays nil.
		keepalive := &ShareGroupHeartbeatRequest{Group: "g", MemberID: "m1", MemberEpoch: 4}
		requireSame(t, keepalive, shareGroupHeartbeatFromWire(reqWire(shareGroupHeartbeatToWire(keepalive, v))))
		requireSame(t, &ShareGroupHeartbeatResponse{MemberID: "m1", MemberEpoch: 4},
			shareGroupHeartbeatResponseFromWire(respWire(shareGroupHeartbeatResponseToWire(&ShareGroupHeartbeatResponse{MemberID: "m1", MemberEpoch: 4}, v))))
	})
	trip(t, 77, func(t *testing.T, v int16, _ bool) {
		requireSame(t, fullShareGroupDescribe(), shareGroupDescribeFromWire(reqWire(shareGroupDescribeToWire(fullShareGroupDescribe(), v))))
		requireSame(t, fullShareGroupDescribeResponse(),
			shareGroupDescribeResponseFromWire(respWire(shareGroupDescribeResponseToWire(fullShareGroupDescribeResponse(), v))))
	})
	trip(t, 78, func(t *testing.T, v int16, supported bool) {
		want, wantResp := fullShareFetch(), fullShareFetchResponse()
		if v == 0 {
			want.MaxRecords, want.BatchSize, wantResp.AcquisitionLockTimeout = 0, 0, 0
		}
		if v < 2 {
			want.ShareAcquireMode, want.IsRenewAck = ShareAcquireBatchOptimized, false
		}
		requireSame(t, want, shareFetchFromWire(reqWire(shareFetchToWire(fullShareFetch(), v))))
		requireSame(t, wantResp, shareFetchResponseFromWire(respWire(shareFetchResponseToWire(fullShareFetchResponse(), v))))
		// A partition without records goes as empty records, not null.
		w := shareFetchResponseToWire(&ShareFetchResponse{Topics: []ShareFetchTopicResponse{{TopicID: openTopic,
			Partitions: []ShareFetchPartitionResponse{{Partition: 1}}}}}, v)
		require.NotNil(t, w.Topics[0].Partitions[0].Records)
	})
	trip(t, 79, func(t *testing.T, v int16, _ bool) {
		want, wantResp := fullShareAcknowledge(), fullShareAcknowledgeResponse()
		if v < 2 {
			want.IsRenewAck, wantResp.AcquisitionLockTimeout = false, 0
		}
		requireSame(t, want, shareAcknowledgeFromWire(reqWire(shareAcknowledgeToWire(fullShareAcknowledge(), v))))
		requireSame(t, wantResp, shareAcknowledgeResponseFromWire(respWire(shareAcknowledgeResponseToWire(fullShareAcknowledgeResponse(), v))))
	})
}

// TestTCPShareGroup carries the share group APIs both ways over TCP, from
// a TCPClient and from a Kafka client's requests as kmsg makes them:
// every field of each request reaches the handler as sent, with the
// client id and address the server fills in, and every field of each
// answer, records included, reaches the client.
func TestTCPShareGroup(t *testing.T) {
	f := newFakeShareGroupNode(map[string]any{
		"heartbeat": fullShareGroupHeartbeatResponse(), "describe": fullShareGroupDescribeResponse(),
		"fetch": fullShareFetchResponse(), "acknowledge": fullShareAcknowledgeResponse(),
	})
	_, addr := serve(t, f, ServerOptions{})
	c := dial(t, addr)
	ctx := context.Background()

	hb, err := c.ShareGroupHeartbeat(ctx, fullShareGroupHeartbeat())
	require.NoError(t, err)
	requireSame(t, fullShareGroupHeartbeatResponse(), hb)
	want := fullShareGroupHeartbeat()
	want.ClientID = "partlog" // the server's, from the request header and the connection
	require.Equal(t, want, f.last())

	d, err := c.ShareGroupDescribe(ctx, fullShareGroupDescribe())
	require.NoError(t, err)
	requireSame(t, fullShareGroupDescribeResponse(), d)
	require.Equal(t, fullShareGroupDescribe(), f.last())

	fetched, err := c.ShareFetch(ctx, fullShareFetch())
	require.NoError(t, err)
	requireSame(t, fullShareFetchResponse(), fetched)
	require.Equal(t, fullShareFetch(), f.last(), "no MayRead without an Authorizer")

	acked, err := c.ShareAcknowledge(ctx, fullShareAcknowledge())
	require.NoError(t, err)
	requireSame(t, fullShareAcknowledgeResponse(), acked)
	require.Equal(t, fullShareAcknowledge(), f.last())

	// A Kafka client's requests, as kmsg makes them.
	nc, r := rawConn(t, addr)
	format := kmsg.NewRequestFormatter(kmsg.FormatterClientID("kafka-share"))
	ask := func(req kmsg.Request) kmsg.Response {
		t.Helper()
		_, err := nc.Write(format.AppendRequest(nil, req, 7))
		require.NoError(t, err)
		frame, err := readFrame(r, nil, 1<<20)
		require.NoError(t, err)
		require.EqualValues(t, 7, int32(frame[0])<<24|int32(frame[1])<<16|int32(frame[2])<<8|int32(frame[3]))
		resp := req.ResponseKind()
		require.NoError(t, resp.ReadFrom(frame[5:])) // the flexible header's empty tags
		return resp
	}
	hreq := kmsg.NewPtrShareGroupHeartbeatRequest()
	hreq.Version, hreq.GroupID, hreq.MemberID, hreq.SubscribedTopicNames = 1, "g", "m2", []string{"open"}
	hresp := ask(hreq).(*kmsg.ShareGroupHeartbeatResponse)
	require.Equal(t, kafka.ErrGroupMaxSizeReached.Code, hresp.ErrorCode)
	require.Len(t, hresp.Assignment.TopicPartitions, 2)
	require.Equal(t, &ShareGroupHeartbeatRequest{Group: "g", MemberID: "m2", SubscribedTopicNames: []string{"open"},
		ClientID: "kafka-share", ClientHost: "127.0.0.1"}, f.last())

	freq := kmsg.NewPtrShareFetchRequest()
	freq.Version, freq.GroupID, freq.MemberID, freq.MaxRecords = 1, kmsg.StringPtr("g"), kmsg.StringPtr("m2"), 10
	ft := kmsg.NewShareFetchRequestTopic()
	ft.TopicID, ft.Partitions = openTopic, []kmsg.ShareFetchRequestTopicPartition{{Partition: 0}}
	freq.Topics = []kmsg.ShareFetchRequestTopic{ft}
	fresp := ask(freq).(*kmsg.ShareFetchResponse)
	require.EqualValues(t, 30000, fresp.AcquisitionLockTimeoutMillis)
	require.Equal(t, []byte("batches"), fresp.Topics[0].Partitions[0].Records)
	require.Len(t, fresp.Topics[0].Partitions[0].AcquiredRecords, 2)
	require.Equal(t, &ShareFetchRequest{Group: "g", MemberID: "m2", MaxBytes: 0x7fffffff, MaxRecords: 10,
		Topics:          []ShareFetchTopic{{TopicID: openTopic, Partitions: []ShareFetchPartition{{AcknowledgementBatches: []AcknowledgementBatch{}}}}},
		ForgottenTopics: []TopicIDPartitions{}}, f.last())

	areq := kmsg.NewPtrShareAcknowledgeRequest()
	areq.Version, areq.GroupID, areq.MemberID, areq.ShareSessionEpoch = 1, kmsg.StringPtr("g"), kmsg.StringPtr("m2"), -1
	aresp := ask(areq).(*kmsg.ShareAcknowledgeResponse)
	require.Equal(t, kafka.ErrShareSessionNotFound.Code, aresp.ErrorCode)
	require.Equal(t, "h2", aresp.NodeEndpoints[0].Host)
	require.Zero(t, aresp.AcquisitionLockTimeoutMillis, "not in version 1")

	// Version 2: a renewal, and a record-limit fetch.
	areq.Version, areq.ShareSessionEpoch, areq.IsRenewAck = 2, 4, true
	aresp = ask(areq).(*kmsg.ShareAcknowledgeResponse)
	require.EqualValues(t, 15000, aresp.AcquisitionLockTimeoutMillis)
	require.Equal(t, &ShareAcknowledgeRequest{Group: "g", MemberID: "m2", ShareSessionEpoch: 4, IsRenewAck: true, Topics: []ShareAcknowledgeTopic{}}, f.last())
	freq.Version, freq.ShareAcquireMode = 2, 1
	fresp = ask(freq).(*kmsg.ShareFetchResponse)
	require.EqualValues(t, 30000, fresp.AcquisitionLockTimeoutMillis)
	require.Equal(t, ShareAcquireRecordLimit, f.last().(*ShareFetchRequest).ShareAcquireMode)

	dreq := kmsg.NewPtrShareGroupDescribeRequest()
	dreq.Version, dreq.GroupIDs = 1, []string{"g"}
	dresp := ask(dreq).(*kmsg.ShareGroupDescribeResponse)
	require.Equal(t, "open", dresp.Groups[0].Members[0].Assignment.TopicPartitions[0].Topic)
	require.EqualValues(t, -2147483648, dresp.Groups[0].AuthorizedOperations, "not known")
}

// TestShareGroupAPIsAdvertised: a server lists ShareGroupHeartbeat and
// ShareGroupDescribe, version 1, and ShareFetch and ShareAcknowledge,
// versions 1 and 2, for a ShareGroupClient only; a client of a server without one is told the
// API is not supported, and its connection keeps working.
func TestShareGroupAPIsAdvertised(t *testing.T) {
	versions := func(h Client) map[int16][2]int16 {
		m := map[int16][2]int16{}
		for _, r := range apisFor(h) {
			m[r.key] = [2]int16{r.min, r.max}
		}
		return m
	}
	plain, share := versions(&fakeNode{}), versions(newFakeShareGroupNode(nil))
	for _, k := range []int16{76, 77, 78, 79} {
		require.NotContains(t, plain, k, "%s for a plain Client", kmsg.NameForKey(k))
		want := [2]int16{1, 1}
		if k == 78 || k == 79 {
			want[1] = 2
		}
		require.Equal(t, want, share[k], "%s for a ShareGroupClient", kmsg.NameForKey(k))
	}

	_, addr := serve(t, newFakeShareGroupNode(nil), ServerOptions{})
	nc, r := rawConn(t, addr)
	_, err := nc.Write(kmsg.NewRequestFormatter().AppendRequest(nil, kmsg.NewPtrApiVersionsRequest(), 1))
	require.NoError(t, err)
	frame, err := readFrame(r, nil, 1<<20)
	require.NoError(t, err)
	resp := kmsg.NewPtrApiVersionsResponse()
	require.NoError(t, resp.ReadFrom(frame[4:]))
	listed := map[int16]bool{}
	for _, k := range resp.ApiKeys {
		listed[k.ApiKey] = true
	}
	for _, k := range []int16{76, 77, 78, 79} {
		require.True(t, listed[k], "%s in ApiVersions", kmsg.NameForKey(k))
	}

	_, addr = serve(t, &fakeNode{}, ServerOptions{})
	c := dial(t, addr)
	ctx := context.Background()
	_, err = c.ShareFetch(ctx, fullShareFetch())
	require.ErrorIs(t, err, kafka.ErrUnsupportedVersion)
	_, err = c.ShareGroupHeartbeat(ctx, fullShareGroupHeartbeat())
	require.ErrorIs(t, err, kafka.ErrUnsupportedVersion)
	_, err = c.Metadata(ctx, &MetadataRequest{})
	require.NoError(t, err, "the connection is fine")

	// Sent anyway, a share request gets no answer: the server closes the
	// connection, as for any API it does not speak.
	nc, r = rawConn(t, addr)
	_, err = nc.Write(kmsg.NewRequestFormatter().AppendRequest(nil, shareFetchToWire(fullShareFetch(), 1), 1))
	require.NoError(t, err)
	_, err = r.ReadByte()
	require.Error(t, err)
}

// allowFunc is an Authorizer of a function.
type allowFunc func(op auth.Operation, rt auth.ResourceType, name string) bool

func (f allowFunc) Authorize(_ auth.Principal, _ string, op auth.Operation, rt auth.ResourceType, name string) bool {
	return f(op, rt, name)
}
func (allowFunc) AuthorizeAny(auth.Principal, string, auth.Operation, auth.ResourceType) bool {
	return false
}

// shareACLs allows everything but the groups and topics named "secret",
// and DESCRIBE on the topic "hidden".
var shareACLs = allowFunc(func(op auth.Operation, rt auth.ResourceType, name string) bool {
	return name != "secret" && !(rt == auth.TopicResource && op == auth.DescribeOperation && name == "hidden")
})

// TestAuthorizeShareGroup checks the share group APIs against ACLs as
// Kafka's KafkaApis does: ShareGroupHeartbeat needs READ on the group and
// DESCRIBE on each topic subscribed to; ShareGroupDescribe DESCRIBE on
// each group and on each topic its members are assigned; ShareFetch and
// ShareAcknowledge READ on the group, and READ on each topic, the others
// answered TOPIC_AUTHORIZATION_FAILED per partition while the handler
// gets the rest.
func TestAuthorizeShareGroup(t *testing.T) {
	s := &Server{handler: newFakeShareGroupNode(nil), opts: ServerOptions{Authorizer: shareACLs}}
	p := &peer{principal: auth.User("u"), clientHost: "127.0.0.1", ctx: context.Background()}
	authorize := func(req kmsg.Request) authorization {
		t.Helper()
		authz, err := s.authorize(req, 1, p)
		require.NoError(t, err)
		return authz
	}
	code := func(authz authorization) int16 {
		t.Helper()
		require.NotNil(t, authz.answer)
		return reflect.ValueOf(authz.answer).Elem().FieldByName("ErrorCode").Interface().(int16)
	}

	require.Equal(t, kafka.ErrGroupAuthorizationFailed.Code,
		code(authorize(shareGroupHeartbeatToWire(&ShareGroupHeartbeatRequest{Group: "secret"}, 1))))
	require.Equal(t, kafka.ErrTopicAuthorizationFailed.Code,
		code(authorize(shareGroupHeartbeatToWire(&ShareGroupHeartbeatRequest{Group: "g", SubscribedTopicNames: []string{"open", "hidden"}}, 1))))
	require.Zero(t, authorize(shareGroupHeartbeatToWire(&ShareGroupHeartbeatRequest{Group: "g", SubscribedTopicNames: []string{"open"}}, 1)))

	dreq := shareGroupDescribeToWire(&ShareGroupDescribeRequest{Groups: []string{"g", "secret", "h"}}, 1)
	authz := authorize(dreq)
	require.Equal(t, []string{"g", "h"}, dreq.GroupIDs, "the handler describes the groups allowed")
	described := shareGroupDescribeResponseToWire(&ShareGroupDescribeResponse{Groups: []ShareGroupDescription{
		{Group: "g", State: "Stable", Members: []ShareGroupMemberDescription{{MemberID: "m", Assignment: []NamedTopicIDPartitions{{Topic: "open"}}}}},
		{Group: "h", State: "Stable", Members: []ShareGroupMemberDescription{{MemberID: "m", Assignment: []NamedTopicIDPartitions{{Topic: "hidden"}}}}},
	}}, 1)
	authz.merge(described)
	got := shareGroupDescribeResponseFromWire(described)
	require.Len(t, got.Groups, 3)
	require.NoError(t, got.Groups[0].Err)
	require.Len(t, got.Groups[0].Members, 1)
	require.ErrorIs(t, got.Groups[1].Err, kafka.ErrTopicAuthorizationFailed, "a member assigned a topic the principal may not describe")
	require.Empty(t, got.Groups[1].Members)
	require.Equal(t, "secret", got.Groups[2].Group)
	require.ErrorIs(t, got.Groups[2].Err, kafka.ErrGroupAuthorizationFailed)
	alone := authorize(shareGroupDescribeToWire(&ShareGroupDescribeRequest{Groups: []string{"secret"}}, 1)).answer
	require.NotNil(t, alone, "none left: the server answers")
	require.Equal(t, kafka.ErrGroupAuthorizationFailed.Code, alone.(*kmsg.ShareGroupDescribeResponse).Groups[0].ErrorCode)

	require.Equal(t, kafka.ErrGroupAuthorizationFailed.Code, code(authorize(shareFetchToWire(&ShareFetchRequest{Group: "secret"}, 1))))
	require.Equal(t, kafka.ErrGroupAuthorizationFailed.Code, code(authorize(shareAcknowledgeToWire(&ShareAcknowledgeRequest{Group: "secret"}, 1))))
	ack := []AcknowledgementBatch{{FirstOffset: 1, LastOffset: 1, AcknowledgeTypes: []AcknowledgeType{AcknowledgeAccept}}}
	shareFetch := func() *kmsg.ShareFetchRequest {
		return shareFetchToWire(&ShareFetchRequest{Group: "g", Topics: []ShareFetchTopic{
			{TopicID: openTopic, Partitions: []ShareFetchPartition{{Partition: 0}}},
			{TopicID: secretTopic, Partitions: []ShareFetchPartition{{Partition: 0, AcknowledgementBatches: ack}, {Partition: 1}}},
			{TopicID: lostTopic, Partitions: []ShareFetchPartition{{Partition: 0}}},
		}}, 1)
	}
	freq := shareFetch()
	authz = authorize(freq)
	require.Equal(t, []ShareFetchTopic{{TopicID: openTopic, Partitions: []ShareFetchPartition{{Partition: 0, AcknowledgementBatches: []AcknowledgementBatch{}}}},
		{TopicID: lostTopic, Partitions: []ShareFetchPartition{{Partition: 0, AcknowledgementBatches: []AcknowledgementBatch{}}}}},
		shareFetchFromWire(freq).Topics, "the secret topic leaves; the one the node does not know is the handler's to answer")
	fetched := shareFetchResponseToWire(&ShareFetchResponse{Topics: []ShareFetchTopicResponse{
		{TopicID: openTopic, Partitions: []ShareFetchPartitionResponse{{Partition: 0, Records: []byte("b")}}},
		{TopicID: lostTopic, Partitions: []ShareFetchPartitionResponse{{Partition: 0, Err: kafka.ErrUnknownTopicID}}},
	}}, 1)
	authz.merge(fetched)
	fresp := shareFetchResponseFromWire(fetched)
	require.Len(t, fresp.Topics, 3)
	require.Equal(t, secretTopic, fresp.Topics[2].TopicID)
	require.Len(t, fresp.Topics[2].Partitions, 2)
	for i, p := range fresp.Topics[2].Partitions {
		require.EqualValues(t, i, p.Partition)
		require.ErrorIs(t, p.Err, kafka.ErrTopicAuthorizationFailed)
		require.Empty(t, p.Records)
	}
	require.ErrorIs(t, fresp.Topics[2].Partitions[0].AcknowledgeErr, kafka.ErrTopicAuthorizationFailed, "its acknowledgements too")
	require.NoError(t, fresp.Topics[2].Partitions[1].AcknowledgeErr, "no acknowledgements, no acknowledgement error")
	failed := shareFetchResponseToWire(&ShareFetchResponse{Err: kafka.ErrShareSessionNotFound}, 1)
	authorize(shareFetch()).merge(failed)
	require.Empty(t, failed.Topics, "a request failed whole answers no partition")

	areq := shareAcknowledgeToWire(&ShareAcknowledgeRequest{Group: "g", Topics: []ShareAcknowledgeTopic{
		{TopicID: secretTopic, Partitions: []ShareAcknowledgePartition{{Partition: 2, AcknowledgementBatches: ack}}},
		{TopicID: openTopic, Partitions: []ShareAcknowledgePartition{{Partition: 0, AcknowledgementBatches: ack}}},
	}}, 1)
	authz = authorize(areq)
	require.Len(t, areq.Topics, 1)
	require.Equal(t, openTopic, areq.Topics[0].TopicID)
	acked := shareAcknowledgeResponseToWire(&ShareAcknowledgeResponse{}, 1)
	authz.merge(acked)
	aresp := shareAcknowledgeResponseFromWire(acked)
	require.Len(t, aresp.Topics, 1)
	require.Equal(t, secretTopic, aresp.Topics[0].TopicID)
	require.ErrorIs(t, aresp.Topics[0].Partitions[0].Err, kafka.ErrTopicAuthorizationFailed)
	require.EqualValues(t, 2, aresp.Topics[0].Partitions[0].Partition)
}

// TestTCPShareFetchAuthorized: over TCP, a ShareFetch of a topic the
// principal may not read answers its partitions
// TOPIC_AUTHORIZATION_FAILED beside the handler's answer, the handler
// never sees the topic, and it gets MayRead for its session's others.
func TestTCPShareFetchAuthorized(t *testing.T) {
	f := newFakeShareGroupNode(map[string]any{"fetch": &ShareFetchResponse{Topics: []ShareFetchTopicResponse{
		{TopicID: openTopic, Partitions: []ShareFetchPartitionResponse{{Partition: 0, Records: []byte("b")}}}}}})
	_, addr := serve(t, f, ServerOptions{Authorizer: shareACLs})
	c := dial(t, addr)
	resp, err := c.ShareFetch(context.Background(), &ShareFetchRequest{Group: "g", MemberID: "m", Topics: []ShareFetchTopic{
		{TopicID: openTopic, Partitions: []ShareFetchPartition{{Partition: 0}}},
		{TopicID: secretTopic, Partitions: []ShareFetchPartition{{Partition: 4}}},
	}})
	require.NoError(t, err)
	require.Len(t, resp.Topics, 2)
	require.Equal(t, []byte("b"), resp.Topics[0].Partitions[0].Records)
	require.Equal(t, secretTopic, resp.Topics[1].TopicID)
	require.EqualValues(t, 4, resp.Topics[1].Partitions[0].Partition)
	require.True(t, errors.Is(resp.Topics[1].Partitions[0].Err, kafka.ErrTopicAuthorizationFailed))

	got := f.last().(*ShareFetchRequest)
	require.Len(t, got.Topics, 1)
	require.Equal(t, openTopic, got.Topics[0].TopicID)
	require.NotNil(t, got.MayRead)
	require.True(t, got.MayRead("open"))
	require.False(t, got.MayRead("secret"))

	resp, err = c.ShareFetch(context.Background(), &ShareFetchRequest{Group: "secret", MemberID: "m"})
	require.NoError(t, err)
	require.ErrorIs(t, resp.Err, kafka.ErrGroupAuthorizationFailed)
}

// TestShareRequestsFit: version 1 of ShareFetch and ShareAcknowledge
// cannot carry a renewal or ShareAcquireRecordLimit, and a TCPClient
// refuses to send one, as Kafka's client does; version 2 carries every
// request.
func TestShareRequestsFit(t *testing.T) {
	renewing := []ShareFetchTopic{{TopicID: openTopic, Partitions: []ShareFetchPartition{{Partition: 1,
		AcknowledgementBatches: []AcknowledgementBatch{{FirstOffset: 1, LastOffset: 2, AcknowledgeTypes: []AcknowledgeType{AcknowledgeAccept, AcknowledgeRenew}}}}}}}
	fetches := []struct {
		name string
		req  *ShareFetchRequest
		v1   bool
	}{
		{"a batch-optimized fetch", &ShareFetchRequest{Group: "g", MaxRecords: 10}, true},
		{"a record-limit fetch", &ShareFetchRequest{Group: "g", MaxRecords: 10, ShareAcquireMode: ShareAcquireRecordLimit}, false},
		{"IsRenewAck", &ShareFetchRequest{Group: "g", IsRenewAck: true}, false},
		{"a renewal without IsRenewAck", &ShareFetchRequest{Group: "g", Topics: renewing}, false},
		{"every field", fullShareFetch(), false},
	}
	for _, tt := range fetches {
		require.Equal(t, tt.v1, shareFetchFits(tt.req, 1), "ShareFetch v1, %s", tt.name)
		require.True(t, shareFetchFits(tt.req, 2), "ShareFetch v2, %s", tt.name)
	}
	acks := []struct {
		name string
		req  *ShareAcknowledgeRequest
		v1   bool
	}{
		{"no renewal", &ShareAcknowledgeRequest{Group: "g", Topics: []ShareAcknowledgeTopic{{TopicID: openTopic, Partitions: []ShareAcknowledgePartition{{Partition: 1,
			AcknowledgementBatches: []AcknowledgementBatch{{FirstOffset: 1, LastOffset: 1, AcknowledgeTypes: []AcknowledgeType{AcknowledgeAccept}}}}}}}}, true},
		{"IsRenewAck", &ShareAcknowledgeRequest{Group: "g", IsRenewAck: true}, false},
		{"a renewal without IsRenewAck", &ShareAcknowledgeRequest{Group: "g", Topics: []ShareAcknowledgeTopic{{TopicID: openTopic, Partitions: []ShareAcknowledgePartition{{Partition: 1,
			AcknowledgementBatches: renewing[0].Partitions[0].AcknowledgementBatches}}}}}, false},
		{"every field", fullShareAcknowledge(), false},
	}
	for _, tt := range acks {
		require.Equal(t, tt.v1, shareAcknowledgeFits(tt.req, 1), "ShareAcknowledge v1, %s", tt.name)
		require.True(t, shareAcknowledgeFits(tt.req, 2), "ShareAcknowledge v2, %s", tt.name)
	}
}
