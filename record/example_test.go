package record_test

import (
	"errors"
	"fmt"

	"github.com/partlog/partlog/record"
)

func Example() {
	opts := record.DefaultBatchOptions()
	opts.Compression = record.Zstd
	b := record.NewBuilder(opts)
	b.Append(record.Record{Timestamp: 1_700_000_000_000, Key: []byte("user-1"), Value: []byte("signed up")})
	b.Append(record.Record{Timestamp: 1_700_000_000_005, Key: []byte("user-1"), Value: nil}) // a tombstone
	b.Append(record.Record{
		Timestamp: 1_700_000_000_003,
		Value:     []byte("no key"),
		Headers:   []record.RecordHeader{{Key: "trace-id", Value: []byte("abc")}},
	})
	batch := b.Build()

	// The log assigns offsets by rewriting the header; the CRC stays valid.
	record.SetBaseOffset(batch, 100)
	record.SetPartitionLeaderEpoch(batch, 3)

	decoded, err := record.Decode(batch)
	if err != nil {
		panic(err)
	}
	fmt.Println(decoded.Attributes)
	fmt.Println("offsets", decoded.BaseOffset, "to", decoded.LastOffset(), "epoch", decoded.PartitionLeaderEpoch)
	fmt.Println("max timestamp", decoded.MaxTimestamp)
	for _, r := range decoded.Records {
		fmt.Printf("%d %d key=%q value=%q null=%t headers=%d\n",
			r.Offset, r.Timestamp, r.Key, r.Value, r.Value == nil, len(r.Headers))
	}
	// Output:
	// compression=zstd,timestampType=CreateTime
	// offsets 100 to 102 epoch 3
	// max timestamp 1700000000005
	// 100 1700000000000 key="user-1" value="signed up" null=false headers=0
	// 101 1700000000005 key="user-1" value="" null=true headers=0
	// 102 1700000000003 key="" value="no key" null=false headers=1
}

func ExampleControlBatch() {
	marker := record.ControlBatch(record.ControlCommit, 4000, 2, 7, 1_700_000_000_000)

	batch, err := record.Decode(marker)
	if err != nil {
		panic(err)
	}
	fmt.Println(batch.Attributes)
	fmt.Println("producer", batch.ProducerID, "epoch", batch.ProducerEpoch)
	c, err := record.ParseControlRecord(batch.Records[0])
	if err != nil {
		panic(err)
	}
	fmt.Println(c.Type, "coordinator epoch", c.CoordinatorEpoch)
	// Output:
	// compression=none,timestampType=CreateTime,transactional,control
	// producer 4000 epoch 2
	// COMMIT coordinator epoch 7
}

func ExampleValidate() {
	b := record.NewBuilder(record.DefaultBatchOptions())
	b.Append(record.Record{Timestamp: 1, Value: []byte("hello")})
	batch := b.Build()

	h, err := record.Validate(batch)
	fmt.Println(h.Size(), h.NumRecords, err)

	_, err = record.Validate(batch[:40])
	fmt.Println(err)

	batch[len(batch)-1] ^= 0xff // corrupt the last byte of the value
	_, err = record.Validate(batch)
	fmt.Println(errors.Is(err, record.ErrCorrupt))
	// Output:
	// 73 1 <nil>
	// record: truncated record batch: have 40 bytes, need 61
	// true
}
