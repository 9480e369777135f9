package producer

import (
	"time"

	"github.com/partlog/partlog/record"
)

// Header is one of a record's headers: a key, which is never null, and a
// value, where nil is null. It is the record package's header, so headers
// go into a batch without being copied into another type.
type Header = record.RecordHeader

// Record is a record to produce, and once its promise runs, where it
// landed.
//
// The producer reads Topic, Key, Value, Headers and Timestamp, and the
// partition set by SetPartition; it writes Partition, Offset and Timestamp.
// Produce encodes Key, Value and Headers into a batch before it returns, so
// the caller may reuse those slices at once; the Record itself must be left
// alone until its promise has run.
//
// The zero Record has no explicit partition: setting the Partition field
// does not choose one, SetPartition does.
type Record struct {
	// Topic is the topic to produce to.
	Topic string
	// Key is the record's key; nil is a null key. Records with the same
	// key go to the same partition under the default partitioner.
	Key []byte
	// Value is the record's value; nil is a null value (a tombstone in a
	// compacted topic).
	Value []byte
	// Headers ride along with the record, in order.
	Headers []Header
	// Timestamp is the record's creation time, kept in milliseconds. The
	// zero time means now: Produce sets it. When the topic uses
	// LogAppendTime, the promise finds the time the log stamped.
	Timestamp time.Time

	// Partition is where the record goes: Produce sets it to the
	// partitioner's choice, or to the partition given to SetPartition.
	Partition int32
	// Offset is the record's offset in its partition, set before the
	// promise runs; -1 when the record failed, or when acks=0 left the
	// producer without an answer.
	Offset int64

	// explicit says that Partition was set by SetPartition, which
	// bypasses the partitioner.
	explicit bool
}

// SetPartition sends the record to partition p of its topic, bypassing the
// partitioner. A partition the topic does not have fails the record with
// kafka.ErrUnknownTopicOrPartition.
func (r *Record) SetPartition(p int32) {
	r.Partition, r.explicit = p, true
}

// Result is the outcome of one record of ProduceSync: the record, with its
// Partition and Offset filled in, and the error it failed with, if any.
type Result struct {
	// Record is the record passed to ProduceSync, with Partition and
	// Offset filled in once it is produced.
	Record *Record
	// Err is nil when the record was produced, else why it was not.
	Err error
}

// Results are the outcomes of ProduceSync, in the order of its records.
type Results []Result

// FirstErr returns the first record's error, in the order the records were
// given, or nil when every record was produced.
func (rs Results) FirstErr() error {
	for _, r := range rs {
		if r.Err != nil {
			return r.Err
		}
	}
	return nil
}

// First returns the first record and its error: convenient when
// ProduceSync was given one record.
func (rs Results) First() (*Record, error) {
	if len(rs) == 0 {
		return nil, nil
	}
	return rs[0].Record, rs[0].Err
}

// Size bounds of a record in a batch, as Kafka's DefaultRecord and
// DefaultRecordBatch estimate them.
const (
	// recordOverhead bounds a record's fixed fields: its length (varint,
	// 5), attributes (1), timestamp delta (varlong, 10), offset delta
	// (varint, 5), and its header count (varint, 5).
	recordOverhead = 5 + 1 + 10 + 5 + 5
)

// sizeBound returns an upper bound on the bytes r takes in a batch,
// without the batch header.
func (r *Record) sizeBound() int {
	n := recordOverhead + bytesLen(r.Key) + bytesLen(r.Value)
	for i := range r.Headers {
		h := &r.Headers[i]
		n += uvarintLen(uint64(len(h.Key))*2) + len(h.Key) + bytesLen(h.Value)
	}
	return n
}

// bytesLen returns the bytes of a length-prefixed field: the zigzag varint
// of its length (-1 for nil) and the bytes.
func bytesLen(b []byte) int {
	if b == nil {
		return 1
	}
	return uvarintLen(uint64(len(b))*2) + len(b)
}

// uvarintLen returns the length of x as a base-128 varint.
func uvarintLen(x uint64) int {
	n := 1
	for x >= 0x80 {
		x >>= 7
		n++
	}
	return n
}
