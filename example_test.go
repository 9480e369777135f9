package partlog_test

import (
	"context"
	"fmt"
	"time"

	"github.com/partlog/partlog"
	"github.com/partlog/partlog/consumer"
	"github.com/partlog/partlog/producer"
	"github.com/partlog/partlog/vfs"
)

// Open a data directory and create a topic. (The examples run on an
// in-memory filesystem; leave Filesystem out to use the OS.)
func ExampleOpen() {
	node, err := partlog.Open("/var/lib/app/partlog", partlog.Filesystem(vfs.NewMem()))
	if err != nil {
		panic(err)
	}
	defer node.Close()
	err = node.CreateTopic(context.Background(), partlog.NewTopic{
		Name:       "study",
		Partitions: 2,
		Configs:    map[string]string{"retention.ms": "86400000"},
	})
	if err != nil {
		panic(err)
	}
	topics, _ := node.DescribeTopics("study")
	for _, p := range topics[0].Partitions {
		fmt.Printf("study-%d: leader %d, log end offset %d\n", p.Partition, p.Leader, p.LogEndOffset)
	}
	// Output:
	// study-0: leader 1, log end offset 0
	// study-1: leader 1, log end offset 0
}

// Produce records and wait for their offsets.
func Example_produce() {
	ctx := context.Background()
	node, _ := partlog.Open("/data", partlog.Filesystem(vfs.NewMem()))
	defer node.Close()
	node.CreateTopic(ctx, partlog.NewTopic{Name: "study", Partitions: 2})

	p, err := producer.New(node.Client())
	if err != nil {
		panic(err)
	}
	defer p.Close()
	first := &producer.Record{Topic: "study", Key: []byte("lzl"), Value: []byte("hello")}
	second := &producer.Record{Topic: "study", Key: []byte("lzl"), Value: []byte("again")}
	if err := p.ProduceSync(ctx, first, second).FirstErr(); err != nil {
		panic(err)
	}
	// One key, one partition: its records keep their order.
	fmt.Println(first.Partition == second.Partition, first.Offset, second.Offset)
	// Output: true 0 1
}

// Consume a topic from the beginning.
func Example_consume() {
	ctx := context.Background()
	node, _ := partlog.Open("/data", partlog.Filesystem(vfs.NewMem()))
	defer node.Close()
	node.CreateTopic(ctx, partlog.NewTopic{Name: "study"})
	p, _ := producer.New(node.Client())
	for _, v := range []string{"hello", "kafka", "partlog"} {
		p.ProduceSync(ctx, &producer.Record{Topic: "study", Value: []byte(v)})
	}
	p.Close()

	c, err := consumer.New(node.Client(), consumer.Topics("study"), consumer.AutoOffsetReset(consumer.Earliest))
	if err != nil {
		panic(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	for rec, err := range c.Records(ctx) {
		if err != nil {
			panic(err)
		}
		fmt.Printf("%s-%d@%d %s\n", rec.Topic, rec.Partition, rec.Offset, rec.Value)
		if rec.Offset == 2 {
			break
		}
	}
	// Output:
	// study-0@0 hello
	// study-0@1 kafka
	// study-0@2 partlog
}
