package broker

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/replica"
)

// recordingNetwork records each delivery and holds the first until
// released, as a slow link would.
type recordingNetwork struct {
	first   chan struct{} // closed when the first delivery starts
	release chan struct{}
	got     chan []replica.Message
}

func (r *recordingNetwork) deliver(_ context.Context, _, _ int32, _ string, msgs []replica.Message) error {
	select {
	case <-r.first:
	default:
		close(r.first)
		<-r.release
	}
	r.got <- append([]replica.Message(nil), msgs...)
	return nil
}

func (r *recordingNetwork) close() {}

// The outbox sends the messages for one node that queued while a delivery
// to it was under way as one request, as a Kafka follower's fetcher thread
// fetches all of a leader's partitions in one Fetch.
func TestOutboxBatchesPerDestination(t *testing.T) {
	net := &recordingNetwork{first: make(chan struct{}), release: make(chan struct{}), got: make(chan []replica.Message, 4)}
	o := newOutbox(1, net, func(int32) string { return "" }, nil)
	defer o.close()
	fetch := func(p int32) replica.Message {
		return replica.Message{Type: replica.MsgFetch, From: 1, To: 2,
			Fetch: &kafka.ReplicaFetchPartition{Topic: "t", Partition: p}}
	}
	ctx := context.Background()
	require.NoError(t, o.Send(ctx, 2, fetch(0)))
	<-net.first // the first delivery is under way and held
	for p := int32(1); p <= 8; p++ {
		require.NoError(t, o.Send(ctx, 2, fetch(p)))
	}
	close(net.release)
	require.Len(t, <-net.got, 1, "the first delivery carries the one message queued then")
	second := <-net.got
	require.Len(t, second, 8, "the eight fetches queued meanwhile go in one delivery")
	for i, m := range second {
		require.Equal(t, int32(i+1), m.Fetch.Partition, "in the order sent")
	}
}
