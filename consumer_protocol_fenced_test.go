package partlog_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/partlog/partlog"
	"github.com/partlog/partlog/consumer"
	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/transport"
)

// fencingClient is a node's client whose ConsumerGroupHeartbeat answers
// FENCED_MEMBER_EPOCH once fence is set (and clears it), and which logs
// the heartbeats it passes on.
type fencingClient struct {
	partlog.Client
	fence atomic.Bool

	mu     sync.Mutex
	events []string
	sent   chan int32 // the epoch of each heartbeat passed on after a fence
}

func (c *fencingClient) note(e string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.events = append(c.events, e)
}

func (c *fencingClient) ConsumerGroupHeartbeat(ctx context.Context, req *transport.ConsumerGroupHeartbeatRequest) (*transport.ConsumerGroupHeartbeatResponse, error) {
	if c.fence.CompareAndSwap(true, false) {
		c.note("fenced")
		return &transport.ConsumerGroupHeartbeatResponse{Err: kafka.ErrFencedMemberEpoch}, nil
	}
	c.mu.Lock()
	fenced := len(c.events) > 0
	c.mu.Unlock()
	if fenced {
		c.note(fmt.Sprintf("heartbeat epoch %d", req.MemberEpoch))
		select {
		case c.sent <- req.MemberEpoch:
		default:
		}
	}
	return c.Client.ConsumerGroupHeartbeat(ctx, req)
}

// TestConsumerProtocolFencedWaitsForLost: a member of the consumer
// protocol fenced by its coordinator (FENCED_MEMBER_EPOCH) sends no
// heartbeat — no rejoin — until its next Poll has given up its
// partitions through OnPartitionsLost, as Kafka's consumer rejoins only
// after its callback; then it rejoins with epoch 0 and gets its
// partitions back.
func TestConsumerProtocolFencedWaitsForLost(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const interval = 50 * time.Millisecond
	n, err := partlog.Open(t.TempDir(), partlog.GroupConsumerHeartbeatInterval(interval))
	require.NoError(t, err)
	defer n.Close()
	require.NoError(t, n.CreateTopic(ctx, partlog.NewTopic{Name: "jobs", Partitions: 2}))
	fc := &fencingClient{Client: n.Client(), sent: make(chan int32, 1)}
	var lost []kafka.TopicPartition
	c, err := consumer.New(fc, consumer.Group("workers"), consumer.Topics("jobs"), consumer.GroupProtocol(consumer.ConsumerProtocol),
		consumer.FetchMaxWait(20*time.Millisecond),
		consumer.OnPartitionsLost(func(_ context.Context, _ *consumer.Consumer, tps []kafka.TopicPartition) {
			fc.note("lost")
			lost = tps
		}))
	require.NoError(t, err)
	defer c.Close()
	for len(c.Assignment()) < 2 {
		_, err := c.Poll(ctx, 20*time.Millisecond)
		require.NoError(t, err)
	}

	fc.fence.Store(true)
	// The member is fenced at its next heartbeat; it then sends nothing
	// while no Poll runs — ten heartbeat intervals, where a member that
	// rejoined at once would have sent at least one.
	select {
	case epoch := <-fc.sent:
		fc.mu.Lock()
		defer fc.mu.Unlock()
		t.Fatalf("a heartbeat (epoch %d) before Poll gave the partitions up: %v", epoch, fc.events)
	case <-time.After(10 * interval):
	}
	fc.mu.Lock()
	require.Equal(t, []string{"fenced"}, fc.events)
	fc.mu.Unlock()

	for len(lost) == 0 || len(c.Assignment()) < 2 {
		_, err := c.Poll(ctx, 20*time.Millisecond)
		require.NoError(t, err)
	}
	require.ElementsMatch(t, []kafka.TopicPartition{{Topic: "jobs", Partition: 0}, {Topic: "jobs", Partition: 1}}, lost)
	fc.mu.Lock()
	defer fc.mu.Unlock()
	require.GreaterOrEqual(t, len(fc.events), 3)
	require.Equal(t, []string{"fenced", "lost", "heartbeat epoch 0"}, fc.events[:3], "the rejoin comes after OnPartitionsLost")
}
