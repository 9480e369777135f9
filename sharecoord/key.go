package sharecoord

import (
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"math"
	"strconv"

	"github.com/partlog/partlog/internal/kread"
	"github.com/partlog/partlog/kafka"
)

// The internal topic that holds the state of share partitions, and its
// defaults.
const (
	// StateTopic is __share_group_state.
	StateTopic = "__share_group_state"
	// DefaultStateTopicPartitions is
	// share.coordinator.state.topic.num.partitions' default.
	DefaultStateTopicPartitions = 50
)

// SharePartition names a share partition: one partition of a topic as a
// share group consumes it. It is the key of the coordinator's state.
type SharePartition struct {
	// Group is the share group's id.
	Group string
	// TopicID is the topic's id (Kafka's Uuid).
	TopicID [16]byte
	// Partition is the partition's index.
	Partition int32
}

// String returns the key as Kafka spells it, CoordinatorKey's string.
func (sp SharePartition) String() string {
	return CoordinatorKey(sp.Group, sp.TopicID, sp.Partition)
}

// CoordinatorKey returns the string Kafka hashes to place a share
// partition, SharePartitionKey.asCoordinatorKey: the group id, the topic
// id as Kafka prints a Uuid (URL-safe base64, no padding) and the
// partition, joined by colons — "g:AAECAwQFBgcICQoLDA0ODw:3". It is also
// the key a FindCoordinator for a share partition carries.
func CoordinatorKey(group string, topicID [16]byte, partition int32) string {
	return group + ":" + base64.RawURLEncoding.EncodeToString(topicID[:]) + ":" + strconv.Itoa(int(partition))
}

// PartitionFor returns the partition, out of n, of __share_group_state
// that holds a share partition's state, as Kafka's ShareCoordinatorService
// computes it: abs(hashCode(CoordinatorKey(...))) % n, with Java's
// String.hashCode and Kafka's Utils.abs. The coordinator of the share
// partition is that partition's leader. n <= 0 gives 0.
func PartitionFor(group string, topicID [16]byte, partition int32, n int32) int32 {
	return kafka.CoordinatorPartition(CoordinatorKey(group, topicID, partition), n)
}

// RecordType is the type of a record of __share_group_state: the version
// its key starts with.
type RecordType int16

// The record types.
const (
	// SnapshotRecord is a ShareSnapshot: a share partition's whole state.
	SnapshotRecord RecordType = 0
	// UpdateRecord is a ShareUpdate: a change to the state of the latest
	// ShareSnapshot.
	UpdateRecord RecordType = 1
)

// String returns Kafka's name of the record type.
func (t RecordType) String() string {
	switch t {
	case SnapshotRecord:
		return "ShareSnapshot"
	case UpdateRecord:
		return "ShareUpdate"
	}
	return fmt.Sprintf("RecordType(%d)", int16(t))
}

// Key is the key of a record of __share_group_state. Both record types
// lay it out alike (ShareSnapshotKey.json, ShareUpdateKey.json; not
// flexible):
//
//	type      int16   0 ShareSnapshot, 1 ShareUpdate
//	group_id  string  int16 length, then the bytes
//	topic_id  uuid    16 bytes
//	partition int32
type Key struct {
	// Type is the record type.
	Type RecordType
	// SharePartition is the share partition the record is about.
	SharePartition
}

// Encode returns the key's bytes, a new slice the caller owns. A group id
// longer than Kafka reads (32767 bytes) is cut, as group.Key's is.
func (k Key) Encode() []byte {
	g := k.Group
	if len(g) > math.MaxInt16 {
		g = g[:math.MaxInt16]
	}
	b := make([]byte, 0, 2+2+len(g)+16+4)
	b = binary.BigEndian.AppendUint16(b, uint16(k.Type))
	b = binary.BigEndian.AppendUint16(b, uint16(len(g)))
	b = append(b, g...)
	b = append(b, k.TopicID[:]...)
	return binary.BigEndian.AppendUint32(b, uint32(k.Partition))
}

// DecodeKey parses a key. It fails with ErrUnknownVersion for a type
// other than ShareSnapshot and ShareUpdate, and with ErrCorrupt for a key
// cut short, with bytes left over, or with a null or negative-length
// group id. The key does not alias b.
func DecodeKey(b []byte) (Key, error) {
	r := reader{kread.New(b, ErrCorrupt)}
	k := Key{Type: RecordType(r.Int16())}
	if r.Err == nil && k.Type != SnapshotRecord && k.Type != UpdateRecord {
		return Key{}, fmt.Errorf("%w: key version %d", ErrUnknownVersion, int16(k.Type))
	}
	k.Group = r.string()
	k.TopicID = r.UUID()
	k.Partition = r.Int32()
	if err := r.Done("key"); err != nil {
		return Key{}, err
	}
	return k, nil
}
