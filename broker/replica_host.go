package broker

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

// The replicas a cluster member hosts: opening each one's partition and
// starting its replication, applying the controller's state to it,
// restarting it after a full disk or taking it offline, and passing it the
// other nodes' replica messages.

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

// leadsIn reports whether node id leads the replica in leader epoch epoch.
func (h *replicaHost) leadsIn(id, epoch int32) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.state.Leader == id && h.state.LeaderEpoch == epoch
}

// remove stops a replica the node no longer hosts and deletes its
// directory.
func (m *clusterMember) remove(h *replicaHost) {
	m.n.logger.Info("removing a replica", "partition", h.tp.String())
	m.coordinatorRemoved(h)
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
func (m *clusterMember) host(tp kafka.TopicPartition, t controller.TopicState) (*replicaHost, error) {
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
	if ro.AnswerBuffers == nil && m.answers != nil {
		ro.AnswerBuffers = m.answers
	}
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
		m.coordinatorRemoved(h)
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
func (m *clusterMember) reconfigure(h *replicaHost, t controller.TopicState) {
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
	if self := m.n.meta.NodeID; s.Leader == self && cur.Leader == self && s.LeaderEpoch == cur.LeaderEpoch {
		// An ISR change of a partition this node leads, its own proposal
		// or the controller's (a fenced follower removed).
		m.n.metrics.ISRChanged(len(cur.ISR), len(s.ISR))
	}
	m.coordinatorLeadership(h, s)
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
	if !slices.Contains(state.Replicas, m.n.meta.NodeID) {
		// The change completed a reassignment that moves the partition
		// off this node: the metadata removes the replica.
		m.n.logger.Info("replica reassigned away", "partition", h.tp.String(), "replicas", state.Replicas)
		m.refreshNow()
		return
	}
	if err := m.apply(ctx, h, state); err != nil {
		m.n.logger.Warn("ISR change not applied; the next heartbeat brings it", "partition", h.tp.String(), "err", err)
		m.retryNextHeartbeat()
	}
}

// StepReplicas passes replica messages from another node to the replicas
// they are for (see memnet.Endpoint); it takes msgs and the bytes they
// hold. A fetch for a replica the node does not host (yet: it
// learns of a new topic at its next heartbeat) is answered with
// NOT_LEADER_OR_FOLLOWER, as Kafka's broker answers, so that the follower
// fetches again after its FetchBackoff rather than its FetchTimeout; other
// messages for such replicas are dropped, as the sender's replica
// recovers.
func (n *Broker) StepReplicas(ctx context.Context, msgs []replica.Message) error {
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
// makes the Broker a transport.InternalHandler.
func (n *Broker) HandleInternal(ctx context.Context, key int16, body []byte) ([]byte, error) {
	if key != transport.APIReplicaMessages {
		return nil, fmt.Errorf("%w: a node answers replica messages only; controller calls go to the controller", kafka.ErrInvalidRequest)
	}
	msgs, err := replica.DecodeMessages(body)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", kafka.ErrCorruptMessage, err)
	}
	return nil, n.StepReplicas(ctx, msgs)
}

// removeIfOtherTopic removes the directory of partition tp when its
// partition.metadata names another topic id than id: a topic of the same
// name was deleted and created again while the node was down, and the old
// topic's records must not pass for the new one's.
func (n *Broker) removeIfOtherTopic(tp kafka.TopicPartition, id string) error {
	f, err := n.opts.FS.Open(path.Join(n.dir, tp.String(), "partition.metadata"))
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
