package broker

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

	"github.com/partlog/partlog/controller"
	"github.com/partlog/partlog/internal/nodehooks"
	"github.com/partlog/partlog/internal/props"
	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/log"
	"github.com/partlog/partlog/metrics"
	"github.com/partlog/partlog/partition"
	"github.com/partlog/partlog/topicconfig"
	"github.com/partlog/partlog/transport/memnet"
	"github.com/partlog/partlog/vfs"
)

var (
	// ErrClosed means the node was closed.
	ErrClosed = kafka.ErrClosed
	// ErrLocked means another process, or another Broker in this one, has
	// the data directory open.
	ErrLocked = log.ErrLocked
	// ErrInconsistentNode means the data directory belongs to another
	// node id or cluster (Kafka's InconsistentClusterIdException).
	ErrInconsistentNode = errors.New("broker: data directory belongs to another node")
	// ErrMetaPropertiesMissing means the data directory holds partitions
	// but no meta.properties, which names its node and cluster: the file
	// was lost, or the directory was not written by partlog. Kafka refuses
	// such a directory too. Restore the file, or open with
	// WriteMissingMeta to write a new one (a new cluster id).
	ErrMetaPropertiesMissing = errors.New("broker: data directory holds partitions but no meta.properties")
)

// Broker is one node of a cluster: it hosts the replicas of topics'
// partitions the controller assigns it, in its data directory, and answers
// Kafka's requests — produce, fetch, metadata, admin, groups, producer ids
// — through its methods, which make it a transport.Client (with the
// optional interfaces) for clients in the same process and for
// transport.NewServer. Without Options.Controller or
// Options.ControllerAddress it runs a controller of its own over its data
// directory: a cluster of one, whose partitions (replication factor 1) go
// through the same replica path as a cluster's. It is safe for concurrent
// use.
type Broker struct {
	dir    string
	opts   Options
	logger *slog.Logger
	meta   metaProperties
	logs   *log.Dir
	groups *groupHost
	txns   *txnHost
	// shareStates hosts the share coordinator: the durable state of
	// share partitions, in __share_group_state.
	shareStates *shareStateHost
	// shares are the share partitions the node keeps as leader, and the
	// share sessions of the members fetching from it.
	shares *shareHost
	// verifier keeps the transaction coordinators' answers the produce
	// path asked for (KIP-890 part 1), for the partitions' checks.
	verifier *txnVerifier
	// txnFault is a test's fault for the transaction coordinator's steps
	// (partlogtest.FailTransactionSteps), nil without one.
	txnFault atomic.Pointer[func(nodehooks.TxnStep) error]
	member   *clusterMember
	// controller is the in-process controller of a node on its own, which
	// the node closes; nil for a member of a cluster whose controller runs
	// elsewhere.
	controller *controller.Controller
	// metrics are the node's metrics (Metrics).
	metrics *metrics.Node

	// requests is held shared by every request in flight and exclusively
	// by Close, which so waits for them.
	requests sync.RWMutex
	closing  atomic.Bool

	stop chan struct{}
	bg   sync.WaitGroup
}

// Open opens the data directory dir, creating it if needed, and hosts the
// replicas the cluster's metadata assigns it. Without JoinCluster or
// ControllerAddress the node is a cluster of one with its controller in
// process, and Open returns once it leads every partition. A directory is
// open in one Broker at a time: a second Open, in this process or another,
// fails with ErrLocked. A crash leaves nothing for the next Open to repair
// by hand: it recovers every partition's log.
func Open(dir string, o Options) (*Broker, error) {
	o = o.withDefaults()
	if err := topicconfig.Validate(o.TopicDefaults); err != nil {
		return nil, fmt.Errorf("partlog: topic defaults: %w", err)
	}
	if err := vfs.MkdirAllDurable(o.FS, dir, 0o755); err != nil {
		return nil, fmt.Errorf("partlog: create %s: %w", dir, err)
	}
	logs, err := log.OpenDir(dir, log.DirOptions{FS: o.FS, Logger: o.Logger})
	if err != nil {
		return nil, fmt.Errorf("partlog: %w", err)
	}
	n := &Broker{dir: path.Clean(dir), opts: o, logger: o.Logger, logs: logs, stop: make(chan struct{}), verifier: newTxnVerifier()}
	n.metrics = metrics.New(n.metricsState)
	if err := n.load(); err != nil {
		logs.Close()
		return nil, err
	}
	if !o.joinsCluster() || o.combined() {
		if err := n.startController(); err != nil {
			logs.Close()
			return nil, err
		}
	}
	n.startGroups()
	n.startShareStates()
	n.startShares()
	if err := n.startTxns(); err != nil {
		logs.Close()
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	err = n.joinCluster(ctx)
	if err == nil {
		// Groups and transactions are answered once loaded: a node
		// opened is ready.
		for _, cp := range n.coordinatorTopics() {
			if err = cp.awaitLoads(ctx); err != nil {
				break
			}
		}
	}
	cancel()
	if err != nil {
		n.Close()
		return nil, err
	}
	n.runEvery(o.RetentionCheckInterval, n.enforceRetention)
	n.startCleaner()
	n.runEvery(o.ProducerIDExpirationCheckInterval, n.removeExpiredProducers)
	n.runEvery(o.CheckpointInterval, func() {
		if err := n.logs.Checkpoint(); err != nil && !errors.Is(err, log.ErrClosed) {
			n.logger.Error("writing checkpoints failed", "err", err)
		}
		if err := n.member.checkpointHighWatermarks(); err != nil {
			n.logger.Error("writing the high watermark checkpoint failed", "err", err)
		}
	})
	return n, nil
}

// load reads meta.properties, or writes it for a new directory.
func (n *Broker) load() error {
	present, err := n.logs.Partitions()
	if err != nil {
		return fmt.Errorf("partlog: %w", err)
	}
	formatted := len(present) == 0 || n.opts.WriteMissingMeta
	n.meta, err = loadOrCreateMeta(n.opts.FS, n.dir, n.opts.NodeID, n.opts.ClusterID, formatted)
	return err
}

// startController starts the controller in the node's process, over its
// data directory, with the node's id: for a node on its own, a quorum of
// one whose only member is the node (a directory written before a single
// node became a cluster of one has its topics in the old metadata format,
// which the controller takes over); in combined mode, a member of the
// QuorumController's quorum, served on QuorumListener.
func (n *Broker) startController() error {
	opts := n.opts.QuorumController
	opts.FS, opts.Logger, opts.NodeID = n.opts.FS, n.logger.With("component", "controller"), n.meta.NodeID
	if n.opts.combined() && n.opts.QuorumListener == nil {
		return fmt.Errorf("partlog: a controller of a quorum needs a QuorumListener")
	}
	c, err := controller.Start(n.dir, n.logs, opts, func(l *log.Log) error {
		return migrateTopicRecords(l, n.meta.NodeID, n.logger)
	})
	if err != nil {
		return err
	}
	n.controller = c
	if !n.opts.combined() {
		n.opts.Controller, n.opts.Network = c, memnet.New()
		return nil
	}
	ln := n.opts.QuorumListener
	n.bg.Go(func() {
		if err := c.Serve(ln); err != nil {
			n.logger.Error("the controller stopped serving", "listener", ln.Addr().String(), "err", err)
		}
	})
	return nil
}

// newPartition opens (creating as needed) the log of replica tp of the
// topic with id topicID and configs cfg, and returns its partition.
func (n *Broker) newPartition(tp kafka.TopicPartition, topicID string, cfg topicconfig.Config, hw int64) (*partition.Partition, bool, error) {
	lo := cfg.LogOptions()
	lo.Now, lo.Logger, lo.OnFlush = n.opts.Now, n.logger, n.metrics.Flushed
	syncs := lo.SyncBeforeAck
	lo.SyncBeforeAck = false // the replica's driver syncs once per Ready
	l, err := n.logs.Open(tp, lo)
	if err != nil {
		return nil, false, err
	}
	po := cfg.PartitionOptions()
	po.Now, po.ProducerIDExpiration = n.opts.Now, n.opts.ProducerIDExpiration
	po.Replicated, po.HighWatermark, po.DurableHighWatermark = true, hw, false
	if !n.opts.NoTransactionVerification {
		po.TxnVerifier = n.verifier
	}
	p := partition.New(tp.Topic, tp.Partition, n.meta.NodeID, -1, l, po)
	if err := n.writePartitionMetadata(tp, topicID); err != nil {
		p.Close()
		return nil, false, err
	}
	return p, syncs, nil
}

// topicConfig returns the configs in force for a topic that sets own:
// the node's topic defaults, overridden by own.
func (n *Broker) topicConfig(own map[string]string) topicconfig.Config {
	overrides := maps.Clone(n.opts.TopicDefaults)
	if overrides == nil {
		overrides = map[string]string{}
	}
	maps.Copy(overrides, own)
	return topicconfig.Effective(overrides)
}

// writePartitionMetadata writes Kafka's partition.metadata, which names the
// topic id a partition directory belongs to, if it is missing.
func (n *Broker) writePartitionMetadata(tp kafka.TopicPartition, id string) error {
	name := path.Join(n.dir, tp.String(), "partition.metadata")
	if _, err := n.opts.FS.Stat(name); err == nil {
		return nil
	}
	return props.WriteAtomic(n.opts.FS, name, []byte(fmt.Sprintf("version: 0\ntopic_id: %s\n", id)))
}

// ClusterID returns the id of the node's cluster.
func (n *Broker) ClusterID() string { return n.meta.ClusterID }

// NodeID returns the node's id.
func (n *Broker) NodeID() int32 { return n.meta.NodeID }

// Dir returns the node's data directory.
func (n *Broker) Dir() string { return n.dir }

// begin starts a request: it fails once the node is closing, and otherwise
// keeps Close waiting until end.
func (n *Broker) begin() error {
	n.requests.RLock()
	if n.closing.Load() {
		n.requests.RUnlock()
		return ErrClosed
	}
	return nil
}

func (n *Broker) end() { n.requests.RUnlock() }

// runEvery runs f every interval on a goroutine that Close stops.
func (n *Broker) runEvery(interval time.Duration, f func()) {
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
func (n *Broker) enforceRetention() {
	for _, p := range n.member.partitions() {
		if deleted, err := p.Log().DeleteRetained(); err != nil {
			n.logger.Error("retention failed", "partition", partitionName(p), "err", err)
		} else if deleted > 0 {
			n.logger.Info("retention deleted segments", "partition", partitionName(p), "segments", deleted)
		}
	}
}

// partitionName names p as topic-partition, for logs.
func partitionName(p *partition.Partition) string {
	return kafka.TopicPartition{Topic: p.Topic(), Partition: p.ID()}.String()
}

// enforceRetentionNow runs retention now (partlogtest.EnforceRetention).
func (n *Broker) enforceRetentionNow() error {
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
// partitions to other replicas (Kafka's controlled shutdown). A program
// that serves the node with transport.NewServer closes the node before the
// server, as a Kafka broker shuts down before its socket server stops: a
// node whose server closed first is cut off from its followers while it is
// still in the cluster, and its leaders shrink their ISRs to themselves.
func (n *Broker) Close() error { return n.close(true) }

// halt closes the node without telling its cluster first, as a crash
// would (partlogtest.Halt).
func (n *Broker) halt() error { return n.close(false) }

func (n *Broker) close(controlled bool) error {
	if n.closing.Swap(true) {
		return nil
	}
	if n.member != nil {
		n.member.leave(controlled)
	}
	if n.controller != nil {
		if err := n.controller.Close(); err != nil {
			n.logger.Error("closing the controller failed", "err", err)
		}
	}
	n.stopGroups()
	n.txns.stopTxns()
	n.requests.Lock()
	defer n.requests.Unlock()
	close(n.stop)
	n.bg.Wait()
	return n.logs.Close()
}

// partition returns the partition of a replica the node hosts:
// kafka.ErrUnknownTopicOrPartition for one the cluster does not have,
// ErrNotLeaderOrFollower for one the node does not host, and
// ErrKafkaStorage for one whose log could not be opened.
func (n *Broker) partition(name string, id int32) (*partition.Partition, error) {
	h, err := n.hostedReplica(name, id)
	if err != nil {
		return nil, err
	}
	return h.p, nil
}

// NewTopic describes a topic to create.
type NewTopic struct {
	// Name is the topic's name (see ValidateTopicName).
	Name string
	// Partitions is the number of partitions; zero means 1.
	Partitions int32
	// ReplicationFactor is how many replicas each partition has; zero
	// means 1. It is at most the cluster's live nodes: 1 on a node on its
	// own.
	ReplicationFactor int16
	// Configs overrides topic configs (see TopicConfigKeys), by Kafka's
	// names: "retention.ms", "segment.bytes", ...
	Configs map[string]string
}

// maxPartitions bounds the partitions of one topic.
const maxPartitions = 100_000

// CreateTopic creates a topic through the controller and returns once this
// node hosts its replicas of it. Names, partition counts, replication
// factors and configs are checked as Kafka checks them; the errors are
// kafka.ErrInvalidTopic, ErrTopicAlreadyExists, ErrInvalidPartitions,
// ErrInvalidReplicationFactor and ErrInvalidConfig. A topic some of whose
// replicas on this node cannot be created (a full disk) is deleted again,
// and the error is kafka.ErrKafkaStorage.
func (n *Broker) CreateTopic(ctx context.Context, nt NewTopic) error {
	if err := n.begin(); err != nil {
		return err
	}
	defer n.end()
	return n.createTopic(ctx, nt)
}

// createTopic is CreateTopic for a caller that holds the node (begin).
func (n *Broker) createTopic(ctx context.Context, nt NewTopic) error {
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
	if err := topicconfig.Validate(nt.Configs); err != nil {
		return err
	}
	md, _ := n.member.metadata()
	if _, ok := md.Topics[nt.Name]; !ok {
		for existing := range md.Topics {
			if collides(existing, nt.Name) {
				return fmt.Errorf("%w: %q collides with %q ('.' and '_' are the same in metric names)", kafka.ErrInvalidTopic, nt.Name, existing)
			}
		}
	}
	return n.createReplicatedTopic(ctx, nt)
}

// DeleteTopic deletes a topic and, once the controller's metadata reaches
// them, its replicas' data.
func (n *Broker) DeleteTopic(ctx context.Context, name string) error {
	if err := n.begin(); err != nil {
		return err
	}
	defer n.end()
	md, _ := n.member.metadata()
	t, ok := md.Topics[name]
	if !ok {
		return fmt.Errorf("%w: %q", kafka.ErrUnknownTopicOrPartition, name)
	}
	if strings.HasPrefix(name, "__") {
		return fmt.Errorf("%w: %q is an internal topic", kafka.ErrInvalidTopic, name)
	}
	return n.deleteReplicatedTopic(ctx, name, t.ID)
}

// ListTopics returns the names of the topics, sorted.
func (n *Broker) ListTopics() []string {
	md, _ := n.member.metadata()
	return slices.Sorted(maps.Keys(md.Topics))
}

// TopicDescription describes a topic.
type TopicDescription struct {
	// Name and ID are the topic's name and id (Kafka's topic id, in
	// unpadded URL-safe base64).
	Name string
	ID   string
	// ReplicationFactor is how many replicas each partition has.
	ReplicationFactor int16
	// Configs holds the topic's overrides; Effective every config in
	// force, defaults included.
	Configs   map[string]string
	Effective map[string]string
	// Partitions describes each partition, by partition number.
	Partitions []PartitionDescription
}

// PartitionDescription describes one partition. The offsets and Size are
// known for the replicas this node hosts, and -1 (Size 0) for the others.
type PartitionDescription struct {
	// Partition is the partition's id.
	Partition int32
	// Leader is the node that leads the partition, -1 for none.
	Leader int32
	// LeaderEpoch is the epoch of the current leadership.
	LeaderEpoch int32
	// Replicas are the nodes assigned a replica, preferred leader first.
	Replicas []int32
	// ISR are the replicas in sync with the leader.
	ISR []int32
	// LogStartOffset, LogEndOffset and HighWatermark are this node's
	// replica's.
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
func (n *Broker) DescribeTopics(names ...string) ([]TopicDescription, error) {
	if err := n.begin(); err != nil {
		return nil, err
	}
	defer n.end()
	if len(names) == 0 {
		names = n.ListTopics()
	}
	out := make([]TopicDescription, 0, len(names))
	for _, name := range names {
		d, ok := n.describeTopic(name)
		if !ok {
			return nil, fmt.Errorf("%w: %q", kafka.ErrUnknownTopicOrPartition, name)
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

// Controller returns the controller that runs in the broker's process —
// its own, for a broker on its own, or its member of the quorum in
// combined mode (Options.QuorumController) — or nil for a broker whose
// controllers run elsewhere.
func (n *Broker) Controller() *controller.Controller { return n.controller }
