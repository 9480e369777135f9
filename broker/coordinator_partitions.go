package broker

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/partlog/partlog/controller"
	"github.com/partlog/partlog/internal/xsync"
	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/replica"
)

// A coordinator — of consumer groups, of transactions — lives where Kafka
// puts it: on the partitions of an internal topic (__consumer_offsets,
// __transaction_state), created through the controller on first use and
// replicated like any topic. The coordinator of a key (a group id, a
// transactional id) is the leader of the key's partition
// (kafka.CoordinatorPartition). A node that becomes leader of such a
// partition replays the partition's log, up to its log end offset, into
// its coordinator in the background (answering
// COORDINATOR_LOAD_IN_PROGRESS meanwhile); one that stops leading it
// unloads it. A node answers the requests of the keys whose partition it
// leads and has loaded, and NOT_COORDINATOR for the others. The
// coordinator's writes go through the partition's replica as a leader
// append with acks=all. coordinatorPartitions is that machinery, the same
// for every coordinator; coordinatorState is what differs.

// coordinatorState is what a coordinator does when the node gains or
// loses the leadership of a partition of its topic.
type coordinatorState interface {
	// load replays the log of h's partition, up to end, into the
	// coordinator, for the leadership in leader epoch epoch; partitions
	// is the topic's partition count. It returns how many records it read.
	load(h *replicaHost, epoch int32, end int64, partitions int32) (records int, err error)
	// unload forgets the partition.
	unload(p int32)
}

// coordinatorPartitions are the partitions of a coordinator's topic that
// the node leads, and their loads.
type coordinatorPartitions struct {
	n     *Broker
	topic string
	state coordinatorState
	// createMu makes the node create the topic once at a time.
	createMu sync.Mutex
	// loadMu orders the loads and unloads of partitions, which run in the
	// background.
	loadMu xsync.Mutex

	mu  sync.Mutex
	led map[int32]*partitionLeadership
}

// partitionLeadership is one leadership of a partition of the topic: its
// leader epoch, and whether the coordinator has loaded it.
type partitionLeadership struct {
	epoch  int32
	loaded bool
	// done is closed when the load ends: loaded, failed, or superseded.
	done chan struct{}
}

func newCoordinatorPartitions(n *Broker, topic string, state coordinatorState) *coordinatorPartitions {
	return &coordinatorPartitions{n: n, topic: topic, state: state, led: map[int32]*partitionLeadership{}}
}

// leadership follows the leadership of a replica of the topic after the
// controller's state s was applied to it: it loads the partition when the
// node became its leader, and unloads it when it stopped leading it.
func (cp *coordinatorPartitions) leadership(m *clusterMember, h *replicaHost, s replica.LeaderAndISR) {
	p := h.tp.Partition
	cp.mu.Lock()
	cur := cp.led[p]
	if s.Leader == m.n.meta.NodeID {
		if cur != nil && cur.epoch == s.LeaderEpoch {
			cp.mu.Unlock()
			return
		}
		st := &partitionLeadership{epoch: s.LeaderEpoch, done: make(chan struct{})}
		cp.led[p] = st
		cp.mu.Unlock()
		md, _ := m.metadata()
		partitions := int32(len(md.Topics[cp.topic].Partitions))
		m.goUnlessLeaving(func() { cp.load(h, st, partitions) })
		return
	}
	if cur == nil {
		cp.mu.Unlock()
		return
	}
	delete(cp.led, p)
	cp.mu.Unlock()
	m.goUnlessLeaving(func() { cp.unload(p) })
}

// removed unloads a replica of the topic the node no longer hosts.
func (cp *coordinatorPartitions) removed(h *replicaHost) {
	cp.mu.Lock()
	_, led := cp.led[h.tp.Partition]
	delete(cp.led, h.tp.Partition)
	cp.mu.Unlock()
	if led {
		cp.unload(h.tp.Partition)
	}
}

// load replays the log of the partition of h, up to its log end offset,
// into the coordinator, unless the leadership st has ended meanwhile.
func (cp *coordinatorPartitions) load(h *replicaHost, st *partitionLeadership, partitions int32) {
	defer close(st.done)
	cp.loadMu.Lock()
	defer cp.loadMu.Unlock()
	p := h.tp.Partition
	if !cp.current(p, st) {
		return
	}
	cp.state.unload(p) // what an earlier leadership left
	start := time.Now()
	end := h.p.LogEndOffset()
	records, err := cp.state.load(h, st.epoch, end, partitions)
	cp.mu.Lock()
	current := cp.led[p] == st
	if current && err == nil {
		st.loaded = true
	}
	cp.mu.Unlock()
	switch {
	case err != nil:
		// The partition stays loading: its keys are answered
		// COORDINATOR_LOAD_IN_PROGRESS until the next leadership.
		cp.n.logger.Error("loading a coordinator partition failed", "partition", h.tp.String(), "err", err)
	case !current:
		cp.state.unload(p)
	default:
		cp.n.logger.Info("loaded a coordinator partition", "partition", h.tp.String(), "leader_epoch", st.epoch,
			"records", records, "log_end_offset", end, "took", time.Since(start))
	}
}

// unload forgets partition p, unless the node leads it again by now (its
// load unloads first).
func (cp *coordinatorPartitions) unload(p int32) {
	cp.loadMu.Lock()
	defer cp.loadMu.Unlock()
	cp.mu.Lock()
	_, led := cp.led[p]
	cp.mu.Unlock()
	if !led {
		cp.state.unload(p)
		cp.n.logger.Info("unloaded a coordinator partition", "partition", fmt.Sprintf("%s-%d", cp.topic, p))
	}
}

// awaitLoads waits until the loads of the partitions the node leads now
// have ended, or ctx ends.
func (cp *coordinatorPartitions) awaitLoads(ctx context.Context) error {
	cp.mu.Lock()
	var pending []chan struct{}
	for _, st := range cp.led {
		if !st.loaded {
			pending = append(pending, st.done)
		}
	}
	cp.mu.Unlock()
	for _, done := range pending {
		select {
		case <-done:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// current reports whether st is the node's leadership of partition p.
func (cp *coordinatorPartitions) current(p int32, st *partitionLeadership) bool {
	cp.mu.Lock()
	defer cp.mu.Unlock()
	return cp.led[p] == st
}

// loaded returns the partitions the node leads and has loaded.
func (cp *coordinatorPartitions) loaded() map[int32]bool {
	cp.mu.Lock()
	defer cp.mu.Unlock()
	out := map[int32]bool{}
	for p, st := range cp.led {
		if st.loaded {
			out[p] = true
		}
	}
	return out
}

// partitionOf returns the partition of the topic that holds key, once the
// node leads it and has loaded it; otherwise kafka.ErrNotCoordinator
// (kafka.ErrCoordinatorLoadInProgress while it loads). When the topic
// does not exist yet, it is created first (with partitions partitions and
// configs), and the node waits for the loads of the partitions it leads,
// so that the first request to a node on its own is answered.
func (cp *coordinatorPartitions) partitionOf(ctx context.Context, key string, partitions int32, configs map[string]string) (int32, error) {
	n := cp.n
	t, err := cp.ensureTopic(ctx, partitions, configs)
	if err != nil {
		return -1, err
	}
	p := kafka.CoordinatorPartition(key, int32(len(t.Partitions)))
	cp.mu.Lock()
	st := cp.led[p]
	loaded := st != nil && st.loaded
	cp.mu.Unlock()
	switch {
	case st == nil:
		return -1, fmt.Errorf("%w: node %d does not lead %s-%d (leader %d)", kafka.ErrNotCoordinator, n.meta.NodeID,
			cp.topic, p, t.Partitions[p].Leader)
	case !loaded:
		return -1, fmt.Errorf("%w: node %d is loading %s-%d", kafka.ErrCoordinatorLoadInProgress, n.meta.NodeID, cp.topic, p)
	}
	return p, nil
}

// ensureTopic returns the topic's metadata, creating the topic first if
// the node's metadata does not have it.
func (cp *coordinatorPartitions) ensureTopic(ctx context.Context, partitions int32, configs map[string]string) (controller.TopicState, error) {
	md, _ := cp.n.member.metadata()
	if _, ok := md.Topics[cp.topic]; !ok {
		if err := cp.createAndLoad(ctx, partitions, configs); err != nil {
			return controller.TopicState{}, fmt.Errorf("%w: creating %s: %v", kafka.ErrCoordinatorNotAvailable, cp.topic, err)
		}
		md, _ = cp.n.member.metadata()
	}
	t, ok := md.Topics[cp.topic]
	if !ok || len(t.Partitions) == 0 {
		return controller.TopicState{}, fmt.Errorf("%w: %s is being created", kafka.ErrCoordinatorNotAvailable, cp.topic)
	}
	return t, nil
}

// createAndLoad creates the topic and waits until the node has loaded
// the partitions of it that it leads. It is bounded, and cut short when
// the node leaves: Close waits for the requests in flight.
func (cp *coordinatorPartitions) createAndLoad(ctx context.Context, partitions int32, configs map[string]string) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	defer context.AfterFunc(cp.n.member.ctx, cancel)()
	if err := cp.create(ctx, partitions, configs); err != nil {
		return err
	}
	return cp.awaitLoads(ctx)
}

// coordinatorTopicReplicationFactor is Kafka's
// offsets.topic.replication.factor and
// transaction.state.log.replication.factor; a cluster with fewer live
// nodes creates the topic with as many replicas as it has nodes.
const coordinatorTopicReplicationFactor = 3

// create creates the topic through the controller, unless the node's
// metadata has it, and waits until the metadata does.
func (cp *coordinatorPartitions) create(ctx context.Context, partitions int32, configs map[string]string) error {
	n := cp.n
	m := n.member
	cp.createMu.Lock()
	defer cp.createMu.Unlock()
	// The latest metadata: the topic may exist by now, and the live
	// nodes decide the replication factor.
	if err := m.heartbeat(ctx); err != nil {
		return err
	}
	md, _ := m.metadata()
	if _, ok := md.Topics[cp.topic]; ok {
		return nil
	}
	live := 0
	for _, nd := range md.Nodes {
		if !nd.Fenced {
			live++
		}
	}
	nt := NewTopic{Name: cp.topic, Partitions: partitions, Configs: configs,
		ReplicationFactor: int16(max(1, min(coordinatorTopicReplicationFactor, live)))}
	err := n.createReplicatedTopic(ctx, nt)
	if errors.Is(err, kafka.ErrTopicAlreadyExists) {
		return m.heartbeat(ctx) // another node created it: learn of it now
	}
	if err == nil {
		n.logger.Info("created a coordinator topic", "topic", cp.topic, "partitions", partitions, "replication_factor", nt.ReplicationFactor)
	}
	return err
}

// coordinatorNode returns the node that coordinates key — the leader of
// its partition of the topic, which is created first if need be — with
// its host and port (empty and -1 for a node on its own, which registers
// no address: a TCP server fills in its own).
func (cp *coordinatorPartitions) coordinatorNode(ctx context.Context, key string, partitions int32, configs map[string]string) (id int32, host string, port int32, err error) {
	t, err := cp.ensureTopic(ctx, partitions, configs)
	if err != nil {
		return -1, "", -1, err
	}
	md, _ := cp.n.member.metadata()
	p := kafka.CoordinatorPartition(key, int32(len(t.Partitions)))
	leader := t.Partitions[p].Leader
	node, known := md.Nodes[leader]
	host, port, addrOK := "", int32(-1), true
	if node.Address != "" {
		host, port, addrOK = controller.HostPort(node.Address)
	}
	if leader == replica.NoLeader || !known || node.Fenced || !addrOK {
		return -1, "", -1, fmt.Errorf("%w: %s-%d has no leader", kafka.ErrCoordinatorNotAvailable, cp.topic, p)
	}
	return leader, host, port, nil
}

// coordinatorTopics returns the partitions of the coordinators the node
// hosts.
func (n *Broker) coordinatorTopics() []*coordinatorPartitions {
	return []*coordinatorPartitions{n.groups.offsets, n.txns.state, n.shareStates.state}
}

// coordinatorLeadership passes the controller's state s of replica h to
// the coordinator whose topic h is a partition of.
func (m *clusterMember) coordinatorLeadership(h *replicaHost, s replica.LeaderAndISR) {
	for _, cp := range m.n.coordinatorTopics() {
		if cp.topic == h.tp.Topic {
			cp.leadership(m, h, s)
		}
	}
}

// coordinatorRemoved tells the coordinator whose topic h is that the
// node no longer hosts h.
func (m *clusterMember) coordinatorRemoved(h *replicaHost) {
	for _, cp := range m.n.coordinatorTopics() {
		if cp.topic == h.tp.Topic {
			cp.removed(h)
		}
	}
}
