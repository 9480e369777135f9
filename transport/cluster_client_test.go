package transport

import (
	"bytes"
	"context"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/partlog/partlog/kafka"
	"github.com/stretchr/testify/require"
)

// leaderFake is a fake node that names the cluster's nodes and leaders in
// Metadata and counts the produce batches it gets per partition.
type leaderFake struct {
	fakeNode
	id      int32
	addrs   map[int32]string
	leaders []int32 // of topic "t"
}

func (f *leaderFake) Metadata(ctx context.Context, req *MetadataRequest) (*MetadataResponse, error) {
	resp := &MetadataResponse{ClusterID: "c"}
	for id := int32(1); id <= int32(len(f.addrs)); id++ {
		host, port, err := net.SplitHostPort(f.addrs[id])
		if err != nil {
			return nil, err
		}
		p, err := strconv.Atoi(port)
		if err != nil {
			return nil, err
		}
		resp.Brokers = append(resp.Brokers, Broker{NodeID: id, Host: host, Port: int32(p)})
	}
	tm := TopicMetadata{Topic: "t"}
	for p, l := range f.leaders {
		tm.Partitions = append(tm.Partitions, PartitionMetadata{Partition: int32(p), Leader: l})
	}
	resp.Topics = []TopicMetadata{tm}
	return resp, nil
}

func TestClusterClientSplitsByLeader(t *testing.T) {
	addrs := map[int32]string{}
	leaders := []int32{1, 2, 1, -1} // partition 3 has no leader
	var fakes []*leaderFake
	var servers []*Server
	for id := int32(1); id <= 2; id++ {
		f := &leaderFake{id: id, addrs: addrs, leaders: leaders}
		s, addr := serve(t, f, ServerOptions{})
		addrs[id] = addr
		fakes, servers = append(fakes, f), append(servers, s)
	}
	ctx := context.Background()
	c, err := DialCluster(ctx, []string{"127.0.0.1:1", addrs[1]}, DialOptions{})
	require.NoError(t, err, "an unreachable bootstrap address is skipped")
	defer c.Close()

	req := &ProduceRequest{Acks: kafka.AcksAll, Topics: []ProduceTopic{{Topic: "t", Partitions: []ProducePartition{
		{Partition: 0, Records: []byte("a")}, {Partition: 1, Records: []byte("bb")}, {Partition: 2, Records: []byte("ccc")}, {Partition: 3, Records: []byte("d")},
	}}}}
	resp, err := c.Produce(ctx, req)
	require.NoError(t, err)
	parts := resp.Topics[0].Partitions
	require.Len(t, parts, 4)
	for i, want := range []int64{1, 2, 3} {
		require.NoError(t, parts[i].Err)
		require.Equal(t, want, parts[i].BaseOffset, "the fake answers a batch's length")
	}
	require.ErrorIs(t, parts[3].Err, kafka.ErrLeaderNotAvailable)
	require.True(t, kafka.IsRetriable(parts[3].Err))
	got := func(f *leaderFake) []int32 {
		f.mu.Lock()
		defer f.mu.Unlock()
		var ps []int32
		for _, r := range f.produces {
			for _, p := range r.Topics[0].Partitions {
				ps = append(ps, p.Partition)
			}
		}
		return ps
	}
	require.ElementsMatch(t, []int32{0, 2}, got(fakes[0]))
	require.Equal(t, []int32{1}, got(fakes[1]))

	// Node 2 goes away: its partition fails, retriably; the others go on.
	servers[1].Close()
	resp, err = c.Produce(ctx, &ProduceRequest{Acks: kafka.AcksAll, Topics: []ProduceTopic{{Topic: "t", Partitions: []ProducePartition{
		{Partition: 0, Records: []byte("a")}, {Partition: 1, Records: []byte("b")},
	}}}})
	require.NoError(t, err)
	require.NoError(t, resp.Topics[0].Partitions[0].Err)
	require.ErrorIs(t, resp.Topics[0].Partitions[1].Err, kafka.ErrNetwork)
	require.True(t, kafka.IsRetriable(resp.Topics[0].Partitions[1].Err))
}

// bufferFiller is a node whose Fetch reads, as a Node does, into the
// request's Buffer: it fills all of Buffer's capacity with its own byte,
// and answers once every node has filled its part.
type bufferFiller struct {
	NodeClient // nil: only the methods below are called
	meta       *leaderFake
	id         int32
	all        *sync.WaitGroup
}

func (f *bufferFiller) Close() error { return nil }

func (f *bufferFiller) Metadata(ctx context.Context, req *MetadataRequest) (*MetadataResponse, error) {
	return f.meta.Metadata(ctx, req)
}

func (f *bufferFiller) Fetch(ctx context.Context, req *FetchRequest) (*FetchResponse, error) {
	recs := req.Buffer[:cap(req.Buffer)]
	for i := range recs {
		recs[i] = byte('A' + f.id - 1)
	}
	f.all.Done()
	f.all.Wait()
	resp := &FetchResponse{}
	for _, t := range req.Topics {
		tr := FetchTopicResponse{Topic: t.Topic}
		for _, p := range t.Partitions {
			tr.Partitions = append(tr.Partitions, FetchPartitionResponse{Partition: p.Partition, Records: recs})
		}
		resp.Topics = append(resp.Topics, tr)
	}
	return resp, nil
}

// TestClusterClientFetchSplitsBuffer: the leaders of a fetch read at
// once, so each gets a disjoint part of the request's Buffer. Given the
// same Buffer, the last leader to write would have handed its records to
// the other's partitions too.
func TestClusterClientFetchSplitsBuffer(t *testing.T) {
	addrs := map[int32]string{1: "n1:1", 2: "n2:2"}
	var all sync.WaitGroup
	all.Add(2)
	nodes := map[string]*bufferFiller{}
	for id := int32(1); id <= 2; id++ {
		nodes[addrs[id]] = &bufferFiller{meta: &leaderFake{addrs: addrs, leaders: []int32{1, 2}}, id: id, all: &all}
	}
	c, err := NewClusterClient(context.Background(), []string{addrs[1]}, func(ctx context.Context, addr string) (NodeClient, error) {
		return nodes[addr], nil
	})
	require.NoError(t, err)
	buf := make([]byte, 0, 4096)
	resp, err := c.Fetch(context.Background(), &FetchRequest{Buffer: buf,
		Topics: []FetchTopic{{Topic: "t", Partitions: []FetchPartition{{Partition: 0}, {Partition: 1}}}}})
	require.NoError(t, err)
	for p, want := range []byte{'A', 'B'} {
		recs := resp.Topics[0].Partitions[p].Records
		require.NotEmpty(t, recs)
		require.Equal(t, bytes.Repeat([]byte{want}, len(recs)), recs, "partition %d holds only its leader's bytes", p)
	}
}

// offsetsFake is a node in the process that leads partitions of topics
// "a" and "b" as leaders says. It answers ListOffsets with offset
// 100*id+partition, refuses partition 2 of "a" as a former leader would,
// and leaves partition 1 of "a" out of its answer.
type offsetsFake struct {
	NodeClient // nil: only the methods below are called
	id         int32
	addrs      map[int32]string
	leaders    map[string][]int32
	metas      *atomic.Int32
}

func (f *offsetsFake) Close() error { return nil }

func (f *offsetsFake) Metadata(ctx context.Context, req *MetadataRequest) (*MetadataResponse, error) {
	f.metas.Add(1)
	resp := &MetadataResponse{}
	for id, addr := range f.addrs {
		host, port, _ := net.SplitHostPort(addr)
		p, _ := strconv.Atoi(port)
		resp.Brokers = append(resp.Brokers, Broker{NodeID: id, Host: host, Port: int32(p)})
	}
	for _, topic := range []string{"a", "b"} {
		tm := TopicMetadata{Topic: topic}
		for p, l := range f.leaders[topic] {
			tm.Partitions = append(tm.Partitions, PartitionMetadata{Partition: int32(p), Leader: l})
		}
		resp.Topics = append(resp.Topics, tm)
	}
	return resp, nil
}

func (f *offsetsFake) ListOffsets(ctx context.Context, req *ListOffsetsRequest) (*ListOffsetsResponse, error) {
	resp := &ListOffsetsResponse{}
	for _, t := range req.Topics {
		tr := ListOffsetsTopicResponse{Topic: t.Topic}
		for _, p := range t.Partitions {
			pr := ListOffsetsPartitionResponse{Partition: p.Partition, Timestamp: -1, Offset: int64(100*f.id + p.Partition), LeaderEpoch: 1}
			switch {
			case t.Topic == "a" && p.Partition == 1:
				continue
			case t.Topic == "a" && p.Partition == 2:
				pr = ListOffsetsPartitionResponse{Partition: p.Partition, Err: kafka.ErrNotLeaderOrFollower, Timestamp: -1, Offset: -1, LeaderEpoch: -1}
			}
			tr.Partitions = append(tr.Partitions, pr)
		}
		resp.Topics = append(resp.Topics, tr)
	}
	return resp, nil
}

// TestClusterClientAnswersInRequestOrder: the answer of a request split
// among leaders holds every partition asked for, in the request's order
// across topics and leaders; a partition without a leader, or that its
// leader left out, fails retriably; and an answer that says a node no
// longer leads makes the next request learn the leaders again.
func TestClusterClientAnswersInRequestOrder(t *testing.T) {
	addrs := map[int32]string{1: "n1:1", 2: "n2:2"}
	leaders := map[string][]int32{"a": {1, 2, 1}, "b": {2, -1}}
	var metas atomic.Int32
	nodes := map[string]*offsetsFake{}
	for id, addr := range addrs {
		nodes[addr] = &offsetsFake{id: id, addrs: addrs, leaders: leaders, metas: &metas}
	}
	ctx := context.Background()
	c, err := NewClusterClient(ctx, []string{addrs[1]}, func(ctx context.Context, addr string) (NodeClient, error) {
		return nodes[addr], nil
	})
	require.NoError(t, err)
	defer c.Close()
	req := &ListOffsetsRequest{Topics: []ListOffsetsTopic{
		{Topic: "b", Partitions: []ListOffsetsPartition{{Partition: 1}, {Partition: 0}}},
		{Topic: "a", Partitions: []ListOffsetsPartition{{Partition: 2}, {Partition: 0}, {Partition: 1}}},
	}}
	resp, err := c.ListOffsets(ctx, req)
	require.NoError(t, err)
	require.Len(t, resp.Topics, 2)
	require.Equal(t, "b", resp.Topics[0].Topic)
	require.Equal(t, "a", resp.Topics[1].Topic)
	b, a := resp.Topics[0].Partitions, resp.Topics[1].Partitions
	require.Len(t, b, 2)
	require.Len(t, a, 3)

	require.Equal(t, int32(1), b[0].Partition)
	require.ErrorIs(t, b[0].Err, kafka.ErrLeaderNotAvailable)
	require.Equal(t, ListOffsetsPartitionResponse{Partition: 0, Timestamp: -1, Offset: 200, LeaderEpoch: 1}, b[1])

	require.Equal(t, int32(2), a[0].Partition)
	require.ErrorIs(t, a[0].Err, kafka.ErrNotLeaderOrFollower)
	require.Equal(t, ListOffsetsPartitionResponse{Partition: 0, Timestamp: -1, Offset: 100, LeaderEpoch: 1}, a[1])
	require.Equal(t, int32(1), a[2].Partition)
	require.ErrorIs(t, a[2].Err, kafka.ErrNetwork, "the leader left it out")
	require.Equal(t, []int64{-1, -1, -1}, []int64{a[2].Offset, a[2].Timestamp, int64(a[2].LeaderEpoch)})
	for _, p := range []ListOffsetsPartitionResponse{b[0], a[0], a[2]} {
		require.True(t, kafka.IsRetriable(p.Err), "%d: %v", p.Partition, p.Err)
	}

	before := metas.Load()
	_, err = c.ListOffsets(ctx, req)
	require.NoError(t, err)
	require.Equal(t, before+1, metas.Load(), "NOT_LEADER_OR_FOLLOWER makes the next request learn the leaders")
}

// slowProducer is a node in the process whose Produce, as a Node's
// does, writes to the request's batches in place; it waits for release
// first, even once ctx has ended.
type slowProducer struct {
	NodeClient       // nil: only the methods below are called
	meta             *leaderFake
	arrived, release chan struct{}
	done             atomic.Bool
}

func (f *slowProducer) Close() error { return nil }

func (f *slowProducer) Metadata(ctx context.Context, req *MetadataRequest) (*MetadataResponse, error) {
	return f.meta.Metadata(ctx, req)
}

func (f *slowProducer) Produce(ctx context.Context, req *ProduceRequest) (*ProduceResponse, error) {
	if f.release != nil {
		f.arrived <- struct{}{}
		<-f.release
	}
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			p.Records[0] = 'x'
		}
	}
	f.done.Store(true)
	return f.meta.Produce(ctx, req)
}

// TestClusterClientProduceLendsBatchesUntilReturn: Produce returns, even
// when ctx ends, only once every leader is done with its batches, so that
// the caller may reuse them as ProduceRequest's doc says.
func TestClusterClientProduceLendsBatchesUntilReturn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		addrs := map[int32]string{1: "n1:1", 2: "n2:2"}
		nodes := map[string]*slowProducer{}
		for id := int32(1); id <= 2; id++ {
			nodes[addrs[id]] = &slowProducer{meta: &leaderFake{id: id, addrs: addrs, leaders: []int32{1, 2}}}
		}
		slow := nodes[addrs[2]]
		slow.arrived, slow.release = make(chan struct{}), make(chan struct{})
		c, err := NewClusterClient(context.Background(), []string{addrs[1]}, func(ctx context.Context, addr string) (NodeClient, error) {
			return nodes[addr], nil
		})
		require.NoError(t, err)
		defer c.Close()
		ctx, cancel := context.WithCancel(context.Background())
		errc := make(chan error, 1)
		go func() {
			_, err := c.Produce(ctx, &ProduceRequest{Acks: kafka.AcksAll, Topics: []ProduceTopic{{Topic: "t", Partitions: []ProducePartition{
				{Partition: 0, Records: []byte("a")}, {Partition: 1, Records: []byte("b")},
			}}}})
			errc <- err
		}()
		<-slow.arrived
		cancel()
		synctest.Wait()
		select {
		case <-errc:
			close(slow.release)
			t.Fatal("Produce returned while a leader still held a batch")
		default:
		}
		close(slow.release)
		require.ErrorIs(t, <-errc, context.Canceled)
		require.True(t, slow.done.Load())
	})
}

// silentNode is a leaderFake that, once cut off, answers nothing: every
// call waits for its context, as a node behind a pulled cable does.
type silentNode struct {
	NodeClient // nil: only the methods below are called
	fake       *leaderFake
	cut        *atomic.Bool
}

func (f *silentNode) Close() error { return nil }

func (f *silentNode) Metadata(ctx context.Context, req *MetadataRequest) (*MetadataResponse, error) {
	if f.cut.Load() {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return f.fake.Metadata(ctx, req)
}

func (f *silentNode) Produce(ctx context.Context, req *ProduceRequest) (*ProduceResponse, error) {
	if f.cut.Load() {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return f.fake.Produce(ctx, req)
}

// TestClusterClientLeavesASilentLeader: a leader cut off from the network
// answers nothing; the produce that timed out on it makes the client learn
// the leaders again — from another node, as the silent one is asked last —
// so that the next produce reaches the new leader. Kafka's clients do the
// same after request.timeout.ms. Before, a timeout did not mark the view
// stale, and every produce went on to the silent node.
func TestClusterClientLeavesASilentLeader(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		addrs := map[int32]string{1: "n1:1", 2: "n2:2", 3: "n3:3"}
		leaders := []int32{1}
		cut := &atomic.Bool{}
		nodes := map[string]NodeClient{}
		for id := int32(1); id <= 3; id++ {
			f := &leaderFake{id: id, addrs: addrs, leaders: leaders}
			if id == 1 {
				nodes[addrs[id]] = &silentNode{fake: f, cut: cut}
			} else {
				nodes[addrs[id]] = &silentNode{fake: f, cut: &atomic.Bool{}}
			}
		}
		c, err := NewClusterClient(context.Background(), []string{addrs[1]}, func(ctx context.Context, addr string) (NodeClient, error) {
			return nodes[addr], nil
		})
		require.NoError(t, err)
		defer c.Close()
		produce := func() (*ProduceResponse, error) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			return c.Produce(ctx, &ProduceRequest{Acks: kafka.AcksAll, Topics: []ProduceTopic{{Topic: "t",
				Partitions: []ProducePartition{{Partition: 0, Records: []byte("a")}}}}})
		}

		cut.Store(true)
		leaders[0] = 2 // the cluster moved the leadership
		_, err = produce()
		require.ErrorIs(t, err, context.DeadlineExceeded)
		resp, err := produce()
		require.NoError(t, err)
		require.NoError(t, resp.Topics[0].Partitions[0].Err)
		n2 := nodes[addrs[2]].(*silentNode).fake
		n2.mu.Lock()
		defer n2.mu.Unlock()
		require.Len(t, n2.produces, 1, "the new leader has the batch")
	})
}
