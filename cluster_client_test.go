package partlog_test

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/partlog/partlog"
	"github.com/partlog/partlog/consumer"
	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/producer"
	"github.com/partlog/partlog/transport"
	"github.com/partlog/partlog/vfs"
)

// clusterView is a test's stand-in for a controller: which node leads
// each partition of topic "t", and where the nodes listen.
type clusterView struct {
	mu      sync.Mutex
	addrs   map[int32]string
	leaders []int32
}

func (v *clusterView) leader(p int32) int32 {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.leaders[p]
}

func (v *clusterView) move(p, to int32) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.leaders[p] = to
}

// viewNode is a Node that answers as one member of the view's cluster:
// Metadata tells the view, and a partition it does not lead is answered
// with NOT_LEADER_OR_FOLLOWER, as a replicated node would.
type viewNode struct {
	partlog.Client
	id   int32
	view *clusterView
}

func (n viewNode) Metadata(ctx context.Context, req *transport.MetadataRequest) (*transport.MetadataResponse, error) {
	resp, err := n.Client.Metadata(ctx, req)
	if err != nil {
		return nil, err
	}
	n.view.mu.Lock()
	defer n.view.mu.Unlock()
	resp.Brokers = nil
	for id := int32(1); id <= int32(len(n.view.addrs)); id++ {
		host, port, err := net.SplitHostPort(n.view.addrs[id])
		if err != nil {
			return nil, err
		}
		p, err := strconv.Atoi(port)
		if err != nil {
			return nil, err
		}
		resp.Brokers = append(resp.Brokers, transport.Broker{NodeID: id, Host: host, Port: int32(p)})
	}
	for i := range resp.Topics {
		for j := range resp.Topics[i].Partitions {
			pm := &resp.Topics[i].Partitions[j]
			if resp.Topics[i].Topic == "t" {
				pm.Leader = n.view.leaders[pm.Partition]
			}
		}
	}
	return resp, nil
}

func (n viewNode) Produce(ctx context.Context, req *transport.ProduceRequest) (*transport.ProduceResponse, error) {
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			if n.view.leader(p.Partition) != n.id {
				return notLeader(req), nil
			}
		}
	}
	return n.Client.Produce(ctx, req)
}

func notLeader(req *transport.ProduceRequest) *transport.ProduceResponse {
	resp := &transport.ProduceResponse{}
	for _, t := range req.Topics {
		tr := transport.ProduceTopicResponse{Topic: t.Topic}
		for _, p := range t.Partitions {
			tr.Partitions = append(tr.Partitions, transport.ProducePartitionResponse{Partition: p.Partition, Err: kafka.ErrNotLeaderOrFollower})
		}
		resp.Topics = append(resp.Topics, tr)
	}
	return resp
}

// TestClusterClientFollowsLeaders runs a producer and a consumer on a
// ClusterClient against two nodes that share the partitions of topic "t":
// each partition's records go to its leader, and when a leader moves the
// producer's retry reaches the new one, with no record failed.
func TestClusterClientFollowsLeaders(t *testing.T) {
	ctx := context.Background()
	view := &clusterView{addrs: map[int32]string{}, leaders: []int32{1, 2}}
	var nodes []*partlog.Node
	for id := int32(1); id <= 2; id++ {
		n := openNode(t, vfs.NewMem(), partlog.NodeID(id))
		defer n.Close()
		require.NoError(t, n.CreateTopic(ctx, partlog.NewTopic{Name: "t", Partitions: 2}))
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		s := transport.NewServer(viewNode{n.Client(), id, view}, transport.ServerOptions{})
		go s.Serve(ln)
		defer s.Close()
		view.addrs[id] = ln.Addr().String()
		nodes = append(nodes, n)
	}
	c, err := transport.DialCluster(ctx, []string{view.addrs[2]}, transport.DialOptions{})
	require.NoError(t, err)
	defer c.Close()

	// Two nodes do not share producer ids, so this producer is not
	// idempotent; a replicated cluster would be one id space.
	p, err := producer.New(c, producer.Idempotent(false), producer.RetryBackoff(time.Millisecond))
	require.NoError(t, err)
	defer p.Close()
	send := func(from, to int) {
		var recs []*producer.Record
		for i := from; i < to; i++ {
			recs = append(recs, &producer.Record{Topic: "t", Value: fmt.Appendf(nil, "r%d", i)})
			recs[len(recs)-1].SetPartition(int32(i % 2))
		}
		require.NoError(t, p.ProduceSync(ctx, recs...).FirstErr())
	}
	send(0, 100)
	ends := func(n *partlog.Node) []int64 {
		d, err := n.DescribeTopics("t")
		require.NoError(t, err)
		return []int64{d[0].Partitions[0].LogEndOffset, d[0].Partitions[1].LogEndOffset}
	}
	require.Equal(t, []int64{50, 0}, ends(nodes[0]), "node 1 leads partition 0")
	require.Equal(t, []int64{0, 50}, ends(nodes[1]), "node 2 leads partition 1")

	view.move(0, 2) // partition 0's leadership moves to node 2
	send(100, 200)
	require.Equal(t, []int64{50, 0}, ends(nodes[0]))
	require.Equal(t, []int64{50, 100}, ends(nodes[1]), "after the move, node 2 took partition 0's records")

	cons, err := consumer.New(c, consumer.Partitions(kafka.TopicPartition{Topic: "t", Partition: 0}), consumer.AutoOffsetReset(consumer.Earliest))
	require.NoError(t, err)
	defer cons.Close()
	readCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	var got []string
	for rec, err := range cons.Records(readCtx) {
		require.NoError(t, err)
		got = append(got, string(rec.Value))
		if len(got) == 50 {
			break
		}
	}
	require.Equal(t, "r100", got[0], "the consumer reads partition 0 from its new leader")
	require.Equal(t, "r198", got[49])
}
