package transport

import (
	"context"
	"net"
	"strconv"
	"testing"

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

	req := &ProduceRequest{Acks: AcksAll, Topics: []ProduceTopic{{Topic: "t", Partitions: []ProducePartition{
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
	require.ErrorIs(t, parts[3].Err, ErrLeaderNotAvailable)
	require.True(t, IsRetriable(parts[3].Err))
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
	resp, err = c.Produce(ctx, &ProduceRequest{Acks: AcksAll, Topics: []ProduceTopic{{Topic: "t", Partitions: []ProducePartition{
		{Partition: 0, Records: []byte("a")}, {Partition: 1, Records: []byte("b")},
	}}}})
	require.NoError(t, err)
	require.NoError(t, resp.Topics[0].Partitions[0].Err)
	require.ErrorIs(t, resp.Topics[0].Partitions[1].Err, ErrNetwork)
	require.True(t, IsRetriable(resp.Topics[0].Partitions[1].Err))
}
