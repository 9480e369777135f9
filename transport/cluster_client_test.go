package transport

import (
	"bytes"
	"context"
	"net"
	"strconv"
	"sync"
	"testing"

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
