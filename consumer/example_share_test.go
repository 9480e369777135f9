package consumer_test

import (
	"context"
	"fmt"
	"time"

	"github.com/partlog/partlog/consumer"
	"github.com/partlog/partlog/transport"
)

// A member of share group "workers" takes records of topic orders: it
// processes them, releases one it cannot handle now, and acknowledges with
// Commit. The node here is the tests' fake (partlog.Open cannot be
// imported from package consumer), which answers the join with partition
// 0 of orders and the first ShareFetch with offsets 0-2.
func ExampleShareConsumer() {
	node := newShareNode("orders")
	node.hbAnswers <- shareAnswer[*transport.ShareGroupHeartbeatResponse]{resp: &transport.ShareGroupHeartbeatResponse{
		MemberEpoch: 1, HeartbeatIntervalMillis: 60_000,
		Assignment: []transport.TopicIDPartitions{{TopicID: topicID("orders"), Partitions: []int32{0}}},
	}}
	node.fetchAnswers <- fetched("orders", 0, shareBatch(0, 0, 1, 2), acquired(0, 2, 1))

	c, err := consumer.NewShare(node, consumer.ShareGroup("workers"), consumer.Topics("orders"),
		consumer.OnShareAcknowledged(func(topic string, partition int32, offsets []int64, err error) {
			fmt.Printf("acknowledged %s-%d %v: %v\n", topic, partition, offsets, err)
		}))
	if err != nil {
		panic(err)
	}
	defer c.Close()
	ctx := context.Background()
	recs, err := c.Poll(ctx, 10*time.Second)
	if err != nil {
		panic(err)
	}
	for _, r := range recs {
		fmt.Printf("%s-%d@%d %s, delivery %d\n", r.Topic, r.Partition, r.Offset, r.Value, r.DeliveryCount)
		if string(r.Value) == "v1" {
			c.Acknowledge(r, consumer.AckRelease) // to be delivered again
		}
	}
	if err := c.Commit(ctx); err != nil {
		panic(err)
	}
	ack := <-node.acks
	fmt.Println("sent:", ackPartitions(ack))
	// Output:
	// orders-0@0 v0, delivery 1
	// orders-0@1 v1, delivery 1
	// orders-0@2 v2, delivery 1
	// acknowledged orders-0 [0 1 2]: <nil>
	// sent: map[o-0:[0:accept 1:release 2:accept]]
}
