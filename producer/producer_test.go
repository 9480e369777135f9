package producer_test

import (
	"context"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/producer"
	"github.com/partlog/partlog/record"
)

func TestProduceSyncResults(t *testing.T) {
	node := openNode(t)
	createTopic(t, node, "t", 2, nil)
	p := newProducer(t, node.Client())
	a := &producer.Record{Topic: "t", Value: []byte("a")}
	a.SetPartition(1)
	bad := &producer.Record{Topic: "t", Value: []byte("bad")}
	bad.SetPartition(9)
	b := &producer.Record{Topic: "t", Value: []byte("b")}
	b.SetPartition(1)
	res := p.ProduceSync(context.Background(), a, bad, b)
	require.Len(t, res, 3)
	require.Same(t, a, res[0].Record)
	require.NoError(t, res[0].Err)
	require.ErrorIs(t, res[1].Err, kafka.ErrUnknownTopicOrPartition)
	require.NoError(t, res[2].Err)
	require.ErrorIs(t, res.FirstErr(), kafka.ErrUnknownTopicOrPartition)
	require.Equal(t, int64(0), a.Offset)
	require.Equal(t, int64(1), b.Offset)
	r, err := res.First()
	require.Same(t, a, r)
	require.NoError(t, err)

	require.Empty(t, p.ProduceSync(context.Background()))
	r, err = producer.Results(nil).First()
	require.Nil(t, r)
	require.NoError(t, err)
}

func TestFlushWaits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		node := openNode(t)
		createTopic(t, node, "t", 3, nil)
		p := newProducer(t, node.Client(), producer.Linger(time.Hour))
		got := newPromises()
		for i := range 30 {
			p.Produce(context.Background(), &producer.Record{Topic: "t", Value: fmt.Appendf(nil, "%d", i)}, got.promise)
		}
		synctest.Wait()
		require.Zero(t, got.len(), "lingering")
		start := time.Now()
		require.NoError(t, p.Flush(context.Background()))
		require.Equal(t, 30, got.len(), "Flush returns after every promise ran")
		require.Zero(t, time.Since(start), "without waiting for the linger")

		// Flush with nothing buffered returns at once.
		require.NoError(t, p.Flush(context.Background()))
	})
}

func TestFlushContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		node := openNode(t)
		createTopic(t, node, "t", 1, nil)
		gate := make(chan struct{})
		p := newProducer(t, &faultClient{Client: node.Client(), gate: gate})
		p.Produce(context.Background(), &producer.Record{Topic: "t"}, nil)
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		require.ErrorIs(t, p.Flush(ctx), context.DeadlineExceeded)
		close(gate)
		require.NoError(t, p.Flush(context.Background()))
	})
}

func TestCloseFlushes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		node := openNode(t)
		createTopic(t, node, "t", 2, nil)
		p, err := producer.New(node.Client(), producer.Linger(time.Hour))
		require.NoError(t, err)
		got := newPromises()
		for i := range 10 {
			p.Produce(context.Background(), &producer.Record{Topic: "t", Value: fmt.Appendf(nil, "%d", i)}, got.promise)
		}
		require.NoError(t, p.Close())
		require.Equal(t, 10, got.len())
		for _, res := range got.all() {
			require.NoError(t, res.err)
		}
		require.Len(t, append(fetchValues(t, node, "t", 0), fetchValues(t, node, "t", 1)...), 10)

		// Produce after Close fails at once, through the promise.
		called := false
		r := &producer.Record{Topic: "t"}
		p.Produce(context.Background(), r, func(got *producer.Record, err error) {
			called = true
			require.Same(t, r, got)
			require.ErrorIs(t, err, producer.ErrClosed)
		})
		require.True(t, called)
		require.ErrorIs(t, p.ProduceSync(context.Background(), &producer.Record{Topic: "t"}).FirstErr(), producer.ErrClosed)
		require.NoError(t, p.Close(), "Close again")
		require.NoError(t, p.Flush(context.Background()))
	})
}

func TestCloseGivesUp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		node := openNode(t)
		createTopic(t, node, "t", 1, nil)
		// A client that holds a request past its context's end: Close
		// waits for the delivery timeout, then cancels what is in flight
		// and fails what is left.
		gate := make(chan struct{})
		client := &faultClient{Client: node.Client(), gate: gate, ignoreContext: true}
		p, err := producer.New(client, producer.DeliveryTimeout(time.Minute), producer.RequestTimeout(50*time.Second),
			producer.Linger(0), producer.BatchSize(100))
		require.NoError(t, err)
		got := newPromises()
		p.Produce(context.Background(), &producer.Record{Topic: "t", Value: []byte("in flight")}, got.promise)
		synctest.Wait()
		p.Produce(context.Background(), &producer.Record{Topic: "t", Value: []byte("queued")}, got.promise)

		closed := make(chan error)
		start := time.Now()
		go func() { closed <- p.Close() }()
		time.Sleep(time.Minute)
		synctest.Wait()
		require.Zero(t, got.len())
		close(gate) // the held request is answered at last
		err = <-closed
		require.ErrorIs(t, err, context.DeadlineExceeded)
		require.Equal(t, time.Minute, time.Since(start))
		res := got.all()
		require.Len(t, res, 2)
		require.Equal(t, "in flight", res[0].value)
		require.NoError(t, res[0].err, "it was answered")
		require.Equal(t, "queued", res[1].value)
		require.ErrorIs(t, res[1].err, producer.ErrClosed)
	})
}

func TestCloseFailsBlockedProduce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		node := openNode(t)
		createTopic(t, node, "t", 2, nil)
		gate := make(chan struct{})
		defer close(gate)
		client := &faultClient{Client: node.Client(), gate: gate}
		p, err := producer.New(client, producer.BatchSize(1024), producer.BufferMemory(1024), producer.Linger(0),
			producer.DeliveryTimeout(time.Minute), producer.RequestTimeout(time.Second))
		require.NoError(t, err)
		p.Produce(context.Background(), &producer.Record{Topic: "t"}, nil)
		synctest.Wait()
		blocked := make(chan error, 1)
		go func() { blocked <- p.ProduceSync(context.Background(), &producer.Record{Topic: "t"}).FirstErr() }()
		synctest.Wait()
		p.Close()
		require.ErrorIs(t, <-blocked, producer.ErrClosed)
	})
}

func TestOptionsValidated(t *testing.T) {
	node := openNode(t)
	for _, tc := range []struct {
		opt  producer.Option
		want string
	}{
		{producer.Acks(2), "Acks (acks) 2"},
		{producer.Linger(-time.Second), "Linger (linger.ms) -1s is negative"},
		{producer.BatchSize(-1), "BatchSize (batch.size)"},
		{producer.BufferMemory(0), "BufferMemory (buffer.memory) 0"},
		{producer.BufferMemory(1000), "BufferMemory (buffer.memory) 1000 is below BatchSize (batch.size) 16384"},
		{producer.MaxBlock(-1), "MaxBlock (max.block.ms)"},
		{producer.Retries(-1), "Retries (retries)"},
		{producer.RetryBackoff(-1), "RetryBackoff (retry.backoff.ms)"},
		{producer.DeliveryTimeout(0), "DeliveryTimeout (delivery.timeout.ms)"},
		{producer.DeliveryTimeout(time.Second), "DeliveryTimeout (delivery.timeout.ms) 1s is below Linger plus RequestTimeout"},
		{producer.RequestTimeout(0), "RequestTimeout (request.timeout.ms)"},
		{producer.MaxInFlight(0), "MaxInFlight (max.in.flight.requests.per.connection)"},
		{producer.Compression(7), "Compression (compression.type)"},
		{producer.MaxRequestSize(10), "MaxRequestSize (max.request.size)"},
		{producer.RecordPartitioner(nil), "RecordPartitioner"},
		{producer.MetadataMaxAge(0), "MetadataMaxAge (metadata.max.age.ms)"},
	} {
		_, err := producer.New(node.Client(), tc.opt)
		require.ErrorContains(t, err, "producer: "+tc.want)
	}
	_, err := producer.New(nil)
	require.Error(t, err)

	// A delivery timeout left at its default grows to cover a long
	// request timeout, as in Kafka.
	p, err := producer.New(node.Client(), producer.RequestTimeout(5*time.Minute))
	require.NoError(t, err)
	require.NoError(t, p.Close())
	p, err = producer.New(node.Client(), producer.Compression(record.Zstd), producer.BatchSize(0), producer.MaxBlock(0), producer.Retries(0))
	require.NoError(t, err)
	require.NoError(t, p.Close())
}

func TestBatchSizeZero(t *testing.T) {
	node := openNode(t)
	createTopic(t, node, "t", 1, nil)
	p := newProducer(t, node.Client(), producer.BatchSize(0), producer.Linger(time.Hour))
	var rs []*producer.Record
	for i := range 5 {
		rs = append(rs, &producer.Record{Topic: "t", Value: fmt.Appendf(nil, "%d", i)})
	}
	require.NoError(t, p.ProduceSync(context.Background(), rs...).FirstErr())
	require.Len(t, fetchBatches(t, node, "t", 0), 5, "a batch per record")
}
