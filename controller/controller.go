package controller

import (
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"

	pb "go.etcd.io/raft/v3/raftpb"

	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/log"
	"github.com/partlog/partlog/replica"
	"github.com/partlog/partlog/vfs"
)

// Controller is a running controller: one member of the controller quorum
// (a quorum of one by default), answering nodes' calls while it is the
// active controller and kafka.ErrNotController while it is not. It
// implements API, and is safe for concurrent use.
type Controller struct {
	calls
	dir    string
	fs     vfs.FS
	logger *slog.Logger
	logs   *log.Dir
	// ownsLogs says logs is the controller's own, which Close closes.
	ownsLogs bool
	quorum   *QuorumNode
	tcp      *TCPRaft // the controller's own RaftTransport, or nil
	pids     producerIDFloor
	tls      *tls.Config // Serve's, or nil for plaintext

	mu     sync.Mutex
	closed bool
	stop   chan struct{} // closed by Close
}

// Topic is the controller's metadata log, named as KRaft's.
var Topic = kafka.TopicPartition{Topic: "__cluster_metadata", Partition: 0}

// Open opens (creating as needed) the controller's directory, reads its
// metadata log and joins its quorum. Close stops it.
func Open(dir string, opts Options) (*Controller, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	if err := vfs.MkdirAllDurable(opts.FS, dir, 0o755); err != nil {
		return nil, fmt.Errorf("controller: create %s: %w", dir, err)
	}
	logs, err := log.OpenDir(dir, log.DirOptions{FS: opts.FS, Logger: opts.Logger})
	if err != nil {
		return nil, fmt.Errorf("controller: %w", err)
	}
	c, err := Start(dir, logs, opts, nil)
	if err != nil {
		logs.Close()
		return nil, err
	}
	c.ownsLogs = true
	return c, nil
}

// Start starts a controller whose metadata log (Topic) lives in the log
// directory logs, at dir — a node's, for the controller of a node on its
// own, which keeps the cluster metadata in its data directory as a KRaft
// node in combined mode does. Close leaves logs open. prepare, if not nil,
// may rewrite the metadata log before the controller reads it. A quorum of
// one (no Voters, or only NodeID) is active when Start returns; a member of
// a larger quorum becomes active if the quorum elects it.
func Start(dir string, logs *log.Dir, opts Options, prepare func(*log.Log) error) (*Controller, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	voters := slices.Sorted(maps.Keys(opts.Voters))
	if len(voters) == 0 {
		voters = []int32{opts.NodeID}
	}
	if !slices.Contains(voters, opts.NodeID) {
		return nil, fmt.Errorf("controller: node %d is not one of the voters %v", opts.NodeID, voters)
	}
	var tcp *TCPRaft
	if len(voters) > 1 && opts.RaftTransport == nil {
		tcp = NewTCPRaft(opts.Voters, opts.PeerTLS)
		opts.RaftTransport = tcp
	}
	c := &Controller{dir: dir, fs: opts.FS, logger: opts.Logger, logs: logs, tcp: tcp, tls: opts.TLS, stop: make(chan struct{})}
	c.calls = calls{c}
	m, err := openMember(opts.NodeID, voters, logs, opts, prepare)
	if err != nil {
		return nil, err
	}
	m.observe = c.logRecord
	// Replay what the log commits. What a member of a larger quorum would
	// send now is dropped: Raft sends it again at the next tick.
	if _, err := m.Process(); err != nil {
		return nil, err
	}
	if len(voters) == 1 {
		if err := m.Campaign(); err != nil {
			return nil, fmt.Errorf("controller: %w", err)
		}
		if _, err := m.Process(); err != nil {
			return nil, err
		}
		if !m.Active() {
			return nil, fmt.Errorf("controller: node %d, the only voter, did not become the active controller", opts.NodeID)
		}
	}
	c.quorum = StartQuorumNode(m, voters, opts.RaftTransport)
	return c, nil
}

// logRecord logs a committed change: the nodes' registrations and fences
// and the topics' changes at Info, the partitions' leaders and ISRs and
// the producer id blocks at Debug.
func (c *Controller) logRecord(r Record) {
	switch r.Type {
	case RecordRegisterNode:
		c.logger.Info("node registered", "node", r.Node, "broker_epoch", r.BrokerEpoch, "address", r.Address)
	case RecordNodeAddress:
		c.logger.Info("node address", "node", r.Node, "broker_epoch", r.BrokerEpoch, "address", r.Address)
	case RecordFenceNode:
		c.logger.Info("node fenced", "node", r.Node, "broker_epoch", r.BrokerEpoch)
	case RecordUnfenceNode:
		c.logger.Info("node unfenced", "node", r.Node, "broker_epoch", r.BrokerEpoch)
	case RecordPartition:
		s := r.State
		c.logger.Debug("partition state", "partition", kafka.TopicPartition{Topic: r.Topic, Partition: r.Partition}.String(),
			"leader", s.Leader, "leader_epoch", s.LeaderEpoch, "partition_epoch", s.PartitionEpoch, "isr", s.ISR)
	case RecordTopic:
		c.logger.Info("topic created", "topic", r.Topic, "partitions", r.Partitions)
	case RecordRemoveTopic:
		c.logger.Info("topic deleted", "topic", r.Topic)
	case RecordTopicConfig:
		c.logger.Info("topic configs changed", "topic", r.Topic, "configs", r.Configs)
	case RecordGroupConfig:
		c.logger.Info("group configs changed", "group", r.Group, "configs", r.Configs)
	case RecordProducerIDs:
		c.logger.Debug("producer ids handed out", "node", r.Node, "next_producer_id", r.NextProducerID)
	}
}

// Close stops the controller and closes its directory (unless it was
// started over a node's, with Start). Calls still waiting for their
// changes to commit fail with kafka.ErrNotController.
func (c *Controller) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	c.mu.Unlock()
	close(c.stop)
	c.quorum.Close()
	if c.tcp != nil {
		c.tcp.Close()
	}
	if !c.ownsLogs {
		return nil
	}
	return c.logs.Close()
}

// Active reports whether this controller is the quorum's active one.
func (c *Controller) Active() bool {
	active, _, _ := c.quorum.Active()
	return active
}

// Leader returns the node id of the active controller as this one knows
// it — the quorum's Raft leader — and false when it knows none.
func (c *Controller) Leader() (int32, bool) {
	_, leader, known := c.quorum.Active()
	return leader, known
}

// State returns a copy of the committed cluster metadata.
func (c *Controller) State() ClusterState {
	var s ClusterState
	c.quorum.Read(func(st ClusterState, _ int64) { s = st })
	return s
}

// Partition returns a partition's committed leader, ISR and epochs.
func (c *Controller) Partition(topic string, partition int32) (replica.LeaderAndISR, error) {
	s := c.State()
	t, ok := s.Topics[topic]
	if !ok || partition < 0 || int(partition) >= len(t.Partitions) {
		return replica.LeaderAndISR{}, fmt.Errorf("%w: %s-%d", kafka.ErrUnknownTopicOrPartition, topic, partition)
	}
	return t.Partitions[partition], nil
}

// WaitFor waits until cond, called with the committed metadata after each
// change, holds, or ctx ends.
func (c *Controller) WaitFor(ctx context.Context, cond func(ClusterState) bool) error {
	for {
		_, changed := c.quorum.Version()
		if cond(c.State()) {
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// metadata returns the committed metadata nodes see, and its version.
func (c *Controller) metadata() *Metadata {
	var md *Metadata
	c.quorum.Read(func(s ClusterState, version int64) {
		md = &Metadata{Version: version, Nodes: map[int32]NodeInfo{}, Topics: s.Topics, Users: s.Users,
			ACLs: aclsInOrder(s.ACLs), Quotas: quotasInOrder(s.Quotas), GroupConfigs: s.GroupConfigs}
		for id, n := range s.Nodes {
			md.Nodes[id] = NodeInfo{BrokerEpoch: n.BrokerEpoch, Fenced: n.Fenced, Address: n.Address}
		}
	})
	return md
}

// StepRaft hands the controller a Raft message another controller of its
// quorum sent it (through its RaftTransport). The controller keeps msg:
// the caller must not change it afterwards.
func (c *Controller) StepRaft(msg *pb.Message) { c.quorum.Step(msg) }
