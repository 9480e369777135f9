package controller

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/replica"
)

// RegisterNode registers node id, serving at address (host:port, or ""
// when it does not say), or registers it again after a restart, and
// returns its new broker epoch, which the node passes to its replicas as
// replica.Options.BrokerEpoch and to Heartbeat. A previous incarnation is
// fenced first: its log may have lost what it had not synced.
func (c *Machine) RegisterNode(id int32, address string) (int64, error) {
	if id < 0 {
		return 0, fmt.Errorf("%w: node id %d is negative", kafka.ErrInvalidRequest, id)
	}
	if n, ok := c.nodes[id]; ok && !n.Fenced {
		if err := c.commit(c.fenceRecords(id)); err != nil {
			return 0, err
		}
	}
	epoch := c.nextEpoch
	recs := []Record{{Type: RecordRegisterNode, Node: id, BrokerEpoch: epoch, Address: address}}
	recs = append(recs, c.electOffline(id)...)
	if err := c.commit(recs); err != nil {
		return 0, err
	}
	return epoch, nil
}

// Heartbeat tells the machine node id is alive in brokerEpoch. A fenced
// node that heartbeats again is unfenced.
func (c *Machine) Heartbeat(id int32, brokerEpoch int64) error {
	n, err := c.registered(id, brokerEpoch, "heartbeat")
	if err != nil {
		return err
	}
	n.lastHeartbeat = c.now
	if !n.Fenced {
		return nil
	}
	recs := []Record{{Type: RecordUnfenceNode, Node: id, BrokerEpoch: brokerEpoch}}
	return c.commit(append(recs, c.electOffline(id)...))
}

// UpdateAddress records that node id, registered in brokerEpoch, serves
// at address, if that is news: a node tells its address with every
// heartbeat, so that a controller that never saw it register learns it.
func (c *Machine) UpdateAddress(id int32, brokerEpoch int64, address string) error {
	n, err := c.registered(id, brokerEpoch, "heartbeat")
	if err != nil || address == "" || n.Address == address {
		return err
	}
	return c.commit([]Record{{Type: RecordNodeAddress, Node: id, BrokerEpoch: brokerEpoch, Address: address}})
}

// AllocateProducerIDs hands node a block of size producer ids and returns
// the first; no id is handed out twice, nor any below floor (the
// high-water mark of a controller that kept it in a file).
func (c *Machine) AllocateProducerIDs(node int32, size, floor int64) (int64, error) {
	start := max(c.nextPID, floor)
	if size <= 0 || start > math.MaxInt64-size {
		return -1, fmt.Errorf("%w: no block of %d producer ids after %d", kafka.ErrUnknownServerError, size, start)
	}
	if err := c.commit([]Record{{Type: RecordProducerIDs, Node: node, NextProducerID: start + size}}); err != nil {
		return -1, err
	}
	return start, nil
}

// registered returns node id's entry when it is registered in
// brokerEpoch, and otherwise ErrBrokerIDNotRegistered or
// ErrStaleBrokerEpoch naming what the node was doing.
func (c *Machine) registered(id int32, brokerEpoch int64, doing string) (*nodeEntry, error) {
	n, ok := c.nodes[id]
	switch {
	case !ok:
		return nil, fmt.Errorf("%w: node %d", kafka.ErrBrokerIDNotRegistered, id)
	case n.BrokerEpoch != brokerEpoch:
		return nil, fmt.Errorf("%w: node %d %s in broker epoch %d, registered in %d",
			kafka.ErrStaleBrokerEpoch, id, doing, brokerEpoch, n.BrokerEpoch)
	}
	return n, nil
}

// Tick tells the machine one TickInterval passed: it fences nodes whose
// heartbeats stopped for SessionTimeout and, every
// LeaderImbalanceCheckInterval, elects preferred leaders.
func (c *Machine) Tick() error {
	c.now++
	session := c.opts.ticks(c.opts.SessionTimeout)
	ids := make([]int32, 0, len(c.nodes))
	for id := range c.nodes {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		if n := c.nodes[id]; !n.Fenced && c.now-n.lastHeartbeat >= session {
			if err := c.commit(c.fenceRecords(id)); err != nil {
				return err
			}
		}
	}
	if !c.opts.NoAutoLeaderRebalance && c.now%c.opts.ticks(c.opts.LeaderImbalanceCheckInterval) == 0 {
		return c.ElectPreferredLeaders()
	}
	return nil
}

// fenceRecords returns the records that fence node id's current
// incarnation: it leaves every ISR but the last member's place, and each
// partition it led elects a new leader among the others, or goes offline.
func (c *Machine) fenceRecords(id int32) []Record {
	recs := []Record{{Type: RecordFenceNode, Node: id, BrokerEpoch: c.nodes[id].BrokerEpoch}}
	alive := func(m int32) bool { return m != id && c.live(m) }
	c.eachPartition(func(tp kafka.TopicPartition, cur *replica.LeaderAndISR, unclean Unclean) {
		if !slices.Contains(cur.Replicas, id) {
			return
		}
		s := cur.Clone()
		changed := false
		if len(s.ISR) > 1 && slices.Contains(s.ISR, id) {
			s.ISR = slices.DeleteFunc(s.ISR, func(m int32) bool { return m == id })
			changed = true
		}
		if s.Leader == id {
			elect(&s, alive, unclean)
			changed = true
		}
		if changed {
			s.PartitionEpoch++
			recs = append(recs, partitionRecord(tp, s))
		}
	})
	return recs
}

// electOffline returns the records that elect a leader for every
// partition without one, once node joining is alive.
func (c *Machine) electOffline(joining int32) []Record {
	var recs []Record
	alive := func(m int32) bool { return m == joining || c.live(m) }
	c.eachPartition(func(tp kafka.TopicPartition, cur *replica.LeaderAndISR, unclean Unclean) {
		if cur.Leader != replica.NoLeader || !slices.Contains(cur.Replicas, joining) {
			return
		}
		s := cur.Clone()
		if elect(&s, alive, unclean) {
			s.PartitionEpoch++
			recs = append(recs, partitionRecord(tp, s))
		}
	})
	return recs
}

// elect sets s's leader with ElectLeader, bumping the leader epoch when the
// leader changes; an unclean leader becomes the whole ISR. It reports
// whether s changed.
func elect(s *replica.LeaderAndISR, alive func(int32) bool, mode Unclean) bool {
	leader, unclean, _ := ElectLeader(s.Replicas, s.ISR, alive, mode)
	if leader == s.Leader {
		return false
	}
	s.Leader = leader
	s.LeaderEpoch++
	if unclean {
		s.ISR = []int32{leader}
	}
	return true
}

// ElectPreferredLeaders moves the leadership of every partition whose
// preferred replica (the first of its assignment) is unfenced and in the
// ISR to that replica.
func (c *Machine) ElectPreferredLeaders() error {
	var recs []Record
	c.eachPartition(func(tp kafka.TopicPartition, cur *replica.LeaderAndISR, _ Unclean) {
		if rec, err := c.preferredLeaderRecord(tp, cur); err == nil {
			recs = append(recs, rec)
		}
	})
	return c.commit(recs)
}

// ElectPreferredLeader moves a partition's leadership to its preferred
// replica (the first of its assignment), or says why not:
// kafka.ErrElectionNotNeeded, kafka.ErrPreferredLeaderNotAvailable,
// kafka.ErrUnknownTopicOrPartition.
//
// seenEpoch, when not negative, is the leader epoch the caller saw. A
// partition its preferred replica leads in a later epoch was moved there
// by the request's earlier attempt, whose answer was lost (a node's
// controller client tries again when an attempt times out), or by another
// election since: the request succeeds with no change, where one made in
// the epoch the preferred replica leads finds ELECTION_NOT_NEEDED.
func (c *Machine) ElectPreferredLeader(tp kafka.TopicPartition, seenEpoch int32) error {
	t, ok := c.topics[tp.Topic]
	if !ok || tp.Partition < 0 || int(tp.Partition) >= len(t.Partitions) {
		return fmt.Errorf("%w: %s", kafka.ErrUnknownTopicOrPartition, tp)
	}
	cur := &t.Partitions[tp.Partition]
	rec, err := c.preferredLeaderRecord(tp, cur)
	if errors.Is(err, kafka.ErrElectionNotNeeded) && seenEpoch >= 0 && cur.LeaderEpoch > seenEpoch {
		return nil
	}
	if err != nil {
		return err
	}
	return c.commit([]Record{rec})
}

// preferredLeaderRecord returns the record that makes cur's preferred
// replica its leader, or why there is none to write.
func (c *Machine) preferredLeaderRecord(tp kafka.TopicPartition, cur *replica.LeaderAndISR) (Record, error) {
	if len(cur.Replicas) == 0 {
		return Record{}, fmt.Errorf("%w: %s has no replicas", kafka.ErrPreferredLeaderNotAvailable, tp)
	}
	p := cur.Replicas[0]
	switch {
	case cur.Leader == p:
		return Record{}, fmt.Errorf("%w: %s is led by its preferred replica %d", kafka.ErrElectionNotNeeded, tp, p)
	case !c.live(p) || !slices.Contains(cur.ISR, p):
		return Record{}, fmt.Errorf("%w: %s's preferred replica %d is not alive and in the ISR %v",
			kafka.ErrPreferredLeaderNotAvailable, tp, p, cur.ISR)
	}
	s := cur.Clone()
	s.Leader = p
	s.LeaderEpoch++
	s.PartitionEpoch++
	return partitionRecord(tp, s), nil
}

// CreatePartitions raises a topic's partition count to total, placing the
// new partitions' replicas (as many as partition 0 has) over the unfenced
// nodes. The new partitions are placed
// as they would have been had the topic been created with total
// partitions; each starts with its first replica leading and every
// replica in the ISR.
//
// from, when above zero, is the partition count the caller saw. A topic
// that already has total partitions where the caller saw fewer was grown
// by the request's earlier attempt, whose answer was lost (a node's
// controller client tries again when an attempt times out), or by another
// request to the same count: the request succeeds with no change, where
// one that asks for the count the caller saw finds INVALID_PARTITIONS.
func (c *Machine) CreatePartitions(name string, from, total int) error {
	t, ok := c.topics[name]
	if !ok {
		return fmt.Errorf("%w: %s", kafka.ErrUnknownTopicOrPartition, name)
	}
	have := len(t.Partitions)
	rf := 1
	if have > 0 {
		rf = len(t.Partitions[0].Replicas)
	}
	live := c.liveNodes()
	switch {
	case total == have && from > 0 && from < have:
		return nil
	case total <= have:
		return fmt.Errorf("%w: topic %s has %d partitions; a count can only grow, not to %d", kafka.ErrInvalidPartitions, name, have, total)
	case total > maxMetadataList:
		return fmt.Errorf("%w: %d partitions, at most %d", kafka.ErrInvalidPartitions, total, maxMetadataList)
	case rf > len(live):
		return fmt.Errorf("%w: replication factor %d with %d live nodes", kafka.ErrInvalidReplicationFactor, rf, len(live))
	}
	var recs []Record
	for p, replicas := range assignReplicas(live, total, rf, c.placements) {
		if p >= have {
			s := replica.LeaderAndISR{Leader: replicas[0], Replicas: replicas, ISR: slices.Clone(replicas)}
			recs = append(recs, partitionRecord(kafka.TopicPartition{Topic: name, Partition: int32(p)}, s))
		}
	}
	return c.commit(recs)
}

// AlterTopicConfig replaces a topic's configs and unclean election flag
// (cfg.ID is ignored).
func (c *Machine) AlterTopicConfig(name string, cfg TopicConfig) error {
	if _, ok := c.topics[name]; !ok {
		return fmt.Errorf("%w: %s", kafka.ErrUnknownTopicOrPartition, name)
	}
	cfg.ID = ""
	if err := c.checkTopicConfig(cfg); err != nil {
		return fmt.Errorf("topic %s: %w", name, err)
	}
	recs := []Record{{Type: RecordTopicConfig, Topic: name, Unclean: cfg.Unclean, Configs: cloneConfigs(cfg.Configs)}}
	if cfg.Unclean == AllowUnclean {
		// As Kafka does when the config turns on: a partition left
		// without a leader elects a live replica outside its ISR now,
		// rather than at the next node event.
		for p := range c.topics[name].Partitions {
			cur := &c.topics[name].Partitions[p]
			if cur.Leader != replica.NoLeader {
				continue
			}
			s := cur.Clone()
			if elect(&s, c.live, AllowUnclean) {
				s.PartitionEpoch++
				recs = append(recs, partitionRecord(kafka.TopicPartition{Topic: name, Partition: int32(p)}, s))
			}
		}
	}
	return c.commit(recs)
}

// liveNodes returns the unfenced nodes' ids, sorted.
func (c *Machine) liveNodes() []int32 {
	var live []int32
	for id, n := range c.nodes {
		if !n.Fenced {
			live = append(live, id)
		}
	}
	slices.Sort(live)
	return live
}

// maxTopicNameLength is Kafka's limit on a topic name's length.
const maxTopicNameLength = 249

// validTopicName reports whether name is a legal Kafka topic name.
func validTopicName(name string) bool {
	if name == "" || name == "." || name == ".." || len(name) > maxTopicNameLength {
		return false
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-') {
			return false
		}
	}
	return true
}

// CreateTopic creates a topic with partitions partitions of
// replicationFactor replicas each, spread over the unfenced nodes. Each
// partition starts with its first
// replica leading in leader epoch 0 and every replica in the ISR.
//
// A request that names the id of the topic that exists under name is a
// retry of the request that created it, whose answer was lost (a node's
// controller client tries again when an attempt times out): it succeeds
// with no change, where any other finds kafka.ErrTopicAlreadyExists.
func (c *Machine) CreateTopic(name string, partitions, replicationFactor int, cfg TopicConfig) error {
	live := c.liveNodes()
	switch {
	case !validTopicName(name):
		return fmt.Errorf("%w: %q", kafka.ErrInvalidTopic, name)
	case c.topics[name] != nil && cfg.ID != "" && c.topics[name].ID == cfg.ID:
		return nil
	case c.topics[name] != nil:
		return fmt.Errorf("%w: %s", kafka.ErrTopicAlreadyExists, name)
	case partitions <= 0 || partitions > maxMetadataList:
		return fmt.Errorf("%w: %d", kafka.ErrInvalidPartitions, partitions)
	case replicationFactor <= 0 || replicationFactor > len(live):
		return fmt.Errorf("%w: %d with %d live nodes", kafka.ErrInvalidReplicationFactor, replicationFactor, len(live))
	}
	if err := c.checkTopicConfig(cfg); err != nil {
		return fmt.Errorf("topic %s: %w", name, err)
	}
	recs := []Record{{Type: RecordTopic, Topic: name, Partitions: int32(partitions), Unclean: cfg.Unclean,
		ID: cfg.ID, Configs: cloneConfigs(cfg.Configs)}}
	for p, replicas := range assignReplicas(live, partitions, replicationFactor, c.placements) {
		s := replica.LeaderAndISR{Leader: replicas[0], Replicas: replicas, ISR: slices.Clone(replicas)}
		recs = append(recs, partitionRecord(kafka.TopicPartition{Topic: name, Partition: int32(p)}, s))
	}
	return c.commit(recs)
}

// checkTopicConfig refuses an id another topic has (INVALID_REQUEST) and
// configs a metadata record cannot hold (INVALID_CONFIG).
func (c *Machine) checkTopicConfig(cfg TopicConfig) error {
	if len(cfg.ID) > maxMetadataList {
		return fmt.Errorf("%w: topic id of %d bytes", kafka.ErrInvalidRequest, len(cfg.ID))
	}
	if cfg.ID != "" {
		for name, t := range c.topics {
			if t.ID == cfg.ID {
				return fmt.Errorf("%w: topic id %s is topic %s's", kafka.ErrInvalidRequest, cfg.ID, name)
			}
		}
	}
	if len(cfg.Configs) > maxMetadataList {
		return fmt.Errorf("%w: %d configs", kafka.ErrInvalidConfig, len(cfg.Configs))
	}
	for k, v := range cfg.Configs {
		if k == "" || len(k) > maxMetadataList || len(v) > maxMetadataList {
			return fmt.Errorf("%w: config %.64q of %d bytes, value of %d bytes", kafka.ErrInvalidConfig, k, len(k), len(v))
		}
	}
	return nil
}

// assignReplicas spreads partitions over nodes as Kafka's rack-unaware
// assignment does: partition p's first replica is node (start+p) mod n, and
// its followers follow at a shift that grows each time the partitions wrap
// around the nodes, so that leaders and followers are both spread. Kafka
// picks start and the first shift at random; here both rotate with
// rotation (the number of topics placed before), which is deterministic.
func assignReplicas(nodes []int32, partitions, rf, rotation int) [][]int32 {
	n := len(nodes)
	start := rotation % n
	shift := rotation % max(1, n-1)
	out := make([][]int32, partitions)
	for p := range partitions {
		if p > 0 && (start+p)%n == start {
			shift++
		}
		first := (start + p) % n
		replicas := []int32{nodes[first]}
		for j := range rf - 1 {
			replicas = append(replicas, nodes[(first+1+(shift+j)%(n-1))%n])
		}
		out[p] = replicas
	}
	return out
}

// DeleteTopic deletes a topic.
//
// id, when not empty, is the id of the topic the caller means to delete.
// A topic of that name with another id is not it, and is not deleted
// (UNKNOWN_TOPIC_ID). When no topic has the name any more, the request is
// the retry of a delete whose answer was lost (a node's controller client
// tries again when an attempt times out), or it raced another delete of
// the same topic: either way the topic it named is gone, and the request
// succeeds with no change, where one without an id finds
// UNKNOWN_TOPIC_OR_PARTITION.
func (c *Machine) DeleteTopic(name, id string) error {
	t := c.topics[name]
	switch {
	case t == nil && id != "":
		return nil
	case t == nil:
		return fmt.Errorf("%w: %s", kafka.ErrUnknownTopicOrPartition, name)
	case id != "" && t.ID != id:
		return fmt.Errorf("%w: topic %s has id %s, not %s", kafka.ErrUnknownTopicID, name, t.ID, id)
	}
	return c.commit([]Record{{Type: RecordRemoveTopic, Topic: name}})
}

// AlterPartition commits the ISR change a partition's leader, node from,
// proposed (replica.Ready.AlterPartition), and returns the partition's new
// state. It refuses, as Kafka's controller does, a change made in an older leader epoch (FENCED_LEADER_EPOCH), by a
// node that does not lead (NOT_LEADER_OR_FOLLOWER), in another partition
// epoch (INVALID_UPDATE_VERSION), by a leader in an earlier broker epoch
// (STALE_BROKER_EPOCH), a malformed ISR (INVALID_REQUEST), and one adding
// a replica that is fenced or whose broker epoch is not the one the leader
// saw it fetch in (INELIGIBLE_REPLICA, KIP-903).
func (c *Machine) AlterPartition(from int32, tp kafka.TopicPartition, a replica.ISRChange) (replica.LeaderAndISR, error) {
	cur, err := c.Partition(tp)
	if err != nil {
		return replica.LeaderAndISR{}, err
	}
	refuse := func(e error, format string, args ...any) (replica.LeaderAndISR, error) {
		return replica.LeaderAndISR{}, fmt.Errorf("%w: %s from node %d: %s", e, tp, from, fmt.Sprintf(format, args...))
	}
	switch {
	case a.LeaderEpoch < cur.LeaderEpoch:
		return refuse(kafka.ErrFencedLeaderEpoch, "leader epoch %d, current %d", a.LeaderEpoch, cur.LeaderEpoch)
	case a.LeaderEpoch > cur.LeaderEpoch:
		return refuse(kafka.ErrUnknownLeaderEpoch, "leader epoch %d, current %d", a.LeaderEpoch, cur.LeaderEpoch)
	case from != cur.Leader:
		return refuse(kafka.ErrNotLeaderOrFollower, "the leader is %d", cur.Leader)
	case a.PartitionEpoch != cur.PartitionEpoch:
		return refuse(kafka.ErrInvalidUpdateVersion, "partition epoch %d, current %d", a.PartitionEpoch, cur.PartitionEpoch)
	case len(a.ISR) == 0 || len(a.BrokerEpochs) != len(a.ISR) || !slices.Contains(a.ISR, from):
		return refuse(kafka.ErrInvalidRequest, "ISR %v with broker epochs %v", a.ISR, a.BrokerEpochs)
	}
	for i, id := range a.ISR {
		if !slices.Contains(cur.Replicas, id) || slices.Index(a.ISR, id) != i {
			return refuse(kafka.ErrInvalidRequest, "ISR %v against replicas %v", a.ISR, cur.Replicas)
		}
		n := c.nodes[id]
		if id == from {
			if n != nil && a.BrokerEpochs[i] != -1 && a.BrokerEpochs[i] != n.BrokerEpoch {
				return refuse(kafka.ErrStaleBrokerEpoch, "leader in broker epoch %d, registered in %d", a.BrokerEpochs[i], n.BrokerEpoch)
			}
			continue
		}
		if slices.Contains(cur.ISR, id) {
			continue
		}
		switch {
		case n == nil || n.Fenced:
			return refuse(kafka.ErrIneligibleReplica, "node %d is fenced", id)
		case a.BrokerEpochs[i] != n.BrokerEpoch:
			return refuse(kafka.ErrIneligibleReplica, "node %d is in broker epoch %d, not %d", id, n.BrokerEpoch, a.BrokerEpochs[i])
		}
	}
	s := cur.Clone()
	s.ISR = inOrder(cur.Replicas, a.ISR)
	s.PartitionEpoch++
	c.completeReassignment(&s) // when the ISR now holds every target replica
	if err := c.commit([]Record{partitionRecord(tp, s)}); err != nil {
		return replica.LeaderAndISR{}, err
	}
	return s.Clone(), nil
}
