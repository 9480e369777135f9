package controller

import (
	"fmt"
	"maps"
	"slices"

	"github.com/partlog/partlog/auth"
	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/quota"
	"github.com/partlog/partlog/replica"
)

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
	// Node is the node the command is for.
	Node int32
	// TopicPartition is the replica it concerns.
	TopicPartition kafka.TopicPartition
	// State is the partition's leader, ISR and epochs to apply.
	State replica.LeaderAndISR
	// Deleted says the topic is gone: stop the replica and delete its
	// data.
	Deleted bool
}

// NodeState is what the controller records of a node.
type NodeState struct {
	// BrokerEpoch is the epoch of the node's current registration.
	BrokerEpoch int64
	// Fenced says the node may lead nothing and is out of every ISR: its
	// session expired, it shut down, or it has not heartbeat since it
	// registered.
	Fenced bool
	// Address is where the node serves (host:port), or empty when it has
	// not said.
	Address string
}

// TopicState is what the controller records of a topic.
type TopicState struct {
	// Unclean is the topic's unclean.leader.election.enable.
	Unclean Unclean
	// ID and Configs are the topic's TopicConfig.ID and Configs; Configs
	// is nil when there are none.
	ID      string
	Configs map[string]string
	// Partitions holds each partition's state, by partition number.
	Partitions []replica.LeaderAndISR
}

// ClusterState is the whole metadata: what a Machine persists.
type ClusterState struct {
	// Nodes holds every registered node, by node id.
	Nodes map[int32]NodeState
	// Topics holds every topic, by name.
	Topics map[string]TopicState
	// Users holds the users' SCRAM credentials, by user name and then
	// mechanism.
	Users map[string]map[string]auth.ScramCredential
	// ACLs holds the stored ACLs, by id (Record.ACLID); nil when there
	// are none.
	ACLs map[uint64]auth.ACL
	// Quotas holds the client quotas, by entity and then key; nil when
	// there are none.
	Quotas map[quota.Entity]map[string]float64
	// GroupConfigs holds the configs groups set themselves, by group id
	// and then name; nil when there are none.
	GroupConfigs map[string]map[string]string
}

type nodeEntry struct {
	NodeState
	lastHeartbeat int64
}

// Machine is the controller's state machine. It owns a cluster's metadata,
// as Kafka's controller does: the registered nodes and their liveness, the
// topics and the assignment of their partitions to nodes, and each
// partition's leader, ISR and epochs. It elects leaders from the ISR,
// commits the ISR changes leaders propose, moves leadership back to
// preferred replicas, and says in Updates what each node must Apply.
//
// It is deterministic, like a replica.Replica: time passes only by Tick,
// and every change is first appended to a Store, so that a restarted
// Machine replays the store into the same state, and so that the store can
// later be a log a Raft quorum replicates. It is not safe for concurrent
// use: its driver (a Controller, or a test) serializes calls, as a
// Replica's does.
type Machine struct {
	store Store
	opts  Options

	now         int64
	nodes       map[int32]*nodeEntry
	topics      map[string]*TopicState
	users       map[string]map[string]auth.ScramCredential
	acls        map[uint64]auth.ACL // by id
	quotas      map[quota.Entity]map[string]float64
	nextEpoch   int64  // next broker epoch to hand out
	nextACLID   uint64 // next ACL id to hand out
	nextPID     int64  // next producer id to hand out
	placements  int    // topics placed so far: the rotating start
	replaying   bool
	updates     []Update
	updateIndex map[updateKey]int

	// groupConfigs holds each group's own configs, by group id; a group
	// without configs is not in it.
	groupConfigs map[string]map[string]string
}

type updateKey struct {
	node int32
	tp   kafka.TopicPartition
}

// NewMachine returns a state machine that persists its metadata in store,
// after replaying what store already holds: a restarted machine resumes
// where it stopped. Every registered node gets a full session from the
// restart to heartbeat in. Of opts it reads TickInterval, SessionTimeout,
// LeaderImbalanceCheckInterval and NoAutoLeaderRebalance.
func NewMachine(store Store, opts Options) (*Machine, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	c := &Machine{store: store, opts: opts, nodes: map[int32]*nodeEntry{},
		topics: map[string]*TopicState{}, users: map[string]map[string]auth.ScramCredential{},
		acls: map[uint64]auth.ACL{}, quotas: map[quota.Entity]map[string]float64{}, groupConfigs: map[string]map[string]string{}, nextEpoch: 1, nextACLID: 1, updateIndex: map[updateKey]int{}}
	c.replaying = true
	if err := store.Replay(c.apply); err != nil {
		return nil, err
	}
	c.replaying = false
	return c, nil
}

// commit appends records to the store and, once they are durable, applies
// them.
func (c *Machine) commit(recs []Record) error {
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
func (c *Machine) apply(r Record) error {
	bad := func(why string) error {
		return fmt.Errorf("%w: %s record %+v: %s", ErrMetadataReplay, r.Type, r, why)
	}
	switch r.Type {
	case RecordRegisterNode:
		if n, ok := c.nodes[r.Node]; ok && n.BrokerEpoch >= r.BrokerEpoch {
			return bad("broker epoch does not grow")
		}
		c.nodes[r.Node] = &nodeEntry{NodeState: NodeState{BrokerEpoch: r.BrokerEpoch, Address: r.Address}, lastHeartbeat: c.now}
		c.nextEpoch = max(c.nextEpoch, r.BrokerEpoch+1)
		c.pushNode(r.Node)
	case RecordNodeAddress:
		n, ok := c.nodes[r.Node]
		if !ok || n.BrokerEpoch != r.BrokerEpoch {
			return bad("no such node incarnation")
		}
		n.Address = r.Address
	case RecordUnregisterNode:
		if _, ok := c.nodes[r.Node]; !ok {
			return bad("no such node")
		}
		delete(c.nodes, r.Node)
	case RecordProducerIDs:
		if r.NextProducerID <= c.nextPID {
			return bad("producer ids do not grow")
		}
		c.nextPID = r.NextProducerID
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
			Partitions: make([]replica.LeaderAndISR, r.Partitions)}
		c.placements++
	case RecordPartition:
		t, ok := c.topics[r.Topic]
		if ok && int(r.Partition) == len(t.Partitions) {
			t.Partitions = append(t.Partitions, replica.LeaderAndISR{}) // a partition added to the topic
		}
		if !ok || int(r.Partition) >= len(t.Partitions) {
			return bad("no such partition")
		}
		t.Partitions[r.Partition] = r.State.Clone()
		tp := kafka.TopicPartition{Topic: r.Topic, Partition: r.Partition}
		for _, id := range r.State.Replicas {
			if c.live(id) {
				c.push(Update{Node: id, TopicPartition: tp, State: r.State.Clone()})
			}
		}
	case RecordTopicConfig:
		t, ok := c.topics[r.Topic]
		if !ok {
			return bad("no such topic")
		}
		t.Unclean, t.Configs = r.Unclean, cloneConfigs(r.Configs)
	case RecordScramCredential:
		if c.users[r.User] == nil {
			c.users[r.User] = map[string]auth.ScramCredential{}
		}
		c.users[r.User][r.Mechanism] = r.Scram
	case RecordRemoveScramCredential:
		if _, ok := c.users[r.User][r.Mechanism]; !ok {
			return bad("no such credential")
		}
		delete(c.users[r.User], r.Mechanism)
		if len(c.users[r.User]) == 0 {
			delete(c.users, r.User)
		}
	case RecordAccessControlEntry:
		if _, ok := c.acls[r.ACLID]; ok {
			return bad("ACL id exists")
		}
		c.acls[r.ACLID] = r.ACL
		c.nextACLID = max(c.nextACLID, r.ACLID+1)
	case RecordRemoveAccessControlEntry:
		if _, ok := c.acls[r.ACLID]; !ok {
			return bad("no such ACL")
		}
		delete(c.acls, r.ACLID)
	case RecordClientQuota:
		e := r.QuotaEntity
		if r.QuotaRemove {
			if _, ok := c.quotas[e][r.QuotaKey]; !ok {
				return bad("no such quota")
			}
			delete(c.quotas[e], r.QuotaKey)
			if len(c.quotas[e]) == 0 {
				delete(c.quotas, e)
			}
			break
		}
		if c.quotas[e] == nil {
			c.quotas[e] = map[string]float64{}
		}
		c.quotas[e][r.QuotaKey] = r.QuotaValue
	case RecordGroupConfig:
		if len(r.Configs) == 0 {
			delete(c.groupConfigs, r.Group)
			break
		}
		c.groupConfigs[r.Group] = maps.Clone(r.Configs)
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
func (c *Machine) push(u Update) {
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
func (c *Machine) pushNode(id int32) {
	if c.replaying {
		return
	}
	c.eachPartition(func(tp kafka.TopicPartition, s *replica.LeaderAndISR, _ Unclean) {
		if slices.Contains(s.Replicas, id) {
			c.push(Update{Node: id, TopicPartition: tp, State: s.Clone()})
		}
	})
}

// eachPartition calls fn for every partition, in topic name order.
func (c *Machine) eachPartition(fn func(tp kafka.TopicPartition, s *replica.LeaderAndISR, unclean Unclean)) {
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
func (c *Machine) live(id int32) bool {
	n, ok := c.nodes[id]
	return ok && !n.Fenced
}

// Updates returns the commands nodes must carry out since the last call,
// and forgets them.
func (c *Machine) Updates() []Update {
	u := c.updates
	c.updates = nil
	clear(c.updateIndex)
	return u
}

// Now returns how many times Tick was called since the machine started.
func (c *Machine) Now() int64 { return c.now }

// partitionRecord returns the record that sets tp to s.
func partitionRecord(tp kafka.TopicPartition, s replica.LeaderAndISR) Record {
	return Record{Type: RecordPartition, Topic: tp.Topic, Partition: tp.Partition, State: s}
}

// Partition returns a partition's state.
func (c *Machine) Partition(tp kafka.TopicPartition) (replica.LeaderAndISR, error) {
	t, ok := c.topics[tp.Topic]
	if !ok || tp.Partition < 0 || int(tp.Partition) >= len(t.Partitions) {
		return replica.LeaderAndISR{}, fmt.Errorf("%w: %s", kafka.ErrUnknownTopicOrPartition, tp)
	}
	return t.Partitions[tp.Partition].Clone(), nil
}

// State returns a copy of the whole metadata.
func (c *Machine) State() ClusterState {
	s := ClusterState{Nodes: map[int32]NodeState{}, Topics: map[string]TopicState{}}
	for id, n := range c.nodes {
		s.Nodes[id] = n.NodeState
	}
	for name, t := range c.topics {
		ps := make([]replica.LeaderAndISR, len(t.Partitions))
		for i, p := range t.Partitions {
			ps[i] = p.Clone()
		}
		s.Topics[name] = TopicState{Unclean: t.Unclean, ID: t.ID, Configs: cloneConfigs(t.Configs), Partitions: ps}
	}
	if len(c.users) > 0 {
		s.Users = map[string]map[string]auth.ScramCredential{}
		for user, creds := range c.users {
			s.Users[user] = maps.Clone(creds) // a credential's bytes are never written to
		}
	}
	if len(c.acls) > 0 {
		s.ACLs = maps.Clone(c.acls)
	}
	s.Quotas = cloneQuotas(c.quotas)
	s.GroupConfigs = cloneGroupConfigs(c.groupConfigs)
	return s
}

// Node returns what the machine records of node id, and whether it is
// registered.
func (c *Machine) Node(id int32) (NodeState, bool) {
	n, ok := c.nodes[id]
	if !ok {
		return NodeState{}, false
	}
	return n.NodeState, true
}

// TopicConfigs returns a copy of a topic's configs, and whether the topic
// exists.
func (c *Machine) TopicConfigs(name string) (map[string]string, bool) {
	t, ok := c.topics[name]
	if !ok {
		return nil, false
	}
	return maps.Clone(t.Configs), true
}
