package consumer_test

import (
	"context"
	"encoding/base64"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/partlog/partlog/consumer"
	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/record"
	"github.com/partlog/partlog/transport"
)

// newShare returns a share consumer of group g on n, subscribed to
// topics a and b, closed when the test ends.
func newShare(tb testing.TB, n *shareNode, opts ...consumer.Option) *consumer.ShareConsumer {
	tb.Helper()
	c, err := consumer.NewShare(n, append([]consumer.Option{consumer.ShareGroup("g"), consumer.Topics("a", "b"),
		consumer.RetryBackoff(time.Millisecond), consumer.RetryBackoffMax(time.Millisecond)}, opts...)...)
	require.NoError(tb, err)
	tb.Cleanup(func() { c.Close() })
	return c
}

// offsets returns the records' offsets.
func shareOffsets(recs []*consumer.ShareRecord) []int64 {
	out := make([]int64, len(recs))
	for i, r := range recs {
		out[i] = r.Offset
	}
	return out
}

// TestShareJoinAndAssignment: the member joins with epoch 0, its own
// member id and its subscription, then heartbeats with its epoch only; the
// assignment's topic ids are named from metadata; the first ShareFetch
// opens the session with the assigned partitions; the records come with
// their fields and delivery counts.
func TestShareJoinAndAssignment(t *testing.T) {
	n := newShareNode("a", "b")
	c := newShare(t, n, consumer.ClientID("me"))

	join, hb := n.answerHeartbeat(t, joined(1, map[string][]int32{"a": {0}, "b": {1, 2}}))
	require.Equal(t, "g", join.Group)
	require.Equal(t, int32(0), join.MemberEpoch)
	require.Equal(t, []string{"a", "b"}, join.SubscribedTopicNames)
	require.Equal(t, "me", join.ClientID)
	require.Equal(t, c.MemberID(), join.MemberID)
	id, err := base64.RawURLEncoding.DecodeString(join.MemberID)
	require.NoError(t, err)
	require.Len(t, id, 16)
	require.Equal(t, int32(1), hb.MemberEpoch)
	require.Nil(t, hb.SubscribedTopicNames, "the subscription did not change")
	require.Equal(t, join.MemberID, hb.MemberID)

	n.fetchAnswers <- fetched("a", 0, shareBatch(0, 0, 1, 2), acquired(0, 2, 1))
	recs, err := c.Poll(context.Background(), shareWait)
	require.NoError(t, err)
	require.Equal(t, []int64{0, 1, 2}, shareOffsets(recs))
	r := recs[1]
	require.Equal(t, "a", r.Topic)
	require.Equal(t, int32(0), r.Partition)
	require.Equal(t, "k1", string(r.Key))
	require.Equal(t, "v1", string(r.Value))
	require.Equal(t, []consumer.RecordHeader{{Key: "h", Value: []byte("x")}}, r.Headers)
	require.Equal(t, time.UnixMilli(baseTime+1), r.Timestamp)
	require.Equal(t, int32(7), r.LeaderEpoch)
	require.Equal(t, int16(1), r.DeliveryCount)

	f := next(t, n.fetches)
	require.Equal(t, int32(0), f.ShareSessionEpoch)
	require.Equal(t, "g", f.Group)
	require.Equal(t, c.MemberID(), f.MemberID)
	require.Equal(t, map[string][]string{"a-0": nil, "b-1": nil, "b-2": nil}, fetchPartitions(f))
	require.Empty(t, f.ForgottenTopics)
	require.Equal(t, int32(500), f.MaxRecords)
	require.Equal(t, []kafka.TopicPartition{tp("a", 0), tp("b", 1), tp("b", 2)}, c.Assignment())
	n.mu.Lock()
	require.Equal(t, 1, n.metadataCalls)
	n.mu.Unlock()
}

// TestShareSessionEpochs: each request of the session moves its epoch by
// one, from 0; a request names only the partitions added and those whose
// acknowledgements it carries; partitions no longer assigned are
// forgotten, after their acknowledgements went in a ShareAcknowledge.
func TestShareSessionEpochs(t *testing.T) {
	n := newShareNode("a", "b")
	var log ackLog
	c := newShare(t, n, consumer.OnShareAcknowledged(log.record))
	ctx := context.Background()
	n.answerHeartbeat(t, joined(1, map[string][]int32{"a": {0, 1}}))

	n.fetchAnswers <- fetched("a", 0, shareBatch(0, 0, 1), acquired(0, 1, 1))
	recs, err := c.Poll(ctx, shareWait)
	require.NoError(t, err)
	require.Equal(t, []int64{0, 1}, shareOffsets(recs))
	f := next(t, n.fetches)
	require.Equal(t, int32(0), f.ShareSessionEpoch)
	require.Equal(t, map[string][]string{"a-0": nil, "a-1": nil}, fetchPartitions(f))

	n.fetchAnswers <- fetched("a", 0, shareBatch(2, 2), acquired(2, 2, 1))
	recs, err = c.Poll(ctx, 0)
	require.NoError(t, err)
	require.Equal(t, []int64{2}, shareOffsets(recs))
	f = next(t, n.fetches)
	require.Equal(t, int32(1), f.ShareSessionEpoch)
	require.Equal(t, map[string][]string{"a-0": {"0-1:accept"}}, fetchPartitions(f), "a-1 is in the session already")
	require.Equal(t, []string{"a-0 [0 1]"}, log.take())

	// The assignment moves from a-0, a-1 to a-1, b-0.
	n.answerHeartbeat(t, joined(2, map[string][]int32{"a": {1}, "b": {0}}))
	recs, err = c.Poll(ctx, 0)
	require.NoError(t, err)
	require.Empty(t, recs)
	ack := next(t, n.acks)
	require.Equal(t, int32(2), ack.ShareSessionEpoch)
	require.Equal(t, map[string][]string{"a-0": {"2:accept"}}, ackPartitions(ack))
	f = next(t, n.fetches)
	require.Equal(t, int32(3), f.ShareSessionEpoch)
	require.Equal(t, map[string][]string{"b-0": nil}, fetchPartitions(f))
	require.Equal(t, []string{"a-0"}, forgotten(f))
	require.Equal(t, []string{"a-0 [2]"}, log.take())

	_, err = c.Poll(ctx, 0)
	require.NoError(t, err)
	f = next(t, n.fetches)
	require.Equal(t, int32(4), f.ShareSessionEpoch)
	require.Empty(t, f.Topics)
	require.Empty(t, f.ForgottenTopics)
}

// TestShareAcknowledgements: the next Poll accepts the records the last
// one returned, unless Acknowledge said otherwise; acquired offsets
// without a record are gaps inside the batches that came whole and
// released past them; records outside the acquired ranges are not
// returned.
func TestShareAcknowledgements(t *testing.T) {
	n := newShareNode("a", "b")
	var log ackLog
	c := newShare(t, n, consumer.OnShareAcknowledged(log.record))
	ctx := context.Background()
	n.answerHeartbeat(t, joined(1, map[string][]int32{"a": {0}}))

	// Offsets 0-5 with 3 compacted away, then 8-9; acquired 1-5, 8 (a
	// redelivery) and 10-11, which the answer's bytes do not reach.
	data := append(shareBatch(0, 0, 1, 2, 4, 5), shareBatch(8, 8, 9)...)
	n.fetchAnswers <- fetched("a", 0, data, acquired(1, 5, 1), acquired(8, 8, 3), acquired(10, 11, 1))
	recs, err := c.Poll(ctx, shareWait)
	require.NoError(t, err)
	require.Equal(t, []int64{1, 2, 4, 5, 8}, shareOffsets(recs), "0 and 9 were not acquired")
	require.Equal(t, int16(1), recs[0].DeliveryCount)
	require.Equal(t, int16(3), recs[4].DeliveryCount)

	require.NoError(t, c.Acknowledge(recs[1], consumer.AckRelease))
	require.NoError(t, c.Acknowledge(recs[2], consumer.AckAccept))
	require.NoError(t, c.Acknowledge(recs[2], consumer.AckReject), "changed until sent")
	require.Error(t, c.Acknowledge(recs[0], consumer.AckType(0)), "Gap is not the application's")

	_, err = c.Poll(ctx, 0)
	require.NoError(t, err)
	next(t, n.fetches)
	f := next(t, n.fetches)
	require.Equal(t, map[string][]string{"a-0": {
		"1:accept", "2:release", "3:gap", "4:reject", "5:accept", "8:accept", "10-11:release",
	}}, fetchPartitions(f))
	require.Equal(t, []string{"a-0 [1 2 4 5 8 10 11]"}, log.take())

	err = c.Acknowledge(recs[0], consumer.AckRelease)
	require.ErrorIs(t, err, consumer.ErrNotDelivered, "acknowledged already")
}

// TestShareAcknowledgeErrorsReachTheCallback: a partition's
// AcknowledgeErr in a ShareFetch answer goes to OnShareAcknowledged.
func TestShareAcknowledgeErrorsReachTheCallback(t *testing.T) {
	n := newShareNode("a", "b")
	var log ackLog
	c := newShare(t, n, consumer.OnShareAcknowledged(log.record))
	ctx := context.Background()
	n.answerHeartbeat(t, joined(1, map[string][]int32{"a": {0}}))
	n.fetchAnswers <- fetched("a", 0, shareBatch(0, 0, 1), acquired(0, 1, 1))
	_, err := c.Poll(ctx, shareWait)
	require.NoError(t, err)

	a := fetched("a", 0, nil)
	a.resp.Topics[0].Partitions[0].AcknowledgeErr = kafka.ErrInvalidRecordState
	n.fetchAnswers <- a
	_, err = c.Poll(ctx, 0)
	require.NoError(t, err, "reported to the callback, not by Poll")
	require.Equal(t, []string{"a-0 [0 1] INVALID_RECORD_STATE"}, log.take())
}

// TestShareCommit: Commit sends the acknowledgements at once in a
// ShareAcknowledge of the session, reports the partitions refused, and
// the next Poll does not send them again.
func TestShareCommit(t *testing.T) {
	n := newShareNode("a", "b")
	var log ackLog
	c := newShare(t, n, consumer.OnShareAcknowledged(log.record))
	ctx := context.Background()
	n.answerHeartbeat(t, joined(1, map[string][]int32{"a": {0}}))
	n.fetchAnswers <- fetched("a", 0, shareBatch(0, 0, 1, 2), acquired(0, 2, 1))
	recs, err := c.Poll(ctx, shareWait)
	require.NoError(t, err)
	next(t, n.fetches)
	require.NoError(t, c.Acknowledge(recs[1], consumer.AckRelease))

	n.ackAnswers <- shareAnswer[*transport.ShareAcknowledgeResponse]{resp: &transport.ShareAcknowledgeResponse{
		Topics: []transport.ShareAcknowledgeTopicResponse{{TopicID: topicID("a"), Partitions: []transport.ShareAcknowledgePartitionResponse{{
			Partition: 0, Err: kafka.ErrInvalidRecordState,
		}}}},
	}}
	err = c.Commit(ctx)
	require.ErrorIs(t, err, kafka.ErrInvalidRecordState)
	var ae *consumer.AcknowledgeError
	require.ErrorAs(t, err, &ae)
	require.Equal(t, "a", ae.Topic)
	require.Equal(t, []int64{0, 1, 2}, ae.Offsets)
	ack := next(t, n.acks)
	require.Equal(t, int32(1), ack.ShareSessionEpoch)
	require.Equal(t, map[string][]string{"a-0": {"0:accept", "1:release", "2:accept"}}, ackPartitions(ack))
	require.Equal(t, []string{"a-0 [0 1 2] INVALID_RECORD_STATE"}, log.take())
	require.ErrorIs(t, c.Acknowledge(recs[0], consumer.AckReject), consumer.ErrNotDelivered)

	require.NoError(t, c.Commit(ctx), "nothing to send")
	_, err = c.Poll(ctx, 0)
	require.NoError(t, err)
	f := next(t, n.fetches)
	require.Equal(t, int32(2), f.ShareSessionEpoch)
	require.Empty(t, f.Topics, "no acknowledgement sent twice")
	select {
	case req := <-n.acks:
		t.Fatalf("a ShareAcknowledge with nothing to acknowledge: %+v", req)
	default:
	}
}

// TestShareClose: Close acknowledges what the last Poll returned, releases
// what it fetched and did not return, closes the session (epoch -1), and
// leaves the group (epoch -1).
func TestShareClose(t *testing.T) {
	n := newShareNode("a", "b")
	c := newShare(t, n, consumer.MaxPollRecords(2))
	ctx := context.Background()
	n.answerHeartbeat(t, joined(4, map[string][]int32{"a": {0}}))
	n.fetchAnswers <- fetched("a", 0, shareBatch(0, 0, 1, 2, 3), acquired(0, 3, 1))
	recs, err := c.Poll(ctx, shareWait)
	require.NoError(t, err)
	require.Equal(t, []int64{0, 1}, shareOffsets(recs), "MaxPollRecords")
	require.Equal(t, int32(2), next(t, n.fetches).MaxRecords)
	require.NoError(t, c.Acknowledge(recs[0], consumer.AckReject))

	require.NoError(t, c.Close())
	ack := next(t, n.acks)
	require.Equal(t, int32(-1), ack.ShareSessionEpoch)
	require.Equal(t, map[string][]string{"a-0": {"0:reject", "1:accept", "2-3:release"}}, ackPartitions(ack))
	var leave *transport.ShareGroupHeartbeatRequest
	for leave == nil || leave.MemberEpoch != -1 {
		leave = next(t, n.heartbeats) // the heartbeat Close interrupted comes first
	}
	require.Equal(t, c.MemberID(), leave.MemberID)

	require.ErrorIs(t, c.Close(), consumer.ErrClosed)
	_, err = c.Poll(ctx, 0)
	require.ErrorIs(t, err, consumer.ErrClosed)
	require.ErrorIs(t, c.Commit(ctx), consumer.ErrClosed)
	require.ErrorIs(t, c.Acknowledge(recs[1], consumer.AckAccept), consumer.ErrClosed)
}

// TestShareCloseInterruptsPoll: a Poll waiting for records returns
// ErrClosed when another goroutine closes the consumer.
func TestShareCloseInterruptsPoll(t *testing.T) {
	n := newShareNode("a", "b")
	c := newShare(t, n)
	n.answerHeartbeat(t, joined(1, map[string][]int32{"a": {0}}))
	done := make(chan error)
	go func() {
		_, err := c.Poll(context.Background(), time.Hour)
		done <- err
	}()
	next(t, n.fetches) // waiting in the node
	require.NoError(t, c.Close())
	require.ErrorIs(t, next(t, done), consumer.ErrClosed)
}

// TestShareFencedRejoins: a member fenced (FENCED_MEMBER_EPOCH) rejoins
// with epoch 0, its subscription and the same member id, and goes on
// with the assignment the rejoin brings.
func TestShareFencedRejoins(t *testing.T) {
	for _, fence := range []error{kafka.ErrFencedMemberEpoch, kafka.ErrUnknownMemberID} {
		t.Run(kafkaName(fence), func(t *testing.T) {
			n := newShareNode("a", "b")
			c := newShare(t, n)
			ctx := context.Background()
			n.answerHeartbeat(t, joined(3, map[string][]int32{"a": {0}}))
			n.fetchAnswers <- fetched("a", 0, shareBatch(0, 0), acquired(0, 0, 1))
			_, err := c.Poll(ctx, shareWait)
			require.NoError(t, err)
			next(t, n.fetches)

			fenced, rejoin := n.answerHeartbeat(t, shareAnswer[*transport.ShareGroupHeartbeatResponse]{err: fence})
			require.Equal(t, int32(3), fenced.MemberEpoch)
			require.Equal(t, int32(0), rejoin.MemberEpoch)
			require.Equal(t, []string{"a", "b"}, rejoin.SubscribedTopicNames)
			require.Equal(t, c.MemberID(), rejoin.MemberID)
			n.hbAnswers <- joined(5, map[string][]int32{"a": {0}})
			require.Equal(t, int32(5), next(t, n.heartbeats).MemberEpoch)

			_, err = c.Poll(ctx, 0)
			require.NoError(t, err)
			f := next(t, n.fetches)
			require.Equal(t, int32(1), f.ShareSessionEpoch)
			require.Equal(t, map[string][]string{"a-0": {"0:accept"}}, fetchPartitions(f))
		})
	}
}

// TestShareRetriableHeartbeatSaysEverything: after a heartbeat that
// failed with a retriable error, the next one, after the backoff, names
// the subscription again.
func TestShareRetriableHeartbeatSaysEverything(t *testing.T) {
	n := newShareNode("a", "b")
	newShare(t, n)
	n.answerHeartbeat(t, joined(1, map[string][]int32{"a": {0}}))
	n.hbAnswers <- shareAnswer[*transport.ShareGroupHeartbeatResponse]{err: kafka.ErrCoordinatorNotAvailable}
	again := next(t, n.heartbeats)
	require.Equal(t, int32(1), again.MemberEpoch)
	require.Equal(t, []string{"a", "b"}, again.SubscribedTopicNames)
	n.hbAnswers <- joined(1, nil)
	require.Nil(t, next(t, n.heartbeats).SubscribedTopicNames)
}

// TestShareFatalHeartbeatError: a refusal that is not retriable ends the
// membership, and every Poll reports it.
func TestShareFatalHeartbeatError(t *testing.T) {
	n := newShareNode("a", "b")
	c := newShare(t, n)
	next(t, n.heartbeats)
	n.hbAnswers <- shareAnswer[*transport.ShareGroupHeartbeatResponse]{resp: &transport.ShareGroupHeartbeatResponse{Err: kafka.ErrGroupAuthorizationFailed}}
	_, err := c.Poll(context.Background(), shareWait)
	require.ErrorIs(t, err, kafka.ErrGroupAuthorizationFailed)
	_, err = c.Poll(context.Background(), 0)
	require.ErrorIs(t, err, kafka.ErrGroupAuthorizationFailed)
	require.NoError(t, c.Close())
}

// TestShareSessionLost: a ShareFetch answered SHARE_SESSION_NOT_FOUND or
// INVALID_SHARE_SESSION_EPOCH drops the acknowledgements it carried,
// reported to the callback, and Poll opens a new session at once.
func TestShareSessionLost(t *testing.T) {
	for _, lost := range []error{kafka.ErrShareSessionNotFound, kafka.ErrInvalidShareSessionEpoch} {
		t.Run(kafkaName(lost), func(t *testing.T) {
			n := newShareNode("a", "b")
			var log ackLog
			c := newShare(t, n, consumer.OnShareAcknowledged(log.record))
			ctx := context.Background()
			n.answerHeartbeat(t, joined(1, map[string][]int32{"a": {0}, "b": {0}}))
			n.fetchAnswers <- fetched("a", 0, shareBatch(0, 0, 1), acquired(0, 1, 1))
			_, err := c.Poll(ctx, shareWait)
			require.NoError(t, err)
			next(t, n.fetches)

			n.fetchAnswers <- shareAnswer[*transport.ShareFetchResponse]{resp: &transport.ShareFetchResponse{Err: lost}}
			n.fetchAnswers <- fetched("a", 0, shareBatch(0, 0, 1), acquired(0, 1, 2))
			recs, err := c.Poll(ctx, 0)
			require.NoError(t, err)
			require.Equal(t, []int64{0, 1}, shareOffsets(recs))
			require.Equal(t, int16(2), recs[0].DeliveryCount)
			refused := next(t, n.fetches)
			require.Equal(t, int32(1), refused.ShareSessionEpoch)
			require.Equal(t, map[string][]string{"a-0": {"0-1:accept"}}, fetchPartitions(refused))
			reopen := next(t, n.fetches)
			require.Equal(t, int32(0), reopen.ShareSessionEpoch)
			require.Equal(t, map[string][]string{"a-0": nil, "b-0": nil}, fetchPartitions(reopen), "every partition, no acknowledgement")
			require.Equal(t, []string{"a-0 [0 1] " + kafkaName(lost)}, log.take())

			_, err = c.Poll(ctx, 0)
			require.NoError(t, err)
			require.Equal(t, int32(1), next(t, n.fetches).ShareSessionEpoch)
		})
	}
}

// TestShareFetchErrors: a ShareFetch refused as a whole for good is
// reported by Poll; a partition refused is reported as a *FetchError,
// after the records that came with it.
func TestShareFetchErrors(t *testing.T) {
	n := newShareNode("a", "b")
	c := newShare(t, n)
	ctx := context.Background()
	n.answerHeartbeat(t, joined(1, map[string][]int32{"a": {0}, "b": {0}}))
	n.fetchAnswers <- shareAnswer[*transport.ShareFetchResponse]{resp: &transport.ShareFetchResponse{Err: kafka.ErrGroupAuthorizationFailed}}
	_, err := c.Poll(ctx, shareWait)
	require.ErrorIs(t, err, kafka.ErrGroupAuthorizationFailed)

	a := fetched("a", 0, shareBatch(0, 0), acquired(0, 0, 1))
	a.resp.Topics = append(a.resp.Topics, transport.ShareFetchTopicResponse{TopicID: topicID("b"),
		Partitions: []transport.ShareFetchPartitionResponse{{Partition: 0, Err: kafka.ErrTopicAuthorizationFailed}}})
	n.fetchAnswers <- a
	recs, err := c.Poll(ctx, 0)
	require.NoError(t, err)
	require.Equal(t, []int64{0}, shareOffsets(recs))
	_, err = c.Poll(ctx, 0)
	requireFetchError(t, err, tp("b", 0), kafka.ErrTopicAuthorizationFailed)
}

// TestShareCorruptBatch: a batch that fails its CRC is not returned: its
// acquired offsets are rejected, and Poll reports it after the records
// before it.
func TestShareCorruptBatch(t *testing.T) {
	n := newShareNode("a", "b")
	c := newShare(t, n)
	ctx := context.Background()
	n.answerHeartbeat(t, joined(1, map[string][]int32{"a": {0}}))
	bad := shareBatch(2, 2, 3)
	bad[len(bad)-1] ^= 0xff
	n.fetchAnswers <- fetched("a", 0, append(shareBatch(0, 0, 1), bad...), acquired(0, 3, 1))
	recs, err := c.Poll(ctx, shareWait)
	require.NoError(t, err)
	require.Equal(t, []int64{0, 1}, shareOffsets(recs))
	_, err = c.Poll(ctx, 0)
	fe := requireFetchError(t, err, tp("a", 0), record.ErrCorrupt)
	require.Equal(t, int64(2), fe.Offset)
	next(t, n.fetches)
	_, err = c.Poll(ctx, 0)
	require.NoError(t, err)
	require.Equal(t, map[string][]string{"a-0": {"0-1:accept", "2-3:reject"}}, fetchPartitions(next(t, n.fetches)))
}

// TestShareOptions: NewShare needs ShareGroup, Topics and a
// transport.ShareGroupClient, and refuses Consumer's options that do not
// apply, naming them, whatever value they set.
func TestShareOptions(t *testing.T) {
	n := newShareNode("a")
	_, err := consumer.NewShare(n, consumer.Topics("a"))
	require.ErrorContains(t, err, "ShareGroup")
	_, err = consumer.NewShare(n, consumer.ShareGroup("g"))
	require.ErrorContains(t, err, "Topics")
	_, err = consumer.NewShare(struct{ transport.Client }{n}, consumer.ShareGroup("g"), consumer.Topics("a"))
	require.ErrorContains(t, err, "transport.ShareGroupClient")
	_, err = consumer.NewShare(n, consumer.ShareGroup("g"), consumer.Topics("a"), consumer.MaxPollRecords(0))
	require.ErrorContains(t, err, "MaxPollRecords")

	_, err = consumer.NewShare(n, consumer.ShareGroup("g"), consumer.Topics("a"),
		consumer.Group("g"), consumer.AutoOffsetReset(consumer.Latest), consumer.Partitions(tp("a", 0)),
		consumer.Isolation(consumer.ReadUncommitted), consumer.DisableAutoCommit(), consumer.SessionTimeout(45*time.Second))
	require.Error(t, err)
	for _, name := range []string{"Group", "AutoOffsetReset", "Partitions", "Isolation", "DisableAutoCommit", "SessionTimeout"} {
		require.ErrorContains(t, err, name)
	}
	require.NotContains(t, err.Error(), "Topics")

	_, err = consumer.New(n, consumer.ShareGroup("g"), consumer.Topics("a"))
	require.ErrorContains(t, err, "options of NewShare", "New would have made a plain consumer in no group")

	c, err := consumer.NewShare(n, consumer.ShareGroup("g"), consumer.Topics("a"), consumer.ClientID("x"),
		consumer.FetchMaxWait(time.Second), consumer.FetchMaxBytes(1<<20), consumer.FetchMinBytes(1), consumer.MaxPollRecords(10),
		consumer.CheckCRCs(consumer.SkipCRC), consumer.RetryBackoff(time.Millisecond), consumer.RetryBackoffMax(time.Second),
		consumer.RetryTimeout(time.Minute))
	require.NoError(t, err)
	require.NoError(t, c.Close())
}

// TestShareRecordsAreTheCallers: the records of one Poll and the next
// never share memory, and stay as they were after later Polls.
func TestShareRecordsAreTheCallers(t *testing.T) {
	n := newShareNode("a", "b")
	c := newShare(t, n)
	ctx := context.Background()
	n.answerHeartbeat(t, joined(1, map[string][]int32{"a": {0}}))
	first := shareBatch(0, 0, 1)
	n.fetchAnswers <- fetched("a", 0, first, acquired(0, 1, 1))
	recs, err := c.Poll(ctx, shareWait)
	require.NoError(t, err)
	n.fetchAnswers <- fetched("a", 0, shareBatch(2, 2, 3), acquired(2, 3, 1))
	more, err := c.Poll(ctx, 0)
	require.NoError(t, err)
	require.Equal(t, []int64{2, 3}, shareOffsets(more))
	more = append(more, nil) // appending to what Poll returned overwrites nothing of the consumer's
	require.Equal(t, "v0", string(recs[0].Value))
	require.Equal(t, "v1", string(recs[1].Value))
	require.Equal(t, "v2", string(more[0].Value))
}

// TestShareSessionPerNode: on a cluster (a transport.NodeRouter), the
// consumer keeps a share session with each node that leads an assigned
// partition, each with its own epochs; Poll returns the records of the
// node that answers while another node's fetch waits; each record is
// acknowledged to the node that delivered it; a partition its node says
// it no longer leads is looked up again, forgotten in the old node's
// session and fetched in the new one's; Close closes both sessions.
func TestShareSessionPerNode(t *testing.T) {
	n1, n2 := newShareNode("a", "b"), newShareNode("a", "b")
	a0, a1 := kafka.TopicPartition{Topic: "a", Partition: 0}, kafka.TopicPartition{Topic: "a", Partition: 1}
	cluster := newShareCluster(n1, map[int32]*shareNode{1: n1, 2: n2}, map[kafka.TopicPartition]int32{a0: 1, a1: 2})
	var log ackLog
	c, err := consumer.NewShare(cluster, consumer.ShareGroup("g"), consumer.Topics("a", "b"),
		consumer.RetryBackoff(time.Millisecond), consumer.RetryBackoffMax(time.Millisecond), consumer.OnShareAcknowledged(log.record))
	require.NoError(t, err)
	ctx := context.Background()
	n1.answerHeartbeat(t, joined(1, map[string][]int32{"a": {0, 1}}))

	// Node 1 answers; node 2's fetch waits for records.
	n1.fetchAnswers <- fetched("a", 0, shareBatch(0, 0, 1), acquired(0, 1, 1))
	recs, err := c.Poll(ctx, shareWait)
	require.NoError(t, err)
	require.Equal(t, []int64{0, 1}, shareOffsets(recs))
	require.Equal(t, "a", recs[0].Topic)
	require.Equal(t, int32(0), recs[0].Partition)
	f1, f2 := next(t, n1.fetches), next(t, n2.fetches)
	require.Equal(t, int32(0), f1.ShareSessionEpoch)
	require.Equal(t, map[string][]string{"a-0": nil}, fetchPartitions(f1))
	require.Equal(t, int32(0), f2.ShareSessionEpoch)
	require.Equal(t, map[string][]string{"a-1": nil}, fetchPartitions(f2))

	// Commit acknowledges a-0's records to node 1, in node 1's session,
	// while node 2's fetch is still in flight.
	require.NoError(t, c.Commit(ctx))
	ack := next(t, n1.acks)
	require.Equal(t, int32(1), ack.ShareSessionEpoch)
	require.Equal(t, map[string][]string{"a-0": {"0-1:accept"}}, ackPartitions(ack))
	require.Empty(t, n2.acks, "node 2 delivered no record of a-0")
	require.Equal(t, []string{"a-0 [0 1]"}, log.take())

	// Node 2's records come; node 1's next fetch, if Poll sends it before
	// it takes them up, is answered at once.
	n1.fetchAnswers <- shareAnswer[*transport.ShareFetchResponse]{resp: &transport.ShareFetchResponse{}}
	n2.fetchAnswers <- fetched("a", 1, shareBatch(0, 0), acquired(0, 0, 1))
	recs, err = c.Poll(ctx, shareWait)
	require.NoError(t, err)
	require.Equal(t, []int64{0}, shareOffsets(recs))
	require.Equal(t, int32(1), recs[0].Partition)
	require.NoError(t, c.Commit(ctx))
	ack = next(t, n2.acks)
	require.Equal(t, int32(1), ack.ShareSessionEpoch)
	require.Equal(t, map[string][]string{"a-1": {"0:accept"}}, ackPartitions(ack))
	require.Equal(t, []string{"a-1 [0]"}, log.take())
	require.Empty(t, n1.acks)

	// a-0 moves to node 2, and node 1 says it no longer leads it: the
	// consumer asks where it is, node 1's session forgets it and node 2's
	// takes it. (Answers come in the background: a Poll that does not
	// wait may return before them, and a later one takes them up.)
	cluster.move(a0, 2)
	n1.fetchAnswers <- shareAnswer[*transport.ShareFetchResponse]{resp: &transport.ShareFetchResponse{
		Topics: []transport.ShareFetchTopicResponse{{TopicID: topicID("a"), Partitions: []transport.ShareFetchPartitionResponse{{
			Partition: 0, Err: kafka.ErrNotLeaderOrFollower}}}}}}
	var forgot, took *transport.ShareFetchRequest
	for start := time.Now(); (forgot == nil || took == nil) && time.Since(start) < shareWait; {
		_, err = c.Poll(ctx, 0)
		require.NoError(t, err)
		for len(n1.fetches) > 0 {
			if f := <-n1.fetches; len(f.ForgottenTopics) > 0 {
				forgot = f
			}
		}
		for len(n2.fetches) > 0 {
			if f := <-n2.fetches; len(f.Topics) > 0 {
				took = f
			}
		}
	}
	require.NotNil(t, forgot, "node 1's session never forgot a-0")
	require.NotNil(t, took, "node 2's session never fetched a-0")
	require.Empty(t, forgot.Topics)
	require.Equal(t, []string{"a-0"}, forgotten(forgot))
	require.Positive(t, took.ShareSessionEpoch, "in node 2's session, not a new one")
	require.Equal(t, map[string][]string{"a-0": nil}, fetchPartitions(took))
	require.Empty(t, forgotten(took))

	require.NoError(t, c.Close())
	for _, n := range []*shareNode{n1, n2} {
		require.Equal(t, int32(-1), next(t, n.acks).ShareSessionEpoch, "Close closes every session")
	}
}

// TestSharePollTimeoutWithSilentNode: a Poll returns at its timeout while
// another node holds its fetch unanswered (cut off); a later Poll still
// fetches from the node that answers.
func TestSharePollTimeoutWithSilentNode(t *testing.T) {
	n1, n2 := newShareNode("a", "b"), newShareNode("a", "b")
	n2.silent.Store(true)
	a0, a1 := kafka.TopicPartition{Topic: "a", Partition: 0}, kafka.TopicPartition{Topic: "a", Partition: 1}
	cluster := newShareCluster(n1, map[int32]*shareNode{1: n1, 2: n2}, map[kafka.TopicPartition]int32{a0: 1, a1: 2})
	c, err := consumer.NewShare(cluster, consumer.ShareGroup("g"), consumer.Topics("a", "b"), consumer.FetchMaxWait(20*time.Millisecond),
		consumer.RetryBackoff(time.Millisecond), consumer.RetryBackoffMax(time.Millisecond))
	require.NoError(t, err)
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), shareWait)
	defer cancel()
	n1.answerHeartbeat(t, joined(1, map[string][]int32{"a": {0, 1}}))
	// Three Polls of 50 ms each; one that waited for the silent node would
	// take at least its one-second bound on requests past the timeout.
	start := time.Now()
	for range 3 {
		recs, err := c.Poll(ctx, 50*time.Millisecond)
		require.NoError(t, err)
		require.Empty(t, recs)
	}
	require.Less(t, time.Since(start), 2500*time.Millisecond, "Poll waited for the silent node past its timeout")
	next(t, n2.fetches)
	require.Empty(t, n2.fetches, "one fetch to the silent node, still in flight")
	n1.fetchAnswers <- fetched("a", 0, shareBatch(0, 0), acquired(0, 0, 1))
	var recs []*consumer.ShareRecord
	for len(recs) == 0 {
		recs, err = c.Poll(ctx, 50*time.Millisecond)
		require.NoError(t, err)
	}
	require.Equal(t, []int64{0}, shareOffsets(recs))
	n2.silent.Store(false)
}

// TestShareCloseWaitsForFetchInFlight: Close waits for a ShareFetch in
// flight that carries acknowledgements, rather than cutting it short and
// sending them again with the closing ShareAcknowledge (the node would
// apply them twice, and refuse the second time).
func TestShareCloseWaitsForFetchInFlight(t *testing.T) {
	n := newShareNode("a", "b")
	var log ackLog
	c, err := consumer.NewShare(n, consumer.ShareGroup("g"), consumer.Topics("a", "b"), consumer.FetchMaxWait(200*time.Millisecond),
		consumer.RetryBackoff(time.Millisecond), consumer.RetryBackoffMax(time.Millisecond), consumer.OnShareAcknowledged(log.record))
	require.NoError(t, err)
	ctx := context.Background()
	n.answerHeartbeat(t, joined(1, map[string][]int32{"a": {0}}))
	n.fetchAnswers <- fetched("a", 0, shareBatch(0, 0, 1), acquired(0, 1, 1))
	recs, err := c.Poll(ctx, shareWait)
	require.NoError(t, err)
	require.Len(t, recs, 2)
	next(t, n.fetches)
	// This Poll's fetch carries the acceptances, and the node holds it.
	pctx, cancel := context.WithTimeout(ctx, 10*time.Millisecond)
	_, err = c.Poll(pctx, time.Minute)
	cancel()
	require.ErrorIs(t, err, context.DeadlineExceeded)
	f := next(t, n.fetches)
	require.Equal(t, map[string][]string{"a-0": {"0-1:accept"}}, fetchPartitions(f))

	require.NoError(t, c.Close())
	closing := next(t, n.acks)
	require.Equal(t, int32(-1), closing.ShareSessionEpoch)
	require.Empty(t, ackPartitions(closing), "the acceptances went once, with the fetch")
	require.Equal(t, []string{"a-0 [0 1]"}, log.take())
}
