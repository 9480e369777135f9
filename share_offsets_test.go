package partlog_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/partlog/partlog"
	"github.com/partlog/partlog/transport"
)

// TestShareGroupOffsetsAdmin runs franz-go's share group offsets requests
// (DescribeShareGroupOffsets, AlterShareGroupOffsets,
// DeleteShareGroupOffsets) against a served node: an alter of a group
// that never existed makes it and sets its start offset, which describe
// reads back (named, and as "all topics"), and from which a member of the
// group is delivered records; with a member the group cannot be altered
// or its offsets deleted; once empty again it is altered back (the
// node's cached share partition is dropped), and a new member starts
// there; delete leaves nothing to describe.
func TestShareGroupOffsetsAdmin(t *testing.T) {
	n, err := partlog.Open(t.TempDir(), partlog.OffsetsTopicPartitions(3), partlog.ShareStateTopicPartitions(3))
	require.NoError(t, err)
	defer n.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	require.NoError(t, n.CreateTopic(ctx, partlog.NewTopic{Name: "jobs", Partitions: 1}))
	addr := serveWith(t, n.Client(), transport.ServerOptions{})
	for i := range 20 {
		require.NoError(t, produce(t, n, "jobs", 0, fmt.Sprintf("job-%d", i)).Err)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	require.NoError(t, err)
	defer cl.Close()

	alter := func(group string, offset int64) *kmsg.AlterShareGroupOffsetsResponse {
		t.Helper()
		req := kmsg.NewPtrAlterShareGroupOffsetsRequest()
		req.GroupID = group
		req.Topics = []kmsg.AlterShareGroupOffsetsRequestTopic{
			{Topic: "jobs", Partitions: []kmsg.AlterShareGroupOffsetsRequestTopicPartition{{Partition: 0, StartOffset: offset}, {Partition: 5, StartOffset: 1}}},
			{Topic: "nope", Partitions: []kmsg.AlterShareGroupOffsetsRequestTopicPartition{{Partition: 0, StartOffset: 1}}},
		}
		resp, err := req.RequestWith(ctx, cl)
		require.NoError(t, err)
		return resp
	}
	describe := func(group string, all bool) kmsg.DescribeShareGroupOffsetsResponseGroup {
		t.Helper()
		req := kmsg.NewPtrDescribeShareGroupOffsetsRequest()
		rg := kmsg.NewDescribeShareGroupOffsetsRequestGroup()
		rg.GroupID = group
		if !all {
			rg.Topics = []kmsg.DescribeShareGroupOffsetsRequestGroupTopic{{Topic: "jobs", Partitions: []int32{0}}, {Topic: "nope", Partitions: []int32{0}}}
		}
		req.Groups = []kmsg.DescribeShareGroupOffsetsRequestGroup{rg}
		resp, err := req.RequestWith(ctx, cl)
		require.NoError(t, err)
		require.Len(t, resp.Groups, 1)
		require.NoError(t, kerr.ErrorForCode(resp.Groups[0].ErrorCode))
		return resp.Groups[0]
	}
	deleteOffsets := func(group string) *kmsg.DeleteShareGroupOffsetsResponse {
		t.Helper()
		req := kmsg.NewPtrDeleteShareGroupOffsetsRequest()
		req.GroupID = group
		req.Topics = []kmsg.DeleteShareGroupOffsetsRequestTopic{{Topic: "jobs"}}
		resp, err := req.RequestWith(ctx, cl)
		require.NoError(t, err)
		return resp
	}

	// Never described, never altered: -1, no error.
	g := describe("workers", false)
	require.Len(t, g.Topics, 2)
	require.EqualValues(t, -1, g.Topics[0].Partitions[0].StartOffset)
	require.Empty(t, describe("workers", true).Topics)

	ar := alter("workers", 8)
	require.NoError(t, kerr.ErrorForCode(ar.ErrorCode))
	require.Len(t, ar.Topics, 2)
	id := ar.Topics[0].TopicID
	require.NotZero(t, id)
	require.NoError(t, kerr.ErrorForCode(ar.Topics[0].Partitions[0].ErrorCode))
	require.ErrorIs(t, kerr.ErrorForCode(ar.Topics[0].Partitions[1].ErrorCode), kerr.UnknownTopicOrPartition, "jobs has one partition")
	require.ErrorIs(t, kerr.ErrorForCode(ar.Topics[1].Partitions[0].ErrorCode), kerr.UnknownTopicOrPartition)

	g = describe("workers", false)
	require.Equal(t, id, g.Topics[0].TopicID)
	require.EqualValues(t, 8, g.Topics[0].Partitions[0].StartOffset)
	require.Equal(t, "nope", g.Topics[1].Topic)
	require.EqualValues(t, -1, g.Topics[1].Partitions[0].StartOffset, "a topic that does not exist")
	require.Zero(t, g.Topics[1].TopicID)
	g = describe("workers", true)
	require.Len(t, g.Topics, 1)
	require.EqualValues(t, 8, g.Topics[0].Partitions[0].StartOffset)

	// A member of the group is delivered 8 on.
	a := newShareMember(t, addr, "workers", "member-a")
	require.Len(t, a.join(ctx, "jobs"), 1)
	got, _ := a.fetch(ctx, id, time.Second)
	require.Len(t, got, 12)
	require.Equal(t, fetched{8, "job-8", 1}, got[0])

	require.ErrorIs(t, kerr.ErrorForCode(alter("workers", 2).ErrorCode), kerr.NonEmptyGroup)
	require.ErrorIs(t, kerr.ErrorForCode(deleteOffsets("workers").ErrorCode), kerr.NonEmptyGroup)

	// Empty again: altered back to 2, which a new member starts at.
	resp, err := a.cl.ShareGroupHeartbeat(ctx, &transport.ShareGroupHeartbeatRequest{Group: "workers", MemberID: "member-a", MemberEpoch: -1})
	require.NoError(t, err)
	require.NoError(t, resp.Err)
	require.NoError(t, kerr.ErrorForCode(alter("workers", 2).ErrorCode))
	require.EqualValues(t, 2, describe("workers", false).Topics[0].Partitions[0].StartOffset)
	c := newShareMember(t, addr, "workers", "member-c")
	c.join(ctx, "jobs")
	got, _ = c.fetch(ctx, id, time.Second)
	require.Len(t, got, 18)
	require.Equal(t, fetched{2, "job-2", 1}, got[0], "the altered start offset, not the share partition the node had cached")
	resp, err = c.cl.ShareGroupHeartbeat(ctx, &transport.ShareGroupHeartbeatRequest{Group: "workers", MemberID: "member-c", MemberEpoch: -1})
	require.NoError(t, err)
	require.NoError(t, resp.Err)

	// Delete: nothing left to describe, nothing to delete again.
	dr := deleteOffsets("workers")
	require.NoError(t, kerr.ErrorForCode(dr.ErrorCode))
	require.Len(t, dr.Topics, 1)
	require.Equal(t, id, dr.Topics[0].TopicID)
	require.NoError(t, kerr.ErrorForCode(dr.Topics[0].ErrorCode))
	require.EqualValues(t, -1, describe("workers", false).Topics[0].Partitions[0].StartOffset)
	require.Empty(t, describe("workers", true).Topics)
	dr = deleteOffsets("workers")
	require.ErrorIs(t, kerr.ErrorForCode(dr.Topics[0].ErrorCode), kerr.UnknownTopicOrPartition)
	require.ErrorIs(t, kerr.ErrorForCode(deleteOffsets("ghost").ErrorCode), kerr.GroupIDNotFound)
}

// TestShareGroupOffsetsLag: DescribeShareGroupOffsets v1 (KIP-1226), sent
// by franz-go's kmsg, answers each share partition's lag — the records
// from its start offset to the high watermark that are not Acknowledged
// or Archived — as records are acquired, accepted, rejected and released.
func TestShareGroupOffsetsLag(t *testing.T) {
	n, err := partlog.Open(t.TempDir(), partlog.OffsetsTopicPartitions(3), partlog.ShareStateTopicPartitions(3))
	require.NoError(t, err)
	defer n.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	require.NoError(t, n.CreateTopic(ctx, partlog.NewTopic{Name: "jobs", Partitions: 1}))
	addr := serveWith(t, n.Client(), transport.ServerOptions{})
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	require.NoError(t, err)
	defer cl.Close()
	lag := func() (start, lag int64) {
		t.Helper()
		req := kmsg.NewPtrDescribeShareGroupOffsetsRequest()
		req.Version = 1
		g := kmsg.NewDescribeShareGroupOffsetsRequestGroup()
		g.GroupID = "workers"
		g.Topics = []kmsg.DescribeShareGroupOffsetsRequestGroupTopic{{Topic: "jobs", Partitions: []int32{0}}}
		req.Groups = append(req.Groups, g)
		resp, err := req.RequestWith(ctx, cl)
		require.NoError(t, err)
		p := resp.Groups[0].Topics[0].Partitions[0]
		require.NoError(t, kerr.ErrorForCode(p.ErrorCode))
		return p.StartOffset, p.Lag
	}

	m := newShareMember(t, addr, "workers", "member-a")
	id := m.join(ctx, "jobs")[0].TopicID
	got, _ := m.fetch(ctx, id, 0)
	require.Empty(t, got)
	for i := range 10 {
		require.NoError(t, produce(t, n, "jobs", 0, fmt.Sprintf("job-%d", i)).Err)
	}
	start, l := lag()
	require.Equal(t, [2]int64{0, 10}, [2]int64{start, l}, "ten records, none delivered")
	got, _ = m.fetch(ctx, id, time.Second)
	require.Len(t, got, 10)
	start, l = lag()
	require.Equal(t, [2]int64{0, 10}, [2]int64{start, l}, "acquired is not done with")
	require.NoError(t, m.acknowledge(ctx, id, ack(0, 2, transport.AcknowledgeAccept), ack(3, 3, transport.AcknowledgeReject),
		ack(4, 4, transport.AcknowledgeRelease), ack(6, 7, transport.AcknowledgeAccept)))
	start, l = lag()
	require.Equal(t, [2]int64{4, 4}, [2]int64{start, l}, "0-2 accepted and 3 rejected move the start to 4; of 4-9, 6 and 7 are done")
	require.NoError(t, produce(t, n, "jobs", 0, "job-10").Err)
	start, l = lag()
	require.Equal(t, [2]int64{4, 5}, [2]int64{start, l}, "one more record")
}
