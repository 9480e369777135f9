package replica_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/replica"
	"github.com/partlog/partlog/replica/replicatest"
)

// testOptions are the replica options of the scenario tests: 100 ms ticks,
// a 3 s lag limit (30 ticks), fetch timeouts of 1 s.
func testOptions(minISR int) replica.Options {
	return replica.Options{
		TickInterval:      100 * time.Millisecond,
		ReplicaLagTimeMax: 3 * time.Second,
		MinInsyncReplicas: minISR,
		FetchTimeout:      time.Second,
		FetchBackoff:      200 * time.Millisecond,
	}
}

// newCluster starts a cluster of replicas 1..n.
func newCluster(t *testing.T, seed int64, n int, opts replica.Options) *replicatest.Cluster {
	t.Helper()
	var ids []int32
	for i := 1; i <= n; i++ {
		ids = append(ids, int32(i))
	}
	c := replicatest.NewCluster(t, replicatest.Config{Seed: seed, Replicas: ids, Options: opts})
	c.Stabilize()
	return c
}

// produce appends values at the leader with acks and fails the test on error.
func produce(t testing.TB, c *replicatest.Cluster, acks kafka.Acks, values ...string) *replicatest.Produced {
	t.Helper()
	p, err := c.Produce(c.Leader(), acks, values...)
	if err != nil {
		c.Fatalf("produce %v at leader %d: %v", values, c.Leader(), err)
	}
	return p
}

// values returns the values of every batch of node id's log.
func values(t *testing.T, c *replicatest.Cluster, id int32) []string {
	t.Helper()
	n := c.Nodes[id]
	bs, err := replicatest.ReadBatches(n.Log, 0, n.Log.LogEndOffset())
	if err != nil {
		c.Fatalf("read node %d: %v", id, err)
	}
	var out []string
	for _, b := range bs {
		out = append(out, b.Values...)
	}
	return out
}

// crcs returns the batch CRCs of node id's log, in order.
func crcs(t testing.TB, c *replicatest.Cluster, id int32) []string {
	t.Helper()
	n := c.Nodes[id]
	bs, err := replicatest.ReadBatches(n.Log, 0, n.Log.LogEndOffset())
	if err != nil {
		c.Fatalf("read node %d: %v", id, err)
	}
	var out []string
	for _, b := range bs {
		out = append(out, fmt.Sprintf("%d-%d@%d:%08x", b.BaseOffset, b.LastOffset, b.Epoch, b.CRC))
	}
	return out
}

func vals(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s%d", prefix, i)
	}
	return out
}
