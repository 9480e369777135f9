package consumer_test

import (
	"context"
	"fmt"
	"time"

	"github.com/partlog/partlog/consumer"
	"github.com/partlog/partlog/kafka"
)

// A member of group "lzl" reads two records, commits, and closes; the next
// member of the group goes on from the committed offset.
func ExampleGroup() {
	node := openExampleNode("study", "hello 0", "hello 1", "hello 2", "hello 3")
	defer node.Close()
	ctx := context.Background()
	member := func() *consumer.Consumer {
		c, err := consumer.New(node.Client(), consumer.Group("lzl"), consumer.Topics("study"),
			consumer.AutoOffsetReset(consumer.Earliest), consumer.MaxPollRecords(2), consumer.DisableAutoCommit(),
			consumer.OnPartitionsAssigned(func(ctx context.Context, c *consumer.Consumer, tps []kafka.TopicPartition) {
				fmt.Println("assigned", tps, "in generation", c.GroupMetadata().Generation)
			}))
		if err != nil {
			panic(err)
		}
		return c
	}

	c := member()
	fs, err := c.Poll(ctx, time.Second)
	if err != nil {
		panic(err)
	}
	fs.EachRecord(func(r *consumer.Record) { fmt.Printf("first member: %s\n", r.Value) })
	if err := c.Commit(ctx); err != nil {
		panic(err)
	}
	committed, _ := c.Committed(ctx)
	fmt.Println("committed", committed[kafka.TopicPartition{Topic: "study"}].Offset)
	c.Close() // leaves the group at once

	c = member()
	defer c.Close()
	fs, err = c.Poll(ctx, time.Second)
	if err != nil {
		panic(err)
	}
	fs.EachRecord(func(r *consumer.Record) { fmt.Printf("next member: %s\n", r.Value) })
	// Output:
	// assigned [study-0] in generation 1
	// first member: hello 0
	// first member: hello 1
	// committed 2
	// assigned [study-0] in generation 3
	// next member: hello 2
	// next member: hello 3
}
