package partlog_test

import (
	"context"
	"net"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/partlog/partlog"
	"github.com/partlog/partlog/controller"
	"github.com/partlog/partlog/partlogtest"
	"github.com/partlog/partlog/replica"
	"github.com/partlog/partlog/transport"
)

// combinedCluster is nodes in combined mode on loopback TCP, in one
// process: each a broker and a controller of the quorum of them all.
type combinedCluster struct {
	t       *testing.T
	dirs    map[int32]string
	voters  map[int32]string // the controllers' addresses
	addrs   map[int32]string // the brokers'
	nodes   map[int32]*partlog.Node
	servers map[int32]*transport.Server
}

func newCombinedCluster(t *testing.T, ids ...int32) *combinedCluster {
	c := &combinedCluster{t: t, dirs: map[int32]string{}, voters: map[int32]string{}, addrs: map[int32]string{},
		nodes: map[int32]*partlog.Node{}, servers: map[int32]*transport.Server{}}
	lns := map[int32][2]net.Listener{}
	for _, id := range ids {
		c.dirs[id] = filepath.Join(t.TempDir(), strconv.Itoa(int(id)))
		var pair [2]net.Listener
		for i := range pair {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			require.NoError(t, err)
			pair[i] = ln
		}
		lns[id] = pair
		c.voters[id], c.addrs[id] = pair[0].Addr().String(), pair[1].Addr().String()
	}
	t.Cleanup(func() {
		for id := range c.nodes {
			c.halt(id)
		}
	})
	// Each Open waits for an active controller, which needs a majority
	// of the controllers running: they start together.
	var wg sync.WaitGroup
	var mu sync.Mutex
	for _, id := range ids {
		wg.Go(func() {
			n, s := c.open(id, lns[id][0], lns[id][1])
			mu.Lock()
			c.nodes[id], c.servers[id] = n, s
			mu.Unlock()
		})
	}
	wg.Wait()
	require.Len(t, c.nodes, len(ids))
	return c
}

// open opens node id in combined mode, its controller on ctlLn, and
// serves its broker on ln.
func (c *combinedCluster) open(id int32, ctlLn, ln net.Listener) (*partlog.Node, *transport.Server) {
	n, err := partlog.Open(c.dirs[id], partlog.NodeID(id),
		partlog.ControllerRole(ctlLn, partlog.ControllerOptions{Voters: c.voters, TickInterval: 10 * time.Millisecond,
			ElectionTimeout: 200 * time.Millisecond, SessionTimeout: 600 * time.Millisecond, NoAutoLeaderRebalance: true}),
		partlog.AdvertisedAddress(ln.Addr().String()), partlog.HeartbeatInterval(20*time.Millisecond),
		partlog.ReplicaOptions(replica.Options{TickInterval: 10 * time.Millisecond, ReplicaLagTimeMax: 500 * time.Millisecond,
			FetchWaitMax: 50 * time.Millisecond, FetchBackoff: 20 * time.Millisecond, FetchTimeout: time.Second}))
	if err != nil {
		c.t.Errorf("open node %d: %v", id, err)
		ln.Close()
		return nil, nil
	}
	s := transport.NewServer(n.Client(), transport.ServerOptions{})
	go s.Serve(ln)
	return n, s
}

// halt stops node id — broker and controller — as a crash would.
func (c *combinedCluster) halt(id int32) {
	c.servers[id].Close()
	partlogtest.Halt(c.nodes[id])
	delete(c.nodes, id)
	delete(c.servers, id)
}

// active returns the node whose controller is the active one, waiting
// for one: a controller becomes active as it applies the first entry of
// its term, which every live controller applies soon after, so a change
// of any live controller's metadata is the moment to look again.
func (c *combinedCluster) active() int32 {
	c.t.Helper()
	find := func() int32 {
		for id, n := range c.nodes {
			if n.Controller().Active() {
				return id
			}
		}
		return -1
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	active := int32(-1)
	for _, n := range c.nodes {
		require.NoError(c.t, n.Controller().WaitFor(ctx, func(controller.ClusterState) bool {
			active = find()
			return active >= 0
		}), "no active controller")
		break
	}
	return active
}

// waitFor waits until the committed metadata of a live node's controller
// satisfies cond.
func (c *combinedCluster) waitFor(what string, cond func(controller.ClusterState) bool) {
	c.t.Helper()
	for _, n := range c.nodes {
		waitForMetadata(c.t, n.Controller(), what, cond)
		return
	}
}

// TestCombinedClusterSurvivesActiveController: three nodes in combined
// mode; the node whose controller is active crashes, together with the
// partitions it leads. Another controller takes over, fences the dead
// node within the failover session, moves its leaderships, and every
// record acked at acks=all before and after is consumed exactly once.
func TestCombinedClusterSurvivesActiveController(t *testing.T) {
	c := newCombinedCluster(t, 1, 2, 3)
	ctx := context.Background()
	require.NoError(t, c.nodes[1].CreateTopic(ctx, partlog.NewTopic{Name: "events", Partitions: 3, ReplicationFactor: 3,
		Configs: map[string]string{"min.insync.replicas": "2"}}))
	client, err := transport.DialCluster(ctx, []string{c.addrs[1], c.addrs[2], c.addrs[3]}, transport.DialOptions{})
	require.NoError(t, err)
	defer client.Close()
	acked := produceValues(t, client, "events", clusterValues(0, 300))

	dead := c.active()
	led := 0
	for _, p := range c.nodes[dead].Controller().State().Topics["events"].Partitions {
		if p.Leader == dead {
			led++
		}
	}
	require.Positive(t, led, "the active controller's node leads a partition (preferred leaders spread over the nodes)")
	c.halt(dead)
	c.waitFor("leaders other than the dead node, which is fenced", func(s controller.ClusterState) bool {
		for _, p := range s.Topics["events"].Partitions {
			if p.Leader == dead || p.Leader == replica.NoLeader {
				return false
			}
		}
		return s.Nodes[dead].Fenced
	})
	require.NotEqual(t, dead, c.active())

	more := produceValues(t, client, "events", clusterValues(300, 600))
	for p, vs := range more {
		acked[p] = append(acked[p], vs...)
	}
	got := consumeCluster(t, client, "events", 600)
	require.Equal(t, acked, got, "every acknowledged record once, in offset order")
}

// TestInProcessQuorum: a quorum of three controllers and three nodes, all
// in one process (controllers on a MemRaft, nodes JoinQuorum on a
// MemNetwork): the nodes follow the active controller when it closes, and
// every record acked before and after is consumed once, in order.
func TestInProcessQuorum(t *testing.T) {
	raft := partlog.NewMemRaft()
	voters := map[int32]string{1: "", 2: "", 3: ""}
	var ctls []*partlog.Controller
	for id := int32(1); id <= 3; id++ {
		c, err := partlog.OpenController(t.TempDir(), partlog.ControllerOptions{NodeID: id, Voters: voters, RaftTransport: raft,
			TickInterval: 10 * time.Millisecond, ElectionTimeout: 100 * time.Millisecond, SessionTimeout: time.Second,
			NoAutoLeaderRebalance: true})
		require.NoError(t, err)
		raft.Attach(id, c)
		t.Cleanup(func() { c.Close() })
		ctls = append(ctls, c)
	}
	net := partlog.NewMemNetwork()
	var nodes []*partlog.Node
	for id := int32(1); id <= 3; id++ {
		n, err := partlog.Open(filepath.Join(t.TempDir(), strconv.Itoa(int(id))), partlog.NodeID(id), partlog.JoinQuorum(net, ctls...),
			partlog.HeartbeatInterval(20*time.Millisecond),
			partlog.ReplicaOptions(replica.Options{TickInterval: 10 * time.Millisecond, ReplicaLagTimeMax: 500 * time.Millisecond,
				FetchWaitMax: 50 * time.Millisecond, FetchBackoff: 20 * time.Millisecond, FetchTimeout: time.Second}))
		require.NoError(t, err)
		t.Cleanup(func() { n.Close() })
		nodes = append(nodes, n)
	}
	ctx := context.Background()
	require.NoError(t, nodes[0].CreateTopic(ctx, partlog.NewTopic{Name: "events", Partitions: 2, ReplicationFactor: 3,
		Configs: map[string]string{"min.insync.replicas": "2"}}))
	client, err := net.Client(ctx)
	require.NoError(t, err)
	acked := produceValues(t, client, "events", clusterValues(0, 200))

	active := slices.IndexFunc(ctls, func(c *partlog.Controller) bool { return c.Active() })
	require.GreaterOrEqual(t, active, 0)
	require.NoError(t, ctls[active].Close())
	raft.Attach(int32(active+1), nil)
	require.NoError(t, nodes[1].CreateTopic(ctx, partlog.NewTopic{Name: "after", Partitions: 1, ReplicationFactor: 3}),
		"the nodes reach the next active controller")
	more := produceValues(t, client, "events", clusterValues(200, 400))
	for p, vs := range more {
		acked[p] = append(acked[p], vs...)
	}
	require.Equal(t, acked, consumeCluster(t, client, "events", 400), "every acknowledged record once, in offset order")
}
