package partlog_test

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/partlog/partlog"
	"github.com/partlog/partlog/controller"
	"github.com/partlog/partlog/partlogtest"
	"github.com/partlog/partlog/producer"
)

var chaosDuration = flag.Duration("chaos", 3*time.Second, "how long TestClusterChaos injects faults (a soak: -chaos=10m)")

// TestClusterChaos produces with an idempotent acks=all producer while
// faults hit a three-node cluster at random: a node halts (a crash, fenced
// after the session timeout) or closes (a controlled shutdown) and comes
// back, a node is cut off from the others' replica traffic and healed. At
// the end every acknowledged record must be in its partition exactly once,
// in the order its promises ran, and every replica must hold the same
// batches. The seed is logged; -chaos sets how long faults go on.
func TestClusterChaos(t *testing.T) {
	// The seed comes from the real clock: inside the bubble time starts at
	// the same instant every run.
	seed := time.Now().UnixNano()
	synctest.Test(t, func(t *testing.T) {
		t.Logf("seed %d", seed)
		rng := rand.New(rand.NewPCG(uint64(seed), 0))
		c := newTestCluster(t, 1, 2, 3)
		ctx := context.Background()
		require.NoError(t, c.nodes[1].CreateTopic(ctx, partlog.NewTopic{Name: "chaos", Partitions: 3, ReplicationFactor: 3,
			Configs: map[string]string{"min.insync.replicas": "2"}}))
		client, err := c.net.Client(ctx)
		require.NoError(t, err)
		defer client.Close()
		p, err := producer.New(client, producer.Linger(time.Millisecond), producer.RetryBackoff(10*time.Millisecond),
			producer.DeliveryTimeout(time.Hour))
		require.NoError(t, err)

		var mu sync.Mutex
		acked := map[int32][]string{}
		var failures []error
		stop := make(chan struct{})
		var wg sync.WaitGroup
		produced := 0
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				v := fmt.Sprintf("c%07d", i)
				res := p.ProduceSync(ctx, &producer.Record{Topic: "chaos", Key: []byte(v), Value: []byte(v)})
				mu.Lock()
				produced++
				if err := res.FirstErr(); err != nil {
					failures = append(failures, err)
				} else {
					r := res[0].Record
					acked[r.Partition] = append(acked[r.Partition], v)
				}
				mu.Unlock()
			}
		})

		deadline := time.Now().Add(*chaosDuration)
		down := map[int32]bool{}
		for time.Now().Before(deadline) {
			id := int32(1 + rng.IntN(3))
			switch f := rng.IntN(4); {
			case down[id]:
				c.start(id)
				delete(down, id)
				t.Logf("restart %d", id)
			case len(down) == 0 && f == 0:
				require.NoError(t, partlogtest.Halt(c.nodes[id]))
				delete(c.nodes, id)
				down[id] = true
				t.Logf("halt %d", id)
			case len(down) == 0 && f == 1:
				c.stop(id)
				down[id] = true
				t.Logf("close %d", id)
			case f == 2:
				c.net.Isolate(id)
				t.Logf("isolate %d", id)
			default:
				c.net.HealAll()
				t.Logf("heal")
			}
			time.Sleep(time.Duration(50+rng.IntN(400)) * time.Millisecond) // the faults' pace, not a wait for a condition
		}
		c.net.HealAll()
		for id := range down {
			c.start(id)
		}
		close(stop)
		wg.Wait()
		require.NoError(t, p.Close())
		require.Empty(t, failures, "no record failed for good: the producer retries through every fault")
		total := 0
		for _, vs := range acked {
			total += len(vs)
		}
		t.Logf("%d records acknowledged", total)
		require.Positive(t, total)

		got := consumeCluster(t, client, "chaos", total)
		require.Equal(t, acked, got, "every acknowledged record once, in order")
		c.waitFor("the full ISR", func(s controller.ClusterState) bool {
			for _, p := range s.Topics["chaos"].Partitions {
				if len(p.ISR) != 3 {
					return false
				}
			}
			return true
		})
		for part := range int32(3) {
			want := batchCRCs(t, c.nodes[1], "chaos", part)
			for _, id := range []int32{2, 3} {
				require.Equal(t, want, batchCRCs(t, c.nodes[id], "chaos", part), "chaos-%d: replicas 1 and %d hold the same batches", part, id)
			}
		}
	})
}
