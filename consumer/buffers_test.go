package consumer_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"

	"github.com/partlog/partlog/consumer"
	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/record"
)

// bufValue is record offset of partition p's value in the buffer tests:
// long enough that a few make a fetch, and different for every record, so
// that a buffer reused too early shows as a wrong value.
func bufValue(p int32, offset int64) string {
	s := fmt.Sprintf("p%d-o%06d-", p, offset)
	return s + strings.Repeat(string(rune('a'+offset%26)), 200-len(s))
}

// fillBufferTopic creates topic "t" with parts partitions of n records
// each, in batches of 10, with bufValue values.
func fillBufferTopic(t *testing.T, parts int32, n int) *consumer.Consumer {
	t.Helper()
	node := openNode(t)
	createTopic(t, node, "t", parts, nil)
	for p := range parts {
		for off := int64(0); off < int64(n); off += 10 {
			recs := make([]record.Record, 10)
			for i := range recs {
				recs[i] = record.Record{Timestamp: baseTime, Value: []byte(bufValue(p, off+int64(i)))}
			}
			produce(t, node.Client(), "t", p, recs...)
		}
	}
	tps := make([]kafka.TopicPartition, parts)
	for p := range parts {
		tps[p] = tp("t", p)
	}
	// Small fetches, and little buffered, so that buffers go round often;
	// MaxPollRecords that does not divide a batch makes Poll give back
	// part of what it took.
	return newConsumer(t, node.Client(), consumer.Partitions(tps...), consumer.AutoOffsetReset(consumer.Earliest),
		consumer.FetchBuffers(consumer.ReuseBuffers), consumer.MaxPartitionFetchBytes(4096),
		consumer.FetchMaxBytes(12288), consumer.MaxPollRecords(7))
}

// memory records the memory that values lie in.
type memory [][2]uintptr

// add adds r's value and reports whether it overlaps one added before.
func (m *memory) add(r *consumer.Record) bool {
	lo := uintptr(unsafe.Pointer(unsafe.SliceData(r.Value)))
	hi := lo + uintptr(len(r.Value))
	overlaps := false
	for _, s := range *m {
		overlaps = overlaps || lo < s[1] && s[0] < hi
	}
	*m = append(*m, [2]uintptr{lo, hi})
	return overlaps
}

func TestReuseBuffersPollReturnsEveryRecordIntactUntilTheNextPoll(t *testing.T) {
	const parts, n = 3, 300
	c := fillBufferTopic(t, parts, n)
	next := make([]int64, parts)
	var seen memory
	reused := false
	var last []consumer.Record
	for got := 0; got < parts*n; {
		// The last Poll's records are still intact until this Poll.
		for i := range last {
			require.Equal(t, bufValue(last[i].Partition, last[i].Offset), string(last[i].Value))
		}
		fs, err := c.Poll(context.Background(), pollTimeout)
		require.NoError(t, err)
		require.False(t, fs.Empty(), "no records after %d", got)
		last = last[:0]
		fs.EachRecord(func(r *consumer.Record) {
			require.Equal(t, next[r.Partition], r.Offset, "partition %d", r.Partition)
			next[r.Partition]++
			require.Equal(t, bufValue(r.Partition, r.Offset), string(r.Value))
			reused = seen.add(r) || reused
			last = append(last, *r)
			got++
		})
	}
	require.Equal(t, []int64{n, n, n}, next)
	require.True(t, reused, "no value was read into memory a value was read into before")
}

func TestKeepBuffersNeverReusesMemory(t *testing.T) {
	const n = 200
	node := openNode(t)
	createTopic(t, node, "t", 1, nil)
	for off := int64(0); off < n; off += 10 {
		recs := make([]record.Record, 10)
		for i := range recs {
			recs[i] = record.Record{Timestamp: baseTime, Value: []byte(bufValue(0, off+int64(i)))}
		}
		produce(t, node.Client(), "t", 0, recs...)
	}
	// The default: while the records are held, no two share memory.
	c := newConsumer(t, node.Client(), consumer.Partitions(tp("t", 0)), consumer.AutoOffsetReset(consumer.Earliest),
		consumer.MaxPartitionFetchBytes(4096), consumer.FetchMaxBytes(12288), consumer.MaxPollRecords(7))
	held := pollN(t, c, n)
	var seen memory
	for i := range held {
		require.Equal(t, int64(i), held[i].Offset)
		require.Equal(t, bufValue(0, held[i].Offset), string(held[i].Value))
		require.False(t, seen.add(&held[i]), "offset %d shares memory with an earlier record", i)
	}
}

func TestReuseBuffersRecordsLoopWithBreaksAndSeeks(t *testing.T) {
	const parts, n = 2, 300
	c := fillBufferTopic(t, parts, n)
	next := make([]int64, parts)
	sought := false
	for done := false; !done; {
		count := 0
		for rec, err := range c.Records(context.Background()) {
			require.NoError(t, err)
			require.Equal(t, next[rec.Partition], rec.Offset, "partition %d", rec.Partition)
			require.Equal(t, bufValue(rec.Partition, rec.Offset), string(rec.Value))
			next[rec.Partition]++
			if rec.Partition == 1 && rec.Offset == 150 && !sought {
				// Back to 40: the records after it come again.
				sought = true
				require.NoError(t, c.Seek(rec.TopicPartition(), 40))
				next[1] = 40
			}
			if next[0] == n && next[1] == n {
				done = true
				break
			}
			if count++; count == 17 {
				break // and loop again: the rest is given back
			}
		}
	}
	require.True(t, sought)
	require.Equal(t, []int64{n, n}, next)
}

func TestReuseBuffersCopiesSmallAnswersOut(t *testing.T) {
	// Each fetch brings one record of a 1 MiB buffer: rather than hold the
	// buffer for it, the consumer copies it out and gives the buffer back.
	// The copies are the records' own, so they never share memory.
	node := openNode(t)
	createTopic(t, node, "t", 1, nil)
	c := newConsumer(t, node.Client(), consumer.Partitions(tp("t", 0)), consumer.AutoOffsetReset(consumer.Earliest),
		consumer.FetchBuffers(consumer.ReuseBuffers))
	var held []consumer.Record
	var seen memory
	for i := range int64(20) {
		produce(t, node.Client(), "t", 0, record.Record{Timestamp: baseTime, Value: []byte(bufValue(0, i))})
		recs := pollN(t, c, 1)
		require.Equal(t, i, recs[0].Offset)
		require.False(t, seen.add(&recs[0]), "offset %d shares memory with an earlier record", i)
		held = append(held, recs[0])
	}
	for i := range held {
		require.Equal(t, bufValue(0, int64(i)), string(held[i].Value))
	}
}

func TestReuseBuffersGrowForBatchesLargerThanAFetch(t *testing.T) {
	// Batches of 10 values of 200 bytes do not fit MaxPartitionFetchBytes:
	// each fetch brings one whole, and the buffers grow to hold one.
	node := openNode(t)
	createTopic(t, node, "t", 1, nil)
	const n = 300
	for off := int64(0); off < n; off += 10 {
		recs := make([]record.Record, 10)
		for i := range recs {
			recs[i] = record.Record{Timestamp: baseTime, Value: []byte(bufValue(0, off+int64(i)))}
		}
		produce(t, node.Client(), "t", 0, recs...)
	}
	c := newConsumer(t, node.Client(), consumer.Partitions(tp("t", 0)), consumer.AutoOffsetReset(consumer.Earliest),
		consumer.FetchBuffers(consumer.ReuseBuffers), consumer.MaxPartitionFetchBytes(512), consumer.FetchMaxBytes(1024))
	var seen memory
	reused := false
	for next := int64(0); next < n; {
		fs, err := c.Poll(context.Background(), pollTimeout)
		require.NoError(t, err)
		require.False(t, fs.Empty())
		fs.EachRecord(func(r *consumer.Record) {
			require.Equal(t, next, r.Offset)
			require.Equal(t, bufValue(0, r.Offset), string(r.Value))
			reused = seen.add(r) || reused
			next++
		})
	}
	require.True(t, reused, "no value was read into memory a value was read into before")
}
