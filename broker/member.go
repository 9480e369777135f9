package broker

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"path"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/partlog/partlog/auth"
	"github.com/partlog/partlog/controller"
	"github.com/partlog/partlog/internal/bufpool"
	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/log"
	"github.com/partlog/partlog/partition"
	"github.com/partlog/partlog/quota"
	"github.com/partlog/partlog/replica"
	"github.com/partlog/partlog/transport"
	"github.com/partlog/partlog/transport/memnet"
)

// A broker hosts the replicas the controller assigns it. The member below
// is its part in the cluster:
// it registers with the controller, heartbeats (each answer carries the
// metadata when it changed), and reconciles its replicas with the
// metadata: it opens the partitions assigned to it, starts a replica.Node
// for each, applies every new leader and ISR, and removes the partitions of
// deleted topics. Leaders take appends through their replica; followers
// fetch from their leaders through an outbox that batches each destination's
// messages.

// clusterOptions configure a node's part in a cluster.
type clusterOptions struct {
	controller     controller.API // in process
	network        *memnet.Network
	controllerAddr string // over TCP
	advertised     string
	heartbeat      time.Duration
	replica        replica.Options
}

// clusterMember is a node's part in a cluster.
type clusterMember struct {
	n    *Broker
	ctl  controller.API
	net  peerNetwork
	out  *outbox
	opts clusterOptions
	// answers lends the node's leaders the buffers they read fetch
	// answers into, when peers are reached over TCP: tcpPeers gives each
	// back once it was written to the follower's connection. In process
	// the follower keeps the bytes it is given, and answers is nil.
	answers *bufpool.Pool

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
	// acls is the set of md.ACLs, for authorizing requests (Broker.ACLs):
	// made anew, under mu, only when a reconcile brings other ACLs, and
	// read without the lock.
	acls atomic.Pointer[auth.ACLs]
	// quotas is the Config of md.Quotas, for metering clients
	// (Broker.ClientQuotas): made anew, under mu, only when a reconcile
	// brings other quotas, and read without the lock.
	quotas atomic.Pointer[quota.Config]

	// peers are clients of other nodes (nodeClient).
	peers nodeClients

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

// HighWatermarkFileName is Kafka's replication-offset-checkpoint: the high
// watermark of every replicated partition, written now and then and on
// Close, so that a restarted replica does not start from zero.
const HighWatermarkFileName = "replication-offset-checkpoint"

// joinCluster registers the node and reconciles it with the first
// metadata, so that Open returns a node that already hosts its replicas.
func (n *Broker) joinCluster(ctx context.Context) error {
	o := clusterOptions{controller: n.opts.Controller, network: n.opts.Network, controllerAddr: n.opts.ControllerAddress,
		advertised: n.opts.AdvertisedAddress, heartbeat: n.opts.HeartbeatInterval, replica: n.opts.Replica}
	m := &clusterMember{n: n, opts: o, hosts: map[kafka.TopicPartition]*replicaHost{}, mdChanged: make(chan struct{}),
		offline: map[kafka.TopicPartition]error{},
		md:      &controller.Metadata{Version: -1, Nodes: map[int32]controller.NodeInfo{}, Topics: map[string]controller.TopicState{}},
		refresh: make(chan struct{}, 1)}
	m.acls.Store(auth.NewACLs(nil))
	m.quotas.Store(quota.NewConfig(nil))
	m.ctx, m.cancel = context.WithCancel(context.Background())
	if o.controller != nil {
		if o.network == nil {
			return fmt.Errorf("partlog: JoinCluster needs a network")
		}
		m.ctl, m.net = o.controller, memPeers{o.network}
		if o.advertised == "" && n.controller == nil {
			m.opts.advertised = memnet.Address(n.meta.NodeID)
		}
	} else {
		// An attempt at a controller that does not answer gives up soon
		// enough for the node to find a new active controller before it
		// fences the node.
		m.ctl = controller.NewClient(strings.Split(o.controllerAddr, ","),
			controller.ClientOptions{AttemptTimeout: max(4*o.heartbeat, 300*time.Millisecond), TLS: n.opts.ControllerTLS})
		m.answers = &bufpool.Pool{}
		m.net = newTCPPeers(m.answers, transport.DialOptions{TLS: n.opts.PeerTLS, SASL: n.opts.PeerSASL})
	}
	m.out = newOutbox(n.meta.NodeID, m.net, m.address, m.deliveryFailed)
	var err error
	if m.hws, err = log.ReadOffsetCheckpoint(n.opts.FS, path.Join(n.dir, HighWatermarkFileName)); err != nil {
		n.logger.Warn("ignoring the high watermark checkpoint", "err", err)
		m.hws = map[kafka.TopicPartition]int64{}
	}
	n.member = m
	if o.network != nil {
		o.network.Attach(n.meta.NodeID, n)
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

// deliveryFailed is told when replica messages to node to start failing:
// it asks for the metadata now (the node may have a new address), and
// logs a refusal that no retry mends — the other node does not let this
// one in (its TLS or SASL, or its ACLs: the principal this node connects
// as needs ClusterAction, or to be a super user).
func (m *clusterMember) deliveryFailed(to int32, err error) {
	switch {
	case errors.Is(err, kafka.ErrClusterAuthorizationFailed):
		m.n.logger.Error("replication refused: the principal this node connects to the others as needs ClusterAction on the cluster, or to be one of --super-users",
			"node", to, "err", err)
	case errors.Is(err, kafka.ErrSaslAuthenticationFailed), errors.Is(err, transport.ErrSSLAuthentication):
		m.n.logger.Error("replication refused: the other node does not authenticate this one", "node", to, "err", err)
	}
	m.refreshNow()
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
	if !slices.Equal(m.md.ACLs, md.ACLs) {
		m.acls.Store(auth.NewACLs(md.ACLs))
	}
	if !sameQuotas(m.md.Quotas, md.Quotas) {
		m.quotas.Store(quotaConfig(md.Quotas))
	}
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
	return log.WriteOffsetCheckpoint(m.n.opts.FS, path.Join(m.n.dir, HighWatermarkFileName), hws)
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
		m.n.logger.Info("controlled shutdown", "broker_epoch", epoch)
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
	m.closeNodeClients()
	if t, ok := m.ctl.(*controller.Client); ok {
		t.Close()
	}
	if m.opts.network != nil {
		m.opts.network.Detach(m.n.meta.NodeID, m.n)
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
	if err := m.reserveProducerIDsLocked(ctx); err != nil {
		return -1, err
	}
	id := m.pidNext
	m.pidNext++
	return id, nil
}

// tryProducerID hands out the next producer id of the node's block, if it
// has one left, without waiting for the controller.
func (m *clusterMember) tryProducerID() (int64, bool) {
	if !m.pidMu.TryLock() {
		return -1, false // a block is being fetched
	}
	defer m.pidMu.Unlock()
	if m.pidNext >= m.pidEnd {
		return -1, false
	}
	id := m.pidNext
	m.pidNext++
	return id, true
}

// reserveProducerIDs fetches the node's next block of producer ids from
// the controller, unless it has ids left.
func (m *clusterMember) reserveProducerIDs(ctx context.Context) error {
	m.pidMu.Lock()
	defer m.pidMu.Unlock()
	return m.reserveProducerIDsLocked(ctx)
}

func (m *clusterMember) reserveProducerIDsLocked(ctx context.Context) error {
	if m.pidNext < m.pidEnd {
		return nil
	}
	start, end, err := m.ctl.ProducerIDs(ctx, m.n.meta.NodeID)
	if err != nil {
		return err
	}
	m.pidNext, m.pidEnd = start, end
	return nil
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
