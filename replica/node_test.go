package replica_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/log"
	"github.com/partlog/partlog/record"
	"github.com/partlog/partlog/replica"
	"github.com/partlog/partlog/vfs"
)

// chanTransport delivers each message on its own goroutine, so messages
// may overtake each other, and can cut nodes off.
type chanTransport struct {
	mu    sync.Mutex
	nodes map[int32]*replica.Node
	cut   map[int32]bool
}

func (c *chanTransport) Send(ctx context.Context, to int32, m replica.Message) error {
	c.mu.Lock()
	n, cut := c.nodes[to], c.cut[to] || c.cut[m.From]
	c.mu.Unlock()
	if n == nil || cut {
		return nil
	}
	go n.Step(ctx, m)
	return nil
}

func (c *chanTransport) setCut(id int32, cut bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.cut[id] = cut
}

func oneBatch(values ...string) []byte {
	b := record.NewBuilder(record.DefaultBatchOptions())
	for _, v := range values {
		b.Append(record.Record{Value: []byte(v)})
	}
	return b.Build()
}

// startNodes starts a Node per replica over MemFS logs; the test controller
// commits every ISR change at once.
func startNodes(t *testing.T, ids []int32, opts replica.Options) (map[int32]*replica.Node, map[int32]*log.Log, *chanTransport) {
	return startNodesOn(t, ids, opts, func(int32) vfs.FS { return vfs.NewMem() })
}

func startNodesOn(t *testing.T, ids []int32, opts replica.Options, fsFor func(id int32) vfs.FS) (map[int32]*replica.Node, map[int32]*log.Log, *chanTransport) {
	t.Helper()
	tr := &chanTransport{nodes: map[int32]*replica.Node{}, cut: map[int32]bool{}}
	logs := map[int32]*log.Log{}
	var mu sync.Mutex
	state := replica.LeaderAndISR{Leader: ids[0], Replicas: ids, ISR: ids}
	for _, id := range ids {
		l, err := log.Open("/p-0", log.Options{FS: fsFor(id), MaxIndexBytes: 4096})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Close() })
		r, err := replica.New(id, kafka.TopicPartition{Topic: "p"}, l, opts)
		if err != nil {
			t.Fatal(err)
		}
		n := replica.StartNode(r, l, tr, replica.NodeOptions{OnAlterPartition: func(c replica.ISRChange) {
			mu.Lock()
			defer mu.Unlock()
			if c.PartitionEpoch != state.PartitionEpoch {
				return
			}
			state.ISR = slices.Clone(c.ISR)
			state.PartitionEpoch++
			s := state
			go func() {
				for _, n := range tr.nodes {
					n.Apply(context.Background(), s)
				}
			}()
		}})
		t.Cleanup(func() { n.Close() })
		tr.nodes[id], logs[id] = n, l
	}
	for _, n := range tr.nodes {
		if err := n.Apply(context.Background(), state); err != nil {
			t.Fatal(err)
		}
	}
	return tr.nodes, logs, tr
}

// The Node runs the loop on its own: acks=all appends complete once both
// followers have them, the followers learn the high watermark, and a
// follower that stops fetching is dropped from the ISR after the lag limit
// of (fake) time, after which acks=all completes without it.
func TestNode(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		nodes, logs, tr := startNodes(t, []int32{1, 2, 3}, testOptions(2))
		c, err := nodes[1].Propose(ctx, oneBatch("a", "b"), kafka.AcksAll)
		if err != nil || c.BaseOffset != 0 || c.LastOffset != 1 {
			t.Fatalf("Propose = %+v, %v", c, err)
		}
		time.Sleep(time.Second)
		for id, l := range logs {
			if l.LogEndOffset() != 2 || nodes[id].HighWatermark() != 2 {
				t.Fatalf("node %d: log end %d, high watermark %d", id, l.LogEndOffset(), nodes[id].HighWatermark())
			}
		}
		if _, err := nodes[2].Propose(ctx, oneBatch("x"), kafka.AcksAll); !errors.Is(err, kafka.ErrNotLeaderOrFollower) {
			t.Fatalf("Propose at a follower: %v", err)
		}

		tr.setCut(3, true)
		start := time.Now()
		c, err = nodes[1].Propose(ctx, oneBatch("c"), kafka.AcksAll)
		if err != nil || c.BaseOffset != 2 {
			t.Fatalf("Propose with node 3 cut off = %+v, %v", c, err)
		}
		// Node 3 was last caught up at its last fetch before the cut, at
		// most FetchWaitMax (a held fetch's wait) before it; it leaves
		// the lag limit of 3 s after that.
		if waited := time.Since(start); waited < 3*time.Second-500*time.Millisecond || waited > 3*time.Second+200*time.Millisecond {
			t.Fatalf("acks=all waited %v for node 3 to leave the ISR; the lag limit is 3 s", waited)
		}
		st, err := nodes[1].Status(ctx)
		if err != nil || !slices.Equal(st.State.ISR, []int32{1, 2}) {
			t.Fatalf("status %+v, %v: want ISR [1 2]", st, err)
		}
		tr.setCut(3, false)
		time.Sleep(2 * time.Second)
		if st, err := nodes[1].Status(ctx); err != nil || !slices.Equal(st.State.ISR, []int32{1, 2, 3}) {
			t.Fatalf("ISR %v, %v after node 3 came back", st.State.ISR, err)
		}
	})
}

// Close fails the appends still waiting and every later call.
func TestNodeClose(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		nodes, _, tr := startNodes(t, []int32{1, 2}, testOptions(2))
		tr.setCut(2, true)
		done := make(chan error, 1)
		go func() {
			_, err := nodes[1].Propose(ctx, oneBatch("never"), kafka.AcksAll)
			done <- err
		}()
		synctest.Wait()
		if err := nodes[1].Close(); err != nil {
			t.Fatalf("Close: %v", err)
		}
		if err := <-done; !errors.Is(err, replica.ErrClosed) {
			t.Fatalf("waiting Propose after Close: %v", err)
		}
		if _, err := nodes[1].Propose(ctx, oneBatch("late"), kafka.AcksLeader); !errors.Is(err, replica.ErrClosed) {
			t.Fatalf("Propose after Close: %v", err)
		}
		if err := nodes[1].Err(); !errors.Is(err, replica.ErrClosed) {
			t.Fatalf("Err after Close: %v", err)
		}
	})
}

// A Node whose log write fails stops, and says why: the replica's view of
// its log can no longer be trusted (log.ErrStorage is fail-stop). The
// leader goes on without it once it leaves the ISR.
func TestNodeStopsOnWriteFailure(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		var armed atomic.Bool
		boom := errors.New("injected sync failure")
		fsFor := func(id int32) vfs.FS {
			if id != 2 {
				return vfs.NewMem()
			}
			return vfs.WithFaults(vfs.NewMem(), vfs.InjectorFunc(func(op vfs.Op) error {
				if armed.Load() && op.Kind == vfs.OpSync {
					return boom
				}
				return nil
			}))
		}
		nodes, _, _ := startNodesOn(t, []int32{1, 2}, testOptions(1), fsFor)
		armed.Store(true)
		c, err := nodes[1].Propose(ctx, oneBatch("a"), kafka.AcksAll)
		if err != nil || c.BaseOffset != 0 {
			t.Fatalf("Propose = %+v, %v; want acked once node 2 left the ISR", c, err)
		}
		if err := nodes[2].Err(); !errors.Is(err, replica.ErrClosed) || !errors.Is(err, boom) {
			t.Fatalf("node 2 Err = %v, want ErrClosed and the sync failure", err)
		}
		if err := nodes[2].Close(); !errors.Is(err, boom) {
			t.Fatalf("Close of the failed node = %v", err)
		}
		if st, err := nodes[1].Status(ctx); err != nil || !slices.Equal(st.State.ISR, []int32{1}) {
			t.Fatalf("ISR %v, %v, want node 2 out", st.State.ISR, err)
		}
	})
}
