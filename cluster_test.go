package partlog_test

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/partlog/partlog"
	"github.com/partlog/partlog/consumer"
	"github.com/partlog/partlog/producer"
	"github.com/partlog/partlog/record"
	"github.com/partlog/partlog/replica"
	"github.com/partlog/partlog/transport"
)

// testCluster is a controller and nodes in one process on a MemNetwork,
// with timing fast enough for tests.
type testCluster struct {
	t     *testing.T
	ctl   *partlog.Controller
	net   *partlog.MemNetwork
	dirs  map[int32]string
	nodes map[int32]*partlog.Node
}

func newTestCluster(t *testing.T, ids ...int32) *testCluster {
	t.Helper()
	ctl, err := partlog.OpenController(t.TempDir(), partlog.ControllerOptions{Controller: replica.ControllerOptions{
		TickInterval: 10 * time.Millisecond, SessionTimeout: 400 * time.Millisecond, NoAutoLeaderRebalance: true,
	}})
	require.NoError(t, err)
	c := &testCluster{t: t, ctl: ctl, net: partlog.NewMemNetwork(), dirs: map[int32]string{}, nodes: map[int32]*partlog.Node{}}
	t.Cleanup(func() {
		for _, n := range c.nodes {
			n.Close()
		}
		ctl.Close()
	})
	for _, id := range ids {
		c.dirs[id] = filepath.Join(t.TempDir(), strconv.Itoa(int(id)))
		c.start(id)
	}
	return c
}

// start opens node id (again).
func (c *testCluster) start(id int32) *partlog.Node {
	c.t.Helper()
	n, err := partlog.Open(c.dirs[id], partlog.NodeID(id), partlog.JoinCluster(c.ctl, c.net),
		partlog.HeartbeatInterval(20*time.Millisecond),
		partlog.ReplicaOptions(replica.Options{TickInterval: 10 * time.Millisecond, ReplicaLagTimeMax: 500 * time.Millisecond,
			FetchWaitMax: 50 * time.Millisecond, FetchBackoff: 20 * time.Millisecond, FetchTimeout: time.Second}))
	require.NoError(c.t, err)
	c.nodes[id] = n
	return n
}

// stop closes node id.
func (c *testCluster) stop(id int32) {
	c.t.Helper()
	require.NoError(c.t, c.nodes[id].Close())
	delete(c.nodes, id)
}

// waitFor waits until cond holds of the controller's metadata.
func (c *testCluster) waitFor(what string, cond func(replica.ClusterState) bool) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	require.NoError(c.t, c.ctl.WaitFor(ctx, cond), "waiting for %s", what)
}

func (c *testCluster) leader(topic string, p int32) int32 {
	s, err := c.ctl.Partition(topic, p)
	require.NoError(c.t, err)
	return s.Leader
}

// produceValues produces values to topic with an idempotent producer at
// acks=all, and returns them by partition in offset order.
func produceValues(t *testing.T, client transport.Client, topic string, values []string) map[int32][]string {
	t.Helper()
	p, err := producer.New(client, producer.Linger(time.Millisecond), producer.RetryBackoff(20*time.Millisecond))
	require.NoError(t, err)
	defer p.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var mu sync.Mutex
	acked := map[int32]map[int64]string{}
	var wg sync.WaitGroup
	for _, v := range values {
		wg.Add(1)
		p.Produce(ctx, &producer.Record{Topic: topic, Key: []byte(v), Value: []byte(v)}, func(r *producer.Record, err error) {
			defer wg.Done()
			require.NoError(t, err, "record %s", v)
			mu.Lock()
			defer mu.Unlock()
			if acked[r.Partition] == nil {
				acked[r.Partition] = map[int64]string{}
			}
			acked[r.Partition][r.Offset] = string(r.Value)
		})
	}
	wg.Wait()
	out := map[int32][]string{}
	for part, byOffset := range acked {
		for _, off := range slices.Sorted(func(yield func(int64) bool) {
			for o := range byOffset {
				if !yield(o) {
					return
				}
			}
		}) {
			out[part] = append(out[part], byOffset[off])
		}
	}
	return out
}

// consumeAll reads every partition of topic from the start up to want
// records in total, and returns the values by partition.
func consumeCluster(t *testing.T, client transport.Client, topic string, want int) map[int32][]string {
	t.Helper()
	c, err := consumer.New(client, consumer.Topics(topic), consumer.AutoOffsetReset(consumer.Earliest), consumer.RetryBackoff(20*time.Millisecond))
	require.NoError(t, err)
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	got := map[int32][]string{}
	n := 0
	for rec, err := range c.Records(ctx) {
		require.NoError(t, err)
		got[rec.Partition] = append(got[rec.Partition], string(rec.Value))
		if n++; n == want {
			break
		}
	}
	return got
}

func clusterValues(from, to int) []string {
	var vs []string
	for i := from; i < to; i++ {
		vs = append(vs, fmt.Sprintf("v%05d", i))
	}
	return vs
}

// TestClusterFailover replicates a topic over three nodes, closes the
// leader of each partition in turn while producing with acks=all, and
// checks that every acknowledged record is consumed exactly once, in
// order, that the old leader rejoins the ISR, and that every replica ends
// with the same batches.
func TestClusterFailover(t *testing.T) {
	c := newTestCluster(t, 1, 2, 3)
	ctx := context.Background()
	require.NoError(t, c.nodes[1].CreateTopic(ctx, partlog.NewTopic{Name: "orders", Partitions: 2, ReplicationFactor: 3,
		Configs: map[string]string{"min.insync.replicas": "2"}}))
	client, err := c.net.Client(ctx)
	require.NoError(t, err)
	defer client.Close()

	acked := produceValues(t, client, "orders", clusterValues(0, 300))
	old := c.leader("orders", 0)
	c.stop(old)
	c.waitFor("a new leader of orders-0", func(s replica.ClusterState) bool {
		l := s.Topics["orders"].Partitions[0].Leader
		return l != old && l != replica.NoLeader
	})
	more := produceValues(t, client, "orders", clusterValues(300, 600))
	for p, vs := range more {
		acked[p] = append(acked[p], vs...)
	}

	got := consumeCluster(t, client, "orders", 600)
	require.Equal(t, acked, got, "every acknowledged record once, in offset order")

	// The old leader comes back and catches up into the ISR.
	c.start(old)
	c.waitFor("the full ISR", func(s replica.ClusterState) bool {
		for _, p := range s.Topics["orders"].Partitions {
			if len(p.ISR) != 3 {
				return false
			}
		}
		return true
	})
	for p := range int32(2) {
		var logs [][]uint32
		for _, id := range []int32{1, 2, 3} {
			logs = append(logs, batchCRCs(t, c.nodes[id], "orders", p))
		}
		require.Equal(t, logs[0], logs[1], "orders-%d: replicas 1 and 2 hold the same batches", p)
		require.Equal(t, logs[0], logs[2], "orders-%d: replicas 1 and 3 hold the same batches", p)
	}
}

// batchCRCs returns the CRC of every batch of a node's replica, once it
// holds everything up to its leader's high watermark.
func batchCRCs(t *testing.T, n *partlog.Node, topic string, p int32) []uint32 {
	t.Helper()
	l, err := n.Log(topic, p)
	require.NoError(t, err, "node %d hosts %s-%d", n.NodeID(), topic, p)
	data, err := l.Read(nil, l.LogStartOffset(), l.LogEndOffset(), 64<<20)
	require.NoError(t, err)
	var crcs []uint32
	for len(data) > 0 {
		h, err := record.ParseHeader(data)
		require.NoError(t, err)
		crcs = append(crcs, h.CRC)
		data = data[h.Size():]
	}
	return crcs
}
