package producer_test

import (
	"context"
	"fmt"
	"sync"

	"github.com/partlog/partlog"
	"github.com/partlog/partlog/producer"
	"github.com/partlog/partlog/vfs"
)

// exampleNode opens a node on an in-memory filesystem with a topic "study"
// of two partitions.
func exampleNode() *partlog.Node {
	node, err := partlog.Open("/data", partlog.Filesystem(vfs.NewMem()),
		partlog.TopicDefaults(map[string]string{"segment.index.bytes": "65536"}))
	if err != nil {
		panic(err)
	}
	if err := node.CreateTopic(context.Background(), partlog.NewTopic{Name: "study", Partitions: 2}); err != nil {
		panic(err)
	}
	return node
}

func ExampleProducer_ProduceSync() {
	node := exampleNode()
	defer node.Close()
	p, err := producer.New(node)
	if err != nil {
		panic(err)
	}
	defer p.Close()

	first := &producer.Record{Topic: "study", Value: []byte("hello")}
	first.SetPartition(1)
	second := &producer.Record{Topic: "study", Value: []byte("again")}
	second.SetPartition(1)
	results := p.ProduceSync(context.Background(), first, second)
	if err := results.FirstErr(); err != nil {
		panic(err)
	}
	for _, res := range results {
		fmt.Printf("%s: partition %d, offset %d\n", res.Record.Value, res.Record.Partition, res.Record.Offset)
	}
	// Output:
	// hello: partition 1, offset 0
	// again: partition 1, offset 1
}

func ExampleProducer_Produce() {
	node := exampleNode()
	defer node.Close()
	p, err := producer.New(node)
	if err != nil {
		panic(err)
	}
	defer p.Close()

	// Records with the same key go to the same partition; promises run in
	// offset order within a partition.
	var (
		mu    sync.Mutex
		lines []string
	)
	for i, user := range []string{"ada", "ada", "ada"} {
		r := &producer.Record{Topic: "study", Key: []byte(user), Value: fmt.Appendf(nil, "visit %d", i)}
		p.Produce(context.Background(), r, func(r *producer.Record, err error) {
			if err != nil {
				panic(err)
			}
			mu.Lock()
			defer mu.Unlock()
			lines = append(lines, fmt.Sprintf("%s %s at offset %d", r.Key, r.Value, r.Offset))
		})
	}
	if err := p.Flush(context.Background()); err != nil {
		panic(err)
	}
	for _, line := range lines {
		fmt.Println(line)
	}
	// Output:
	// ada visit 0 at offset 0
	// ada visit 1 at offset 1
	// ada visit 2 at offset 2
}
