package consumer

import (
	"iter"
	"time"

	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/record"
)

// RecordHeader is one of a record's headers: a key and a value. A nil
// Value is a null value, distinct from an empty one.
type RecordHeader = record.RecordHeader

// TimestampType says where a record's timestamp comes from.
type TimestampType = record.TimestampType

// The timestamp types.
const (
	// CreateTime: the producer set the timestamp.
	CreateTime = record.CreateTime
	// LogAppendTime: the node set it when it appended the record's batch
	// (message.timestamp.type=LogAppendTime).
	LogAppendTime = record.LogAppendTime
)

// Record is one consumed record.
//
// Key, Value and header values point into the bytes the consumer fetched,
// which are never reused: the record, and every slice in it, belongs to
// the caller and stays valid for as long as the caller keeps it. Keeping
// one record keeps the fetch it came from (up to MaxPartitionFetchBytes) in
// memory; copy what must be kept long.
type Record struct {
	// Topic is the topic the record was consumed from.
	Topic string
	// Partition is the record's partition in the topic.
	Partition int32
	// LeaderEpoch is the leader epoch of the leader that appended the
	// record's batch.
	LeaderEpoch int32
	// Offset is the record's offset in its partition.
	Offset int64
	// Timestamp is the record's timestamp, to the millisecond.
	Timestamp time.Time
	// TimestampType says whether Timestamp is the producer's or the
	// node's.
	TimestampType TimestampType
	// Key is nil for a null key, and empty, not nil, for an empty one.
	Key []byte
	// Value is nil for a null value (a tombstone in a compacted topic).
	Value []byte
	// Headers are the record's headers in order, nil when it has none.
	Headers []RecordHeader
}

// TopicPartition returns the record's partition.
func (r *Record) TopicPartition() kafka.TopicPartition {
	return kafka.TopicPartition{Topic: r.Topic, Partition: r.Partition}
}

// FetchPartition holds the records one Poll returns for one partition,
// with what the partition's leader said about the partition when it
// answered the fetch they came in.
type FetchPartition struct {
	// Topic is the partition's topic.
	Topic string
	// Partition is the partition's index in the topic.
	Partition int32
	// HighWatermark is the offset below which records are committed: the
	// partition's end as a consumer sees it. HighWatermark less the offset
	// after the last record is the consumer's lag.
	HighWatermark int64
	// LastStableOffset is the offset below which no transaction is open.
	LastStableOffset int64
	// LogStartOffset is the first offset the partition holds.
	LogStartOffset int64
	// Records are the records in offset order; their offsets increase but
	// may have gaps (compacted records, transaction markers).
	Records []Record
}

// Fetches is what one Poll returns: the records of each partition that
// had some, partition by partition. Records of one partition are in offset
// order and a partition appears at most once.
//
// Each partition's Records were decoded for the Poll that returned them,
// into memory of their own that the consumer never touches again. The
// fastest ways through a Fetches are EachRecord, All, or a loop over the
// partitions and their Records, which copy nothing; Records collects
// pointers into a slice of its own. Consumer.Records, which decodes
// straight into the records it yields, is faster still.
type Fetches []FetchPartition

// NumRecords returns the number of records in fs.
func (fs Fetches) NumRecords() int {
	n := 0
	for i := range fs {
		n += len(fs[i].Records)
	}
	return n
}

// Empty reports whether fs holds no records.
func (fs Fetches) Empty() bool { return fs.NumRecords() == 0 }

// EachRecord calls fn with each record, partition by partition, in offset
// order within a partition.
func (fs Fetches) EachRecord(fn func(*Record)) {
	for i := range fs {
		recs := fs[i].Records
		for j := range recs {
			fn(&recs[j])
		}
	}
}

// All returns an iterator over the records of fs, in EachRecord's order.
func (fs Fetches) All() iter.Seq[*Record] {
	return func(yield func(*Record) bool) {
		for i := range fs {
			recs := fs[i].Records
			for j := range recs {
				if !yield(&recs[j]) {
					return
				}
			}
		}
	}
}

// Records returns pointers to the records of fs, in EachRecord's order.
func (fs Fetches) Records() []*Record {
	out := make([]*Record, 0, fs.NumRecords())
	for i := range fs {
		recs := fs[i].Records
		for j := range recs {
			out = append(out, &recs[j])
		}
	}
	return out
}
