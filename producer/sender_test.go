package producer_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/producer"
	"github.com/partlog/partlog/record"
	"github.com/partlog/partlog/transport"
)

func TestRetriesRecover(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		node := openNode(t)
		createTopic(t, node, "t", 1, nil)
		client := &faultClient{Client: node.Client(), fail: func(call int) error {
			if call <= 3 {
				return fmt.Errorf("%w: moved", kafka.ErrNotLeaderOrFollower)
			}
			return nil
		}}
		p := newProducer(t, client, producer.RetryBackoff(time.Second))
		start := time.Now()
		r := &producer.Record{Topic: "t", Value: []byte("v")}
		require.NoError(t, p.ProduceSync(context.Background(), r).FirstErr())
		require.Equal(t, int64(0), r.Offset)
		produce, metadata := client.counts()
		require.Equal(t, 4, produce)
		require.Greater(t, metadata, 1, "NOT_LEADER_OR_FOLLOWER refreshes metadata")
		// Three backoffs, plus the linger.
		require.Equal(t, 3*time.Second+5*time.Millisecond, time.Since(start))
		require.Equal(t, []string{"v"}, fetchValues(t, node, "t", 0))
	})
}

// TestOnRetry: each retry of a batch is reported, with its partition,
// attempt and the error that caused it; a batch that then succeeds is
// reported no more.
func TestOnRetry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		node := openNode(t)
		createTopic(t, node, "t", 1, nil)
		client := &faultClient{Client: node.Client(), fail: func(call int) error {
			if call <= 2 {
				return fmt.Errorf("%w: disk full", kafka.ErrKafkaStorage)
			}
			return nil
		}}
		var mu sync.Mutex
		var retries []producer.Retry
		p := newProducer(t, client, producer.RetryBackoff(time.Second), producer.OnRetry(func(r producer.Retry) {
			mu.Lock()
			defer mu.Unlock()
			retries = append(retries, r)
		}))
		require.NoError(t, p.ProduceSync(context.Background(), &producer.Record{Topic: "t", Value: []byte("v")}).FirstErr())
		mu.Lock()
		defer mu.Unlock()
		require.Len(t, retries, 2)
		for i, r := range retries {
			require.Equal(t, "t", r.Topic)
			require.Zero(t, r.Partition)
			require.Equal(t, 1, r.Records)
			require.Equal(t, i+1, r.Attempt)
			require.ErrorIs(t, r.Err, kafka.ErrKafkaStorage)
		}
	})
}

func TestRetriesRunOut(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		node := openNode(t)
		createTopic(t, node, "t", 1, nil)
		client := &faultClient{Client: node.Client(), fail: func(int) error { return kafka.ErrNotEnoughReplicas }}
		p := newProducer(t, client, producer.Retries(2))
		err := p.ProduceSync(context.Background(), &producer.Record{Topic: "t"}).FirstErr()
		require.ErrorIs(t, err, kafka.ErrNotEnoughReplicas)
		require.NotErrorIs(t, err, producer.ErrDeliveryTimeout)
		produce, _ := client.counts()
		require.Equal(t, 3, produce, "one attempt and two retries")
	})
}

func TestDeliveryTimeoutEndsRetries(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		node := openNode(t)
		createTopic(t, node, "t", 1, nil)
		client := &faultClient{Client: node.Client(), fail: func(int) error { return kafka.ErrKafkaStorage }}
		p := newProducer(t, client, producer.DeliveryTimeout(10*time.Second), producer.RequestTimeout(time.Second),
			producer.RetryBackoff(time.Second))
		start := time.Now()
		err := p.ProduceSync(context.Background(), &producer.Record{Topic: "t"}).FirstErr()
		require.ErrorIs(t, err, producer.ErrDeliveryTimeout)
		require.ErrorIs(t, err, kafka.ErrKafkaStorage, "the last attempt's error is kept")
		require.True(t, producer.IsRetriable(err))
		require.LessOrEqual(t, time.Since(start), 10*time.Second)
		produce, _ := client.counts()
		require.Equal(t, 10, produce)
	})
}

func TestRequestTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		node := openNode(t)
		createTopic(t, node, "t", 1, nil)
		gate := make(chan struct{}) // never opened: every attempt times out
		client := &faultClient{Client: node.Client(), gate: gate}
		p := newProducer(t, client, producer.RequestTimeout(10*time.Second), producer.DeliveryTimeout(25*time.Second))
		start := time.Now()
		err := p.ProduceSync(context.Background(), &producer.Record{Topic: "t"}).FirstErr()
		require.ErrorIs(t, err, kafka.ErrRequestTimedOut)
		require.ErrorIs(t, err, producer.ErrDeliveryTimeout)
		require.ErrorIs(t, err, context.DeadlineExceeded)
		// Attempts end at 10s and 20s; the third is cut short by the
		// delivery timeout, 25s after the batch was created.
		require.Equal(t, 25*time.Second, time.Since(start))
		produce, _ := client.counts()
		require.Equal(t, 3, produce)
	})
}

func TestDeliveryTimeoutWhileQueued(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		node := openNode(t)
		createTopic(t, node, "t", 2, nil)
		// A client that holds requests past their context's end takes the
		// only request slot: the other partition's batch expires waiting.
		gate := make(chan struct{})
		client := &faultClient{Client: node.Client(), gate: gate, ignoreContext: true}
		p := newProducer(t, client, producer.Linger(0), producer.MaxInFlight(1),
			producer.RequestTimeout(30*time.Minute), producer.DeliveryTimeout(time.Hour))
		got := newPromises()
		produceTo := func(part int32, v string) {
			r := &producer.Record{Topic: "t", Value: []byte(v)}
			r.SetPartition(part)
			p.Produce(context.Background(), r, got.promise)
		}
		produceTo(0, "held")
		synctest.Wait()
		time.Sleep(time.Minute)
		produceTo(1, "queued")
		time.Sleep(time.Hour)
		synctest.Wait()
		res := got.all()
		require.Len(t, res, 1)
		require.Equal(t, "queued", res[0].value)
		require.ErrorIs(t, res[0].err, producer.ErrDeliveryTimeout)

		// The held request, answered at last, reports what happened.
		close(gate)
		synctest.Wait()
		res = got.all()
		require.Len(t, res, 2)
		require.Equal(t, "held", res[1].value)
		require.NoError(t, res[1].err)
		require.Equal(t, []string{"held"}, fetchValues(t, node, "t", 0))
		require.Empty(t, fetchValues(t, node, "t", 1))
	})
}

func TestNonRetriableError(t *testing.T) {
	node := openNode(t)
	createTopic(t, node, "t", 1, nil)
	client := &faultClient{Client: node.Client(), fail: func(int) error {
		return fmt.Errorf("%w: record 0 has a bad header", kafka.ErrInvalidRecord)
	}}
	p := newProducer(t, client)
	err := p.ProduceSync(context.Background(), &producer.Record{Topic: "t"}, &producer.Record{Topic: "t"}).FirstErr()
	require.ErrorIs(t, err, kafka.ErrInvalidRecord)
	require.False(t, producer.IsRetriable(err))
	produce, _ := client.counts()
	require.Equal(t, 1, produce, "not retried")
}

func TestNoAnswerError(t *testing.T) {
	node := openNode(t)
	createTopic(t, node, "t", 1, nil)
	// The node is closed: there is no answer, and nothing to retry.
	p := newProducer(t, node.Client())
	require.NoError(t, p.ProduceSync(context.Background(), &producer.Record{Topic: "t"}).FirstErr())
	require.NoError(t, node.Close())
	err := p.ProduceSync(context.Background(), &producer.Record{Topic: "t"}).FirstErr()
	require.ErrorIs(t, err, kafka.ErrClosed)
}

func TestMessageTooLargeForTopic(t *testing.T) {
	node := openNode(t)
	createTopic(t, node, "t", 1, map[string]string{"max.message.bytes": "2000"})
	p := newProducer(t, node.Client(), producer.Linger(time.Hour))

	// One record too large for the topic fails with the node's error.
	var err error
	p.Produce(context.Background(), &producer.Record{Topic: "t", Value: make([]byte, 3000)},
		func(_ *producer.Record, e error) { err = e })
	require.NoError(t, p.Flush(context.Background()))
	require.ErrorIs(t, err, kafka.ErrMessageTooLarge)

	// A batch too large for the topic is split until its parts fit, as
	// Kafka does, and keeps its order.
	got := newPromises()
	var want []string
	for i := range 60 {
		v := fmt.Sprintf("%03d-%s", i, bytes.Repeat([]byte("x"), 96))
		want = append(want, v)
		p.Produce(context.Background(), &producer.Record{Topic: "t", Value: []byte(v)}, got.promise)
	}
	require.NoError(t, p.Flush(context.Background()))
	for i, res := range got.all() {
		require.NoError(t, res.err)
		require.Equal(t, want[i], res.value)
		require.Equal(t, int64(i), res.offset)
	}
	require.Equal(t, want, fetchValues(t, node, "t", 0))
	for _, b := range fetchBatches(t, node, "t", 0) {
		require.LessOrEqual(t, b.BatchLength+record.LogOverhead, int32(2000))
	}
}

func TestAcks(t *testing.T) {
	for _, acks := range []kafka.Acks{kafka.AcksNone, kafka.AcksLeader, kafka.AcksAll} {
		t.Run(fmt.Sprint(acks), func(t *testing.T) {
			node := openNode(t)
			createTopic(t, node, "t", 1, nil)
			seen := make(chan kafka.Acks, 10)
			client := &acksClient{Client: node.Client(), seen: seen}
			p := newProducer(t, client, producer.Acks(acks))
			rs := []*producer.Record{{Topic: "t", Value: []byte("a")}, {Topic: "t", Value: []byte("b")}}
			require.NoError(t, p.ProduceSync(context.Background(), rs...).FirstErr())
			require.Equal(t, acks, <-seen)
			if acks == kafka.AcksNone {
				require.Equal(t, int64(-1), rs[0].Offset, "acks=0 learns no offset")
				require.Equal(t, int64(-1), rs[1].Offset)
			} else {
				require.Equal(t, int64(0), rs[0].Offset)
				require.Equal(t, int64(1), rs[1].Offset)
			}
			require.Equal(t, []string{"a", "b"}, fetchValues(t, node, "t", 0))
		})
	}
	t.Run("acks=0 does not see errors in the answer", func(t *testing.T) {
		node := openNode(t)
		createTopic(t, node, "t", 1, nil)
		client := &faultClient{Client: node.Client(), fail: func(int) error { return kafka.ErrInvalidRecord }}
		p := newProducer(t, client, producer.Acks(kafka.AcksNone))
		r := &producer.Record{Topic: "t"}
		require.NoError(t, p.ProduceSync(context.Background(), r).FirstErr())
		require.Equal(t, int64(-1), r.Offset)
	})
}

// acksClient reports the acks of each produce request.
type acksClient struct {
	transport.Client
	seen chan kafka.Acks
}

func (c *acksClient) Produce(ctx context.Context, req *transport.ProduceRequest) (*transport.ProduceResponse, error) {
	select {
	case c.seen <- req.Acks:
	default:
	}
	return c.Client.Produce(ctx, req)
}

func TestCompression(t *testing.T) {
	for _, codec := range []record.Compression{record.Gzip, record.Snappy, record.LZ4, record.Zstd} {
		t.Run(codec.String(), func(t *testing.T) {
			node := openNode(t)
			createTopic(t, node, "t", 1, nil)
			p := newProducer(t, node.Client(), producer.Compression(codec), producer.BatchSize(4096))
			var want []string
			var rs []*producer.Record
			for i := range 200 {
				v := fmt.Sprintf("record %d %s", i, bytes.Repeat([]byte("compressible "), 10))
				want = append(want, v)
				rs = append(rs, &producer.Record{Topic: "t", Key: []byte("k"), Value: []byte(v)})
			}
			require.NoError(t, p.ProduceSync(context.Background(), rs...).FirstErr())
			batches := fetchBatches(t, node, "t", 0)
			require.Greater(t, len(batches), 1)
			for _, b := range batches {
				require.Equal(t, codec, b.Attributes.Compression())
				require.Less(t, int(b.BatchLength), 4096/2, "compressed")
			}
			require.Equal(t, want, fetchValues(t, node, "t", 0))
		})
	}
}

func TestRequestsCarrySeveralPartitions(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		node := openNode(t)
		createTopic(t, node, "a", 3, nil)
		createTopic(t, node, "b", 2, nil)
		client := &faultClient{Client: node.Client()}
		p := newProducer(t, client, producer.Linger(time.Second))
		var rs []*producer.Record
		for i := range 20 {
			rs = append(rs, &producer.Record{Topic: []string{"a", "b"}[i%2], Value: []byte{byte(i)}})
		}
		require.NoError(t, p.ProduceSync(context.Background(), rs...).FirstErr())
		produce, _ := client.counts()
		require.Equal(t, 1, produce, "every partition's batch in one request")
		require.Equal(t, 5, client.partitions)
	})
}

func TestMaxInFlight(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		node := openNode(t)
		createTopic(t, node, "t", 6, nil)
		gate := make(chan struct{})
		counting := &inFlightClient{faultClient: faultClient{Client: node.Client(), gate: gate}}
		// One partition per request, so that six ready partitions need
		// six requests.
		p := newProducer(t, counting, producer.MaxInFlight(2), producer.Linger(0), producer.MaxRequestSize(200))
		for part := range int32(6) {
			r := &producer.Record{Topic: "t", Value: make([]byte, 100)}
			r.SetPartition(part)
			p.Produce(context.Background(), r, nil)
		}
		synctest.Wait()
		require.Equal(t, int32(2), counting.now.Load())
		close(gate)
		require.NoError(t, p.Flush(context.Background()))
		require.Equal(t, int32(2), counting.most.Load())
		produce, _ := counting.counts()
		require.Equal(t, 6, produce)
	})
}

// inFlightClient counts the produce calls under way.
type inFlightClient struct {
	faultClient
	now, most atomic.Int32
}

func (c *inFlightClient) Produce(ctx context.Context, req *transport.ProduceRequest) (*transport.ProduceResponse, error) {
	n := c.now.Add(1)
	for m := c.most.Load(); n > m && !c.most.CompareAndSwap(m, n); m = c.most.Load() {
	}
	defer c.now.Add(-1)
	return c.faultClient.Produce(ctx, req)
}

// TestRetryKeepsOrder fails some attempts of one partition at random while
// records stream in: the partition still gets them in order, each once.
func TestRetryKeepsOrder(t *testing.T) {
	node := openNode(t)
	createTopic(t, node, "t", 2, nil)
	var mu sync.Mutex
	client := &faultClient{Client: node.Client(), fail: func(call int) error {
		mu.Lock()
		defer mu.Unlock()
		if call%3 == 0 {
			return kafka.ErrNotLeaderOrFollower
		}
		return nil
	}}
	p := newProducer(t, client, producer.RetryBackoff(time.Millisecond), producer.Linger(0), producer.BatchSize(256))
	got := newPromises()
	var want [2][]string
	for i := range 500 {
		part := int32(i % 2)
		v := fmt.Sprintf("%04d", i)
		want[part] = append(want[part], v)
		r := &producer.Record{Topic: "t", Value: []byte(v)}
		r.SetPartition(part)
		p.Produce(context.Background(), r, got.promise)
	}
	require.NoError(t, p.Flush(context.Background()))
	for part := range int32(2) {
		require.Equal(t, want[part], fetchValues(t, node, "t", part))
	}
	for _, res := range got.all() {
		require.NoError(t, res.err)
	}
}

// TestRetryAfterAppend has the node append a batch, then answers with a
// retriable error, as a leader does when too few replicas acknowledged it
// in time: the retry is a valid batch again — the node rewrote the first
// attempt's header in place — and, without idempotence, a duplicate.
func TestRetryAfterAppend(t *testing.T) {
	node := openNode(t)
	createTopic(t, node, "t", 1, map[string]string{"message.timestamp.type": "LogAppendTime"})
	var calls atomic.Int32
	client := &appendThenFail{Client: node.Client(), calls: &calls}
	p := newProducer(t, client, producer.RetryBackoff(time.Millisecond))
	r := &producer.Record{Topic: "t", Value: []byte("v")}
	require.NoError(t, p.ProduceSync(context.Background(), r).FirstErr())
	require.Equal(t, int64(1), r.Offset, "the second copy")
	require.Equal(t, []string{"v", "v"}, fetchValues(t, node, "t", 0))
	require.Equal(t, int32(2), calls.Load())
}

type appendThenFail struct {
	transport.Client
	calls *atomic.Int32
}

func (c *appendThenFail) Produce(ctx context.Context, req *transport.ProduceRequest) (*transport.ProduceResponse, error) {
	resp, err := c.Client.Produce(ctx, req)
	if c.calls.Add(1) == 1 && err == nil {
		resp.Topics[0].Partitions[0].Err = kafka.ErrNotEnoughReplicasAfter
	}
	return resp, err
}

// TestNoAnswerRetried has the client return errors instead of answers: a
// retriable Kafka error is retried; anything else fails the records.
func TestNoAnswerRetried(t *testing.T) {
	node := openNode(t)
	createTopic(t, node, "t", 1, nil)
	client := &faultClient{Client: node.Client(), failCall: func(call int) error {
		if call == 1 {
			return fmt.Errorf("connection lost: %w", kafka.ErrRequestTimedOut)
		}
		return nil
	}}
	p := newProducer(t, client, producer.RetryBackoff(time.Millisecond))
	r := &producer.Record{Topic: "t", Value: []byte("v")}
	require.NoError(t, p.ProduceSync(context.Background(), r).FirstErr())
	require.Equal(t, int64(0), r.Offset)

	broken := errors.New("broken pipe")
	client.failCall = func(int) error { return broken }
	err := p.ProduceSync(context.Background(), &producer.Record{Topic: "t"}).FirstErr()
	require.ErrorIs(t, err, broken)
}
