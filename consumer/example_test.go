package consumer_test

import (
	"context"
	"fmt"
	"time"

	"github.com/partlog/partlog"
	"github.com/partlog/partlog/consumer"
	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/record"
	"github.com/partlog/partlog/transport"
	"github.com/partlog/partlog/vfs"
)

// openExampleNode opens a node on an in-memory filesystem with a topic of
// one partition holding values, appended as one batch.
func openExampleNode(topic string, values ...string) *partlog.Node {
	node, err := partlog.Open("/data", partlog.Filesystem(vfs.NewMem()),
		partlog.TopicDefaults(map[string]string{"segment.index.bytes": "65536"}))
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	if err := node.CreateTopic(ctx, partlog.NewTopic{Name: topic}); err != nil {
		panic(err)
	}
	b := record.NewBuilder(record.DefaultBatchOptions())
	for i, v := range values {
		b.Append(record.Record{Timestamp: time.Date(2024, 5, 1, 12, i, 0, 0, time.UTC).UnixMilli(), Value: []byte(v)})
	}
	_, err = node.Client().Produce(ctx, &transport.ProduceRequest{Acks: kafka.AcksAll, Topics: []transport.ProduceTopic{{
		Topic: topic, Partitions: []transport.ProducePartition{{Partition: 0, Records: b.Build()}},
	}}})
	if err != nil {
		panic(err)
	}
	return node
}

func ExampleConsumer_Poll() {
	node := openExampleNode("study", "hello", "kafka", "world")
	defer node.Close()

	c, err := consumer.New(node.Client(), consumer.Topics("study"), consumer.AutoOffsetReset(consumer.Earliest))
	if err != nil {
		panic(err)
	}
	defer c.Close()
	ctx := context.Background()
	for seen := 0; seen < 3; {
		fetches, err := c.Poll(ctx, time.Second)
		if err != nil {
			panic(err)
		}
		fetches.EachRecord(func(r *consumer.Record) {
			fmt.Printf("%s-%d offset %d: %s\n", r.Topic, r.Partition, r.Offset, r.Value)
			seen++
		})
	}
	pos, _ := c.Position(ctx, kafka.TopicPartition{Topic: "study", Partition: 0})
	fmt.Println("position:", pos)
	// Output:
	// study-0 offset 0: hello
	// study-0 offset 1: kafka
	// study-0 offset 2: world
	// position: 3
}

// Iterating with range: the loop waits for records until ctx ends or the
// consumer closes.
func Example() {
	node := openExampleNode("study", "one", "two", "three", "four")
	defer node.Close()

	c, err := consumer.New(node.Client(),
		consumer.Partitions(kafka.TopicPartition{Topic: "study", Partition: 0}),
		consumer.AutoOffsetReset(consumer.Earliest))
	if err != nil {
		panic(err)
	}
	defer c.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for rec, err := range c.Records(ctx) {
		if err != nil {
			fmt.Println("error:", err)
			continue
		}
		fmt.Printf("%d %s at %s\n", rec.Offset, rec.Value, rec.Timestamp.UTC().Format(time.Kitchen))
		if string(rec.Value) == "three" {
			break // the position stays after "three"
		}
	}
	fetches, _ := c.Poll(ctx, time.Second)
	fmt.Println("next:", string(fetches.Records()[0].Value))
	// Output:
	// 0 one at 12:00PM
	// 1 two at 12:01PM
	// 2 three at 12:02PM
	// next: four
}

func ExampleConsumer_SeekToTimestamp() {
	node := openExampleNode("study", "a", "b", "c", "d") // a minute apart from 12:00
	defer node.Close()

	tp := kafka.TopicPartition{Topic: "study", Partition: 0}
	c, err := consumer.New(node.Client(), consumer.Partitions(tp))
	if err != nil {
		panic(err)
	}
	defer c.Close()
	ctx := context.Background()
	if err := c.SeekToTimestamp(ctx, time.Date(2024, 5, 1, 12, 1, 30, 0, time.UTC)); err != nil {
		panic(err)
	}
	fetches, err := c.Poll(ctx, time.Second)
	if err != nil {
		panic(err)
	}
	for r := range fetches.All() {
		fmt.Println(r.Offset, string(r.Value))
	}
	// Output:
	// 2 c
	// 3 d
}
