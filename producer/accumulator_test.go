package producer_test

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/producer"
	"github.com/partlog/partlog/record"
)

func TestOffsetsContiguousPromisesInOrder(t *testing.T) {
	node := openNode(t)
	createTopic(t, node, "t", 3, nil)
	// Small batches, so that each partition gets many.
	p := newProducer(t, node.Client(), producer.BatchSize(512), producer.Linger(0))
	got := newPromises()
	const total = 3000
	for i := range total {
		r := &producer.Record{Topic: "t", Key: fmt.Appendf(nil, "k%d", i%7), Value: fmt.Appendf(nil, "v%04d", i)}
		p.Produce(context.Background(), r, got.promise)
	}
	require.NoError(t, p.Flush(context.Background()))
	require.Equal(t, total, got.len())

	next := map[int32]int64{}
	byPartition := map[int32][]string{}
	for _, res := range got.all() {
		require.NoError(t, res.err)
		// Promises of a partition run in offset order, from 0, no gaps.
		require.Equal(t, next[res.partition], res.offset, "partition %d", res.partition)
		next[res.partition]++
		byPartition[res.partition] = append(byPartition[res.partition], res.value)
	}
	for part, values := range byPartition {
		// And records are appended in the order they were produced.
		require.Equal(t, values, fetchValues(t, node, "t", part))
		require.IsIncreasing(t, values)
	}
}

func TestConcurrentProducers(t *testing.T) {
	node := openNode(t)
	createTopic(t, node, "t", 4, nil)
	p := newProducer(t, node.Client(), producer.BatchSize(1024), producer.Linger(time.Millisecond))
	const goroutines, each = 8, 500
	var wg sync.WaitGroup
	got := newPromises()
	for g := range goroutines {
		wg.Go(func() {
			for i := range each {
				r := &producer.Record{Topic: "t", Value: fmt.Appendf(nil, "g%d-%04d", g, i)}
				if i%10 == 0 {
					// Some synchronous ones between the asynchronous.
					res := p.ProduceSync(context.Background(), r)
					got.promise(r, res.FirstErr())
					continue
				}
				p.Produce(context.Background(), r, got.promise)
			}
		})
	}
	wg.Wait()
	require.NoError(t, p.Flush(context.Background()))
	require.Equal(t, goroutines*each, got.len())
	total := 0
	for part := range int32(4) {
		values := fetchValues(t, node, "t", part)
		total += len(values)
		// Each goroutine's records of a partition are in its order.
		last := map[string]string{}
		for _, v := range values {
			g := v[:2]
			require.Less(t, last[g], v)
			last[g] = v
			res := got.byValue[v]
			require.NoError(t, res.err)
			require.Equal(t, part, res.partition)
		}
	}
	require.Equal(t, goroutines*each, total)
}

func TestLingerSendsPartialBatch(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		node := openNode(t)
		createTopic(t, node, "t", 1, nil)
		p := newProducer(t, node.Client(), producer.Linger(100*time.Millisecond))
		got := newPromises()
		start := time.Now()
		p.Produce(context.Background(), &producer.Record{Topic: "t", Value: []byte("a")}, got.promise)
		time.Sleep(50 * time.Millisecond)
		p.Produce(context.Background(), &producer.Record{Topic: "t", Value: []byte("b")}, got.promise)
		time.Sleep(49 * time.Millisecond)
		synctest.Wait()
		require.Zero(t, got.len(), "sent before the linger passed")

		time.Sleep(time.Millisecond)
		synctest.Wait()
		require.Equal(t, 2, got.len())
		require.Equal(t, 100*time.Millisecond, time.Since(start))
		batches := fetchBatches(t, node, "t", 0)
		require.Len(t, batches, 1, "both records in one batch")
		require.Len(t, batches[0].Records, 2)
	})
}

func TestLingerZero(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		node := openNode(t)
		createTopic(t, node, "t", 1, nil)
		p := newProducer(t, node.Client(), producer.Linger(0))
		got := newPromises()
		p.Produce(context.Background(), &producer.Record{Topic: "t", Value: []byte("a")}, got.promise)
		synctest.Wait()
		require.Equal(t, 1, got.len(), "sent without waiting")
	})
}

func TestBatchSizeClosesBatches(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		node := openNode(t)
		createTopic(t, node, "t", 1, nil)
		const batchSize = 1024
		p := newProducer(t, node.Client(), producer.BatchSize(batchSize), producer.Linger(time.Hour))
		got := newPromises()
		value := bytes.Repeat([]byte("x"), 100)
		for range 25 {
			p.Produce(context.Background(), &producer.Record{Topic: "t", Value: value}, got.promise)
		}
		synctest.Wait()
		// Full batches went without lingering; the last, partial one waits.
		sent := got.len()
		require.Greater(t, sent, 10)
		require.Less(t, sent, 25)
		batches := fetchBatches(t, node, "t", 0)
		require.Greater(t, len(batches), 1)
		for _, b := range batches {
			require.LessOrEqual(t, int(b.BatchLength)+record.LogOverhead, batchSize)
			// Full: one more record would not have fitted.
			require.Greater(t, int(b.BatchLength)+record.LogOverhead+2*len(value), batchSize)
		}

		// A record larger than batch.size gets a batch of its own.
		big := bytes.Repeat([]byte("y"), 3*batchSize)
		require.NoError(t, p.ProduceSync(context.Background(), &producer.Record{Topic: "t", Value: big}).FirstErr())
		batches = fetchBatches(t, node, "t", 0)
		last := batches[len(batches)-1]
		require.Len(t, last.Records, 1)
		require.Equal(t, big, last.Records[0].Value)
		require.Equal(t, 25, got.len(), "the big record closed the partial batch before it")
		require.NoError(t, p.Flush(context.Background()))
	})
}

func TestBufferFullBlocksThenFrees(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		node := openNode(t)
		createTopic(t, node, "t", 4, nil)
		gate := make(chan struct{})
		client := &faultClient{Client: node.Client(), gate: gate}
		// Room for two batches of 1 KiB.
		p := newProducer(t, client, producer.BatchSize(1024), producer.BufferMemory(2048), producer.Linger(0))
		got := newPromises()
		produceTo := func(part int32) {
			r := &producer.Record{Topic: "t", Value: []byte(fmt.Sprint(part))}
			r.SetPartition(part)
			p.Produce(context.Background(), r, got.promise)
		}
		produceTo(0)
		produceTo(1) // both batches are in flight, held by the gate
		synctest.Wait()

		blocked := make(chan struct{})
		go func() {
			produceTo(2)
			close(blocked)
		}()
		synctest.Wait()
		require.False(t, closed(blocked), "Produce should wait for memory")

		close(gate)
		synctest.Wait()
		require.True(t, closed(blocked))
		require.NoError(t, p.Flush(context.Background()))
		require.Equal(t, 3, got.len())
		for _, res := range got.all() {
			require.NoError(t, res.err)
		}
	})
}

func TestBufferFullMaxBlock(t *testing.T) {
	for _, maxBlock := range []time.Duration{0, 3 * time.Second} {
		t.Run(fmt.Sprint(maxBlock), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				node := openNode(t)
				createTopic(t, node, "t", 2, nil)
				gate := make(chan struct{})
				client := &faultClient{Client: node.Client(), gate: gate}
				p := newProducer(t, client, producer.BatchSize(1024), producer.BufferMemory(1024),
					producer.Linger(0), producer.MaxBlock(maxBlock))
				first := &producer.Record{Topic: "t", Value: []byte("a")}
				first.SetPartition(0)
				p.Produce(context.Background(), first, nil)
				synctest.Wait()

				start := time.Now()
				second := &producer.Record{Topic: "t", Value: []byte("b")}
				second.SetPartition(1)
				err := p.ProduceSync(context.Background(), second).FirstErr()
				require.ErrorIs(t, err, producer.ErrBufferFull)
				require.Equal(t, maxBlock, time.Since(start))
				require.Equal(t, int64(-1), second.Offset)
				close(gate)
			})
		})
	}
}

func TestBufferFullContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		node := openNode(t)
		createTopic(t, node, "t", 2, nil)
		gate := make(chan struct{})
		defer close(gate)
		client := &faultClient{Client: node.Client(), gate: gate}
		p := newProducer(t, client, producer.BatchSize(1024), producer.BufferMemory(1024), producer.Linger(0))
		p.Produce(context.Background(), &producer.Record{Topic: "t"}, nil)
		synctest.Wait()
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		err := p.ProduceSync(ctx, &producer.Record{Topic: "t"}).FirstErr()
		require.ErrorIs(t, err, context.DeadlineExceeded)
	})
}

func TestRecordTooLarge(t *testing.T) {
	node := openNode(t)
	createTopic(t, node, "t", 1, nil)
	p := newProducer(t, node.Client(), producer.MaxRequestSize(1000))
	called := false
	r := &producer.Record{Topic: "t", Value: make([]byte, 1000)}
	p.Produce(context.Background(), r, func(_ *producer.Record, err error) {
		called = true
		require.ErrorIs(t, err, producer.ErrRecordTooLarge)
		require.ErrorIs(t, err, kafka.ErrMessageTooLarge)
	})
	require.True(t, called, "the promise runs before Produce returns")
	require.Empty(t, fetchValues(t, node, "t", 0))

	// Just under the limit goes through.
	ok := &producer.Record{Topic: "t", Value: make([]byte, 900)}
	require.NoError(t, p.ProduceSync(context.Background(), ok).FirstErr())

	// A record larger than buffer.memory could never be buffered.
	small := newProducer(t, node.Client(), producer.BatchSize(100), producer.BufferMemory(500))
	err := small.ProduceSync(context.Background(), &producer.Record{Topic: "t", Value: make([]byte, 600)}).FirstErr()
	require.ErrorIs(t, err, producer.ErrRecordTooLarge)
}

func TestHeadersKeysTimestamps(t *testing.T) {
	node := openNode(t)
	createTopic(t, node, "t", 1, nil)
	p := newProducer(t, node.Client())
	ts := time.UnixMilli(1_700_000_000_123)
	key := []byte("key")
	r1 := &producer.Record{Topic: "t", Key: key, Value: []byte("v1"), Timestamp: ts,
		Headers: []producer.Header{{Key: "h1", Value: []byte("x")}, {Key: "h2", Value: nil}}}
	r2 := &producer.Record{Topic: "t", Value: nil} // a tombstone, stamped now
	before := time.Now()
	require.NoError(t, p.ProduceSync(context.Background(), r1, r2).FirstErr())
	key[0] = 'K' // encoded at Produce: changing it now changes nothing
	require.Equal(t, ts, r1.Timestamp)
	require.False(t, r2.Timestamp.Before(before.Truncate(time.Millisecond)))
	require.False(t, r2.Timestamp.After(time.Now()))

	batches := fetchBatches(t, node, "t", 0)
	require.Len(t, batches, 1)
	got := batches[0].Records
	require.Equal(t, []byte("key"), got[0].Key)
	require.Equal(t, ts.UnixMilli(), got[0].Timestamp)
	require.Equal(t, []record.RecordHeader{{Key: "h1", Value: []byte("x")}, {Key: "h2", Value: nil}}, got[0].Headers)
	require.Nil(t, got[1].Key)
	require.Nil(t, got[1].Value)
	require.Equal(t, r2.Timestamp.UnixMilli(), got[1].Timestamp)
}

func TestLogAppendTime(t *testing.T) {
	node := openNode(t)
	createTopic(t, node, "t", 1, map[string]string{"message.timestamp.type": "LogAppendTime"})
	p := newProducer(t, node.Client())
	r := &producer.Record{Topic: "t", Timestamp: time.UnixMilli(1000)}
	require.NoError(t, p.ProduceSync(context.Background(), r).FirstErr())
	require.Greater(t, r.Timestamp.UnixMilli(), int64(1000), "the promise sees the log's time")
}
