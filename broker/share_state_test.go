package broker

import (
	"context"
	"errors"
	"net"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/partlog/partlog/controller"
	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/replica"
	"github.com/partlog/partlog/sharecoord"
	"github.com/partlog/partlog/topicconfig"
	"github.com/partlog/partlog/transport"
	"github.com/partlog/partlog/transport/memnet"
)

// shareStateTestPartitions is the partitions of __share_group_state in
// these tests: few, so that nodes load them fast.
const shareStateTestPartitions = 3

// testSharePartition is the share partition the tests persist.
var testSharePartition = sharecoord.SharePartition{Group: "g", TopicID: [16]byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}, Partition: 4}

// sharedWrite is the write the tests make, and sharedState what a read
// with leader epoch 5 answers after it.
var (
	sharedWrite = sharecoord.Write{StateEpoch: 1, LeaderEpoch: 5, StartOffset: 12, Batches: []sharecoord.StateBatch{
		{FirstOffset: 12, LastOffset: 15, DeliveryState: sharecoord.Acknowledged, DeliveryCount: 1},
		{FirstOffset: 16, LastOffset: 20, DeliveryState: sharecoord.Available, DeliveryCount: 2},
	}}
	sharedState = sharecoord.State{StateEpoch: 1, LeaderEpoch: 5, StartOffset: 12, Batches: sharedWrite.Batches}
)

// TestShareStatePersisterOneNode: on a node on its own, the persister
// initializes, writes, reads and deletes share partitions' state in
// __share_group_state (created on first use: compacted, with the
// configured partitions, the share partition in sharecoord.PartitionFor's
// partition), answers the coordinator's fencing errors as Kafka's, and a
// restarted node reads back what was written, replayed from the topic.
func TestShareStatePersisterOneNode(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	n, err := Open(dir, Options{NodeID: 1, ShareStatePartitions: shareStateTestPartitions})
	require.NoError(t, err)
	p := n.sharePersister()
	sp := testSharePartition

	require.ErrorIs(t, p.write(ctx, sp, sharedWrite), kafka.ErrInvalidRequest, "never initialized")
	md, _ := n.member.metadata()
	topic := md.Topics[sharecoord.StateTopic]
	require.Len(t, topic.Partitions, shareStateTestPartitions)
	require.Equal(t, "compact", topic.Configs[topicconfig.CleanupPolicy])
	for _, g := range []string{"g", "billing", "queue-7"} {
		s := sharecoord.SharePartition{Group: g, TopicID: sp.TopicID, Partition: 9}
		got, err := n.shareStates.state.partitionOf(ctx, s.String(), shareStateTestPartitions, nil)
		require.NoError(t, err)
		require.Equal(t, sharecoord.PartitionFor(g, sp.TopicID, 9, shareStateTestPartitions), got, "the coordinator's partition is sharecoord's")
	}

	require.NoError(t, p.initialize(ctx, sp, 1, 10))
	require.NoError(t, p.write(ctx, sp, sharedWrite))
	st, err := p.read(ctx, sp, 5)
	require.NoError(t, err)
	require.Equal(t, sharedState, st)
	require.ErrorIs(t, p.write(ctx, sp, sharecoord.Write{StateEpoch: 0, LeaderEpoch: 5, StartOffset: -1}), kafka.ErrFencedStateEpoch)
	_, err = p.read(ctx, sp, 4)
	require.ErrorIs(t, err, kafka.ErrFencedLeaderEpoch)
	require.ErrorIs(t, p.initialize(ctx, sharecoord.SharePartition{TopicID: sp.TopicID}, 1, 0), kafka.ErrInvalidRequest, "no group id")

	gone := sharecoord.SharePartition{Group: "other", TopicID: sp.TopicID, Partition: 0}
	require.NoError(t, p.initialize(ctx, gone, 3, -1))
	st, err = p.read(ctx, gone, -1)
	require.NoError(t, err)
	require.Equal(t, sharecoord.State{StateEpoch: 3, LeaderEpoch: -1, StartOffset: -1}, st)
	require.NoError(t, p.delete(ctx, gone))
	_, err = p.read(ctx, gone, -1)
	require.ErrorIs(t, err, kafka.ErrInvalidRequest, "deleted")

	require.NoError(t, n.Close())
	n, err = Open(dir, Options{NodeID: 1, ShareStatePartitions: shareStateTestPartitions})
	require.NoError(t, err)
	defer n.Close()
	p = n.sharePersister()
	st, err = p.read(ctx, sp, 5)
	require.NoError(t, err)
	require.Equal(t, sharedState, st, "replayed from %s", sharecoord.StateTopic)
	require.ErrorIs(t, p.write(ctx, sp, sharecoord.Write{StateEpoch: 0, LeaderEpoch: 5, StartOffset: -1}), kafka.ErrFencedStateEpoch)
	_, err = p.read(ctx, gone, -1)
	require.ErrorIs(t, err, kafka.ErrInvalidRequest, "still deleted")
}

// shareStateCluster is a controller and three nodes in one process, over
// TCP or an in-memory network.
type shareStateCluster struct {
	t       *testing.T
	ctl     *controller.Controller
	net     *memnet.Network // nil over TCP
	ctlAddr string
	nodes   map[int32]*Broker
	servers map[int32]*transport.Server
}

func newShareStateCluster(t *testing.T, overTCP bool, ids ...int32) *shareStateCluster {
	ctl, err := controller.Open(t.TempDir(), controller.Options{TickInterval: 10 * time.Millisecond, SessionTimeout: 500 * time.Millisecond,
		NoAutoLeaderRebalance: true})
	require.NoError(t, err)
	c := &shareStateCluster{t: t, ctl: ctl, nodes: map[int32]*Broker{}, servers: map[int32]*transport.Server{}}
	if overTCP {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		go ctl.Serve(ln)
		c.ctlAddr = ln.Addr().String()
	} else {
		c.net = memnet.New()
	}
	t.Cleanup(func() {
		for id := range c.nodes {
			c.halt(id)
		}
		ctl.Close()
	})
	for _, id := range ids {
		opts := Options{NodeID: id, ShareStatePartitions: shareStateTestPartitions, HeartbeatInterval: 20 * time.Millisecond,
			Replica: replica.Options{TickInterval: 10 * time.Millisecond, ReplicaLagTimeMax: 500 * time.Millisecond,
				FetchWaitMax: 50 * time.Millisecond, FetchBackoff: 20 * time.Millisecond, FetchTimeout: time.Second}}
		var ln net.Listener
		if overTCP {
			ln, err = net.Listen("tcp", "127.0.0.1:0")
			require.NoError(t, err)
			opts.ControllerAddress, opts.AdvertisedAddress = c.ctlAddr, ln.Addr().String()
		} else {
			opts.Controller, opts.Network = ctl, c.net
		}
		n, err := Open(filepath.Join(t.TempDir(), strconv.Itoa(int(id))), opts)
		require.NoError(t, err)
		c.nodes[id] = n
		if overTCP {
			s := transport.NewServer(n, transport.ServerOptions{})
			go s.Serve(ln)
			c.servers[id] = s
		}
	}
	return c
}

// halt stops node id as a crash would.
func (c *shareStateCluster) halt(id int32) {
	if s := c.servers[id]; s != nil {
		s.Close()
	}
	c.nodes[id].halt()
	delete(c.nodes, id)
	delete(c.servers, id)
}

// waitFor waits until cond holds of the controller's metadata.
func (c *shareStateCluster) waitFor(what string, cond func(controller.ClusterState) bool) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	require.NoError(c.t, c.ctl.WaitFor(ctx, cond), "waiting for %s", what)
}

// TestShareStatePersisterCluster: in a cluster of three, over TCP and
// over the in-memory network, a node that does not lead the share
// partition's partition of __share_group_state initializes, writes and
// reads its state through the network (Kafka's share state calls to the
// leader), and gets the coordinator's fencing errors as Kafka's, as the
// leader does through its own coordinator; FindCoordinator names the
// leader for the share partition's key. Once the leader crashes, the new
// leader answers the same state.
func TestShareStatePersisterCluster(t *testing.T) {
	for _, overTCP := range []bool{true, false} {
		t.Run(map[bool]string{true: "tcp", false: "mem"}[overTCP], func(t *testing.T) {
			c := newShareStateCluster(t, overTCP, 1, 2, 3)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			sp := testSharePartition
			part := sharecoord.PartitionFor(sp.Group, sp.TopicID, sp.Partition, shareStateTestPartitions)

			require.NoError(t, c.nodes[1].sharePersister().initialize(ctx, sp, 1, 10), "the topic is created on first use")
			c.waitFor("the full ISR of the share partition's partition", func(s controller.ClusterState) bool {
				return len(s.Topics[sharecoord.StateTopic].Partitions[part].ISR) == 3
			})
			leader := c.ctl.State().Topics[sharecoord.StateTopic].Partitions[part].Leader
			var other int32
			for id := range c.nodes {
				if id != leader {
					other = id
				}
			}
			fc, err := c.nodes[other].FindCoordinator(ctx, &transport.FindCoordinatorRequest{Key: sp.String(), KeyType: transport.CoordinatorShare})
			require.NoError(t, err)
			require.NoError(t, fc.Err)
			require.Equal(t, leader, fc.NodeID, "FindCoordinator names the leader of %s-%d", sharecoord.StateTopic, part)

			// The network path: the other node does not coordinate sp.
			_, err = c.nodes[other].shareCoordinatorOf(ctx, sp)
			require.ErrorIs(t, err, kafka.ErrNotCoordinator)
			remote := c.nodes[other].sharePersister()
			require.NoError(t, remote.initialize(ctx, sp, 1, 10))
			require.NoError(t, remote.write(ctx, sp, sharedWrite))
			st, err := remote.read(ctx, sp, 5)
			require.NoError(t, err)
			require.Equal(t, sharedState, st)
			stale := sharecoord.Write{StateEpoch: 0, LeaderEpoch: 5, StartOffset: -1}
			require.ErrorIs(t, remote.write(ctx, sp, stale), kafka.ErrFencedStateEpoch, "through the network")
			_, err = remote.read(ctx, sp, 4)
			require.ErrorIs(t, err, kafka.ErrFencedLeaderEpoch, "through the network")
			require.ErrorIs(t, c.nodes[leader].sharePersister().write(ctx, sp, stale), kafka.ErrFencedStateEpoch, "through the local coordinator")

			// The leader crashes: the new one replays the state.
			c.halt(leader)
			c.waitFor("a new leader of the share partition's partition", func(s controller.ClusterState) bool {
				l := s.Topics[sharecoord.StateTopic].Partitions[part].Leader
				return l != leader && l != replica.NoLeader
			})
			for id, n := range c.nodes {
				st, err := n.sharePersister().read(ctx, sp, 5)
				require.NoError(t, err, "node %d", id)
				require.Equal(t, sharedState, st, "node %d reads the state the crashed leader wrote", id)
				require.ErrorIs(t, n.sharePersister().write(ctx, sp, stale), kafka.ErrFencedStateEpoch, "node %d", id)
			}
			for _, n := range c.nodes {
				require.NoError(t, n.sharePersister().delete(ctx, sp))
				_, err := n.sharePersister().read(ctx, sp, 5)
				require.ErrorIs(t, err, kafka.ErrInvalidRequest)
				break
			}
		})
	}
}

// TestShareStateRetriesUntilCtxEnds: a call whose coordinator cannot be
// reached keeps retrying, and returns the last error once ctx ends.
func TestShareStateRetriesUntilCtxEnds(t *testing.T) {
	c := newShareStateCluster(t, true, 1, 2)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sp := testSharePartition
	part := sharecoord.PartitionFor(sp.Group, sp.TopicID, sp.Partition, shareStateTestPartitions)
	require.NoError(t, c.nodes[1].sharePersister().initialize(ctx, sp, 1, 10))
	leader := c.ctl.State().Topics[sharecoord.StateTopic].Partitions[part].Leader
	other := 3 - leader
	c.servers[leader].Close() // the leader stays in the cluster, but cannot be reached
	short, cancelShort := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancelShort()
	_, err := c.nodes[other].sharePersister().read(short, sp, 5)
	require.ErrorIs(t, err, kafka.ErrCoordinatorNotAvailable)
	require.True(t, errors.Is(err, context.DeadlineExceeded), "%v", err)
}

// TestParseShareKey: a FindCoordinator key of a share partition is parsed
// as Kafka's SharePartitionKey parses it, and hashed in Kafka's spelling.
func TestParseShareKey(t *testing.T) {
	sp := testSharePartition
	id := sharecoord.CoordinatorKey("", sp.TopicID, 0)[1:]
	id = id[:len(id)-2]
	for _, key := range []string{sp.String(), " g\t:" + id + ":4", "g:" + id + "==:+4", "g:" + id + ":4:"} {
		got, err := parseShareKey(key)
		require.NoError(t, err, key)
		require.Equal(t, sp, got, key)
	}
	for _, key := range []string{"", "g", "g:" + id, " :" + id + ":4", "g:nope:4", "g:" + id + ":x", "g:h:" + id + ":4", "g:" + id + ":99999999999"} {
		_, err := parseShareKey(key)
		require.ErrorIs(t, err, kafka.ErrInvalidRequest, "%q", key)
	}
}
