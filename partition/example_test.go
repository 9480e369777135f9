package partition_test

import (
	"fmt"

	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/log"
	"github.com/partlog/partlog/partition"
	"github.com/partlog/partlog/record"
	"github.com/partlog/partlog/vfs"
)

// A partition takes a producer's batches, gives them offsets and stamps
// them with its leader epoch, and serves them to consumers up to its high
// watermark.
func ExamplePartition_Append() {
	l, err := log.Open("/data/greetings-0", log.Options{FS: vfs.NewMem()})
	if err != nil {
		panic(err)
	}
	defer l.Close()
	// Partition 0 of "greetings", led by node 1 in leader epoch 5. The
	// partition closes before the log: it is the log's user.
	p := partition.New("greetings", 0, 1, 5, l, partition.Options{})
	defer p.Close()

	for _, values := range [][]string{{"hello", "world"}, {"again"}} {
		b := record.NewBuilder(record.DefaultBatchOptions())
		for i, v := range values {
			b.Append(record.Record{Timestamp: 1_700_000_000_000 + int64(i), Value: []byte(v)})
		}
		// Append borrows the batch until it returns: it rewrites the
		// base offset and leader epoch in place.
		res, err := p.Append(b.Build(), kafka.AcksAll)
		if err != nil {
			panic(err)
		}
		fmt.Printf("appended offsets %d..%d\n", res.FirstOffset, res.LastOffset)
	}
	fmt.Println("high watermark", p.HighWatermark())

	// Fetch from offset 1: the answer starts with the whole batch that
	// holds it, so the reader skips the records below the offset it
	// asked for. The records are the caller's.
	res, err := p.Fetch(nil, 1, 1<<20)
	if err != nil {
		panic(err)
	}
	for rest := res.Records; len(rest) > 0; {
		h, err := record.ParseHeader(rest)
		if err != nil {
			panic(err)
		}
		batch, err := record.Decode(rest[:h.Size()])
		if err != nil {
			panic(err)
		}
		rest = rest[h.Size():]
		for _, r := range batch.Records {
			if r.Offset >= 1 {
				fmt.Printf("offset %d epoch %d value %q\n", r.Offset, batch.PartitionLeaderEpoch, r.Value)
			}
		}
	}
	// Output:
	// appended offsets 0..1
	// appended offsets 2..2
	// high watermark 3
	// offset 1 epoch 5 value "world"
	// offset 2 epoch 5 value "again"
}

// ListOffset answers Kafka's ListOffsets: the log start offset, the high
// watermark, or the first offset whose record is at or after a timestamp.
func ExamplePartition_ListOffset() {
	l, err := log.Open("/data/clicks-0", log.Options{FS: vfs.NewMem()})
	if err != nil {
		panic(err)
	}
	defer l.Close()
	p := partition.New("clicks", 0, 1, 0, l, partition.Options{})
	defer p.Close()
	for _, ts := range []int64{1000, 2000, 3000} { // one record a batch, in ms
		b := record.NewBuilder(record.DefaultBatchOptions())
		b.Append(record.Record{Timestamp: ts, Value: []byte("click")})
		if _, err := p.Append(b.Build(), kafka.AcksLeader); err != nil {
			panic(err)
		}
	}
	for _, ts := range []int64{kafka.EarliestTimestamp, kafka.LatestTimestamp, 1500, 9000} {
		offset, recordTs, err := p.ListOffset(ts)
		if err != nil {
			panic(err)
		}
		fmt.Printf("ListOffset(%d) = offset %d, timestamp %d\n", ts, offset, recordTs)
	}
	// Output:
	// ListOffset(-2) = offset 0, timestamp -1
	// ListOffset(-1) = offset 3, timestamp -1
	// ListOffset(1500) = offset 1, timestamp 2000
	// ListOffset(9000) = offset -1, timestamp -1
}
