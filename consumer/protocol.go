package consumer

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"

	"github.com/partlog/partlog/kafka"
)

// The consumer protocol: what a consumer puts in its JoinGroup metadata
// (its subscription) and what the leader puts in each SyncGroup assignment,
// encoded as Kafka's ConsumerProtocolSubscription and
// ConsumerProtocolAssignment, so that the group's metadata in
// __consumer_offsets reads as Kafka's:
//
//	subscription v0  version int16, topics [string], user_data bytes?
//	subscription v1  + owned_partitions [topic string, partitions [int32]]
//	subscription v2  + generation_id int32
//	subscription v3  + rack_id string?
//	assignment v0    version int16, assigned_partitions [topic string,
//	                 partitions [int32]], user_data bytes?
//
// A newer version than these is read as the newest known, ignoring what
// follows, as Kafka does.

// ProtocolType is the protocol type of consumer groups.
const ProtocolType = "consumer"

// ErrBadProtocol means a subscription or assignment could not be parsed.
var ErrBadProtocol = errors.New("consumer: malformed consumer protocol data")

// Subscription is a member's subscription as the group leader sees it.
type Subscription struct {
	// Topics are the topics the member subscribes to.
	Topics []string
	// UserData is an assignor's own bytes, opaque to the group; partlog's
	// consumer sends none.
	UserData []byte
	// Owned is what the member has from the generation before (sent by
	// every member, used by the cooperative assignors).
	Owned []kafka.TopicPartition
	// Generation is the generation in which the member had Owned, or -1.
	Generation int32
	// Rack is the member's client.rack (version 3, KIP-881), or empty;
	// partlog's consumer sends none.
	Rack string
}

// Encode returns s as a version 3 ConsumerProtocolSubscription.
func (s Subscription) Encode() []byte {
	b := binary.BigEndian.AppendUint16(nil, 3)
	b = binary.BigEndian.AppendUint32(b, uint32(len(s.Topics)))
	for _, t := range s.Topics {
		b = appendString(b, t)
	}
	b = appendBytes(b, s.UserData)
	b = appendPartitions(b, s.Owned)
	b = binary.BigEndian.AppendUint32(b, uint32(s.Generation))
	if s.Rack == "" {
		b = binary.BigEndian.AppendUint16(b, 0xffff)
	} else {
		b = appendString(b, s.Rack)
	}
	return b
}

// DecodeSubscription parses a ConsumerProtocolSubscription of any version.
func DecodeSubscription(b []byte) (Subscription, error) {
	r := protoReader{b: b}
	v := r.int16()
	s := Subscription{Generation: -1}
	n := r.count(2)
	for i := 0; i < n; i++ {
		s.Topics = append(s.Topics, r.string())
	}
	s.UserData = r.bytes()
	if v >= 1 {
		s.Owned = r.partitions()
	}
	if v >= 2 {
		s.Generation = r.int32()
	}
	if v >= 3 {
		s.Rack = r.string()
	}
	if r.err == nil && v < 0 {
		r.err = fmt.Errorf("version %d", v)
	}
	if r.err == nil && v <= 3 && len(r.b) > 0 {
		r.err = fmt.Errorf("%d bytes left over", len(r.b))
	}
	if r.err != nil {
		return Subscription{}, fmt.Errorf("%w: subscription: %v", ErrBadProtocol, r.err)
	}
	return s, nil
}

// Assignment is what the leader gave a member.
type Assignment struct {
	// Partitions are the partitions assigned to the member.
	Partitions []kafka.TopicPartition
	// UserData is the assignor's own bytes for the member, opaque to the
	// group; partlog's consumer sends none.
	UserData []byte
}

// Encode returns a as a version 0 ConsumerProtocolAssignment.
func (a Assignment) Encode() []byte {
	b := binary.BigEndian.AppendUint16(nil, 0)
	b = appendPartitions(b, a.Partitions)
	return appendBytes(b, a.UserData)
}

// DecodeAssignment parses a ConsumerProtocolAssignment of any version. An
// empty one (a member the leader left out) is no partitions.
func DecodeAssignment(b []byte) (Assignment, error) {
	if len(b) == 0 {
		return Assignment{}, nil
	}
	r := protoReader{b: b}
	v := r.int16()
	a := Assignment{Partitions: r.partitions(), UserData: r.bytes()}
	if r.err == nil && v < 0 {
		r.err = fmt.Errorf("version %d", v)
	}
	if r.err == nil && v <= 3 && len(r.b) > 0 {
		r.err = fmt.Errorf("%d bytes left over", len(r.b))
	}
	if r.err != nil {
		return Assignment{}, fmt.Errorf("%w: assignment: %v", ErrBadProtocol, r.err)
	}
	return a, nil
}

func appendString(b []byte, s string) []byte {
	b = binary.BigEndian.AppendUint16(b, uint16(len(s)))
	return append(b, s...)
}

// appendBytes writes nil as null.
func appendBytes(b, v []byte) []byte {
	if v == nil {
		return binary.BigEndian.AppendUint32(b, 0xffffffff)
	}
	b = binary.BigEndian.AppendUint32(b, uint32(len(v)))
	return append(b, v...)
}

// appendPartitions writes tps grouped by topic, in the order topics first
// appear.
func appendPartitions(b []byte, tps []kafka.TopicPartition) []byte {
	var topics []string
	byTopic := map[string][]int32{}
	for _, tp := range tps {
		if _, ok := byTopic[tp.Topic]; !ok {
			topics = append(topics, tp.Topic)
		}
		byTopic[tp.Topic] = append(byTopic[tp.Topic], tp.Partition)
	}
	b = binary.BigEndian.AppendUint32(b, uint32(len(topics)))
	for _, t := range topics {
		b = appendString(b, t)
		b = binary.BigEndian.AppendUint32(b, uint32(len(byTopic[t])))
		for _, p := range byTopic[t] {
			b = binary.BigEndian.AppendUint32(b, uint32(p))
		}
	}
	return b
}

type protoReader struct {
	b   []byte
	err error
}

func (r *protoReader) take(n int) []byte {
	if r.err != nil {
		return nil
	}
	if n < 0 || n > len(r.b) {
		r.err = fmt.Errorf("%d bytes wanted, %d left", n, len(r.b))
		return nil
	}
	out := r.b[:n:n]
	r.b = r.b[n:]
	return out
}

func (r *protoReader) int16() int16 {
	if b := r.take(2); b != nil {
		return int16(binary.BigEndian.Uint16(b))
	}
	return 0
}

func (r *protoReader) int32() int32 {
	if b := r.take(4); b != nil {
		return int32(binary.BigEndian.Uint32(b))
	}
	return 0
}

func (r *protoReader) string() string {
	n := r.int16()
	if n == -1 || r.err != nil {
		return ""
	}
	return string(r.take(int(n)))
}

func (r *protoReader) bytes() []byte {
	n := r.int32()
	if n == -1 || r.err != nil {
		return nil
	}
	return slices.Clone(r.take(int(n)))
}

func (r *protoReader) count(min int) int {
	n := r.int32()
	if r.err != nil {
		return 0
	}
	if n < 0 || int(n) > len(r.b)/min {
		r.err = fmt.Errorf("array of %d in %d bytes", n, len(r.b))
		return 0
	}
	return int(n)
}

func (r *protoReader) partitions() []kafka.TopicPartition {
	var out []kafka.TopicPartition
	n := r.count(2 + 4)
	for i := 0; i < n && r.err == nil; i++ {
		t := r.string()
		k := r.count(4)
		for j := 0; j < k && r.err == nil; j++ {
			out = append(out, kafka.TopicPartition{Topic: t, Partition: r.int32()})
		}
	}
	return out
}
