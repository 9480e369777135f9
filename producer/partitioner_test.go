package producer_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/cespare/xxhash/v2"
	"github.com/stretchr/testify/require"

	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/producer"
	"github.com/partlog/partlog/transport"
)

func TestExplicitPartition(t *testing.T) {
	node := openNode(t)
	createTopic(t, node, "t", 4, nil)
	p := newProducer(t, node.Client())

	r := &producer.Record{Topic: "t", Key: []byte("k"), Value: []byte("v")}
	r.SetPartition(3)
	require.NoError(t, p.ProduceSync(context.Background(), r).FirstErr())
	require.Equal(t, int32(3), r.Partition)
	require.Equal(t, int64(0), r.Offset)
	require.Equal(t, []string{"v"}, fetchValues(t, node, "t", 3))

	// The zero Record has no explicit partition: Partition is an output.
	zero := &producer.Record{Topic: "t", Partition: 2, Key: []byte("k")}
	require.NoError(t, p.ProduceSync(context.Background(), zero).FirstErr())
	require.Equal(t, int32(xxhash.Sum64([]byte("k"))%4), zero.Partition)

	for _, bad := range []int32{4, -1} {
		r := &producer.Record{Topic: "t", Value: []byte("v")}
		r.SetPartition(bad)
		err := p.ProduceSync(context.Background(), r).FirstErr()
		require.ErrorIs(t, err, kafka.ErrUnknownTopicOrPartition)
		require.Equal(t, int64(-1), r.Offset)
	}
}

func TestKeyHashPlacement(t *testing.T) {
	node := openNode(t)
	createTopic(t, node, "t", 5, nil)
	p := newProducer(t, node.Client())

	var rs []*producer.Record
	for i := range 100 {
		key := fmt.Appendf(nil, "key-%d", i%10)
		rs = append(rs, &producer.Record{Topic: "t", Key: key, Value: fmt.Appendf(nil, "v%d", i)})
	}
	require.NoError(t, p.ProduceSync(context.Background(), rs...).FirstErr())
	where := map[string]int32{}
	for _, r := range rs {
		want := int32(xxhash.Sum64(r.Key) % 5)
		require.Equal(t, want, r.Partition, "key %s", r.Key)
		if p, ok := where[string(r.Key)]; ok {
			require.Equal(t, p, r.Partition)
		}
		where[string(r.Key)] = r.Partition
	}
	// An empty key is a key: it is hashed, not sent round-robin.
	var empty []int32
	for range 5 {
		r := &producer.Record{Topic: "t", Key: []byte{}}
		require.NoError(t, p.ProduceSync(context.Background(), r).FirstErr())
		empty = append(empty, r.Partition)
	}
	require.Equal(t, []int32{empty[0], empty[0], empty[0], empty[0], empty[0]}, empty)
	require.Equal(t, int32(xxhash.Sum64(nil)%5), empty[0])
}

func TestRoundRobinPlacement(t *testing.T) {
	const n = 4
	starts := map[int32]bool{}
	for range 20 {
		node := openNode(t)
		createTopic(t, node, "t", n, nil)
		p := newProducer(t, node.Client())
		var rs []*producer.Record
		for i := range 3 * n {
			rs = append(rs, &producer.Record{Topic: "t", Value: fmt.Appendf(nil, "v%d", i)})
		}
		require.NoError(t, p.ProduceSync(context.Background(), rs...).FirstErr())
		seen := map[int32]int{}
		for i, r := range rs {
			require.Equal(t, (rs[0].Partition+int32(i))%n, r.Partition, "record %d", i)
			seen[r.Partition]++
		}
		require.Len(t, seen, n)
		for part, count := range seen {
			require.Equal(t, 3, count, "partition %d", part)
		}
		starts[rs[0].Partition] = true
		require.NoError(t, p.Close())
		require.NoError(t, node.Close())
	}
	// The start is random: twenty producers do not all start at one place
	// (the chance that they do is 4^-19).
	require.Greater(t, len(starts), 1)
}

func TestRoundRobinPerTopic(t *testing.T) {
	rr := producer.RoundRobinPartitioner()
	a, b := rr.ForTopic("a"), rr.ForTopic("b")
	r := &producer.Record{}
	first := a.Partition(r, 1000)
	for i := 1; i < 10; i++ {
		b.Partition(r, 1000) // another topic's records do not move a's counter
		require.Equal(t, (first+i)%1000, a.Partition(r, 1000))
	}
}

func TestCustomPartitioner(t *testing.T) {
	node := openNode(t)
	createTopic(t, node, "t", 3, nil)
	last := producer.PartitionerFunc(func(r *producer.Record, partitions int) int {
		if string(r.Key) == "hash" {
			return producer.KeyHashPartitioner()(r, partitions)
		}
		return partitions - 1
	})
	p := newProducer(t, node.Client(), producer.RecordPartitioner(last))

	a := &producer.Record{Topic: "t", Value: []byte("a")}
	b := &producer.Record{Topic: "t", Key: []byte("hash"), Value: []byte("b")}
	c := &producer.Record{Topic: "t", Value: []byte("c")}
	c.SetPartition(0) // an explicit partition wins over the partitioner
	require.NoError(t, p.ProduceSync(context.Background(), a, b, c).FirstErr())
	require.Equal(t, int32(2), a.Partition)
	require.Equal(t, int32(xxhash.Sum64([]byte("hash"))%3), b.Partition)
	require.Equal(t, int32(0), c.Partition)

	bad := newProducer(t, node.Client(), producer.RecordPartitioner(producer.PartitionerFunc(func(*producer.Record, int) int { return 7 })))
	err := bad.ProduceSync(context.Background(), &producer.Record{Topic: "t"}).FirstErr()
	require.ErrorIs(t, err, kafka.ErrUnknownTopicOrPartition)
}

func TestUnknownTopic(t *testing.T) {
	t.Run("MaxBlock 0 fails at once", func(t *testing.T) {
		node := openNode(t)
		p := newProducer(t, node.Client(), producer.MaxBlock(0))
		err := p.ProduceSync(context.Background(), &producer.Record{Topic: "nope"}).FirstErr()
		require.ErrorIs(t, err, kafka.ErrUnknownTopicOrPartition)
		require.ErrorContains(t, err, `topic "nope" not present in metadata`)
	})
	t.Run("no topic", func(t *testing.T) {
		node := openNode(t)
		p := newProducer(t, node.Client())
		err := p.ProduceSync(context.Background(), &producer.Record{Value: []byte("v")}).FirstErr()
		require.ErrorIs(t, err, kafka.ErrInvalidTopic)
	})
	t.Run("fails after MaxBlock", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			node := openNode(t)
			p := newProducer(t, node.Client(), producer.MaxBlock(2*time.Second))
			start := time.Now()
			err := p.ProduceSync(context.Background(), &producer.Record{Topic: "nope"}).FirstErr()
			require.ErrorIs(t, err, kafka.ErrUnknownTopicOrPartition)
			require.Equal(t, 2*time.Second, time.Since(start))
		})
	})
	t.Run("context ends the wait", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			node := openNode(t)
			p := newProducer(t, node.Client())
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			err := p.ProduceSync(ctx, &producer.Record{Topic: "nope"}).FirstErr()
			require.ErrorIs(t, err, context.DeadlineExceeded)
		})
	})
	t.Run("topic created during the wait", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			node := openNode(t)
			client := &faultClient{Client: node.Client()}
			p := newProducer(t, client)
			done := make(chan producer.Results)
			r := &producer.Record{Topic: "late", Value: []byte("v")}
			go func() { done <- p.ProduceSync(context.Background(), r) }()
			time.Sleep(time.Second)
			createTopic(t, node, "late", 1, nil)
			res := <-done
			require.NoError(t, res.FirstErr())
			require.Equal(t, int64(0), r.Offset)
			_, metadata := client.counts()
			require.Greater(t, metadata, 5, "metadata is asked again every RetryBackoff")
		})
	})
}

func TestPartitionsAddedAreSeen(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// A node of 2 partitions at first, 4 after a minute: the producer
		// refreshes its metadata every MetadataMaxAge.
		node := openNode(t)
		createTopic(t, node, "t", 2, nil)
		grown := &growingClient{Client: node.Client(), to: 4}
		p := newProducer(t, grown, producer.MetadataMaxAge(time.Minute), producer.Retries(0), producer.RecordPartitioner(
			producer.PartitionerFunc(func(_ *producer.Record, n int) int { return n - 1 })))
		r := &producer.Record{Topic: "t"}
		require.NoError(t, p.ProduceSync(context.Background(), r).FirstErr())
		require.Equal(t, int32(1), r.Partition)

		grown.grow()
		time.Sleep(time.Minute + time.Second)
		synctest.Wait()
		r = &producer.Record{Topic: "t"}
		p.ProduceSync(context.Background(), r) // partitions 2 and 3 do not exist on the node
		require.Equal(t, int32(3), r.Partition)
	})
}

// growingClient reports more partitions of every topic than the node has,
// once grown.
type growingClient struct {
	transport.Client
	to   int
	grew atomic.Bool
}

func (c *growingClient) grow() { c.grew.Store(true) }

func (c *growingClient) Metadata(ctx context.Context, req *transport.MetadataRequest) (*transport.MetadataResponse, error) {
	resp, err := c.Client.Metadata(ctx, req)
	if err != nil || !c.grew.Load() {
		return resp, err
	}
	for i := range resp.Topics {
		tm := &resp.Topics[i]
		for p := len(tm.Partitions); p < c.to; p++ {
			tm.Partitions = append(tm.Partitions, transport.PartitionMetadata{Partition: int32(p), Leader: 1})
		}
	}
	return resp, nil
}
