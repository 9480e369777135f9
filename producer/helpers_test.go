package producer_test

import (
	"context"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/partlog/partlog"
	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/producer"
	"github.com/partlog/partlog/record"
	"github.com/partlog/partlog/transport"
	"github.com/partlog/partlog/vfs"
)

// openNode opens a node on an in-memory filesystem and closes it when the
// test ends.
func openNode(t testing.TB) *partlog.Node {
	t.Helper()
	// Small preallocated indexes keep the in-memory filesystem light.
	defaults := partlog.TopicDefaults(map[string]string{"segment.index.bytes": "65536"})
	n, err := partlog.Open("/data", partlog.Filesystem(vfs.NewMem()), defaults)
	require.NoError(t, err)
	t.Cleanup(func() { n.Close() })
	return n
}

// createTopic creates a topic of n partitions with the given configs.
func createTopic(t testing.TB, node *partlog.Node, name string, partitions int32, configs map[string]string) {
	t.Helper()
	require.NoError(t, node.CreateTopic(context.Background(), partlog.NewTopic{Name: name, Partitions: partitions, Configs: configs}))
}

// newProducer returns a producer that the test closes when it ends.
func newProducer(t testing.TB, client transport.Client, opts ...producer.Option) *producer.Producer {
	t.Helper()
	p, err := producer.New(client, opts...)
	require.NoError(t, err)
	t.Cleanup(func() { p.Close() })
	return p
}

// fetched is a batch read back from a node.
type fetched struct {
	record.Header
	Records []record.Record
}

// fetchBatches reads a partition's batches from offset 0 to its high
// watermark.
func fetchBatches(t testing.TB, node *partlog.Node, topic string, partition int32) []fetched {
	t.Helper()
	var out []fetched
	for offset := int64(0); ; {
		resp, err := node.Client().Fetch(context.Background(), &transport.FetchRequest{
			ReplicaID: kafka.ConsumerReplicaID, MaxBytes: 1 << 20,
			Topics: []transport.FetchTopic{{Topic: topic, Partitions: []transport.FetchPartition{{
				Partition: partition, FetchOffset: offset, MaxBytes: 1 << 20, CurrentLeaderEpoch: -1, LastFetchedEpoch: -1,
			}}}},
		})
		require.NoError(t, err)
		pr := resp.Topics[0].Partitions[0]
		require.NoError(t, pr.Err)
		data := pr.Records
		if len(data) == 0 {
			return out
		}
		for len(data) > 0 {
			h, err := record.ParseHeader(data)
			require.NoError(t, err)
			b, err := record.Decode(data[:h.Size()])
			require.NoError(t, err)
			if h.BaseOffset >= offset {
				out = append(out, fetched{b.Header, b.Records})
			}
			offset = h.BaseOffset + int64(h.LastOffsetDelta) + 1
			data = data[h.Size():]
		}
		if offset >= pr.HighWatermark {
			return out
		}
	}
}

// fetchValues returns a partition's record values in offset order, and
// checks that the offsets run from 0 without a gap.
func fetchValues(t testing.TB, node *partlog.Node, topic string, partition int32) []string {
	t.Helper()
	var values []string
	for _, b := range fetchBatches(t, node, topic, partition) {
		for _, r := range b.Records {
			require.Equal(t, int64(len(values)), r.Offset, "offsets of %s-%d", topic, partition)
			values = append(values, string(r.Value))
		}
	}
	return values
}

// faultClient passes requests to a real client, except that it can fail
// produce calls, or hold them until released.
type faultClient struct {
	transport.Client

	mu sync.Mutex
	// fail, when set, is asked about each produce call (numbered from 1):
	// a non-nil error answers every partition of the call with it.
	fail func(call int) error
	// failCall, when set, is asked about each produce call: a non-nil
	// error is returned as the call's error, with no answer.
	failCall func(call int) error
	// gate, when not nil, holds every produce call until it is closed or
	// the call's context ends.
	gate chan struct{}
	// ignoreContext makes the gate hold calls past their context's end.
	ignoreContext bool
	produceCalls  int
	metadataCalls int
	partitions    int // partitions sent, over all calls
}

func (c *faultClient) Metadata(ctx context.Context, req *transport.MetadataRequest) (*transport.MetadataResponse, error) {
	c.mu.Lock()
	c.metadataCalls++
	c.mu.Unlock()
	return c.Client.Metadata(ctx, req)
}

func (c *faultClient) Produce(ctx context.Context, req *transport.ProduceRequest) (*transport.ProduceResponse, error) {
	c.mu.Lock()
	c.produceCalls++
	call, fail, failCall, gate, ignore := c.produceCalls, c.fail, c.failCall, c.gate, c.ignoreContext
	for _, t := range req.Topics {
		c.partitions += len(t.Partitions)
	}
	c.mu.Unlock()
	if gate != nil && ignore {
		<-gate
	} else if gate != nil {
		select {
		case <-gate:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if failCall != nil {
		if err := failCall(call); err != nil {
			return nil, err
		}
	}
	if fail != nil {
		if err := fail(call); err != nil {
			resp := &transport.ProduceResponse{}
			for _, t := range req.Topics {
				tr := transport.ProduceTopicResponse{Topic: t.Topic}
				for _, p := range t.Partitions {
					tr.Partitions = append(tr.Partitions, transport.ProducePartitionResponse{
						Partition: p.Partition, Err: err, BaseOffset: -1, LogAppendTime: -1, LogStartOffset: -1})
				}
				resp.Topics = append(resp.Topics, tr)
			}
			return resp, nil
		}
	}
	return c.Client.Produce(ctx, req)
}

func (c *faultClient) counts() (produce, metadata int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.produceCalls, c.metadataCalls
}

// promises collects what the promises of produced records report.
type promises struct {
	mu      sync.Mutex
	results []result
	byValue map[string]result
}

type result struct {
	value     string
	partition int32
	offset    int64
	err       error
}

func newPromises() *promises { return &promises{byValue: map[string]result{}} }

func (ps *promises) promise(r *producer.Record, err error) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	res := result{string(r.Value), r.Partition, r.Offset, err}
	ps.results = append(ps.results, res)
	ps.byValue[res.value] = res
}

func (ps *promises) len() int {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	return len(ps.results)
}

func (ps *promises) all() []result {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	return append([]result(nil), ps.results...)
}

// closed reports whether ch is closed.
func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}
