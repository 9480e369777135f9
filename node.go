package partlog

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"path"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/partlog/partlog/group"
	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/log"
	"github.com/partlog/partlog/partition"
	"github.com/partlog/partlog/vfs"
)

var (
	// ErrClosed means the node was closed.
	ErrClosed = kafka.ErrClosed
	// ErrLocked means another process, or another Node in this one, has
	// the data directory open.
	ErrLocked = log.ErrLocked
	// ErrInconsistentNode means the data directory belongs to another
	// node id or cluster (Kafka's InconsistentClusterIdException).
	ErrInconsistentNode = errors.New("partlog: data directory belongs to another node")
	// ErrMetaPropertiesMissing means the data directory holds partitions
	// but no meta.properties, which names its node and cluster: the file
	// was lost, or the directory was not written by partlog. Kafka refuses
	// such a directory too. Restore the file, or open with
	// WriteMissingMeta to write a new one (a new cluster id).
	ErrMetaPropertiesMissing = errors.New("partlog: data directory holds partitions but no meta.properties")
)

// Node is a partlog node: a data directory of topics whose partitions it
// hosts and leads. It answers producers and consumers in the same process
// through transport.Client. It is safe for concurrent use.
type Node struct {
	dir    string
	opts   nodeOptions
	logger *slog.Logger
	meta   metaProperties
	logs   *log.Dir
	md     *metadataLog
	groups *groupHost
	pids   producerIDs
	// cluster is the node's part in a cluster, or nil for a node on its
	// own.
	cluster *clusterMember

	// requests is held shared by every request in flight and exclusively
	// by Close, which so waits for them.
	requests sync.RWMutex
	closing  atomic.Bool

	mu     sync.RWMutex
	topics map[string]*topic

	stop chan struct{}
	bg   sync.WaitGroup
}

// topic is a topic the node hosts.
type topic struct {
	name   string
	rec    topicRecord
	config topicConfig
	// partitions holds the topic's partitions by id; nil for one that is
	// offline: its log could not be opened (offline says why), and it
	// answers KAFKA_STORAGE_ERROR while the rest are served, as Kafka
	// takes an offline log directory's partitions offline.
	partitions []*partition.Partition
	offline    map[int32]error
}

// partition returns partition id of the topic: transport's
// UNKNOWN_TOPIC_OR_PARTITION for an id it does not have, and
// KAFKA_STORAGE_ERROR for one that is offline.
func (t *topic) partition(id int32) (*partition.Partition, error) {
	if id < 0 || id >= int32(len(t.partitions)) {
		return nil, fmt.Errorf("%w: %s-%d", kafka.ErrUnknownTopicOrPartition, t.name, id)
	}
	if p := t.partitions[id]; p != nil {
		return p, nil
	}
	return nil, fmt.Errorf("%w: %s-%d is offline: its log could not be opened: %w", kafka.ErrKafkaStorage, t.name, id, t.offline[id])
}

// online returns the partitions whose logs are open.
func (t *topic) online() []*partition.Partition {
	out := make([]*partition.Partition, 0, len(t.partitions))
	for _, p := range t.partitions {
		if p != nil {
			out = append(out, p)
		}
	}
	return out
}

// Open opens the data directory dir, creating it if needed, and hosts the
// topics in it. A directory is open in one Node at a time: a second Open,
// in this process or another, fails with ErrLocked. A crash leaves nothing
// for the next Open to repair by hand: it recovers every partition's log.
func Open(dir string, opts ...Option) (*Node, error) {
	o := defaultNodeOptions()
	for _, opt := range opts {
		opt.apply(&o)
	}
	if err := validateConfigs(o.topicDefaults); err != nil {
		return nil, fmt.Errorf("partlog: topic defaults: %w", err)
	}
	if err := vfs.MkdirAllDurable(o.fs, dir, 0o755); err != nil {
		return nil, fmt.Errorf("partlog: create %s: %w", dir, err)
	}
	logs, err := log.OpenDir(dir, log.DirOptions{FS: o.fs, Logger: o.logger})
	if err != nil {
		return nil, fmt.Errorf("partlog: %w", err)
	}
	n := &Node{dir: path.Clean(dir), opts: o, logger: o.logger, logs: logs, topics: map[string]*topic{}, stop: make(chan struct{})}
	if err := n.load(); err != nil {
		logs.Close()
		return nil, err
	}
	if err := n.startGroups(); err != nil {
		n.Close()
		return nil, err
	}
	if o.cluster.enabled() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		err := n.joinCluster(ctx)
		cancel()
		if err != nil {
			n.Close()
			return nil, err
		}
	}
	n.runEvery(o.retentionInterval, n.enforceRetention)
	n.startCleaner()
	n.runEvery(o.producerIDExpirationCheck, n.removeExpiredProducers)
	n.runEvery(o.checkpointInterval, func() {
		if err := n.logs.Checkpoint(); err != nil && !errors.Is(err, log.ErrClosed) {
			n.logger.Error("writing checkpoints failed", "err", err)
		}
		if n.cluster != nil {
			if err := n.cluster.checkpointHighWatermarks(); err != nil {
				n.logger.Error("writing the high watermark checkpoint failed", "err", err)
			}
		}
	})
	return n, nil
}

// load reads meta.properties and the metadata log and opens every topic's
// partitions, removing partition directories of topics that no longer
// exist (a crash can leave them while a topic is being deleted).
func (n *Node) load() error {
	var err error
	present, err := n.logs.Partitions()
	if err != nil {
		return fmt.Errorf("partlog: %w", err)
	}
	formatted := len(present) == 0 || n.opts.writeMissingMeta
	if n.meta, err = loadOrCreateMeta(n.opts.fs, n.dir, n.opts.nodeID, n.opts.clusterID, formatted); err != nil {
		return err
	}
	if n.md, err = openMetadataLog(n.logs); err != nil {
		return err
	}
	recs, err := n.md.load()
	if err != nil {
		return err
	}
	for name, rec := range recs {
		n.openTopic(name, rec)
	}
	for _, tp := range present {
		t, ok := n.topics[tp.Topic]
		if tp == metadataTopic || ok && tp.Partition < int32(len(t.partitions)) {
			continue
		}
		if n.opts.cluster.enabled() && (!strings.HasPrefix(tp.Topic, "__") || tp.Topic == group.OffsetsTopic) {
			continue // a replicated topic's: the controller's metadata decides
		}
		n.logger.Warn("removing the partition of a deleted topic", "partition", tp.String())
		if err := n.logs.Remove(tp); err != nil {
			return fmt.Errorf("partlog: %w", err)
		}
	}
	return nil
}

// newTopic returns a topic of rec with no partitions open yet, and the
// log and partition options of its partitions.
func (n *Node) newTopic(name string, rec topicRecord) (*topic, log.Options, partition.Options) {
	t := &topic{name: name, rec: rec, config: n.topicConfig(rec.Configs)}
	// The options are the topic's, the same for each partition.
	lo := t.config.logOptions()
	lo.Now, lo.Logger = n.opts.now, n.logger
	po := t.config.partitionOptions()
	po.Now, po.ProducerIDExpiration = n.opts.now, n.opts.producerIDExpiration
	return t, lo, po
}

// openPartition opens (creating as needed) partition p of t.
func (n *Node) openPartition(t *topic, p int32, lo log.Options, po partition.Options) (*partition.Partition, error) {
	tp := kafka.TopicPartition{Topic: t.name, Partition: p}
	l, err := n.logs.Open(tp, lo)
	if err != nil {
		return nil, err
	}
	if err := n.writePartitionMetadata(tp, t.rec.ID); err != nil {
		l.Close()
		return nil, err
	}
	return partition.New(t.name, p, n.meta.NodeID, t.rec.LeaderEpoch, l, po), nil
}

// openTopic opens the partitions of a topic the metadata holds. A
// partition whose log cannot be opened is offline: logged, and answered
// with KAFKA_STORAGE_ERROR, while the node serves the others. The caller
// holds n.mu or has not published the node yet.
func (n *Node) openTopic(name string, rec topicRecord) {
	t, lo, po := n.newTopic(name, rec)
	for p := range rec.Partitions {
		part, err := n.openPartition(t, p, lo, po)
		if err != nil {
			n.logger.Error("partition offline: its log could not be opened", "partition", kafka.TopicPartition{Topic: name, Partition: p}.String(), "err", err)
			if t.offline == nil {
				t.offline = map[int32]error{}
			}
			t.offline[p] = err
		}
		t.partitions = append(t.partitions, part)
	}
	n.topics[name] = t
}

// createTopicLocked creates a topic's partitions, then writes the record
// that names them. The partitions come first: a topic whose partitions
// cannot all be created (a full disk, no file descriptors left) is rolled
// back — the first failure stops it, and the partitions made are removed —
// and a crash in between leaves directories the next Open removes, not a
// topic in the metadata without its partitions. The caller holds n.mu.
func (n *Node) createTopicLocked(name string, rec topicRecord) error {
	t, lo, po := n.newTopic(name, rec)
	var err error
	tried := int32(0) // partitions whose directories may exist
	for p := range rec.Partitions {
		tried++
		var part *partition.Partition
		if part, err = n.openPartition(t, p, lo, po); err != nil {
			err = fmt.Errorf("%w: creating %s-%d: %w", kafka.ErrKafkaStorage, name, p, err)
			break
		}
		t.partitions = append(t.partitions, part)
	}
	if err == nil {
		err = n.md.put(name, &rec)
	}
	if err != nil {
		t.close()
		for p := range tried {
			if rerr := n.logs.Remove(kafka.TopicPartition{Topic: name, Partition: p}); rerr != nil {
				n.logger.Warn("removing a partition of a topic that could not be created", "partition", p, "err", rerr)
			}
		}
		return err
	}
	n.topics[name] = t
	return nil
}

// topicConfig returns the configs in force for a topic that sets own:
// the node's topic defaults, overridden by own.
func (n *Node) topicConfig(own map[string]string) topicConfig {
	overrides := maps.Clone(n.opts.topicDefaults)
	if overrides == nil {
		overrides = map[string]string{}
	}
	maps.Copy(overrides, own)
	return effectiveConfig(overrides)
}

// writePartitionMetadata writes Kafka's partition.metadata, which names the
// topic id a partition directory belongs to, if it is missing.
func (n *Node) writePartitionMetadata(tp kafka.TopicPartition, id string) error {
	name := path.Join(n.dir, tp.String(), "partition.metadata")
	if _, err := n.opts.fs.Stat(name); err == nil {
		return nil
	}
	return writeAtomic(n.opts.fs, name, []byte(fmt.Sprintf("version: 0\ntopic_id: %s\n", id)))
}

func (t *topic) close() {
	for _, p := range t.online() {
		p.Close()
	}
}

// ClusterID returns the id of the node's cluster.
func (n *Node) ClusterID() string { return n.meta.ClusterID }

// NodeID returns the node's id.
func (n *Node) NodeID() int32 { return n.meta.NodeID }

// Dir returns the node's data directory.
func (n *Node) Dir() string { return n.dir }

// begin starts a request: it fails once the node is closing, and otherwise
// keeps Close waiting until end.
func (n *Node) begin() error {
	n.requests.RLock()
	if n.closing.Load() {
		n.requests.RUnlock()
		return ErrClosed
	}
	return nil
}

func (n *Node) end() { n.requests.RUnlock() }

// runEvery runs f every interval on a goroutine that Close stops.
func (n *Node) runEvery(interval time.Duration, f func()) {
	if interval <= 0 {
		return
	}
	n.bg.Go(func() {
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-n.stop:
				return
			case <-t.C:
				f()
			}
		}
	})
}

// enforceRetention deletes the segments retention lets go, in every
// partition.
func (n *Node) enforceRetention() {
	for _, p := range n.partitionsOf(nil) {
		if deleted, err := p.Log().DeleteRetained(); err != nil {
			n.logger.Error("retention failed", "partition", partitionName(p), "err", err)
		} else if deleted > 0 {
			n.logger.Info("retention deleted segments", "partition", partitionName(p), "segments", deleted)
		}
	}
}

// partitionsOf snapshots the partitions of the topics keep accepts (of
// every topic when keep is nil), for a background pass over them.
func (n *Node) partitionsOf(keep func(*topic) bool) []*partition.Partition {
	n.mu.RLock()
	defer n.mu.RUnlock()
	var parts []*partition.Partition
	for _, t := range n.topics {
		if keep == nil || keep(t) {
			parts = append(parts, t.online()...)
		}
	}
	if n.cluster != nil && keep == nil {
		parts = append(parts, n.cluster.partitions()...)
	}
	return parts
}

// partitionName names p as topic-partition, for logs.
func partitionName(p *partition.Partition) string {
	return kafka.TopicPartition{Topic: p.Topic(), Partition: p.ID()}.String()
}

// EnforceRetention runs retention now, as the node does every
// RetentionCheckInterval.
func (n *Node) EnforceRetention() error {
	if err := n.begin(); err != nil {
		return err
	}
	defer n.end()
	n.enforceRetention()
	return nil
}

// Close stops taking requests, wakes the fetches waiting for records, waits
// for the requests in flight, then flushes every partition and writes the
// clean-shutdown state, so that the next Open scans nothing. A node in a
// cluster first asks the controller to move the leadership of its
// partitions to other replicas (Kafka's controlled shutdown).
func (n *Node) Close() error { return n.close(true) }

// Halt closes the node without telling its cluster first, as a crash
// would: the controller moves its partitions' leadership only once its
// heartbeats have stopped for the session timeout. On a node on its own it
// is Close. Tests of failover use it.
func (n *Node) Halt() error { return n.close(false) }

func (n *Node) close(controlled bool) error {
	if n.closing.Swap(true) {
		return nil
	}
	if n.cluster != nil {
		n.cluster.leave(controlled)
	}
	n.mu.RLock()
	for _, t := range n.topics {
		t.close()
	}
	n.mu.RUnlock()
	n.stopGroups()
	n.requests.Lock()
	defer n.requests.Unlock()
	close(n.stop)
	n.bg.Wait()
	return n.logs.Close()
}

// topic returns a topic by name, or nil.
func (n *Node) topic(name string) *topic {
	n.mu.RLock()
	defer n.mu.RUnlock()
	return n.topics[name]
}

// partition returns a partition, or kafka.ErrUnknownTopicOrPartition.
func (n *Node) partition(name string, id int32) (*partition.Partition, error) {
	if h, ok, err := n.clusterReplica(name, id); ok {
		if err != nil {
			return nil, err
		}
		return h.p, nil
	}
	t := n.topic(name)
	if t == nil {
		return nil, fmt.Errorf("%w: %s-%d", kafka.ErrUnknownTopicOrPartition, name, id)
	}
	return t.partition(id)
}

// NewTopic describes a topic to create.
type NewTopic struct {
	Name string
	// Partitions is the number of partitions; zero means 1.
	Partitions int32
	// ReplicationFactor is how many replicas each partition has; zero
	// means 1, which is all a single node can host.
	ReplicationFactor int16
	// Configs overrides topic configs (see TopicConfigKeys), by Kafka's
	// names: "retention.ms", "segment.bytes", ...
	Configs map[string]string
}

// maxPartitions bounds the partitions of one topic.
const maxPartitions = 100_000

// CreateTopic creates a topic and its partitions' directories. Names,
// partition counts, replication factors and configs are checked as Kafka
// checks them; the errors are kafka.ErrInvalidTopic,
// ErrTopicAlreadyExists, ErrInvalidPartitions, ErrInvalidReplicationFactor
// and ErrInvalidConfig.
func (n *Node) CreateTopic(ctx context.Context, nt NewTopic) error {
	if err := n.begin(); err != nil {
		return err
	}
	defer n.end()
	return n.createTopic(ctx, nt)
}

// createTopic is CreateTopic for a caller that holds the node (begin).
func (n *Node) createTopic(ctx context.Context, nt NewTopic) error {
	if err := ValidateTopicName(nt.Name); err != nil {
		return err
	}
	if strings.HasPrefix(nt.Name, "__") {
		return fmt.Errorf("%w: %q: names starting with __ are kept for internal topics", kafka.ErrInvalidTopic, nt.Name)
	}
	if nt.Partitions == 0 {
		nt.Partitions = 1
	}
	if nt.Partitions < 0 || nt.Partitions > maxPartitions {
		return fmt.Errorf("%w: %d partitions; a topic has 1 to %d", kafka.ErrInvalidPartitions, nt.Partitions, maxPartitions)
	}
	if nt.ReplicationFactor == 0 {
		nt.ReplicationFactor = 1
	}
	if nt.ReplicationFactor != 1 && n.cluster == nil {
		return fmt.Errorf("%w: replication factor %d is larger than the 1 node available", kafka.ErrInvalidReplicationFactor, nt.ReplicationFactor)
	}
	if err := validateConfigs(nt.Configs); err != nil {
		return err
	}
	if n.cluster != nil {
		return n.createReplicatedTopic(ctx, nt)
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if _, ok := n.topics[nt.Name]; ok {
		return fmt.Errorf("%w: %q", kafka.ErrTopicAlreadyExists, nt.Name)
	}
	for existing := range n.topics {
		if existing != nt.Name && collides(existing, nt.Name) {
			return fmt.Errorf("%w: %q collides with %q ('.' and '_' are the same in metric names)", kafka.ErrInvalidTopic, nt.Name, existing)
		}
	}
	rec := topicRecord{ID: newUUID(), Partitions: nt.Partitions, ReplicationFactor: nt.ReplicationFactor, Configs: maps.Clone(nt.Configs)}
	return n.createTopicLocked(nt.Name, rec)
}

// DeleteTopic deletes a topic and its partitions' data.
func (n *Node) DeleteTopic(ctx context.Context, name string) error {
	if err := n.begin(); err != nil {
		return err
	}
	defer n.end()
	if n.cluster != nil && n.topic(name) == nil {
		return n.deleteReplicatedTopic(ctx, name)
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	t, ok := n.topics[name]
	if !ok {
		return fmt.Errorf("%w: %q", kafka.ErrUnknownTopicOrPartition, name)
	}
	if strings.HasPrefix(name, "__") {
		return fmt.Errorf("%w: %q is an internal topic", kafka.ErrInvalidTopic, name)
	}
	// Forget the topic durably first: a crash from here on removes what is
	// left of it at the next Open.
	if err := n.md.put(name, nil); err != nil {
		return err
	}
	delete(n.topics, name)
	t.close()
	for p := range t.partitions {
		if err := n.logs.Remove(kafka.TopicPartition{Topic: name, Partition: int32(p)}); err != nil {
			return fmt.Errorf("partlog: delete %s-%d: %w", name, p, err)
		}
	}
	return nil
}

// ListTopics returns the names of the topics, sorted.
func (n *Node) ListTopics() []string {
	n.mu.RLock()
	defer n.mu.RUnlock()
	names := slices.Collect(maps.Keys(n.topics))
	if n.cluster != nil {
		md, _ := n.cluster.metadata()
		names = slices.AppendSeq(names, maps.Keys(md.Topics))
	}
	slices.Sort(names)
	return slices.Compact(names)
}

// TopicDescription describes a topic.
type TopicDescription struct {
	Name              string
	ID                string
	ReplicationFactor int16
	// Configs holds the topic's overrides; Effective every config in
	// force, defaults included.
	Configs    map[string]string
	Effective  map[string]string
	Partitions []PartitionDescription
}

// PartitionDescription describes one partition.
type PartitionDescription struct {
	Partition      int32
	Leader         int32
	LeaderEpoch    int32
	Replicas       []int32
	ISR            []int32
	LogStartOffset int64
	LogEndOffset   int64
	HighWatermark  int64
	// Size is the bytes of the partition's segments.
	Size int64
	// Offline, when not nil, says why the partition is offline: its log
	// could not be opened (kafka.ErrKafkaStorage). The offsets are
	// then unknown.
	Offline error
}

// DescribeTopics describes the named topics, or every topic when none is
// named. An unknown name is kafka.ErrUnknownTopicOrPartition.
func (n *Node) DescribeTopics(names ...string) ([]TopicDescription, error) {
	if err := n.begin(); err != nil {
		return nil, err
	}
	defer n.end()
	if len(names) == 0 {
		names = n.ListTopics()
	}
	out := make([]TopicDescription, 0, len(names))
	for _, name := range names {
		t := n.topic(name)
		if t == nil && n.cluster != nil {
			if d, ok := n.describeReplicated(name); ok {
				out = append(out, d)
				continue
			}
		}
		if t == nil {
			return nil, fmt.Errorf("%w: %q", kafka.ErrUnknownTopicOrPartition, name)
		}
		d := TopicDescription{Name: name, ID: t.rec.ID, ReplicationFactor: t.rec.ReplicationFactor,
			Configs: maps.Clone(t.rec.Configs), Effective: maps.Clone(t.config.values)}
		for id, p := range t.partitions {
			if p == nil {
				_, err := t.partition(int32(id))
				d.Partitions = append(d.Partitions, PartitionDescription{Partition: int32(id), Leader: -1, LeaderEpoch: -1,
					Replicas: []int32{n.meta.NodeID}, Offline: err})
				continue
			}
			d.Partitions = append(d.Partitions, PartitionDescription{
				Partition: p.ID(), Leader: n.meta.NodeID, LeaderEpoch: p.LeaderEpoch(),
				Replicas: []int32{n.meta.NodeID}, ISR: p.ISR(),
				LogStartOffset: p.LogStartOffset(), LogEndOffset: p.LogEndOffset(), HighWatermark: p.HighWatermark(),
				Size: p.Log().Size(),
			})
		}
		out = append(out, d)
	}
	return out, nil
}

// ValidateTopicName checks a topic name as Kafka does: 1 to 249 of ASCII
// letters, digits, '.', '_' and '-', and not "." or "..". The error is
// kafka.ErrInvalidTopic.
func ValidateTopicName(name string) error {
	switch {
	case name == "":
		return fmt.Errorf("%w: the name is empty", kafka.ErrInvalidTopic)
	case name == "." || name == "..":
		return fmt.Errorf("%w: %q is not allowed", kafka.ErrInvalidTopic, name)
	case len(name) > 249:
		return fmt.Errorf("%w: %d characters; the longest name is 249", kafka.ErrInvalidTopic, len(name))
	}
	for _, c := range []byte(name) {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '-') {
			return fmt.Errorf("%w: %q has %q; names use ASCII letters, digits, '.', '_' and '-'", kafka.ErrInvalidTopic, name, c)
		}
	}
	return nil
}

// collides reports whether two topic names are the same once '.' and '_'
// are taken as one, which Kafka forbids.
func collides(a, b string) bool {
	return strings.ReplaceAll(a, ".", "_") == strings.ReplaceAll(b, ".", "_")
}
