package partlog

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

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

// clusterReplica returns the replica of a replicated topic's partition
// the node hosts. ok is false when the name is not a replicated topic's
// (the node's own topics, such as __consumer_offsets, are looked up as on
// a single node); err is ErrUnknownTopicOrPartition for a partition the
// cluster does not have, and ErrNotLeaderOrFollower for one the node does
// not host.
func (n *Node) clusterReplica(name string, id int32) (h *replicaHost, ok bool, err error) {
	m := n.cluster
	if m == nil || n.topic(name) != nil {
		return nil, false, nil
	}
	if h := m.replica(kafka.TopicPartition{Topic: name, Partition: id}); h != nil {
		return h, true, nil
	}
	md, _ := m.metadata()
	t, known := md.Topics[name]
	if !known || id < 0 || int(id) >= len(t.Partitions) {
		return nil, true, fmt.Errorf("%w: %s-%d", kafka.ErrUnknownTopicOrPartition, name, id)
	}
	return nil, true, fmt.Errorf("%w: node %d hosts no replica of %s-%d (leader %d)", kafka.ErrNotLeaderOrFollower,
		n.meta.NodeID, name, id, t.Partitions[id].Leader)
}

// leaderReplica is clusterReplica for a request only the leader answers.
func (n *Node) leaderReplica(name string, id int32) (h *replicaHost, ok bool, err error) {
	h, ok, err = n.clusterReplica(name, id)
	if ok && err == nil && !h.leads(n.meta.NodeID) {
		h.mu.Lock()
		leader := h.state.Leader
		h.mu.Unlock()
		return nil, true, fmt.Errorf("%w: node %d does not lead %s-%d (leader %d)", kafka.ErrNotLeaderOrFollower,
			n.meta.NodeID, name, id, leader)
	}
	return h, ok, err
}

// defaultProduceTimeout bounds an acks=all append when the request names
// no timeout (Kafka's request.timeout.ms).
const defaultProduceTimeout = 30 * time.Second

// appendReplicated appends batch as the leader of h's partition and waits
// as acks asks: written on the leader (acks=1), or below the high
// watermark (acks=all). A retry of a batch already in the log is answered
// with the original's offsets once the high watermark passes them.
func (n *Node) appendReplicated(ctx context.Context, h *replicaHost, batch []byte, acks kafka.Acks, timeout time.Duration) (base, appendTime int64, err error) {
	if timeout <= 0 {
		timeout = defaultProduceTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	c, err := h.rn.Propose(ctx, batch, acks)
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

// clusterMetadataResponse answers Metadata on a node in a cluster: the
// live nodes and replicated topics from the controller's metadata, and
// the node's own internal topics.
func (n *Node) clusterMetadataResponse(req *transport.MetadataRequest) *transport.MetadataResponse {
	md, _ := n.cluster.metadata()
	var replicated, local []string
	if req.Topics == nil {
		replicated = slices.Sorted(maps.Keys(md.Topics))
		local = n.ListTopics()
	} else {
		for _, name := range req.Topics {
			if n.topic(name) != nil {
				local = append(local, name)
			} else {
				replicated = append(replicated, name)
			}
		}
	}
	// KRaft brokers name a live broker as the controller (KIP-590): admin
	// clients send it their admin requests, which this node forwards to the
	// cluster's controller. -1 made every admin client give up.
	resp := md.response(replicated, n.meta.NodeID)
	resp.ClusterID = n.meta.ClusterID
	for _, name := range local {
		t := n.topic(name)
		if t == nil {
			continue
		}
		tm := transport.TopicMetadata{Topic: name, Internal: strings.HasPrefix(name, "__"), TopicID: topicIDBytes(t.rec.ID)}
		tm.Partitions = n.localPartitionMetadata(t)
		resp.Topics = append(resp.Topics, tm)
	}
	return resp
}

// createReplicatedTopic asks the controller to create a topic, and waits
// until this node's metadata has it.
func (n *Node) createReplicatedTopic(ctx context.Context, nt NewTopic) error {
	resp, err := n.cluster.ctl.call(ctx, &controllerRequest{Op: opCreateTopic, Node: n.meta.NodeID, Topic: nt.Name,
		NewTopic: &controllerNewTopic{Partitions: nt.Partitions, ReplicationFactor: nt.ReplicationFactor, Configs: maps.Clone(nt.Configs), ID: newUUID()}})
	if err != nil {
		return err
	}
	return n.cluster.waitMetadata(ctx, resp.Version)
}

// deleteReplicatedTopic asks the controller to delete a topic, and waits
// until this node's metadata no longer has it.
func (n *Node) deleteReplicatedTopic(ctx context.Context, name string) error {
	resp, err := n.cluster.ctl.call(ctx, &controllerRequest{Op: opDeleteTopic, Node: n.meta.NodeID, Topic: name})
	if err != nil {
		return err
	}
	return n.cluster.waitMetadata(ctx, resp.Version)
}

// describeReplicated describes a replicated topic from the metadata and
// the replicas the node hosts (offsets are known only for those).
func (n *Node) describeReplicated(name string) (TopicDescription, bool) {
	md, _ := n.cluster.metadata()
	t, ok := md.Topics[name]
	if !ok {
		return TopicDescription{}, false
	}
	effective, _ := n.cluster.topicConfigs(name)
	d := TopicDescription{Name: name, ID: t.ID, Configs: maps.Clone(t.Configs), Effective: effective}
	for p, s := range t.Partitions {
		d.ReplicationFactor = int16(len(s.Replicas))
		pd := PartitionDescription{Partition: int32(p), Leader: s.Leader, LeaderEpoch: s.LeaderEpoch,
			Replicas: slices.Clone(s.Replicas), ISR: slices.Clone(s.ISR), LogStartOffset: -1, LogEndOffset: -1, HighWatermark: -1}
		if h := n.cluster.replica(kafka.TopicPartition{Topic: name, Partition: int32(p)}); h != nil {
			pd.LogStartOffset, pd.LogEndOffset, pd.HighWatermark = h.p.LogStartOffset(), h.p.LogEndOffset(), h.p.HighWatermark()
			pd.Size = h.p.Log().Size()
		}
		d.Partitions = append(d.Partitions, pd)
	}
	return d, true
}

// Log returns the log of a partition the node hosts — a replica of a
// replicated topic's partition, or one of its own topics' — for tools and
// tests that read it directly. Errors are those of a fetch:
// kafka.ErrUnknownTopicOrPartition, ErrNotLeaderOrFollower.
func (n *Node) Log(topic string, partition int32) (*log.Log, error) {
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
	return m.n.topicConfig(t.Configs).values, t.Configs
}

// SyncMetadata fetches the cluster metadata from the controller now, rather
// than at the next heartbeat, and applies it: when it returns, the node
// hosts, leads and follows what the controller had decided when it
// answered. Other nodes learn of changes at their own pace (see
// HeartbeatInterval). On a node that is not in a cluster it does nothing.
func (n *Node) SyncMetadata(ctx context.Context) error {
	if err := n.begin(); err != nil {
		return err
	}
	defer n.end()
	if n.cluster == nil {
		return nil
	}
	return n.cluster.sync(ctx)
}

// sync fetches the cluster metadata from the controller now and applies
// it (see SyncMetadata).
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
