package controller

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"path"
	"strconv"
	"sync"
	"time"

	"github.com/partlog/partlog/internal/props"
	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/log"
	"github.com/partlog/partlog/replica"
	"github.com/partlog/partlog/vfs"
)

// Controller is a running controller. It implements API, and is safe for
// concurrent use.
type Controller struct {
	calls
	dir    string
	fs     vfs.FS
	logger *slog.Logger
	logs   *log.Dir
	// ownsLogs says logs is the controller's own, which Close closes.
	ownsLogs bool

	mu      sync.Mutex
	machine *Machine
	addrs   map[int32]string
	epoch   int32 // the controller's incarnation, one more at each start
	version int64 // grows with every change of the metadata nodes see
	pids    producerIDs
	closed  bool

	// cause names what is changing the metadata, for the log: a call's op,
	// or "tick".
	cause string

	changed chan struct{} // closed and replaced on every change
	stop    chan struct{}
	done    chan struct{}
}

// Topic is the controller's metadata log, named as KRaft's.
var Topic = kafka.TopicPartition{Topic: "__cluster_metadata", Partition: 0}

// Open opens (creating as needed) the controller's directory, replays its
// metadata log and starts ticking. Close stops it.
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

// Start starts a controller whose metadata log (Topic) and files live in
// dir, whose log directory logs is — a node's, for the controller of a
// node on its own, which keeps the cluster metadata in its data directory
// as a KRaft node in combined mode does. Close leaves logs open. prepare,
// if not nil, may rewrite the metadata log before the controller replays
// it.
func Start(dir string, logs *log.Dir, opts Options, prepare func(*log.Log) error) (*Controller, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	l, err := logs.Open(Topic, log.Options{SegmentBytes: 16 << 20, MaxIndexBytes: 1 << 20, RetentionMs: -1})
	if err != nil {
		return nil, fmt.Errorf("controller: open metadata log: %w", err)
	}
	if prepare != nil {
		if err := prepare(l); err != nil {
			return nil, err
		}
	}
	epoch, err := bumpEpoch(opts.FS, dir)
	if err != nil {
		return nil, err
	}
	// Versions grow across restarts: nodes take metadata only when it is
	// newer than theirs.
	c := &Controller{dir: dir, fs: opts.FS, logger: opts.Logger, logs: logs, addrs: map[int32]string{},
		epoch: epoch, version: int64(epoch) << 32,
		changed: make(chan struct{}), stop: make(chan struct{}), done: make(chan struct{})}
	c.calls = calls{c}
	store := &countingStore{Store: NewLogStore(l), c: c}
	if c.machine, err = NewMachine(store, opts); err != nil {
		return nil, err
	}
	go c.run(opts.TickInterval)
	return c, nil
}

// countingStore counts the records the controller commits: every commit
// is a change of the metadata the nodes must see.
type countingStore struct {
	Store
	c *Controller
}

func (s *countingStore) Append(recs []Record) error {
	if err := s.Store.Append(recs); err != nil {
		return err
	}
	for _, r := range recs {
		s.c.logRecord(r)
	}
	s.c.bumpLocked()
	return nil
}

// logRecord logs a committed change, with the call or the tick that made
// it: the nodes' registrations and fences and the topics' changes at Info,
// the partitions' leaders and ISRs at Debug. The caller holds mu.
func (c *Controller) logRecord(r Record) {
	switch r.Type {
	case RecordRegisterNode:
		c.logger.Info("node registered", "node", r.Node, "broker_epoch", r.BrokerEpoch, "cause", c.cause)
	case RecordFenceNode:
		c.logger.Info("node fenced", "node", r.Node, "broker_epoch", r.BrokerEpoch, "cause", c.cause)
	case RecordUnfenceNode:
		c.logger.Info("node unfenced", "node", r.Node, "broker_epoch", r.BrokerEpoch, "cause", c.cause)
	case RecordPartition:
		s := r.State
		c.logger.Debug("partition state", "partition", kafka.TopicPartition{Topic: r.Topic, Partition: r.Partition}.String(),
			"leader", s.Leader, "leader_epoch", s.LeaderEpoch, "partition_epoch", s.PartitionEpoch, "isr", s.ISR, "cause", c.cause)
	case RecordTopic:
		c.logger.Info("topic created", "topic", r.Topic, "partitions", r.Partitions, "cause", c.cause)
	case RecordRemoveTopic:
		c.logger.Info("topic deleted", "topic", r.Topic, "cause", c.cause)
	case RecordTopicConfig:
		c.logger.Info("topic configs changed", "topic", r.Topic, "configs", r.Configs, "cause", c.cause)
	}
}

// bumpLocked records a change of the metadata and wakes its watchers. The
// caller holds mu.
func (c *Controller) bumpLocked() {
	c.version++
	close(c.changed)
	c.changed = make(chan struct{})
}

// run ticks the controller until Close.
func (c *Controller) run(tick time.Duration) {
	defer close(c.done)
	t := time.NewTicker(tick)
	defer t.Stop()
	for {
		select {
		case <-c.stop:
			return
		case <-t.C:
			c.mu.Lock()
			c.cause = "tick" // a session's expiry, a preferred leader's election
			if err := c.machine.Tick(); err != nil {
				c.logger.Error("controller tick failed", "err", err)
			}
			c.machine.Updates() // nodes pull the metadata with their heartbeats
			c.mu.Unlock()
		}
	}
}

// Close stops the controller and closes its directory (unless it was
// started over a node's, with Start).
func (c *Controller) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	c.mu.Unlock()
	close(c.stop)
	<-c.done
	if !c.ownsLogs {
		return nil
	}
	return c.logs.Close()
}

// State returns a copy of the cluster metadata.
func (c *Controller) State() ClusterState {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.machine.State()
}

// Partition returns a partition's leader, ISR and epochs.
func (c *Controller) Partition(topic string, partition int32) (replica.LeaderAndISR, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.machine.Partition(kafka.TopicPartition{Topic: topic, Partition: partition})
}

// WaitFor waits until cond, called with the metadata after each change,
// holds, or ctx ends.
func (c *Controller) WaitFor(ctx context.Context, cond func(ClusterState) bool) error {
	for {
		c.mu.Lock()
		s, changed := c.machine.State(), c.changed
		c.mu.Unlock()
		if cond(s) {
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// metadataLocked returns the metadata nodes see. The caller holds mu.
func (c *Controller) metadataLocked() *Metadata {
	s := c.machine.State()
	md := &Metadata{Version: c.version, Nodes: map[int32]NodeInfo{}, Topics: s.Topics}
	for id, n := range s.Nodes {
		md.Nodes[id] = NodeInfo{BrokerEpoch: n.BrokerEpoch, Fenced: n.Fenced, Address: c.addrs[id]}
	}
	return md
}

// EpochFileName is the file in a controller's directory that counts its
// starts (Kafka's controller epoch): metadata versions start at the epoch
// times 2^32, so a restarted controller's versions are newer than any a
// node saw from the last one.
const EpochFileName = "controller-epoch"

// bumpEpoch reads the controller epoch, adds one and writes it back
// durably.
func bumpEpoch(fsys vfs.FS, dir string) (int32, error) {
	name := path.Join(dir, EpochFileName)
	kv, err := props.Read(fsys, name)
	if err != nil {
		return 0, err
	}
	epoch := int64(0)
	if v, ok := kv["epoch"]; ok {
		if epoch, err = strconv.ParseInt(v, 10, 32); err != nil || epoch < 0 {
			return 0, fmt.Errorf("controller: %s: bad epoch %q", name, v)
		}
	}
	if epoch >= math.MaxInt32 {
		return 0, fmt.Errorf("controller: %s: controller epochs used up", name)
	}
	epoch++
	if err := props.WriteAtomic(fsys, name, []byte(fmt.Sprintf("version=0\nepoch=%d\n", epoch))); err != nil {
		return 0, err
	}
	return int32(epoch), nil
}
