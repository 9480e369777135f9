package producer_test

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/partlog/partlog"
	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/producer"
	"github.com/partlog/partlog/record"
	"github.com/partlog/partlog/transport"
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
	p, err := producer.New(node.Client())
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
	p, err := producer.New(node.Client())
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

// The producer is idempotent by default: each batch carries the producer id
// the node handed out, its epoch, and the sequence number of its first
// record, which the leader checks to drop retries it already wrote.
func ExampleIdempotent() {
	node := exampleNode()
	defer node.Close()
	// A linger longer than the example: each batch goes when Flush sends
	// it, holding exactly the records produced before.
	p, err := producer.New(node.Client(), producer.Linger(time.Hour))
	if err != nil {
		panic(err)
	}
	defer p.Close()
	for _, batch := range [][]string{{"a", "b"}, {"c"}} {
		for _, v := range batch {
			r := &producer.Record{Topic: "study", Value: []byte(v)}
			r.SetPartition(0)
			p.Produce(context.Background(), r, func(_ *producer.Record, err error) {
				if err != nil {
					panic(err)
				}
			})
		}
		if err := p.Flush(context.Background()); err != nil {
			panic(err)
		}
	}

	resp, err := node.Client().Fetch(context.Background(), &transport.FetchRequest{
		ReplicaID: kafka.ConsumerReplicaID, MaxBytes: 1 << 20,
		Topics: []transport.FetchTopic{{Topic: "study", Partitions: []transport.FetchPartition{{Partition: 0, MaxBytes: 1 << 20}}}},
	})
	if err != nil {
		panic(err)
	}
	for data := resp.Topics[0].Partitions[0].Records; len(data) > 0; {
		h, err := record.ParseHeader(data)
		if err != nil {
			panic(err)
		}
		fmt.Printf("offsets %d-%d: producer id %d, epoch %d, base sequence %d\n",
			h.BaseOffset, h.LastOffset(), h.ProducerID, h.ProducerEpoch, h.BaseSequence)
		data = data[h.Size():]
	}
	// Output:
	// offsets 0-1: producer id 0, epoch 0, base sequence 0
	// offsets 2-2: producer id 0, epoch 0, base sequence 2
}

// Example_transaction writes records to two partitions atomically: a
// read_committed consumer sees both or neither. An error matching
// ErrAbortable leaves the transaction to abort; one matching ErrFatal
// (fenced by a newer instance with the same transactional id) leaves the
// producer to close.
func Example_transaction() {
	node := exampleNode()
	defer node.Close()
	p, err := producer.New(node.Client(), producer.TransactionalID("study-writer"))
	if err != nil {
		panic(err)
	}
	defer p.Close()

	ctx := context.Background()
	for _, commit := range []bool{true, false} {
		if err := p.BeginTransaction(); err != nil {
			panic(err)
		}
		a := &producer.Record{Topic: "study", Value: []byte("debit")}
		a.SetPartition(0)
		b := &producer.Record{Topic: "study", Value: []byte("credit")}
		b.SetPartition(1)
		if err := p.ProduceSync(ctx, a, b).FirstErr(); err != nil {
			panic(err) // abortable: AbortTransaction, then go on
		}
		end := p.AbortTransaction
		if commit {
			end = p.CommitTransaction
		}
		if err := end(ctx); err != nil {
			panic(err)
		}
		fmt.Printf("%v: %s at %d, %s at %d; %v\n", map[bool]string{true: "committed", false: "aborted"}[commit],
			a.Value, a.Offset, b.Value, b.Offset, p.TransactionState())
	}
	// Output:
	// committed: debit at 0, credit at 0; Ready
	// aborted: debit at 2, credit at 2; Ready
}
