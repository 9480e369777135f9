// Package batchtest builds record batches for the storage engine's tests.
package batchtest

import (
	"fmt"

	"github.com/partlog/partlog/record"
)

// Spec describes a batch: Records records with values of ValueSize bytes
// (the value starts with the record's index in the batch and Tag), and
// timestamps Timestamp, Timestamp+1, ...
type Spec struct {
	Records   int
	ValueSize int
	Timestamp int64
	Tag       string
	Epoch     int32
}

// Build returns the batch with base offset 0 and leader epoch s.Epoch (-1
// when zero and no epoch is wanted: use Epoch -1 explicitly to mean none).
func Build(s Spec) []byte {
	opts := record.DefaultBatchOptions()
	opts.PartitionLeaderEpoch = s.Epoch
	b := record.NewBuilder(opts)
	for i := range s.Records {
		b.Append(record.Record{
			Timestamp: s.Timestamp + int64(i),
			Key:       []byte(fmt.Sprintf("k%d", i)),
			Value:     Value(s.Tag, i, s.ValueSize),
		})
	}
	return b.Build()
}

// Value returns the value Build gives record i of a batch tagged tag.
func Value(tag string, i, size int) []byte {
	v := []byte(fmt.Sprintf("%s/%d/", tag, i))
	for len(v) < size {
		v = append(v, byte('a'+len(v)%26))
	}
	return v
}

// Simple returns a batch of n records of 10-byte values with timestamp ts.
func Simple(n int, ts int64) []byte {
	return Build(Spec{Records: n, ValueSize: 10, Timestamp: ts, Epoch: -1})
}
