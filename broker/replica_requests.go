package broker

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/partlog/partlog/controller"
	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/log"
	"github.com/partlog/partlog/partition"
	"github.com/partlog/partlog/record"
	"github.com/partlog/partlog/replica"
	"github.com/partlog/partlog/transport"
)

// This file answers requests for replicated topics, on a node in a
// cluster: appends go through the partition's replica, reads only to its
// leader, and topic changes to the controller.

// hostedReplica returns the replica of a partition the node hosts. The
// errors are kafka.ErrUnknownTopicOrPartition for a partition the cluster
// does not have, ErrNotLeaderOrFollower for one the node does not host,
// and ErrKafkaStorage for one whose log could not be opened.
func (n *Broker) hostedReplica(name string, id int32) (*replicaHost, error) {
	m := n.member
	tp := kafka.TopicPartition{Topic: name, Partition: id}
	if h := m.replica(tp); h != nil {
		return h, nil
	}
	if err := m.offlineErr(tp); err != nil {
		return nil, fmt.Errorf("%w: %s is offline: its log could not be opened: %w", kafka.ErrKafkaStorage, tp, err)
	}
	md, _ := m.metadata()
	t, known := md.Topics[name]
	if !known || id < 0 || int(id) >= len(t.Partitions) {
		return nil, fmt.Errorf("%w: %s-%d", kafka.ErrUnknownTopicOrPartition, name, id)
	}
	return nil, fmt.Errorf("%w: node %d hosts no replica of %s-%d (leader %d)", kafka.ErrNotLeaderOrFollower,
		n.meta.NodeID, name, id, t.Partitions[id].Leader)
}

// leaderReplica is hostedReplica for a request only the leader answers.
func (n *Broker) leaderReplica(name string, id int32) (*replicaHost, error) {
	h, err := n.hostedReplica(name, id)
	if err != nil {
		return nil, err
	}
	h.mu.Lock()
	leader := h.state.Leader
	h.mu.Unlock()
	if leader != n.meta.NodeID {
		return nil, fmt.Errorf("%w: node %d does not lead %s-%d (leader %d)", kafka.ErrNotLeaderOrFollower,
			n.meta.NodeID, name, id, leader)
	}
	return h, nil
}

// defaultProduceTimeout bounds an acks=all append when the request names
// no timeout (Kafka's request.timeout.ms).
const defaultProduceTimeout = 30 * time.Second

// appendReplicated appends batch as the leader of h's partition and waits
// as acks asks: written on the leader (acks=1), or below the high
// watermark (acks=all). A retry of a batch already in the log is answered
// with the original's offsets once the high watermark passes them.
func (n *Broker) appendReplicated(ctx context.Context, h *replicaHost, batch []byte, acks kafka.Acks, timeout time.Duration) (base, appendTime int64, err error) {
	if timeout <= 0 {
		timeout = defaultProduceTimeout
	}
	// A request that arrives after its caller gave up is still carried
	// out, as a Kafka broker carries out a request whose client has gone,
	// bounded by its own timeout. One whose caller gives up while it waits
	// stops waiting: its connection's next requests are not held up behind
	// it (detaching every request so starved a cluster's replication under
	// load: TestClusterProcessesKillLeader).
	if ctx.Err() != nil {
		ctx = context.WithoutCancel(ctx)
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	c, err := h.node().Propose(ctx, batch, acks)
	var dup *partition.DuplicateError
	switch {
	case errors.As(err, &dup):
		if acks == kafka.AcksAll {
			if err := waitHighWatermark(ctx, h.p, dup.Batch.LastOffset+1); err != nil {
				return -1, -1, err
			}
		}
		return dup.Batch.FirstOffset, -1, nil
	case errors.Is(err, context.DeadlineExceeded) && ctx.Err() != nil:
		return -1, -1, fmt.Errorf("%w: %s-%d: no answer from the in-sync replicas within %v", kafka.ErrRequestTimedOut, h.tp.Topic, h.tp.Partition, timeout)
	case errors.Is(err, replica.ErrClosed) && (errors.Is(err, log.ErrDiskFull) || errors.Is(err, log.ErrStorage)):
		// The replica stopped on a write failure, and is being restarted
		// or taken offline (recoverReplica).
		return -1, -1, fmt.Errorf("%w: %w", kafka.ErrKafkaStorage, err)
	case errors.Is(err, replica.ErrClosed):
		return -1, -1, fmt.Errorf("%w: %w", kafka.ErrNotLeaderOrFollower, err)
	case err != nil:
		return -1, -1, err
	}
	appendTime = -1
	if h.logAppendTime.Load() {
		if hd, err := record.ParseHeader(batch); err == nil {
			appendTime = hd.MaxTimestamp
		}
	}
	return c.BaseOffset, appendTime, nil
}

// waitHighWatermark waits until p's high watermark reaches offset.
func waitHighWatermark(ctx context.Context, p *partition.Partition, offset int64) error {
	wake := make(chan struct{}, 1)
	p.Notify(wake)
	defer p.Stop(wake)
	for p.HighWatermark() < offset {
		select {
		case <-wake:
		case <-ctx.Done():
			return fmt.Errorf("%w: waiting for the high watermark to pass %d", kafka.ErrRequestTimedOut, offset)
		}
	}
	return nil
}

// metadataResponse answers Metadata from the controller's metadata: the
// live nodes and the topics asked for. A partition whose replica on this
// node is offline, and which this node leads, has no leader and
// KAFKA_STORAGE_ERROR, as Kafka answers for a partition on a failed log
// directory.
func (n *Broker) metadataResponse(req *transport.MetadataRequest) *transport.MetadataResponse {
	md, _ := n.member.metadata()
	// KRaft brokers name a live broker as the controller (KIP-590): admin
	// clients send it their admin requests, which this node forwards to the
	// cluster's controller. -1 made every admin client give up. In
	// combined mode, the active controller is a broker too: it is named.
	controllerID := n.meta.NodeID
	if n.opts.combined() {
		if lead, ok := n.controller.Leader(); ok {
			if info, live := md.Nodes[lead]; live && !info.Fenced {
				controllerID = lead
			}
		}
	}
	resp := md.Response(req.Topics, controllerID)
	resp.ClusterID = n.meta.ClusterID
	for i := range resp.Topics {
		tm := &resp.Topics[i]
		for j := range tm.Partitions {
			pm := &tm.Partitions[j]
			if pm.Leader != n.meta.NodeID {
				continue
			}
			if err := n.member.offlineErr(kafka.TopicPartition{Topic: tm.Topic, Partition: pm.Partition}); err != nil {
				pm.Err = fmt.Errorf("%w: %s-%d is offline: its log could not be opened: %w", kafka.ErrKafkaStorage, tm.Topic, pm.Partition, err)
				pm.Leader, pm.LeaderEpoch = replica.NoLeader, -1
				if !slices.Contains(pm.Offline, n.meta.NodeID) {
					pm.Offline = append(pm.Offline, n.meta.NodeID)
				}
			}
		}
	}
	return resp
}

// createReplicatedTopic asks the controller to create a topic, and waits
// until this node's metadata has it and the node hosts its replicas of
// it. A topic some of whose replicas here could not be opened (a full
// disk) is deleted again: the error is ErrKafkaStorage.
func (n *Broker) createReplicatedTopic(ctx context.Context, nt NewTopic) error {
	m := n.member
	id := newUUID()
	err := n.awaitChange(ctx)(m.ctl.CreateTopic(ctx, nt.Name, controller.NewTopic{Partitions: nt.Partitions,
		ReplicationFactor: nt.ReplicationFactor, Configs: maps.Clone(nt.Configs), ID: id}))
	if err != nil {
		return err
	}
	var failed error
	for p := range nt.Partitions {
		if err := m.offlineErr(kafka.TopicPartition{Topic: nt.Name, Partition: p}); err != nil {
			failed = fmt.Errorf("%w: creating %s-%d: %w", kafka.ErrKafkaStorage, nt.Name, p, err)
			break
		}
	}
	if failed == nil {
		return nil
	}
	if err := n.deleteReplicatedTopic(ctx, nt.Name, id); err != nil {
		n.logger.Warn("deleting a topic that could not be created", "topic", nt.Name, "err", err)
	}
	return failed
}

// deleteReplicatedTopic asks the controller to delete the topic name
// with id, and waits until this node's metadata no longer has it and its
// replicas here are removed.
func (n *Broker) deleteReplicatedTopic(ctx context.Context, name, id string) error {
	return n.awaitChange(ctx)(n.member.ctl.DeleteTopic(ctx, name, id))
}

// describeTopic describes a topic from the metadata and the replicas the
// node hosts (offsets are known only for those).
func (n *Broker) describeTopic(name string) (TopicDescription, bool) {
	m := n.member
	md, _ := m.metadata()
	t, ok := md.Topics[name]
	if !ok {
		return TopicDescription{}, false
	}
	effective, _ := m.topicConfigs(name)
	d := TopicDescription{Name: name, ID: t.ID, Configs: maps.Clone(t.Configs), Effective: effective}
	for p, s := range t.Partitions {
		d.ReplicationFactor = int16(len(s.Replicas))
		pd := PartitionDescription{Partition: int32(p), Leader: s.Leader, LeaderEpoch: s.LeaderEpoch,
			Replicas: slices.Clone(s.Replicas), ISR: slices.Clone(s.ISR), LogStartOffset: -1, LogEndOffset: -1, HighWatermark: -1}
		tp := kafka.TopicPartition{Topic: name, Partition: int32(p)}
		if h := m.replica(tp); h != nil {
			pd.LogStartOffset, pd.LogEndOffset, pd.HighWatermark = h.p.LogStartOffset(), h.p.LogEndOffset(), h.p.HighWatermark()
			pd.Size = h.p.Log().Size()
		} else if err := m.offlineErr(tp); err != nil {
			pd.Offline = fmt.Errorf("%w: %s is offline: its log could not be opened: %w", kafka.ErrKafkaStorage, tp, err)
		}
		d.Partitions = append(d.Partitions, pd)
	}
	return d, true
}

// partitionLog returns the log of a replica the node hosts
// (partlogtest.Log).
func (n *Broker) partitionLog(topic string, partition int32) (*log.Log, error) {
	p, err := n.partition(topic, partition)
	if err != nil {
		return nil, err
	}
	return p.Log(), nil
}

// topicConfigs returns a replicated topic's configs in force (the node's
// topic defaults under the topic's own) and the topic's own, or nils for a
// topic the metadata does not have.
func (m *clusterMember) topicConfigs(name string) (effective, own map[string]string) {
	md, _ := m.metadata()
	t, ok := md.Topics[name]
	if !ok {
		return nil, nil
	}
	return m.n.topicConfig(t.Configs).Values(), t.Configs
}

// syncMetadata fetches the cluster metadata now and applies it
// (partlogtest.SyncMetadata).
func (n *Broker) syncMetadata(ctx context.Context) error {
	if err := n.begin(); err != nil {
		return err
	}
	defer n.end()
	return n.member.sync(ctx)
}

// sync fetches the cluster metadata from the controller now and applies
// it (see partlogtest.SyncMetadata).
func (m *clusterMember) sync(ctx context.Context) error {
	if err := m.heartbeat(ctx); err != nil {
		return err
	}
	// The background heartbeat may have taken the same metadata and be
	// applying it still: wait for it.
	m.reconcileMu.Lock()
	m.reconcileMu.Unlock()
	return nil
}
