package broker

import (
	"context"
	"encoding/base64"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/record"
	"github.com/partlog/partlog/sharecoord"
	"github.com/partlog/partlog/topicconfig"
	"github.com/partlog/partlog/transport"
)

// The durable state of share partitions (KIP-932) lives on the partitions
// of __share_group_state the node leads (coordinator_partitions.go), in
// one sharecoord.Coordinator: shareStateHost loads a partition's records
// into it when the node becomes the partition's leader, and its writes go
// through the partition's replica as acks=all appends, as the group
// coordinator's do on __consumer_offsets. The coordinator has no
// goroutine and nothing to stop: a node that closes waits for the
// requests in flight, whose writes end with the replicas.

// shareStateSegmentBytes is Kafka's share.coordinator.state.topic.segment.bytes.
const shareStateSegmentBytes = 100 << 20

// shareStateHost runs the node's share coordinator, made when the node
// first leads a partition of __share_group_state.
type shareStateHost struct {
	n *Broker
	// state are the partitions of __share_group_state the node leads.
	state *coordinatorPartitions

	mu    sync.Mutex
	coord *sharecoord.Coordinator
}

// startShareStates makes the node's host of share partitions' state; its
// coordinator is made when the node first leads a partition of
// __share_group_state.
func (n *Broker) startShareStates() {
	h := &shareStateHost{n: n}
	h.state = newCoordinatorPartitions(n, sharecoord.StateTopic, shareStateLoader{h})
	n.shareStates = h
}

// coordinator returns the node's share coordinator for a topic of
// partitions partitions, made on first use; it writes through the
// replicas.
func (h *shareStateHost) coordinator(partitions int32) *sharecoord.Coordinator {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.coord == nil {
		n := h.n
		h.coord = sharecoord.New(replicatedShareStateLog{n: n}, sharecoord.Options{Partitions: partitions,
			Now: n.opts.Now, Logger: n.logger.With("component", "share-coordinator")})
	}
	return h.coord
}

// loadedCoordinator returns the coordinator once made, or nil.
func (h *shareStateHost) loadedCoordinator() *sharecoord.Coordinator {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.coord
}

// shareStateLoader is the share coordinator's part in hosting the
// partitions of __share_group_state.
type shareStateLoader struct{ h *shareStateHost }

// load replays the partition's records up to end into the coordinator:
// the latest ShareSnapshot and ShareUpdates of each share partition,
// which a compacted log keeps (sharecoord's doc).
func (s shareStateLoader) load(h *replicaHost, _ int32, end int64, partitions int32) (int, error) {
	c := s.h.coordinator(partitions)
	records := 0
	err := c.Load(h.tp.Partition, func(yield func(sharecoord.Record) bool) error {
		return eachRecord(h.p.Log(), end, func(r record.Record) (bool, error) {
			records++
			return yield(sharecoord.Record{Key: r.Key, Value: r.Value}), nil // Load does not keep them
		})
	})
	return records, err
}

func (s shareStateLoader) unload(p int32) {
	if c := s.h.loadedCoordinator(); c != nil {
		c.Unload(p)
	}
}

// shareStateTopicConfigs returns the partition count and configs of
// __share_group_state when the node creates it: compacted, which
// sharecoord's records survive (Kafka's is cleanup.policy=delete, pruned
// below each share partition's snapshot), with Kafka's segment size.
func (n *Broker) shareStateTopicConfigs() (int32, map[string]string) {
	partitions := n.opts.ShareStatePartitions
	if partitions <= 0 {
		partitions = sharecoord.DefaultStateTopicPartitions
	}
	return partitions, map[string]string{topicconfig.CleanupPolicy: "compact", topicconfig.SegmentBytes: strconv.Itoa(shareStateSegmentBytes)}
}

// shareCoordinatorOf returns the share coordinator for a request about
// sp: the node's, if it leads sp's partition of __share_group_state and
// has loaded it, or else kafka.ErrNotCoordinator
// (ErrCoordinatorLoadInProgress while it loads). When the topic does not
// exist yet, it is created first, and the node waits for the loads of the
// partitions it leads.
func (n *Broker) shareCoordinatorOf(ctx context.Context, sp sharecoord.SharePartition) (*sharecoord.Coordinator, error) {
	partitions, configs := n.shareStateTopicConfigs()
	if _, err := n.shareStates.state.partitionOf(ctx, sp.String(), partitions, configs); err != nil {
		return nil, err
	}
	c := n.shareStates.loadedCoordinator()
	if c == nil {
		return nil, fmt.Errorf("%w: node %d has no share coordinator", kafka.ErrCoordinatorNotAvailable, n.meta.NodeID)
	}
	return c, nil
}

// replicatedShareStateLog writes the share coordinator's records to the
// replicas of __share_group_state the node leads, each call as one batch
// appended with acks=all.
type replicatedShareStateLog struct{ n *Broker }

// Append writes recs to partition p as one acks=all batch, bounded by
// offsetsCommitTimeout (Kafka's share.coordinator.write.timeout.ms is 5
// s too). The batch is built from recs before the append: the log does
// not keep them.
func (l replicatedShareStateLog) Append(p int32, recs []sharecoord.Record) error {
	n := l.n
	tp := kafka.TopicPartition{Topic: sharecoord.StateTopic, Partition: p}
	h := n.member.replica(tp)
	if h == nil || !h.leads(n.meta.NodeID) {
		return fmt.Errorf("%w: node %d does not lead %s", kafka.ErrNotLeaderOrFollower, n.meta.NodeID, tp)
	}
	b := record.NewBuilder(record.DefaultBatchOptions())
	now := n.opts.Now().UnixMilli()
	for _, r := range recs {
		b.Append(record.Record{Timestamp: now, Key: r.Key, Value: r.Value})
	}
	_, _, err := n.appendReplicated(context.Background(), h, b.Build(), kafka.AcksAll, offsetsCommitTimeout)
	return err
}

// findShareCoordinator answers a FindCoordinator for a share partition's
// key, "group:topicId:partition": the leader of its partition of
// __share_group_state, which is created first if need be. A key that is
// not one is answered INVALID_REQUEST, as Kafka's SharePartitionKey.validate
// refuses it.
func (n *Broker) findShareCoordinator(ctx context.Context, key string) *transport.FindCoordinatorResponse {
	resp := &transport.FindCoordinatorResponse{NodeID: -1, Port: -1}
	sp, err := parseShareKey(key)
	if err != nil {
		resp.Err = err
		return resp
	}
	partitions, configs := n.shareStateTopicConfigs()
	resp.NodeID, resp.Host, resp.Port, resp.Err = n.shareStates.state.coordinatorNode(ctx, sp.String(), partitions, configs)
	if resp.Err != nil {
		resp.NodeID, resp.Host, resp.Port = -1, "", -1
	}
	return resp
}

// parseShareKey parses a share partition's coordinator key as Kafka's
// SharePartitionKey.getInstance does: three fields split at colons, the
// group id trimmed and not empty, a topic id in Kafka's base64 and a
// partition. Its String is the key Kafka hashes, which may differ from
// key (spaces around the group id, "+1" for a partition).
func parseShareKey(key string) (sharecoord.SharePartition, error) {
	invalid := func(why string) (sharecoord.SharePartition, error) {
		return sharecoord.SharePartition{}, fmt.Errorf("%w: share partition key %q: %s", kafka.ErrInvalidRequest, key, why)
	}
	fields := strings.Split(key, ":")
	for len(fields) > 0 && fields[len(fields)-1] == "" {
		fields = fields[:len(fields)-1] // Java's split drops trailing empty strings
	}
	if len(fields) != 3 {
		return invalid("expected group:topicId:partition")
	}
	group := strings.TrimFunc(fields[0], func(r rune) bool { return r <= ' ' }) // Java's trim
	if group == "" {
		return invalid("empty group id")
	}
	id, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(fields[1], "="))
	if err != nil || len(id) != 16 {
		return invalid("bad topic id")
	}
	partition, err := strconv.ParseInt(fields[2], 10, 32)
	if err != nil {
		return invalid("bad partition")
	}
	return sharecoord.SharePartition{Group: group, TopicID: [16]byte(id), Partition: int32(partition)}, nil
}
