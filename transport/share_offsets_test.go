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

// fakeShareOffsetsNode answers the share group offsets APIs with what
// resp holds, and keeps the requests.
type fakeShareOffsetsNode struct {
	*fakeGroupNode
}

func (f fakeShareOffsetsNode) DescribeShareGroupOffsets(_ context.Context, req *DescribeShareGroupOffsetsRequest) (*DescribeShareGroupOffsetsResponse, error) {
	return handle[DescribeShareGroupOffsetsResponse](f.fakeGroupNode, "describe", req), nil
}

func (f fakeShareOffsetsNode) AlterShareGroupOffsets(_ context.Context, req *AlterShareGroupOffsetsRequest) (*AlterShareGroupOffsetsResponse, error) {
	return handle[AlterShareGroupOffsetsResponse](f.fakeGroupNode, "alter", req), nil
}

func (f fakeShareOffsetsNode) DeleteShareGroupOffsets(_ context.Context, req *DeleteShareGroupOffsetsRequest) (*DeleteShareGroupOffsetsResponse, error) {
	return handle[DeleteShareGroupOffsetsResponse](f.fakeGroupNode, "delete", req), nil
}

// Requests and answers with every field set.

func fullDescribeShareGroupOffsets() *DescribeShareGroupOffsetsRequest {
	return &DescribeShareGroupOffsetsRequest{Groups: []DescribeShareGroupOffsetsGroup{
		{Group: "g", Topics: []TopicPartitions{{Topic: "open", Partitions: []int32{3, 1}}, {Topic: "secret", Partitions: []int32{0}}}},
		{Group: "all"}, // nil: every initialized partition
	}}
}

func fullDescribeShareGroupOffsetsResponse() *DescribeShareGroupOffsetsResponse {
	return &DescribeShareGroupOffsetsResponse{Groups: []DescribeShareGroupOffsetsGroupResult{
		{Group: "g", Err: kafka.ErrCoordinatorLoadInProgress, Topics: []DescribeShareGroupOffsetsTopicResult{{Topic: "open", TopicID: openTopic,
			Partitions: []DescribeShareGroupOffsetsPartitionResult{{Partition: 3, StartOffset: 8, LeaderEpoch: 2, Lag: 5, Err: kafka.ErrTopicAuthorizationFailed}}}}},
	}}
}

func fullAlterShareGroupOffsets() *AlterShareGroupOffsetsRequest {
	return &AlterShareGroupOffsetsRequest{Group: "g", Topics: []AlterShareGroupOffsetsTopic{
		{Topic: "open", Partitions: []AlterShareGroupOffsetsPartition{{Partition: 3, StartOffset: 8}, {Partition: 1, StartOffset: 2}}},
		{Topic: "secret", Partitions: []AlterShareGroupOffsetsPartition{{Partition: 5, StartOffset: 4}}},
	}}
}

func fullAlterShareGroupOffsetsResponse() *AlterShareGroupOffsetsResponse {
	return &AlterShareGroupOffsetsResponse{Err: kafka.ErrNonEmptyGroup, Topics: []AlterShareGroupOffsetsTopicResult{{Topic: "open", TopicID: openTopic,
		Partitions: []ShareOffsetsPartitionResult{{Partition: 3, Err: kafka.ErrUnknownTopicOrPartition}}}}}
}

func fullDeleteShareGroupOffsets() *DeleteShareGroupOffsetsRequest {
	return &DeleteShareGroupOffsetsRequest{Group: "g", Topics: []string{"open", "secret"}}
}

func fullDeleteShareGroupOffsetsResponse() *DeleteShareGroupOffsetsResponse {
	return &DeleteShareGroupOffsetsResponse{Err: kafka.ErrGroupIDNotFound, Topics: []DeleteShareGroupOffsetsTopicResult{
		{Topic: "open", TopicID: openTopic, Err: kafka.ErrUnknownTopicOrPartition}}}
}

// TestShareGroupOffsetsWire round-trips the share group offsets APIs
// (90-92), with every field set, through kmsg's bytes in each version
// kmsg knows; a group's nil topics (all of them) stay nil, and empty
// ones empty.
func TestShareGroupOffsetsWire(t *testing.T) {
	for _, full := range []any{fullDescribeShareGroupOffsetsResponse(), fullAlterShareGroupOffsets(), fullAlterShareGroupOffsetsResponse(),
		fullDeleteShareGroupOffsets(), fullDeleteShareGroupOffsetsResponse()} {
		require.Empty(t, unset(reflect.ValueOf(full), reflect.TypeOf(full).Elem().Name(), nil), "set every field")
	}
	for _, key := range []int16{90, 91, 92} {
		rng, ok := findRange(supportedAPIs, key)
		require.True(t, ok)
		want := apiRange{key: key}
		if key == 90 {
			want.max = 1 // v1: the lag
		}
		require.Equal(t, want, rng)
		for v := int16(0); v <= kmsg.RequestForKey(key).MaxVersion(); v++ {
			t.Run(fmt.Sprintf("%s v%d", kmsg.NameForKey(key), v), func(t *testing.T) {
				switch key {
				case 90:
					requireSame(t, fullDescribeShareGroupOffsets(), describeShareGroupOffsetsFromWire(reqWire(describeShareGroupOffsetsToWire(fullDescribeShareGroupOffsets(), v))))
					empty := &DescribeShareGroupOffsetsRequest{Groups: []DescribeShareGroupOffsetsGroup{{Group: "g", Topics: []TopicPartitions{}}}}
					require.NotNil(t, describeShareGroupOffsetsFromWire(reqWire(describeShareGroupOffsetsToWire(empty, v))).Groups[0].Topics, "empty is not all")
					want := fullDescribeShareGroupOffsetsResponse()
					if v == 0 {
						want.Groups[0].Topics[0].Partitions[0].Lag = -1 // not on the wire: unknown
					}
					requireSame(t, want, describeShareGroupOffsetsResponseFromWire(respWire(describeShareGroupOffsetsResponseToWire(fullDescribeShareGroupOffsetsResponse(), v))))
				case 91:
					requireSame(t, fullAlterShareGroupOffsets(), alterShareGroupOffsetsFromWire(reqWire(alterShareGroupOffsetsToWire(fullAlterShareGroupOffsets(), v))))
					requireSame(t, fullAlterShareGroupOffsetsResponse(), alterShareGroupOffsetsResponseFromWire(respWire(alterShareGroupOffsetsResponseToWire(fullAlterShareGroupOffsetsResponse(), v))))
				case 92:
					requireSame(t, fullDeleteShareGroupOffsets(), deleteShareGroupOffsetsFromWire(reqWire(deleteShareGroupOffsetsToWire(fullDeleteShareGroupOffsets(), v))))
					requireSame(t, fullDeleteShareGroupOffsetsResponse(), deleteShareGroupOffsetsResponseFromWire(respWire(deleteShareGroupOffsetsResponseToWire(fullDeleteShareGroupOffsetsResponse(), v))))
				}
			})
		}
	}
}

// TestTCPShareGroupOffsets carries the share group offsets APIs over TCP
// from a TCPClient (DescribeShareGroupOffsets in version 1, with the lag);
// a server lists them in ApiVersions for a ShareGroupOffsetsClient only.
func TestTCPShareGroupOffsets(t *testing.T) {
	f := fakeShareOffsetsNode{&fakeGroupNode{resp: map[string]any{
		"describe": fullDescribeShareGroupOffsetsResponse(), "alter": fullAlterShareGroupOffsetsResponse(), "delete": fullDeleteShareGroupOffsetsResponse(),
	}}}
	_, addr := serve(t, f, ServerOptions{})
	c := dial(t, addr)
	ctx := context.Background()

	dr, err := c.DescribeShareGroupOffsets(ctx, fullDescribeShareGroupOffsets())
	require.NoError(t, err)
	requireSame(t, fullDescribeShareGroupOffsetsResponse(), dr)
	require.Equal(t, fullDescribeShareGroupOffsets(), f.last())
	ar, err := c.AlterShareGroupOffsets(ctx, fullAlterShareGroupOffsets())
	require.NoError(t, err)
	requireSame(t, fullAlterShareGroupOffsetsResponse(), ar)
	require.Equal(t, fullAlterShareGroupOffsets(), f.last())
	xr, err := c.DeleteShareGroupOffsets(ctx, fullDeleteShareGroupOffsets())
	require.NoError(t, err)
	requireSame(t, fullDeleteShareGroupOffsetsResponse(), xr)
	require.Equal(t, fullDeleteShareGroupOffsets(), f.last())

	for _, r := range []apiRange{{key: 90, max: 1}, {key: 91}, {key: 92}} {
		require.Contains(t, apisFor(f), r)
		require.NotContains(t, apisFor(&fakeNode{}), r)
	}
	_, plain := serve(t, &fakeNode{}, ServerOptions{})
	_, err = dial(t, plain).AlterShareGroupOffsets(ctx, fullAlterShareGroupOffsets())
	require.ErrorIs(t, err, kafka.ErrUnsupportedVersion)
}

// TestAuthorizeShareGroupOffsets: Describe needs DESCRIBE on the group and
// on each topic (a group asked about all topics is answered without those
// refused); Alter READ on the group and each topic; Delete DELETE on the
// group and READ on each topic, as Kafka's KafkaApis asks.
func TestAuthorizeShareGroupOffsets(t *testing.T) {
	f := fakeShareOffsetsNode{&fakeGroupNode{resp: map[string]any{}}}
	allow := allowFunc(func(op auth.Operation, rt auth.ResourceType, name string) bool {
		switch {
		case rt == auth.GroupResource && name == "denied":
			return false
		case rt == auth.GroupResource:
			return op == auth.DescribeOperation || op == auth.ReadOperation // not DELETE
		case rt == auth.TopicResource:
			return name != "secret"
		}
		return false
	})
	_, addr := serve(t, f, ServerOptions{Authorizer: allow})
	c := dial(t, addr)
	ctx := context.Background()

	f.set("describe", &DescribeShareGroupOffsetsResponse{Groups: []DescribeShareGroupOffsetsGroupResult{
		{Group: "g", Topics: []DescribeShareGroupOffsetsTopicResult{{Topic: "open", TopicID: openTopic, Partitions: []DescribeShareGroupOffsetsPartitionResult{{Partition: 3, StartOffset: 8, LeaderEpoch: -1}}}}},
		{Group: "all", Topics: []DescribeShareGroupOffsetsTopicResult{{Topic: "open"}, {Topic: "secret"}}},
	}})
	req := fullDescribeShareGroupOffsets()
	req.Groups = append(req.Groups, DescribeShareGroupOffsetsGroup{Group: "denied", Topics: []TopicPartitions{}})
	dr, err := c.DescribeShareGroupOffsets(ctx, req)
	require.NoError(t, err)
	require.Equal(t, &DescribeShareGroupOffsetsRequest{Groups: []DescribeShareGroupOffsetsGroup{
		{Group: "g", Topics: []TopicPartitions{{Topic: "open", Partitions: []int32{3, 1}}}}, {Group: "all"}}}, f.last())
	require.Len(t, dr.Groups, 3)
	g := dr.Groups[0]
	require.Len(t, g.Topics, 2)
	require.Equal(t, "secret", g.Topics[1].Topic)
	require.Equal(t, int64(-1), g.Topics[1].Partitions[0].StartOffset)
	require.ErrorIs(t, g.Topics[1].Partitions[0].Err, kafka.ErrTopicAuthorizationFailed)
	require.Len(t, dr.Groups[1].Topics, 1, "all topics: the refused ones left out")
	require.Equal(t, "open", dr.Groups[1].Topics[0].Topic)
	require.Equal(t, "denied", dr.Groups[2].Group)
	require.ErrorIs(t, dr.Groups[2].Err, kafka.ErrGroupAuthorizationFailed)

	f.set("alter", &AlterShareGroupOffsetsResponse{Topics: []AlterShareGroupOffsetsTopicResult{{Topic: "open", TopicID: openTopic,
		Partitions: []ShareOffsetsPartitionResult{{Partition: 3}, {Partition: 1}}}}})
	ar, err := c.AlterShareGroupOffsets(ctx, fullAlterShareGroupOffsets())
	require.NoError(t, err)
	require.NoError(t, ar.Err)
	require.Len(t, ar.Topics, 2)
	require.ErrorIs(t, ar.Topics[1].Partitions[0].Err, kafka.ErrTopicAuthorizationFailed)
	require.Len(t, f.last().(*AlterShareGroupOffsetsRequest).Topics, 1)
	before := len(f.got)
	ar, err = c.AlterShareGroupOffsets(ctx, &AlterShareGroupOffsetsRequest{Group: "denied"})
	require.NoError(t, err)
	require.ErrorIs(t, ar.Err, kafka.ErrGroupAuthorizationFailed)
	xr, err := c.DeleteShareGroupOffsets(ctx, fullDeleteShareGroupOffsets())
	require.NoError(t, err)
	require.ErrorIs(t, xr.Err, kafka.ErrGroupAuthorizationFailed, "DELETE on the group, which READ does not give")
	require.Len(t, f.got, before, "the handler saw neither")
}
