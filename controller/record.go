package controller

import (
	"encoding/binary"
	"fmt"
	"maps"
	"math"
	"slices"

	"github.com/partlog/partlog/auth"
	"github.com/partlog/partlog/quota"
	"github.com/partlog/partlog/replica"
)

// RecordType says which change a Record records, as the record types of
// KRaft's __cluster_metadata log do.
type RecordType uint8

// The metadata record types.
const (
	// RecordRegisterNode: a node registered (or registered again after a
	// restart) in a new broker epoch, unfenced (Kafka's
	// RegisterBrokerRecord). An earlier incarnation of it is fenced.
	RecordRegisterNode RecordType = iota + 1
	// RecordFenceNode: the controller fenced a node, its heartbeats having
	// stopped (Kafka's FenceBrokerRecord).
	RecordFenceNode
	// RecordUnfenceNode: a fenced node heartbeat again in its broker epoch
	// (Kafka's UnfenceBrokerRecord).
	RecordUnfenceNode
	// RecordTopic: a topic was created (Kafka's TopicRecord with its
	// configuration).
	RecordTopic
	// RecordPartition: a partition's whole state, on creation and on each
	// change (Kafka's PartitionRecord; KRaft writes changes as
	// PartitionChangeRecord deltas, this log writes the full state).
	RecordPartition
	// RecordRemoveTopic: a topic was deleted (Kafka's RemoveTopicRecord).
	RecordRemoveTopic
	// RecordTopicConfig: a topic's configs changed; the record holds the
	// whole new set and the unclean election flag they imply (Kafka's
	// ConfigRecord, which KRaft writes per key).
	RecordTopicConfig
	// RecordNodeAddress: a registered node serves at another address, in
	// the same broker epoch (Kafka's BrokerRegistrationChangeRecord).
	RecordNodeAddress
	// RecordProducerIDs: the controller handed a node a block of producer
	// ids, up to NextProducerID (Kafka's ProducerIdsRecord).
	RecordProducerIDs
	// RecordUnregisterNode: a node was removed from the cluster (Kafka's
	// UnregisterBrokerRecord).
	RecordUnregisterNode
	// RecordScramCredential: a user's SCRAM credential for a mechanism
	// was set (Kafka's UserScramCredentialRecord).
	RecordScramCredential
	// RecordRemoveScramCredential: a user's SCRAM credential for a
	// mechanism was deleted (Kafka's RemoveUserScramCredentialRecord).
	RecordRemoveScramCredential
	// RecordAccessControlEntry: an ACL was stored under ACLID (Kafka's
	// AccessControlEntryRecord).
	RecordAccessControlEntry
	// RecordRemoveAccessControlEntry: the ACL stored under ACLID was
	// deleted (Kafka's RemoveAccessControlEntryRecord).
	RecordRemoveAccessControlEntry
	// RecordClientQuota: the quota QuotaKey of QuotaEntity was set to
	// QuotaValue, or removed with QuotaRemove (Kafka's ClientQuotaRecord,
	// one record per key changed).
	RecordClientQuota
	// RecordGroupConfig: the configs Group sets itself changed; the record
	// holds the whole new set, and an empty one forgets the group's
	// configs (Kafka's ConfigRecord with resource type GROUP, which KRaft
	// writes per key).
	RecordGroupConfig
)

// String returns the type's name.
func (t RecordType) String() string {
	switch t {
	case RecordRegisterNode:
		return "RegisterNode"
	case RecordFenceNode:
		return "FenceNode"
	case RecordUnfenceNode:
		return "UnfenceNode"
	case RecordTopic:
		return "Topic"
	case RecordPartition:
		return "Partition"
	case RecordRemoveTopic:
		return "RemoveTopic"
	case RecordTopicConfig:
		return "TopicConfig"
	case RecordNodeAddress:
		return "NodeAddress"
	case RecordProducerIDs:
		return "ProducerIDs"
	case RecordUnregisterNode:
		return "UnregisterNode"
	case RecordScramCredential:
		return "ScramCredential"
	case RecordRemoveScramCredential:
		return "RemoveScramCredential"
	case RecordAccessControlEntry:
		return "AccessControlEntry"
	case RecordRemoveAccessControlEntry:
		return "RemoveAccessControlEntry"
	case RecordClientQuota:
		return "ClientQuota"
	case RecordGroupConfig:
		return "GroupConfig"
	}
	return fmt.Sprintf("RecordType(%d)", t)
}

// RecordVersion is the version AppendRecord writes. A decoder refuses
// versions it does not know rather than misread them.
// Version 1 added the topic id and configs to RecordTopic, version 2 the
// address to RecordRegisterNode (and the types NodeAddress and
// ProducerIDs), and version 3 the adding and removing replicas to
// RecordPartition (and the type UnregisterNode; the SCRAM credentials',
// the ACLs', the client quotas' and the group configs' types came later
// in the same version);
// the decoder still reads the versions before, whose records have none of
// these.
const RecordVersion uint8 = 3

// maxMetadataList bounds the replica and ISR lists, the strings (topic
// name, topic id, config keys and values) and the config count a decoder
// accepts, so that a corrupt length cannot make it allocate much.
const maxMetadataList = 1 << 12

// Record is one change to the cluster metadata: a Machine appends it to
// its Store before applying it, and a restarted Machine replays the
// records in order. The fields Type names are set;
// the others are zero.
type Record struct {
	// Type says which change the record is, and so which fields are set.
	Type RecordType
	// Node and BrokerEpoch: RegisterNode, FenceNode, UnfenceNode and
	// NodeAddress; Node: ProducerIDs.
	Node        int32
	BrokerEpoch int64
	// Address is where the node serves (host:port, or empty when it did
	// not say): RegisterNode (from version 2 on) and NodeAddress.
	Address string
	// NextProducerID is the end of the block of producer ids handed to
	// Node: no id at or above it was handed out. ProducerIDs.
	NextProducerID int64
	// Topic: Topic, Partition, RemoveTopic and TopicConfig.
	Topic string
	// Partitions, Unclean, ID and Configs: Topic (the last two from
	// version 1 on; Configs is nil when empty). Unclean and Configs:
	// TopicConfig. Configs: GroupConfig.
	Partitions int32
	Unclean    Unclean
	ID         string
	Configs    map[string]string
	// Partition and State: Partition.
	Partition int32
	State     replica.LeaderAndISR
	// User and Mechanism: ScramCredential and RemoveScramCredential;
	// Scram: ScramCredential.
	User      string
	Mechanism string
	Scram     auth.ScramCredential
	// ACLID: AccessControlEntry and RemoveAccessControlEntry; ACL:
	// AccessControlEntry. Kafka names an ACL by a random UUID; the
	// controller numbers them from 1 instead (Machine.CreateACLs), which
	// keeps the Machine deterministic. An id is unique among the stored
	// ACLs; that of a deleted one may be given again.
	ACLID uint64
	ACL   auth.ACL
	// QuotaEntity, QuotaKey, QuotaValue and QuotaRemove: ClientQuota.
	// The quota QuotaKey (quota.ProducerByteRate, ...) of QuotaEntity is
	// set to QuotaValue or, with QuotaRemove, removed; QuotaValue is zero
	// then.
	QuotaEntity quota.Entity
	QuotaKey    string
	QuotaValue  float64
	QuotaRemove bool
	// Group: GroupConfig. The group id whose configs Configs are.
	Group string
}

// AppendRecord appends r's encoding to dst and returns the extended
// buffer, as the append built-in does: a version byte, the type byte, then
// the type's fields, big endian, with strings and lists prefixed by a
// uint16 length. A topic's configs are written as their count, then each
// key and value, by key order, so that equal records encode to equal
// bytes.
func AppendRecord(dst []byte, r Record) []byte {
	dst = append(dst, RecordVersion, byte(r.Type))
	be := binary.BigEndian
	switch r.Type {
	case RecordRegisterNode, RecordFenceNode, RecordUnfenceNode, RecordNodeAddress:
		dst = be.AppendUint32(dst, uint32(r.Node))
		dst = be.AppendUint64(dst, uint64(r.BrokerEpoch))
		if r.Type == RecordRegisterNode || r.Type == RecordNodeAddress {
			dst = appendString(dst, r.Address)
		}
	case RecordProducerIDs:
		dst = be.AppendUint32(dst, uint32(r.Node))
		dst = be.AppendUint64(dst, uint64(r.NextProducerID))
	case RecordUnregisterNode:
		dst = be.AppendUint32(dst, uint32(r.Node))
	case RecordTopic:
		dst = appendString(dst, r.Topic)
		dst = be.AppendUint32(dst, uint32(r.Partitions))
		dst = append(dst, uncleanByte(r.Unclean))
		dst = appendString(dst, r.ID)
		dst = appendConfigs(dst, r.Configs)
	case RecordPartition:
		dst = appendString(dst, r.Topic)
		dst = be.AppendUint32(dst, uint32(r.Partition))
		s := r.State
		dst = be.AppendUint32(dst, uint32(s.Leader))
		dst = be.AppendUint32(dst, uint32(s.LeaderEpoch))
		dst = be.AppendUint32(dst, uint32(s.PartitionEpoch))
		dst = appendIDs(dst, s.Replicas)
		dst = appendIDs(dst, s.ISR)
		dst = appendIDs(dst, s.AddingReplicas)
		dst = appendIDs(dst, s.RemovingReplicas)
	case RecordRemoveTopic:
		dst = appendString(dst, r.Topic)
	case RecordTopicConfig:
		dst = appendString(dst, r.Topic)
		dst = append(dst, uncleanByte(r.Unclean))
		dst = appendConfigs(dst, r.Configs)
	case RecordScramCredential, RecordRemoveScramCredential:
		dst = appendString(dst, r.User)
		dst = appendString(dst, r.Mechanism)
		if r.Type == RecordScramCredential {
			dst = be.AppendUint32(dst, uint32(r.Scram.Iterations))
			dst = appendString(dst, string(r.Scram.Salt))
			dst = appendString(dst, string(r.Scram.StoredKey))
			dst = appendString(dst, string(r.Scram.ServerKey))
		}
	case RecordAccessControlEntry, RecordRemoveAccessControlEntry:
		dst = be.AppendUint64(dst, r.ACLID)
		if r.Type == RecordAccessControlEntry {
			a := r.ACL
			dst = append(dst, byte(a.ResourceType))
			dst = appendString(dst, a.ResourceName)
			dst = append(dst, byte(a.PatternType))
			dst = appendString(dst, a.Principal)
			dst = appendString(dst, a.Host)
			dst = append(dst, byte(a.Operation), byte(a.Permission))
		}
	case RecordClientQuota:
		dst = appendString(dst, r.QuotaEntity.User)
		dst = appendString(dst, r.QuotaEntity.ClientID)
		dst = appendString(dst, r.QuotaKey)
		if r.QuotaRemove {
			dst = append(dst, 1)
		} else {
			dst = append(dst, 0)
			dst = be.AppendUint64(dst, math.Float64bits(r.QuotaValue))
		}
	case RecordGroupConfig:
		dst = appendString(dst, r.Group)
		dst = appendConfigs(dst, r.Configs)
	}
	return dst
}

func uncleanByte(u Unclean) byte {
	if u {
		return 1
	}
	return 0
}

// appendConfigs writes configs as their count, then each key and value, by
// key order, so that equal records encode to equal bytes.
func appendConfigs(dst []byte, configs map[string]string) []byte {
	dst = binary.BigEndian.AppendUint16(dst, uint16(len(configs)))
	for _, k := range slices.Sorted(maps.Keys(configs)) {
		dst = appendString(dst, k)
		dst = appendString(dst, configs[k])
	}
	return dst
}

func appendString(dst []byte, s string) []byte {
	dst = binary.BigEndian.AppendUint16(dst, uint16(len(s)))
	return append(dst, s...)
}

func appendIDs(dst []byte, ids []int32) []byte {
	dst = binary.BigEndian.AppendUint16(dst, uint16(len(ids)))
	for _, id := range ids {
		dst = binary.BigEndian.AppendUint32(dst, uint32(id))
	}
	return dst
}

// DecodeRecord decodes one record AppendRecord wrote. It returns an error
// matching ErrCorruptMetadata for anything else. The record shares nothing
// with b.
func DecodeRecord(b []byte) (Record, error) {
	d := decoder{b: b}
	var r Record
	version := d.u8()
	if d.err == nil && version > RecordVersion {
		return r, fmt.Errorf("%w: version %d", ErrCorruptMetadata, version)
	}
	r.Type = RecordType(d.u8())
	switch r.Type {
	case RecordRegisterNode, RecordFenceNode, RecordUnfenceNode, RecordNodeAddress:
		r.Node = int32(d.u32())
		r.BrokerEpoch = int64(d.u64())
		if (r.Type == RecordRegisterNode && version >= 2) || r.Type == RecordNodeAddress {
			r.Address = d.str()
		}
		if d.err == nil && (r.Node < 0 || r.BrokerEpoch < 0 || (r.Type == RecordNodeAddress && version < 2)) {
			d.fail("node %d broker epoch %d in version %d", r.Node, r.BrokerEpoch, version)
		}
	case RecordUnregisterNode:
		r.Node = int32(d.u32())
		if d.err == nil && (r.Node < 0 || version < 3) {
			d.fail("unregister node %d in version %d", r.Node, version)
		}
	case RecordProducerIDs:
		r.Node = int32(d.u32())
		r.NextProducerID = int64(d.u64())
		if d.err == nil && (r.Node < 0 || r.NextProducerID <= 0 || version < 2) {
			d.fail("node %d next producer id %d in version %d", r.Node, r.NextProducerID, version)
		}
	case RecordTopic:
		r.Topic = d.str()
		r.Partitions = int32(d.u32())
		r.Unclean = d.unclean()
		if version >= 1 {
			r.ID = d.str()
			r.Configs = d.configs()
		}
		if d.err == nil && (r.Partitions <= 0 || r.Partitions > maxMetadataList || r.Topic == "") {
			d.fail("topic %q with %d partitions", r.Topic, r.Partitions)
		}
	case RecordPartition:
		r.Topic = d.str()
		r.Partition = int32(d.u32())
		r.State.Leader = int32(d.u32())
		r.State.LeaderEpoch = int32(d.u32())
		r.State.PartitionEpoch = int32(d.u32())
		r.State.Replicas = d.ids()
		r.State.ISR = d.ids()
		if version >= 3 {
			r.State.AddingReplicas = d.idsOrNil()
			r.State.RemovingReplicas = d.idsOrNil()
		}
		if d.err == nil && (r.Topic == "" || r.Partition < 0 || r.State.LeaderEpoch < 0 || r.State.PartitionEpoch < 0 || r.State.Leader < replica.NoLeader) {
			d.fail("partition %s-%d state %+v", r.Topic, r.Partition, r.State)
		}
	case RecordRemoveTopic:
		r.Topic = d.str()
	case RecordTopicConfig:
		r.Topic = d.str()
		r.Unclean = d.unclean()
		r.Configs = d.configs()
		if d.err == nil && r.Topic == "" {
			d.fail("configs of a topic without a name")
		}
	case RecordScramCredential, RecordRemoveScramCredential:
		r.User = d.str()
		r.Mechanism = d.str()
		if r.Type == RecordScramCredential {
			r.Scram.Iterations = int(d.u32())
			r.Scram.Salt = []byte(d.str())
			r.Scram.StoredKey = []byte(d.str())
			r.Scram.ServerKey = []byte(d.str())
		}
		if d.err == nil && (r.User == "" || r.Mechanism == "" || version < 3) {
			d.fail("SCRAM credential of user %q mechanism %q in version %d", r.User, r.Mechanism, version)
		}
	case RecordAccessControlEntry, RecordRemoveAccessControlEntry:
		r.ACLID = d.u64()
		if r.Type == RecordAccessControlEntry {
			r.ACL.ResourceType = auth.ResourceType(d.u8())
			r.ACL.ResourceName = d.str()
			r.ACL.PatternType = auth.PatternType(d.u8())
			r.ACL.Principal = d.str()
			r.ACL.Host = d.str()
			r.ACL.Operation = auth.Operation(d.u8())
			r.ACL.Permission = auth.Permission(d.u8())
		}
		if d.err == nil && (r.ACLID == 0 || version < 3 || (r.Type == RecordAccessControlEntry && r.ACL.ResourceName == "")) {
			d.fail("ACL %d %v in version %d", r.ACLID, r.ACL, version)
		}
	case RecordClientQuota:
		r.QuotaEntity.User = d.str()
		r.QuotaEntity.ClientID = d.str()
		r.QuotaKey = d.str()
		switch remove := d.u8(); remove {
		case 0:
			r.QuotaValue = math.Float64frombits(d.u64())
		case 1:
			r.QuotaRemove = true
		default:
			d.fail("client quota remove flag %d", remove)
		}
		if d.err == nil && (r.QuotaEntity.Validate() != nil || r.QuotaKey == "" || version < 3 ||
			(!r.QuotaRemove && !validQuotaValue(r.QuotaValue))) {
			d.fail("client quota %s of %q = %v (remove %v) in version %d", r.QuotaKey, r.QuotaEntity, r.QuotaValue, r.QuotaRemove, version)
		}
	case RecordGroupConfig:
		r.Group = d.str()
		r.Configs = d.configs()
		if d.err == nil && (r.Group == "" || version < 3) {
			d.fail("configs of group %q in version %d", r.Group, version)
		}
	default:
		if d.err == nil {
			d.fail("type %d", r.Type)
		}
	}
	if d.err == nil && len(d.b) != 0 {
		d.fail("%d bytes after the record", len(d.b))
	}
	if d.err != nil {
		return Record{}, d.err
	}
	return r, nil
}

// decoder reads a record's big-endian fields, remembering the first
// failure, which wraps ErrCorruptMetadata; once it has failed, every read
// returns zero.
type decoder struct {
	b   []byte
	err error
}

// unclean reads the unclean election flag: 0 or 1.
func (d *decoder) unclean() Unclean {
	switch u := d.u8(); u {
	case 0:
	case 1:
		return AllowUnclean
	default:
		d.fail("unclean flag %d", u)
	}
	return CleanOnly
}

func (d *decoder) fail(format string, args ...any) {
	if d.err == nil {
		d.err = fmt.Errorf("%w: %s", ErrCorruptMetadata, fmt.Sprintf(format, args...))
	}
}

// next returns the next n bytes, or nil once the decoder has failed or
// when fewer are left.
func (d *decoder) next(n int) []byte {
	if d.err == nil && len(d.b) < n {
		d.fail("truncated: %d bytes left, %d wanted", len(d.b), n)
	}
	if d.err != nil {
		return nil
	}
	p := d.b[:n]
	d.b = d.b[n:]
	return p
}

// fixed reads an n-byte big-endian unsigned integer.
func (d *decoder) fixed(n int) uint64 {
	var v uint64
	for _, c := range d.next(n) {
		v = v<<8 | uint64(c)
	}
	return v
}

func (d *decoder) u8() uint8   { return uint8(d.fixed(1)) }
func (d *decoder) u16() uint16 { return uint16(d.fixed(2)) }
func (d *decoder) u32() uint32 { return uint32(d.fixed(4)) }
func (d *decoder) u64() uint64 { return d.fixed(8) }

func (d *decoder) str() string {
	n := int(d.u16())
	if n > maxMetadataList {
		d.fail("string of %d bytes", n)
		return ""
	}
	return string(d.next(n))
}

// configs reads a topic's configs: a count, then keys and values, the keys
// in strictly increasing order (so non-empty and distinct).
func (d *decoder) configs() map[string]string {
	n := int(d.u16())
	if d.err != nil || n == 0 {
		return nil
	}
	if n > maxMetadataList || n*4 > len(d.b) {
		d.fail("%d configs in %d bytes", n, len(d.b))
		return nil
	}
	configs := make(map[string]string, n)
	prev := ""
	for range n {
		k, v := d.str(), d.str()
		if d.err != nil {
			return nil
		}
		if k <= prev {
			d.fail("config %q after %q", k, prev)
			return nil
		}
		configs[k] = v
		prev = k
	}
	return configs
}

func (d *decoder) ids() []int32 {
	n := int(d.u16())
	if d.err != nil {
		return nil
	}
	if n > maxMetadataList || n*4 > len(d.b) {
		d.fail("list of %d ids in %d bytes", n, len(d.b))
		return nil
	}
	ids := make([]int32, n)
	for i := range ids {
		v := d.u32()
		if v > math.MaxInt32 {
			d.fail("negative id %d", int32(v))
			return nil
		}
		ids[i] = int32(v)
	}
	return ids
}

// idsOrNil reads a list of ids, nil when it is empty: the adding and
// removing replicas of a partition that is not being reassigned.
func (d *decoder) idsOrNil() []int32 {
	if ids := d.ids(); len(ids) > 0 {
		return ids
	}
	return nil
}
