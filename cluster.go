package partlog

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"path"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/partlog/partlog/controller"
	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/log"
	"github.com/partlog/partlog/partition"
	"github.com/partlog/partlog/replica"
	"github.com/partlog/partlog/transport"
)

// A node in a cluster (JoinCluster, ControllerAddress) hosts the replicas
// the controller assigns it. The member below is its part in the cluster:
// it registers with the controller, heartbeats (each answer carries the
// metadata when it changed), and reconciles its replicas with the
// metadata: it opens the partitions assigned to it, starts a replica.Node
// for each, applies every new leader and ISR, and removes the partitions of
// deleted topics. Leaders take appends through their replica; followers
// fetch from their leaders through an outbox that batches each destination's
// messages.

// clusterOptions configure a node's part in a cluster.
type clusterOptions struct {
	controller     *Controller // in process
	network        *MemNetwork
	controllerAddr string // over TCP
	advertised     string
	heartbeat      time.Duration
	replica        replica.Options
	// standalone configures the in-process controller of a node on its
	// own.
	standalone ControllerOptions
}

func (o clusterOptions) enabled() bool { return o.controller != nil || o.controllerAddr != "" }

// JoinCluster makes the node a member of the cluster that c controls,
// exchanging replica messages with the other members over the in-memory
// network net: several nodes in one process, for examples and tests.
func JoinCluster(c *Controller, net *MemNetwork) Option {
	return optionFunc(func(o *nodeOptions) { o.cluster.controller, o.cluster.network = c, net })
}

// ControllerAddress makes the node a member of the cluster whose
// controller listens at addr (host:port; see Controller.Serve), reaching
// the other members over TCP at the addresses they registered
// (AdvertisedAddress). The node must serve its own address with a
// transport.Server.
func ControllerAddress(addr string) Option {
	return optionFunc(func(o *nodeOptions) { o.cluster.controllerAddr = addr })
}

// AdvertisedAddress is the host:port other nodes and clients reach this
// node at, which it registers with the controller (Kafka's
// advertised.listeners).
func AdvertisedAddress(addr string) Option {
	return optionFunc(func(o *nodeOptions) { o.cluster.advertised = addr })
}

// HeartbeatInterval sets how often a cluster member heartbeats to the
// controller and learns of metadata changes (broker.heartbeat.interval.ms).
// The default is 500 ms; keep it well within the controller's
// SessionTimeout.
func HeartbeatInterval(d time.Duration) Option {
	return optionFunc(func(o *nodeOptions) { o.cluster.heartbeat = d })
}

// ReplicaOptions sets how a cluster member replicates: the tick, the
// replica.lag.time.max.ms, fetch sizes and waits (see replica.Options).
// MinInsyncReplicas, HighWatermark and BrokerEpoch are the node's to set,
// and are ignored here.
func ReplicaOptions(ro replica.Options) Option {
	return optionFunc(func(o *nodeOptions) { o.cluster.replica = ro })
}

// clusterMember is a node's part in a cluster.
type clusterMember struct {
	n    *Node
	ctl  controller.API
	net  peerNetwork
	out  *outbox
	opts clusterOptions

	mu          sync.Mutex
	brokerEpoch int64
	md          *controller.Metadata
	mdChanged   chan struct{} // closed and replaced when md changes
	hosts       map[kafka.TopicPartition]*replicaHost
	hws         map[kafka.TopicPartition]int64 // from the checkpoint, for replicas not yet started
	// offline holds the replicas whose logs could not be opened, and why:
	// they answer KAFKA_STORAGE_ERROR, as Kafka takes the partitions of a
	// failed log directory offline, until the node restarts or the topic
	// is deleted.
	offline map[kafka.TopicPartition]error
	// retry says a reconcile failed in part: the next heartbeat asks for
	// the metadata again and reconciles even if it is not newer.
	retry bool

	pidMu   sync.Mutex
	pidNext int64
	pidEnd  int64

	reconcileMu sync.Mutex
	refresh     chan struct{}
	// ctx ends when the node leaves: calls to the controller stop.
	// leaveMu orders starting goroutines (wg) with leave's wait for them.
	leaveMu sync.Mutex
	ctx     context.Context
	cancel  context.CancelFunc
	wg      sync.WaitGroup
}

// replicaHost is one replica the node hosts.
type replicaHost struct {
	tp      kafka.TopicPartition
	topicID string
	p       *partition.Partition
	// syncs says the replica's driver syncs the log before it
	// acknowledges (the topic's flush policy).
	syncs bool
	// logAppendTime says the topic stamps batches with the time they are
	// appended (message.timestamp.type), which a produce answer carries.
	logAppendTime atomic.Bool

	// applyMu orders applies: the heartbeat's reconcile and an
	// AlterPartition answer may bring states at once.
	applyMu sync.Mutex
	mu      sync.Mutex
	state   replica.LeaderAndISR // the last state applied
	configs map[string]string    // the topic's own configs last applied
	// rn runs the replication; a new one replaces it after a full disk
	// stopped it (recoverReplica).
	rn *replica.Node
}

// node returns the replication's loop.
func (h *replicaHost) node() *replica.Node {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.rn
}

// leads reports whether the replica leads in the last state applied.
func (h *replicaHost) leads(id int32) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.state.Leader == id
}

// HighWatermarkFileName is Kafka's replication-offset-checkpoint: the high
// watermark of every replicated partition, written now and then and on
// Close, so that a restarted replica does not start from zero.
const HighWatermarkFileName = "replication-offset-checkpoint"

// joinCluster registers the node and reconciles it with the first
// metadata, so that Open returns a node that already hosts its replicas.
func (n *Node) joinCluster(ctx context.Context) error {
	o := n.opts.cluster
	if o.heartbeat <= 0 {
		o.heartbeat = 500 * time.Millisecond
	}
	m := &clusterMember{n: n, opts: o, hosts: map[kafka.TopicPartition]*replicaHost{}, mdChanged: make(chan struct{}),
		offline: map[kafka.TopicPartition]error{},
		md:      &controller.Metadata{Version: -1, Nodes: map[int32]controller.NodeInfo{}, Topics: map[string]replica.TopicState{}},
		refresh: make(chan struct{}, 1)}
	m.ctx, m.cancel = context.WithCancel(context.Background())
	if o.controller != nil {
		if o.network == nil {
			return fmt.Errorf("partlog: JoinCluster needs a network")
		}
		m.ctl, m.net = o.controller, o.network
		if o.advertised == "" && n.controller == nil {
			m.opts.advertised = memAddress(n.meta.NodeID)
		}
	} else {
		m.ctl, m.net = controller.Dial(o.controllerAddr), newTCPPeers()
	}
	m.out = newOutbox(n.meta.NodeID, m.net, m.address, m.refreshNow)
	var err error
	if m.hws, err = log.ReadOffsetCheckpoint(n.opts.fs, path.Join(n.dir, HighWatermarkFileName)); err != nil {
		n.logger.Warn("ignoring the high watermark checkpoint", "err", err)
		m.hws = map[kafka.TopicPartition]int64{}
	}
	n.member = m
	if o.network != nil {
		o.network.attach(n.meta.NodeID, n)
	}
	epoch, err := m.registerRetrying(ctx)
	if err != nil {
		return fmt.Errorf("partlog: register with the controller: %w", err)
	}
	m.mu.Lock()
	m.brokerEpoch = epoch
	m.mu.Unlock()
	if err := m.heartbeat(ctx); err != nil {
		return fmt.Errorf("partlog: first heartbeat: %w", err)
	}
	m.wg.Go(m.run)
	return nil
}

// registerRetrying registers the node with the controller, calling until
// it answers or ctx ends: it may be starting, or restarting.
func (m *clusterMember) registerRetrying(ctx context.Context) (int64, error) {
	for {
		epoch, err := m.ctl.Register(ctx, m.n.meta.NodeID, m.opts.advertised)
		if err == nil || !kafka.IsRetriable(err) && !errors.Is(err, kafka.ErrCoordinatorNotAvailable) {
			return epoch, err
		}
		select {
		case <-ctx.Done():
			return 0, fmt.Errorf("%w (last error: %w)", ctx.Err(), err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// address returns where node id serves, from the metadata.
func (m *clusterMember) address(id int32) string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.md.Nodes[id].Address
}

// run heartbeats until the node closes.
// Each heartbeat is a long poll: the controller answers at once when the
// metadata changed, and otherwise after the heartbeat interval, so the node
// learns of a new leader as it is elected and still heartbeats every
// interval.
func (m *clusterMember) run() {
	for m.ctx.Err() == nil {
		ctx, cancel := context.WithTimeout(m.ctx, m.opts.heartbeat+max(m.opts.heartbeat*4, 2*time.Second))
		err := m.heartbeatWaiting(ctx, m.opts.heartbeat)
		cancel()
		if err == nil {
			continue
		}
		if m.ctx.Err() == nil {
			m.n.logger.Warn("heartbeat failed", "err", err)
		}
		t := time.NewTimer(m.opts.heartbeat)
		select {
		case <-m.ctx.Done():
		case <-t.C:
		case <-m.refresh:
		}
		t.Stop()
	}
}

// refreshNow asks for a heartbeat now, to learn of a change sooner.
func (m *clusterMember) refreshNow() {
	select {
	case m.refresh <- struct{}{}:
	default:
	}
}

// heartbeat tells the controller the node is alive and reconciles with the
// metadata when it changed.
func (m *clusterMember) heartbeat(ctx context.Context) error { return m.heartbeatWaiting(ctx, 0) }

// heartbeatWaiting is heartbeat, letting the controller hold the answer
// up to wait for a change of the metadata.
func (m *clusterMember) heartbeatWaiting(ctx context.Context, wait time.Duration) error {
	m.mu.Lock()
	known, epoch := m.md.Version, m.brokerEpoch
	if m.retry {
		known = -1 // the whole metadata again, to apply what failed
	}
	m.mu.Unlock()
	resp, err := m.ctl.Heartbeat(ctx, controller.Heartbeat{Node: m.n.meta.NodeID, BrokerEpoch: epoch,
		KnownVersion: known, Address: m.opts.advertised, Wait: wait})
	if err != nil {
		return err
	}
	if resp.Metadata != nil {
		m.reconcile(resp.Metadata)
	}
	return nil
}

// reconcile makes the replicas the node hosts agree with md.
func (m *clusterMember) reconcile(md *controller.Metadata) {
	m.reconcileMu.Lock()
	defer m.reconcileMu.Unlock()
	m.mu.Lock()
	if m.md.Version >= md.Version && !m.retry {
		m.mu.Unlock()
		return
	}
	m.retry = false
	first := m.md.Version < 0
	m.md = md
	close(m.mdChanged)
	m.mdChanged = make(chan struct{})
	m.mu.Unlock()

	id := m.n.meta.NodeID
	want := map[kafka.TopicPartition]bool{}
	for _, name := range slices.Sorted(maps.Keys(md.Topics)) {
		t := md.Topics[name]
		for p, s := range t.Partitions {
			if !slices.Contains(s.Replicas, id) {
				continue
			}
			tp := kafka.TopicPartition{Topic: name, Partition: int32(p)}
			want[tp] = true
			if m.offlineErr(tp) != nil {
				continue
			}
			h, err := m.host(tp, t)
			if err != nil && m.ctx.Err() == nil {
				m.n.logger.Error("partition offline: its log could not be opened", "partition", tp.String(), "err", err)
				m.mu.Lock()
				m.offline[tp] = err
				m.mu.Unlock()
				continue
			}
			if err == nil {
				// Not the heartbeat's deadline: opening a partition
				// (preallocating its indexes) may take a while, and the
				// replica must get its state all the same.
				err = m.apply(m.ctx, h, s)
			}
			if err != nil && m.ctx.Err() != nil {
				return // the node is leaving: nothing to host, nothing wrong
			}
			if err != nil {
				m.n.logger.Error("cannot host a replica", "partition", tp.String(), "err", err)
				m.retryNextHeartbeat()
			}
		}
	}
	m.mu.Lock()
	var gone []*replicaHost
	for tp, h := range m.hosts {
		if !want[tp] {
			gone = append(gone, h)
			delete(m.hosts, tp)
			delete(m.hws, tp)
		}
	}
	var goneOffline []kafka.TopicPartition
	for tp := range m.offline {
		if !want[tp] {
			goneOffline = append(goneOffline, tp)
			delete(m.offline, tp)
		}
	}
	m.mu.Unlock()
	for _, h := range gone {
		m.remove(h)
	}
	for _, tp := range goneOffline {
		// What the failed open left, if anything.
		if err := m.n.logs.Remove(tp); err != nil {
			m.n.logger.Error("removing an offline replica failed", "partition", tp.String(), "err", err)
		}
	}
	if first {
		m.removeStrays(want)
	}
}

// remove stops a replica the node no longer hosts and deletes its
// directory.
func (m *clusterMember) remove(h *replicaHost) {
	m.n.logger.Info("removing a replica", "partition", h.tp.String())
	m.offsetsRemoved(h)
	m.stopReplica(h)
	h.p.Close()
	if err := m.n.logs.Remove(h.tp); err != nil {
		m.n.logger.Error("removing a replica failed", "partition", h.tp.String(), "err", err)
	}
}

// stopReplica stops a replica's loop, reporting the log write failure
// that had stopped it, if one did.
func (m *clusterMember) stopReplica(h *replicaHost) {
	if err := h.node().Close(); err != nil {
		m.n.logger.Error("a replica had stopped on a log write failure", "partition", h.tp.String(), "err", err)
	}
}

// removeStrays removes partition directories of replicated topics the
// metadata no longer assigns to the node: a crash can leave them while a
// topic is being deleted.
func (m *clusterMember) removeStrays(want map[kafka.TopicPartition]bool) {
	present, err := m.n.logs.Partitions()
	if err != nil {
		return
	}
	for _, tp := range present {
		if want[tp] || tp == controller.Topic {
			continue
		}
		m.n.logger.Warn("removing a replica the controller no longer assigns", "partition", tp.String())
		if err := m.n.logs.Remove(tp); err != nil {
			m.n.logger.Error("removing a replica failed", "partition", tp.String(), "err", err)
		}
	}
}

// host returns the replica of tp, opening its partition and starting its
// replica.Node first if needed.
func (m *clusterMember) host(tp kafka.TopicPartition, t replica.TopicState) (*replicaHost, error) {
	m.mu.Lock()
	h := m.hosts[tp]
	hw := m.hws[tp]
	epoch := m.brokerEpoch
	if h != nil && h.topicID != t.ID {
		// The topic was deleted and created again between two
		// heartbeats: the replica is the old topic's.
		delete(m.hosts, tp)
		delete(m.hws, tp)
		hw = 0
	}
	m.mu.Unlock()
	if h != nil && h.topicID == t.ID {
		m.reconfigure(h, t)
		return h, nil
	}
	if h != nil {
		m.remove(h)
	}
	n := m.n
	if err := n.removeIfOtherTopic(tp, t.ID); err != nil {
		return nil, err
	}
	cfg := n.topicConfig(t.Configs)
	p, syncs, err := n.newPartition(tp, t.ID, cfg, hw)
	if err != nil {
		return nil, err
	}
	h = &replicaHost{tp: tp, topicID: t.ID, p: p, syncs: syncs, configs: maps.Clone(t.Configs),
		state: replica.LeaderAndISR{Leader: replica.NoLeader, LeaderEpoch: -1, PartitionEpoch: -1}}
	h.logAppendTime.Store(cfg.PartitionOptions().LogAppendTime)
	rn, err := m.startReplica(h, hw, epoch)
	if err != nil {
		p.Close()
		return nil, err
	}
	h.rn = rn
	m.mu.Lock()
	m.hosts[tp] = h
	m.mu.Unlock()
	return h, nil
}

// startReplica starts the replication of h's partition from its log, with
// high watermark hw (at most the log end) in broker epoch epoch.
func (m *clusterMember) startReplica(h *replicaHost, hw, epoch int64) (*replica.Node, error) {
	n := m.n
	h.mu.Lock()
	cfg := n.topicConfig(h.configs)
	h.mu.Unlock()
	ro := m.opts.replica
	ro.MinInsyncReplicas = cfg.PartitionOptions().MinInsyncReplicas
	ro.HighWatermark = min(hw, h.p.LogEndOffset())
	ro.BrokerEpoch = uint32(epoch)
	if ro.Logger == nil {
		ro.Logger = n.logger
	}
	ro.CheckAppend = h.p.CheckAppend
	rlog := h.p.ReplicaLog(h.syncs)
	r, err := replica.New(n.meta.NodeID, h.tp, rlog, ro)
	if err != nil {
		return nil, err
	}
	var rn *replica.Node
	rn = replica.StartNode(r, rlog, m.out, replica.NodeOptions{
		OnHighWatermark:  h.p.SetHighWatermark,
		OnAlterPartition: func(c replica.ISRChange) { m.goUnlessLeaving(func() { m.alterPartition(h, c) }) },
		OnStop:           func(err error) { m.goUnlessLeaving(func() { m.recoverReplica(h, rn, err) }) },
		Logger:           n.logger,
	})
	return rn, nil
}

// recoverReplica follows the stop of a replica's loop rn on a log write
// failure err. A full disk (log.ErrDiskFull) left the log as it was before
// the failed write, so the replication starts again from the log, in the
// state the controller gave it: the appends that failed were answered
// with the error, and the next ones succeed once there is room. Any other
// failure takes the replica offline (KAFKA_STORAGE_ERROR), as Kafka takes
// the partitions of a failed log directory offline, while the node serves
// the rest.
func (m *clusterMember) recoverReplica(h *replicaHost, rn *replica.Node, err error) {
	h.applyMu.Lock()
	defer h.applyMu.Unlock()
	if h.node() != rn {
		return // recovered already
	}
	if !errors.Is(err, log.ErrDiskFull) {
		m.n.logger.Error("partition offline: its log failed", "partition", h.tp.String(), "err", err)
		m.mu.Lock()
		if m.hosts[h.tp] == h {
			delete(m.hosts, h.tp)
			m.offline[h.tp] = err
		}
		m.mu.Unlock()
		m.offsetsRemoved(h)
		h.p.Close()
		return
	}
	m.mu.Lock()
	epoch := m.brokerEpoch
	m.mu.Unlock()
	next, serr := m.startReplica(h, h.p.HighWatermark(), epoch)
	if serr != nil {
		m.n.logger.Error("restarting a replica after a full disk failed", "partition", h.tp.String(), "err", serr)
		return
	}
	h.p.ResetProducerState()
	h.mu.Lock()
	h.rn = next
	state := h.state
	h.mu.Unlock()
	if state.LeaderEpoch >= 0 {
		if err := next.Apply(m.ctx, state); err != nil {
			m.n.logger.Warn("restarted replica did not take its state; the next heartbeat brings it", "partition", h.tp.String(), "err", err)
			m.retryNextHeartbeat()
		}
	}
	m.n.logger.Warn("replica restarted after a full disk", "partition", h.tp.String(), "cause", err)
}

// reconfigure applies a topic's configs, when they changed, to a replica
// the node hosts: to its log and partition, and
// min.insync.replicas to its replication.
func (m *clusterMember) reconfigure(h *replicaHost, t replica.TopicState) {
	h.mu.Lock()
	same := maps.Equal(h.configs, t.Configs)
	h.configs = maps.Clone(t.Configs)
	h.mu.Unlock()
	if same {
		return
	}
	cfg := m.n.topicConfig(t.Configs)
	m.n.reconfigure(cfg, h.p)
	po := cfg.PartitionOptions()
	h.logAppendTime.Store(po.LogAppendTime)
	if err := h.node().SetMinInsyncReplicas(m.ctx, po.MinInsyncReplicas); err != nil {
		m.n.logger.Warn("applying min.insync.replicas to a replica", "partition", h.tp.String(), "err", err)
	}
}

// apply gives a replica the controller's state for it, if newer than the
// one it has.
func (m *clusterMember) apply(ctx context.Context, h *replicaHost, s replica.LeaderAndISR) error {
	h.applyMu.Lock()
	defer h.applyMu.Unlock()
	h.mu.Lock()
	cur := h.state
	h.mu.Unlock()
	if s.LeaderEpoch < cur.LeaderEpoch || s.LeaderEpoch == cur.LeaderEpoch && s.PartitionEpoch <= cur.PartitionEpoch {
		return nil
	}
	if err := h.node().Apply(ctx, s); err != nil {
		if errors.Is(err, replica.ErrStaleLeaderEpoch) {
			return nil // a newer state is applied already
		}
		return fmt.Errorf("apply the controller's state: %w", err)
	}
	if s.LeaderEpoch != cur.LeaderEpoch {
		// Batches this replica checked as leader may never have been
		// written: rebuild the producer state from the log.
		h.p.ResetProducerState()
	}
	h.p.SetLeadership(s.LeaderEpoch, s.ISR)
	h.mu.Lock()
	h.state = s
	h.mu.Unlock()
	m.offsetsLeadership(h, s)
	return nil
}

// alterPartition asks the controller for the ISR change a leader proposed
// and gives the leader the answer.
func (m *clusterMember) alterPartition(h *replicaHost, c replica.ISRChange) {
	ctx, cancel := context.WithTimeout(m.ctx, 10*time.Second)
	defer cancel()
	state, err := m.ctl.AlterPartition(ctx, m.n.meta.NodeID, h.tp, c)
	if err != nil {
		m.n.logger.Info("ISR change refused", "partition", h.tp.String(), "isr", c.ISR, "err", err)
		if !kafka.IsRetriable(err) {
			if err := h.node().RejectISRChange(ctx, c); err != nil {
				// The replica stopped: there is nothing left to tell.
				m.n.logger.Debug("ISR change refusal not delivered", "partition", h.tp.String(), "err", err)
			}
		}
		return
	}
	if err := m.apply(ctx, h, state); err != nil {
		m.n.logger.Warn("ISR change not applied; the next heartbeat brings it", "partition", h.tp.String(), "err", err)
		m.retryNextHeartbeat()
	}
}

// retryNextHeartbeat makes the next heartbeat fetch the whole metadata and
// reconcile with it, even if it is no newer: something in the last one
// was not applied.
func (m *clusterMember) retryNextHeartbeat() {
	m.mu.Lock()
	m.retry = true
	m.mu.Unlock()
}

// offlineErr returns why replica tp is offline, or nil.
func (m *clusterMember) offlineErr(tp kafka.TopicPartition) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.offline[tp]
}

// replica returns the replica of tp the node hosts, or nil.
func (m *clusterMember) replica(tp kafka.TopicPartition) *replicaHost {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.hosts[tp]
}

// metadata returns the latest metadata and a channel closed when it
// changes.
func (m *clusterMember) metadata() (*controller.Metadata, <-chan struct{}) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.md, m.mdChanged
}

// waitReconciled waits until the node's metadata reaches version and the
// node has reconciled its replicas with it: it hosts, leads and follows
// what that metadata says.
func (m *clusterMember) waitReconciled(ctx context.Context, version int64) error {
	m.refreshNow()
	for {
		md, changed := m.metadata()
		if md.Version >= version {
			break
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return fmt.Errorf("%w: waiting for the metadata to reach this node", kafka.ErrRequestTimedOut)
		}
	}
	// The metadata is published before the replicas are reconciled with
	// it: wait for the reconcile in progress.
	m.reconcileMu.Lock()
	m.reconcileMu.Unlock()
	return nil
}

// partitions returns the partitions of the replicas the node hosts.
func (m *clusterMember) partitions() []*partition.Partition {
	m.mu.Lock()
	defer m.mu.Unlock()
	ps := make([]*partition.Partition, 0, len(m.hosts))
	for _, h := range m.hosts {
		ps = append(ps, h.p)
	}
	return ps
}

// compactedPartitions returns the partitions of the replicas the node
// hosts whose topic's cleanup.policy includes compact: each replica,
// leader or follower, cleans its own log, as in Kafka.
func (m *clusterMember) compactedPartitions() []*partition.Partition {
	m.mu.Lock()
	hosts := slices.Collect(maps.Values(m.hosts))
	m.mu.Unlock()
	var ps []*partition.Partition
	for _, h := range hosts {
		h.mu.Lock()
		own := h.configs
		h.mu.Unlock()
		if m.n.topicConfig(own).Compacted() {
			ps = append(ps, h.p)
		}
	}
	return ps
}

// checkpointHighWatermarks writes every hosted replica's high watermark.
func (m *clusterMember) checkpointHighWatermarks() error {
	m.mu.Lock()
	hws := maps.Clone(m.hws)
	for tp, h := range m.hosts {
		hws[tp] = h.p.HighWatermark()
	}
	m.mu.Unlock()
	return log.WriteOffsetCheckpoint(m.n.opts.fs, path.Join(m.n.dir, HighWatermarkFileName), hws)
}

// stepReplicas passes replica messages from another node to the replicas
// they are for. A fetch for a replica the node does not host (yet: it
// learns of a new topic at its next heartbeat) is answered with
// NOT_LEADER_OR_FOLLOWER, as Kafka's broker answers, so that the follower
// fetches again after its FetchBackoff rather than its FetchTimeout; other
// messages for such replicas are dropped, as the sender's replica
// recovers.
func (n *Node) stepReplicas(ctx context.Context, msgs []replica.Message) error {
	if err := n.begin(); err != nil {
		return err
	}
	defer n.end()
	m := n.member
	for _, msg := range msgs {
		tp, ok := messagePartition(msg)
		if !ok {
			continue
		}
		h := m.replica(tp)
		if h == nil {
			if msg.Fetch != nil {
				// Lossy, as every replica message: the follower fetches
				// again after its timeout if this answer is lost.
				_ = m.out.Send(ctx, msg.From, replica.Message{Type: replica.MsgFetchResponse, From: n.meta.NodeID, To: msg.From, Seq: msg.Seq,
					FetchResponse: &kafka.ReplicaFetchPartitionResponse{Topic: tp.Topic, Partition: tp.Partition, LeaderEpoch: -1,
						HighWatermark: -1, LogStartOffset: -1, LogEndOffset: -1,
						Err: fmt.Errorf("%w: node %d hosts no replica of %s", kafka.ErrNotLeaderOrFollower, n.meta.NodeID, tp)}})
			}
			continue
		}
		if err := h.node().Step(ctx, msg); err != nil {
			return err
		}
	}
	return nil
}

// messagePartition returns the partition a replica message is about.
func messagePartition(m replica.Message) (kafka.TopicPartition, bool) {
	switch {
	case m.Fetch != nil:
		return kafka.TopicPartition{Topic: m.Fetch.Topic, Partition: m.Fetch.Partition}, true
	case m.FetchResponse != nil:
		return kafka.TopicPartition{Topic: m.FetchResponse.Topic, Partition: m.FetchResponse.Partition}, true
	case m.EpochRequest != nil:
		return kafka.TopicPartition{Topic: m.EpochRequest.Topic, Partition: m.EpochRequest.Partition}, true
	case m.EpochResponse != nil:
		return kafka.TopicPartition{Topic: m.EpochResponse.Topic, Partition: m.EpochResponse.Partition}, true
	}
	return kafka.TopicPartition{}, false
}

// HandleInternal answers partlog's internal calls that come over TCP:
// replica messages from other nodes (transport.APIReplicaMessages). It
// makes the Node a transport.InternalHandler.
func (n *Node) HandleInternal(ctx context.Context, key int16, body []byte) ([]byte, error) {
	if key != transport.APIReplicaMessages {
		return nil, fmt.Errorf("%w: a node answers replica messages only; controller calls go to the controller", kafka.ErrInvalidRequest)
	}
	msgs, err := replica.DecodeMessages(body)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", kafka.ErrCorruptMessage, err)
	}
	return nil, n.stepReplicas(ctx, msgs)
}

// leave shuts the node's part in the cluster down: with controlled, a
// controlled shutdown first, so that leadership moves now; then the
// replicas stop and their high watermarks are checkpointed.
func (m *clusterMember) leave(controlled bool) {
	// Heartbeats stop first: one sent after the controlled shutdown, in the
	// same broker epoch, would unfence the node, and the new leaders would
	// take it back into their ISRs while its replicas still fetch.
	m.leaveMu.Lock()
	m.cancel()
	m.leaveMu.Unlock()
	m.wg.Wait() // no heartbeat, reconcile or ISR change runs from here on
	if controlled {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		m.mu.Lock()
		epoch := m.brokerEpoch
		m.mu.Unlock()
		if err := m.ctl.Shutdown(ctx, m.n.meta.NodeID, epoch); err != nil {
			m.n.logger.Warn("controlled shutdown failed", "err", err)
		}
		cancel()
	}
	m.mu.Lock()
	hosts := slices.Collect(maps.Values(m.hosts))
	m.mu.Unlock()
	for _, h := range hosts {
		m.stopReplica(h)
	}
	m.out.close()
	m.net.close()
	if t, ok := m.ctl.(*controller.Client); ok {
		t.Close()
	}
	if m.opts.network != nil {
		m.opts.network.detach(m.n.meta.NodeID, m.n)
	}
	if err := m.checkpointHighWatermarks(); err != nil {
		m.n.logger.Error("writing the high watermark checkpoint failed", "err", err)
	}
	for _, h := range hosts {
		h.p.Close()
	}
}

// producerID hands out a producer id from a block the controller
// reserved for this node, so that ids are unique in the cluster.
func (m *clusterMember) producerID(ctx context.Context) (int64, error) {
	m.pidMu.Lock()
	defer m.pidMu.Unlock()
	if m.pidNext >= m.pidEnd {
		start, end, err := m.ctl.ProducerIDs(ctx, m.n.meta.NodeID)
		if err != nil {
			return -1, err
		}
		m.pidNext, m.pidEnd = start, end
	}
	id := m.pidNext
	m.pidNext++
	return id, nil
}

// goUnlessLeaving runs f on a goroutine that leave waits for, unless the
// node is leaving.
func (m *clusterMember) goUnlessLeaving(f func()) {
	m.leaveMu.Lock()
	defer m.leaveMu.Unlock()
	if m.ctx.Err() != nil {
		return
	}
	m.wg.Go(f)
}

// removeIfOtherTopic removes the directory of partition tp when its
// partition.metadata names another topic id than id: a topic of the same
// name was deleted and created again while the node was down, and the old
// topic's records must not pass for the new one's.
func (n *Node) removeIfOtherTopic(tp kafka.TopicPartition, id string) error {
	f, err := n.opts.fs.Open(path.Join(n.dir, tp.String(), "partition.metadata"))
	if err != nil {
		return nil // none: a new replica, or one from before topic ids
	}
	data, err := io.ReadAll(f)
	f.Close()
	if err != nil {
		return fmt.Errorf("partlog: read %s partition.metadata: %w", tp, err)
	}
	for line := range strings.Lines(string(data)) {
		k, v, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok || strings.TrimSpace(k) != "topic_id" || strings.TrimSpace(v) == id || id == "" {
			continue
		}
		n.logger.Warn("removing the replica of a deleted topic of the same name", "partition", tp.String(), "topic_id", strings.TrimSpace(v))
		if err := n.logs.Remove(tp); err != nil {
			return fmt.Errorf("partlog: remove %s: %w", tp, err)
		}
	}
	return nil
}
