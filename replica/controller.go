package replica

import (
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/partlog/partlog/kafka"
)

// Controller owns a cluster's metadata, as Kafka's controller does: the
// registered nodes and their liveness, the topics and the assignment of
// their partitions to nodes, and each partition's leader, ISR and epochs.
// It elects leaders from the ISR, commits the ISR changes leaders propose,
// moves leadership back to preferred replicas, and says in Updates what each
// node must Apply.
//
// It is a deterministic state machine, like Replica: time passes only by
// Tick, and every change is first appended to a MetadataStore, so that a
// restarted controller replays the store into the same state. The
// interface lets that state later live in a Raft quorum; LocalController
// is the single-process implementation.
type Controller interface {
	// RegisterNode registers node id, or registers it again after a
	// restart, and returns its new broker epoch, which the node passes to
	// its replicas as Options.BrokerEpoch and to Heartbeat. A previous
	// incarnation is fenced first: its log may have lost what it had not
	// synced.
	RegisterNode(id int32) (brokerEpoch int64, err error)
	// Heartbeat tells the controller node id is alive in brokerEpoch. A
	// fenced node that heartbeats again is unfenced.
	Heartbeat(id int32, brokerEpoch int64) error
	// CreateTopic creates a topic with partitions partitions of
	// replicationFactor replicas each, spread over the unfenced nodes.
	CreateTopic(name string, partitions, replicationFactor int, cfg TopicConfig) error
	// DeleteTopic deletes a topic.
	DeleteTopic(name string) error
	// CreatePartitions raises a topic's partition count to total, placing
	// the new partitions' replicas (as many as partition 0 has) over the
	// unfenced nodes.
	CreatePartitions(name string, total int) error
	// AlterTopicConfig replaces a topic's configs and unclean election
	// flag (cfg.ID is ignored).
	AlterTopicConfig(name string, cfg TopicConfig) error
	// ElectPreferredLeader moves a partition's leadership to its preferred
	// replica (the first of its assignment), or says why not:
	// ErrElectionNotNeeded, ErrPreferredLeaderNotAvailable,
	// ErrUnknownTopicOrPartition.
	ElectPreferredLeader(tp kafka.TopicPartition) error
	// AlterPartition commits the ISR change a partition's leader, node
	// from, proposed (Ready.AlterPartition), and returns the partition's
	// new state, or refuses it with a Kafka error.
	AlterPartition(from int32, tp kafka.TopicPartition, change ISRChange) (LeaderAndISR, error)
	// ElectPreferredLeaders moves the leadership of every partition whose
	// preferred replica (the first of its assignment) is unfenced and in
	// the ISR to that replica.
	ElectPreferredLeaders() error
	// Tick tells the controller one TickInterval passed: it fences nodes
	// whose heartbeats stopped for SessionTimeout and, every
	// LeaderImbalanceCheckInterval, elects preferred leaders.
	Tick() error
	// Partition returns a partition's state.
	Partition(tp kafka.TopicPartition) (LeaderAndISR, error)
	// State returns a copy of the whole metadata.
	State() ClusterState
	// Updates returns the commands nodes must carry out since the last
	// call, and forgets them.
	Updates() []Update
}

// ControllerOptions configures a LocalController. The zero value works:
// Kafka's defaults. Durations are rounded up to whole ticks.
type ControllerOptions struct {
	// TickInterval is the time one Tick stands for. Zero means 100 ms.
	TickInterval time.Duration
	// SessionTimeout is broker.session.timeout.ms: a node that has not
	// heartbeat for this long is fenced. Zero means 9 s.
	SessionTimeout time.Duration
	// LeaderImbalanceCheckInterval is
	// leader.imbalance.check.interval.seconds: how often Tick moves
	// leadership back to preferred replicas. Zero means 300 s.
	LeaderImbalanceCheckInterval time.Duration
	// NoAutoLeaderRebalance turns that off: auto.leader.rebalance.enable
	// set to false. Unlike Kafka, leadership moves back whatever
	// leader.imbalance.per.broker.percentage would say.
	NoAutoLeaderRebalance bool
}

const (
	defaultSessionTimeout               = 9 * time.Second
	defaultLeaderImbalanceCheckInterval = 300 * time.Second
)

func (o ControllerOptions) withDefaults() (ControllerOptions, error) {
	if o.TickInterval == 0 {
		o.TickInterval = defaultTickInterval
	}
	if o.SessionTimeout == 0 {
		o.SessionTimeout = defaultSessionTimeout
	}
	if o.LeaderImbalanceCheckInterval == 0 {
		o.LeaderImbalanceCheckInterval = defaultLeaderImbalanceCheckInterval
	}
	if o.TickInterval < 0 || o.SessionTimeout < 0 || o.LeaderImbalanceCheckInterval < 0 {
		return o, fmt.Errorf("replica: TickInterval %v, SessionTimeout %v and LeaderImbalanceCheckInterval %v must not be negative",
			o.TickInterval, o.SessionTimeout, o.LeaderImbalanceCheckInterval)
	}
	return o, nil
}

func (o ControllerOptions) ticks(d time.Duration) int64 {
	return max(1, int64((d+o.TickInterval-1)/o.TickInterval))
}

// TopicConfig is a topic's configuration: what the controller acts on,
// and what it keeps for the nodes that host the topic's partitions.
type TopicConfig struct {
	// Unclean is unclean.leader.election.enable; the zero value is
	// CleanOnly, Kafka's default.
	Unclean Unclean
	// ID is the topic's id, a UUID string the creator chooses (Kafka's
	// topic id). It may be empty; a non-empty one must not be another
	// topic's.
	ID string
	// Configs are the topic's config overrides by Kafka name, such as
	// "retention.ms" or "min.insync.replicas", so that every node opens
	// the topic's partitions with the same settings. The controller keeps
	// them as they are, without reading them: keys must be non-empty, and
	// keys and values at most 4096 bytes, 4096 of them at most.
	Configs map[string]string
}

// Update is a command for one node: Apply State to its replica of
// TopicPartition, or, with Deleted, stop and delete that replica.
type Update struct {
	Node           int32
	TopicPartition kafka.TopicPartition
	State          LeaderAndISR
	Deleted        bool
}

// NodeState is what the controller records of a node.
type NodeState struct {
	BrokerEpoch int64
	Fenced      bool
}

// TopicState is what the controller records of a topic.
type TopicState struct {
	Unclean Unclean
	// ID and Configs are the topic's TopicConfig.ID and Configs; Configs
	// is nil when there are none.
	ID      string
	Configs map[string]string
	// Partitions holds each partition's state, by partition number.
	Partitions []LeaderAndISR
}

// ClusterState is the whole metadata: what a controller persists.
type ClusterState struct {
	Nodes  map[int32]NodeState
	Topics map[string]TopicState
}

type nodeEntry struct {
	NodeState
	lastHeartbeat int64
}

// LocalController is the single-process Controller. It is not safe for
// concurrent use: its driver serializes calls, as a Replica's does.
type LocalController struct {
	store MetadataStore
	opts  ControllerOptions

	now         int64
	nodes       map[int32]*nodeEntry
	topics      map[string]*TopicState
	nextEpoch   int64 // next broker epoch to hand out
	placements  int   // topics placed so far: the rotating start
	replaying   bool
	updates     []Update
	updateIndex map[updateKey]int
}

type updateKey struct {
	node int32
	tp   kafka.TopicPartition
}

var _ Controller = (*LocalController)(nil)

// NewController returns a controller that persists its metadata in store,
// after replaying what store already holds: a restarted controller
// resumes where it stopped. Every registered node gets a full session
// from the restart to heartbeat in.
func NewController(store MetadataStore, opts ControllerOptions) (*LocalController, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	c := &LocalController{store: store, opts: opts, nodes: map[int32]*nodeEntry{},
		topics: map[string]*TopicState{}, nextEpoch: 1, updateIndex: map[updateKey]int{}}
	c.replaying = true
	if err := store.Replay(c.apply); err != nil {
		return nil, err
	}
	c.replaying = false
	return c, nil
}

// commit appends records to the store and, once they are durable, applies
// them.
func (c *LocalController) commit(recs []MetadataRecord) error {
	if len(recs) == 0 {
		return nil
	}
	if err := c.store.Append(recs); err != nil {
		return err
	}
	for _, r := range recs {
		if err := c.apply(r); err != nil {
			return err
		}
	}
	return nil
}

// apply makes one record's change, and outside replay, queues the updates
// it implies.
func (c *LocalController) apply(r MetadataRecord) error {
	bad := func(why string) error {
		return fmt.Errorf("%w: %s record %+v: %s", ErrMetadataReplay, r.Type, r, why)
	}
	switch r.Type {
	case RecordRegisterNode:
		if n, ok := c.nodes[r.Node]; ok && n.BrokerEpoch >= r.BrokerEpoch {
			return bad("broker epoch does not grow")
		}
		c.nodes[r.Node] = &nodeEntry{NodeState: NodeState{BrokerEpoch: r.BrokerEpoch}, lastHeartbeat: c.now}
		c.nextEpoch = max(c.nextEpoch, r.BrokerEpoch+1)
		c.pushNode(r.Node)
	case RecordFenceNode, RecordUnfenceNode:
		n, ok := c.nodes[r.Node]
		if !ok || n.BrokerEpoch != r.BrokerEpoch {
			return bad("no such node incarnation")
		}
		n.Fenced = r.Type == RecordFenceNode
		if !n.Fenced {
			n.lastHeartbeat = c.now
			c.pushNode(r.Node)
		}
	case RecordTopic:
		if _, ok := c.topics[r.Topic]; ok {
			return bad("topic exists")
		}
		c.topics[r.Topic] = &TopicState{Unclean: r.Unclean, ID: r.ID, Configs: cloneConfigs(r.Configs),
			Partitions: make([]LeaderAndISR, r.Partitions)}
		c.placements++
	case RecordPartition:
		t, ok := c.topics[r.Topic]
		if ok && int(r.Partition) == len(t.Partitions) {
			t.Partitions = append(t.Partitions, LeaderAndISR{}) // a partition added to the topic
		}
		if !ok || int(r.Partition) >= len(t.Partitions) {
			return bad("no such partition")
		}
		t.Partitions[r.Partition] = r.State.clone()
		tp := kafka.TopicPartition{Topic: r.Topic, Partition: r.Partition}
		for _, id := range r.State.Replicas {
			if c.live(id) {
				c.push(Update{Node: id, TopicPartition: tp, State: r.State.clone()})
			}
		}
	case RecordTopicConfig:
		t, ok := c.topics[r.Topic]
		if !ok {
			return bad("no such topic")
		}
		t.Unclean, t.Configs = r.Unclean, cloneConfigs(r.Configs)
	case RecordRemoveTopic:
		t, ok := c.topics[r.Topic]
		if !ok {
			return bad("no such topic")
		}
		delete(c.topics, r.Topic)
		for p, s := range t.Partitions {
			for _, id := range s.Replicas {
				if c.live(id) {
					c.push(Update{Node: id, TopicPartition: kafka.TopicPartition{Topic: r.Topic, Partition: int32(p)}, Deleted: true})
				}
			}
		}
	default:
		return bad("unknown type")
	}
	return nil
}

// push queues u, replacing an earlier update for the same node and
// partition: a node applies only the latest state.
func (c *LocalController) push(u Update) {
	if c.replaying {
		return
	}
	k := updateKey{u.Node, u.TopicPartition}
	if i, ok := c.updateIndex[k]; ok {
		c.updates[i] = u
		return
	}
	c.updateIndex[k] = len(c.updates)
	c.updates = append(c.updates, u)
}

// pushNode queues the state of every partition node id hosts, for a node
// that (re)joins.
func (c *LocalController) pushNode(id int32) {
	if c.replaying {
		return
	}
	c.eachPartition(func(tp kafka.TopicPartition, s *LeaderAndISR, _ Unclean) {
		if slices.Contains(s.Replicas, id) {
			c.push(Update{Node: id, TopicPartition: tp, State: s.clone()})
		}
	})
}

// eachPartition calls fn for every partition, in topic name order.
func (c *LocalController) eachPartition(fn func(tp kafka.TopicPartition, s *LeaderAndISR, unclean Unclean)) {
	names := make([]string, 0, len(c.topics))
	for name := range c.topics {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		t := c.topics[name]
		for p := range t.Partitions {
			fn(kafka.TopicPartition{Topic: name, Partition: int32(p)}, &t.Partitions[p], t.Unclean)
		}
	}
}

// cloneConfigs returns a copy of configs, nil when it is empty, so that a
// topic's state reads the same before and after a restart.
func cloneConfigs(configs map[string]string) map[string]string {
	if len(configs) == 0 {
		return nil
	}
	return maps.Clone(configs)
}

// live reports whether node id is registered and not fenced.
func (c *LocalController) live(id int32) bool {
	n, ok := c.nodes[id]
	return ok && !n.Fenced
}

// Updates implements Controller.
func (c *LocalController) Updates() []Update {
	u := c.updates
	c.updates = nil
	clear(c.updateIndex)
	return u
}

// Now returns how many times Tick was called since the controller
// started.
func (c *LocalController) Now() int64 { return c.now }

// partitionRecord returns the record that sets tp to s.
func partitionRecord(tp kafka.TopicPartition, s LeaderAndISR) MetadataRecord {
	return MetadataRecord{Type: RecordPartition, Topic: tp.Topic, Partition: tp.Partition, State: s}
}

// Partition implements Controller.
func (c *LocalController) Partition(tp kafka.TopicPartition) (LeaderAndISR, error) {
	t, ok := c.topics[tp.Topic]
	if !ok || tp.Partition < 0 || int(tp.Partition) >= len(t.Partitions) {
		return LeaderAndISR{}, fmt.Errorf("%w: %s", kafka.ErrUnknownTopicOrPartition, tp)
	}
	return t.Partitions[tp.Partition].clone(), nil
}

// State implements Controller.
func (c *LocalController) State() ClusterState {
	s := ClusterState{Nodes: map[int32]NodeState{}, Topics: map[string]TopicState{}}
	for id, n := range c.nodes {
		s.Nodes[id] = n.NodeState
	}
	for name, t := range c.topics {
		ps := make([]LeaderAndISR, len(t.Partitions))
		for i, p := range t.Partitions {
			ps[i] = p.clone()
		}
		s.Topics[name] = TopicState{Unclean: t.Unclean, ID: t.ID, Configs: cloneConfigs(t.Configs), Partitions: ps}
	}
	return s
}
