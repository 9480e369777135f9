package partlog_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/partlog/partlog"
	"github.com/partlog/partlog/controller"
	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/partlogtest"
	"github.com/partlog/partlog/producer"
	"github.com/partlog/partlog/transport"
)

// TestClusterReassignUnderLoad moves a partition of three replicas to the
// three other nodes of a cluster of six while an idempotent acks=all producer
// writes to it (min.insync.replicas=2): the new replicas catch up and join
// the ISR, leadership moves to node 4, the old replicas' directories are
// deleted, and every acknowledged record is consumed once, in order, from
// the new replicas.
func TestClusterReassignUnderLoad(t *testing.T) {
	c := newTestCluster(t, 1, 2, 3, 4, 5, 6)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	require.NoError(t, c.nodes[1].CreateTopic(ctx, partlog.NewTopic{Name: "moving", Partitions: 1, ReplicationFactor: 3,
		Configs: map[string]string{"min.insync.replicas": "2"}}))
	c.waitFor("the topic on three nodes", func(s controller.ClusterState) bool {
		t, ok := s.Topics["moving"]
		return ok && len(t.Partitions[0].ISR) == 3
	})
	from := c.ctl.State().Topics["moving"].Partitions[0].Replicas
	to := []int32{}
	for id := int32(1); id <= 6; id++ {
		if !slices.Contains(from, id) {
			to = append(to, id)
		}
	}
	client, err := c.net.Client(ctx)
	require.NoError(t, err)
	p, err := producer.New(client, producer.Linger(time.Millisecond), producer.RetryBackoff(10*time.Millisecond))
	require.NoError(t, err)
	defer p.Close()

	var mu sync.Mutex
	acked := map[int64]string{}
	var wg sync.WaitGroup
	produce := func(from, to int) {
		for i := from; i < to; i++ {
			v := fmt.Sprintf("v%05d", i)
			wg.Add(1)
			p.Produce(ctx, &producer.Record{Topic: "moving", Value: []byte(v)}, func(r *producer.Record, err error) {
				defer wg.Done()
				require.NoError(t, err, "record %s", v)
				mu.Lock()
				acked[r.Offset] = v
				mu.Unlock()
			})
		}
	}
	produce(0, 2000)
	stop := make(chan struct{})
	loaded := make(chan struct{})
	go func() { // more records while the partition moves
		defer close(loaded)
		for i := 2000; ; i += 100 {
			select {
			case <-stop:
				return
			default:
			}
			produce(i, i+100)
			time.Sleep(time.Millisecond)
		}
	}()

	resp, err := c.nodes[2].Client().AlterPartitionReassignments(ctx, &transport.AlterPartitionReassignmentsRequest{
		Partitions: []transport.PartitionReassignment{{TopicPartition: kafka.TopicPartition{Topic: "moving"}, Replicas: to}}})
	require.NoError(t, err)
	require.NoError(t, resp.Partitions[0].Err)
	list, err := c.nodes[3].Client().ListPartitionReassignments(ctx, &transport.ListPartitionReassignmentsRequest{})
	require.NoError(t, err)
	if len(list.Reassignments) == 1 { // or done already
		require.Equal(t, to, list.Reassignments[0].AddingReplicas)
		require.ElementsMatch(t, from, list.Reassignments[0].RemovingReplicas)
	}
	c.waitFor("the partition on the new nodes, all in sync", func(s controller.ClusterState) bool {
		ps := s.Topics["moving"].Partitions[0]
		return slices.Equal(ps.Replicas, to) && len(ps.ISR) == 3 && ps.Leader == to[0] && ps.AddingReplicas == nil
	})
	close(stop)
	<-loaded
	wg.Wait()
	require.NoError(t, p.Flush(ctx))

	for _, id := range from {
		// Once it has the metadata that completed the move, a node has
		// removed its replica.
		require.NoError(t, partlogtest.SyncMetadata(ctx, c.nodes[id]))
		dir := filepath.Join(c.dirs[id], "moving-0")
		_, err := os.Stat(dir)
		require.True(t, os.IsNotExist(err), "node %d still has %s", id, dir)
	}
	list, err = c.nodes[3].Client().ListPartitionReassignments(ctx, &transport.ListPartitionReassignmentsRequest{})
	require.NoError(t, err)
	require.Empty(t, list.Reassignments)

	mu.Lock()
	want := make([]string, 0, len(acked))
	for _, off := range slices.Sorted(func(yield func(int64) bool) {
		for o := range acked {
			if !yield(o) {
				return
			}
		}
	}) {
		want = append(want, acked[off])
	}
	mu.Unlock()
	got := consumeCluster(t, client, "moving", len(want))
	require.Equal(t, want, got[0], "every acknowledged record once, in offset order")
	require.Equal(t, len(want), len(acked))
	t.Logf("%d records acknowledged while the partition moved from %v to %v", len(want), from, to)
}
