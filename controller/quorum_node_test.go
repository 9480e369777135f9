package controller

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
	pb "go.etcd.io/raft/v3/raftpb"

	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/log"
	"github.com/partlog/partlog/vfs"
)

// memRaft is a RaftTransport between QuorumNodes in one process, with
// nodes that can be made unreachable.
type memRaft struct {
	mu    sync.Mutex
	nodes map[int32]*QuorumNode
	down  map[int32]bool
}

var errUnreachable = errors.New("unreachable")

func (n *memRaft) from(id int32) RaftTransport { return memSender{n, id} }

type memSender struct {
	n    *memRaft
	from int32
}

func (s memSender) Send(_ context.Context, to int32, msgs []*pb.Message) error {
	s.n.mu.Lock()
	q, down := s.n.nodes[to], s.n.down[to] || s.n.down[s.from]
	s.n.mu.Unlock()
	if q == nil || down {
		return errUnreachable
	}
	for _, m := range msgs {
		q.Step(m)
	}
	return nil
}

// TestQuorumNodesFailOver runs three QuorumNodes on their goroutines:
// changes go through the active one and reach all three; when it stops,
// another becomes active within three election rounds, with every
// acknowledged change; a restarted one catches up; a change that cannot
// commit fails with NOT_CONTROLLER when its controller stops.
func TestQuorumNodesFailOver(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		voters := []int32{0, 1, 2}
		net := &memRaft{nodes: map[int32]*QuorumNode{}, down: map[int32]bool{}}
		disks := map[int32]*vfs.MemFS{}
		dirs := map[int32]*log.Dir{}
		start := func(id int32) {
			logs, err := log.OpenDir("/meta", log.DirOptions{FS: disks[id]})
			require.NoError(t, err)
			opts := simOptions
			opts.FS = disks[id]
			m, err := OpenMember(id, voters, logs, opts)
			require.NoError(t, err)
			q := StartQuorumNode(m, voters, net.from(id))
			net.mu.Lock()
			net.nodes[id], dirs[id] = q, logs
			delete(net.down, id)
			net.mu.Unlock()
		}
		stop := func(id int32) {
			net.mu.Lock()
			q := net.nodes[id]
			net.down[id] = true
			delete(net.nodes, id)
			net.mu.Unlock()
			q.Close()
			dirs[id].Close()
		}
		for _, id := range voters {
			disks[id] = vfs.NewMem()
			start(id)
		}
		defer func() {
			for _, id := range voters {
				if net.nodes[id] != nil {
					stop(id)
				}
			}
		}()
		active := func() *QuorumNode {
			for {
				for _, id := range voters {
					net.mu.Lock()
					q := net.nodes[id]
					net.mu.Unlock()
					if q == nil {
						continue
					}
					if ok, _, _ := q.Active(); ok {
						return q
					}
				}
				time.Sleep(defaultTickInterval) // a tick of the fake clock
			}
		}
		ctx := context.Background()
		first := active()
		v, err := first.Do(ctx, func(mc *Machine) error { _, err := mc.RegisterNode(100, ""); return err })
		require.NoError(t, err)
		synctest.Wait()
		for _, id := range voters {
			net.nodes[id].Read(func(st ClusterState, version int64) {
				require.GreaterOrEqual(t, version, v, "controller %d", id)
				require.Contains(t, st.Nodes, int32(100))
			})
		}

		var firstID int32 = -1
		for id, q := range net.nodes {
			if q == first {
				firstID = id
			}
		}
		began := time.Now()
		stop(firstID)
		next := active()
		// An election waits 1–2 election timeouts, and a split vote
		// another round.
		require.Less(t, time.Since(began), 3*2*time.Second, "a new active controller within three election rounds")
		next.Read(func(st ClusterState, _ int64) { require.Contains(t, st.Nodes, int32(100)) })
		v, err = next.Do(ctx, func(mc *Machine) error { _, err := mc.RegisterNode(101, ""); return err })
		require.NoError(t, err)

		start(firstID)
		for {
			var caught bool
			_, changed := net.nodes[firstID].Version()
			net.nodes[firstID].Read(func(st ClusterState, version int64) {
				_, caught = st.Nodes[101]
				caught = caught && version >= v
			})
			if caught {
				break
			}
			<-changed
		}

		// A change that cannot commit — the others are cut off — fails
		// with NOT_CONTROLLER when its controller stops.
		lead := active()
		net.mu.Lock()
		for id, q := range net.nodes {
			if q != lead {
				net.down[id] = true
			}
		}
		net.mu.Unlock()
		failed := make(chan error, 1)
		go func() {
			_, err := lead.Do(ctx, func(mc *Machine) error { _, err := mc.RegisterNode(102, ""); return err })
			failed <- err
		}()
		synctest.Wait()
		lead.Close()
		require.ErrorIs(t, <-failed, kafka.ErrNotController)
	})
}
