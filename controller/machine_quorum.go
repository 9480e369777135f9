package controller

import (
	"encoding/binary"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/partlog/partlog/kafka"
)

// What a Machine offers the controller quorum (Member): records committed
// elsewhere applied as they are, its state as records (a snapshot), and
// the sessions of a controller that takes over.

// Apply applies records committed by the active controller, in log
// order, to a machine that follows the metadata log rather than writes it:
// nothing goes to the store and no update is queued.
func (c *Machine) Apply(records []Record) error {
	c.replaying = true
	defer func() { c.replaying = false }()
	for _, r := range records {
		if err := c.apply(r); err != nil {
			return err
		}
	}
	return nil
}

// Snapshot returns records that, replayed into an empty Machine, rebuild
// c's state: each node's registration (and fence), then each topic with
// its partitions, in id and name order, with the producer ids handed out,
// the users' SCRAM credentials, the ACLs (by id), the client quotas (by
// user, client id and key) and the groups' configs (by group id) between
// them. The
// rotation of replica placement starts again at the topic count, which
// only moves where the next topic's replicas go; the ACL ids at the
// highest stored one, which only names the next ACL.
func (c *Machine) Snapshot() []Record {
	var recs []Record
	ids := make([]int32, 0, len(c.nodes))
	for id := range c.nodes {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		n := c.nodes[id]
		recs = append(recs, Record{Type: RecordRegisterNode, Node: id, BrokerEpoch: n.BrokerEpoch, Address: n.Address})
		if n.Fenced {
			recs = append(recs, Record{Type: RecordFenceNode, Node: id, BrokerEpoch: n.BrokerEpoch})
		}
	}
	if c.nextPID > 0 {
		recs = append(recs, Record{Type: RecordProducerIDs, NextProducerID: c.nextPID})
	}
	for _, user := range slices.Sorted(maps.Keys(c.users)) {
		for _, m := range slices.Sorted(maps.Keys(c.users[user])) {
			recs = append(recs, Record{Type: RecordScramCredential, User: user, Mechanism: m, Scram: c.users[user][m]})
		}
	}
	for _, id := range slices.Sorted(maps.Keys(c.acls)) {
		recs = append(recs, Record{Type: RecordAccessControlEntry, ACLID: id, ACL: c.acls[id]})
	}
	for _, e := range sortedEntities(c.quotas) {
		for _, key := range slices.Sorted(maps.Keys(c.quotas[e])) {
			recs = append(recs, Record{Type: RecordClientQuota, QuotaEntity: e, QuotaKey: key, QuotaValue: c.quotas[e][key]})
		}
	}
	for _, g := range slices.Sorted(maps.Keys(c.groupConfigs)) {
		recs = append(recs, Record{Type: RecordGroupConfig, Group: g, Configs: maps.Clone(c.groupConfigs[g])})
	}
	names := make([]string, 0, len(c.topics))
	for name := range c.topics {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		t := c.topics[name]
		recs = append(recs, Record{Type: RecordTopic, Topic: name, Partitions: int32(len(t.Partitions)),
			Unclean: t.Unclean, ID: t.ID, Configs: cloneConfigs(t.Configs)})
		for p, s := range t.Partitions {
			recs = append(recs, partitionRecord(kafka.TopicPartition{Topic: name, Partition: int32(p)}, s.Clone()))
		}
	}
	return recs
}

// ShortenSessions gives every live node at most d from now to heartbeat
// before it is fenced, for a controller that takes over from another: it
// does not know when each node last heartbeat to the one before, and
// granting a whole session would leave a node that died with it leading
// its partitions for that long.
func (c *Machine) ShortenSessions(d time.Duration) {
	deadline := c.now - c.opts.ticks(c.opts.SessionTimeout) + c.opts.ticks(d)
	for _, n := range c.nodes {
		if !n.Fenced {
			n.lastHeartbeat = min(n.lastHeartbeat, deadline)
		}
	}
}

// appendRecords appends records to dst as one list: each record's length
// (u32, big endian) and encoding (AppendRecord).
func appendRecords(dst []byte, records []Record) []byte {
	for _, r := range records {
		at := len(dst)
		dst = append(dst, 0, 0, 0, 0)
		dst = AppendRecord(dst, r)
		binary.BigEndian.PutUint32(dst[at:], uint32(len(dst)-at-4))
	}
	return dst
}

// decodeRecords decodes a list appendRecords wrote.
func decodeRecords(b []byte) ([]Record, error) {
	var recs []Record
	for len(b) > 0 {
		if len(b) < 4 || uint64(binary.BigEndian.Uint32(b)) > uint64(len(b)-4) {
			return nil, fmt.Errorf("%w: record list cut short", ErrCorruptMetadata)
		}
		n := binary.BigEndian.Uint32(b)
		r, err := DecodeRecord(b[4 : 4+n])
		if err != nil {
			return nil, err
		}
		recs = append(recs, r)
		b = b[4+n:]
	}
	return recs, nil
}
