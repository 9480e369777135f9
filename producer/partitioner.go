package producer

import (
	"math/rand/v2"
	"sync/atomic"

	"github.com/cespare/xxhash/v2"
)

// Partitioner chooses partitions for records that have no explicit
// partition (see Record.SetPartition). The producer asks it once per topic
// for a TopicPartitioner, which keeps whatever state the topic needs (a
// round-robin counter), so that choosing a partition costs no lookup.
//
// DefaultPartitioner, KeyHashPartitioner and RoundRobinPartitioner are the
// built-in ones; a PartitionerFunc turns a function into a stateless one,
// and may call them to fall back on their choice.
type Partitioner interface {
	// ForTopic returns the partitioner of one topic. It is called once,
	// when the producer first sees the topic.
	ForTopic(topic string) TopicPartitioner
}

// TopicPartitioner chooses partitions for one topic's records.
type TopicPartitioner interface {
	// Partition returns the partition for r, in [0, partitions). It may
	// be called from several goroutines at once. A choice outside the
	// range fails the record with kafka.ErrUnknownTopicOrPartition.
	Partition(r *Record, partitions int) int
}

// PartitionerFunc is a stateless partitioner: it is both a Partitioner,
// the same for every topic, and a TopicPartitioner.
type PartitionerFunc func(r *Record, partitions int) int

// ForTopic returns f itself.
func (f PartitionerFunc) ForTopic(string) TopicPartitioner { return f }

// Partition returns f(r, partitions).
func (f PartitionerFunc) Partition(r *Record, partitions int) int { return f(r, partitions) }

// KeyHashPartitioner returns the partitioner that sends a record to the
// xxhash (XXH64, seed 0) of its key, modulo the partition count, so that
// records with the same key land in the same partition while the count
// stays the same. A nil key hashes as an empty one.
func KeyHashPartitioner() PartitionerFunc { return keyHash }

func keyHash(r *Record, partitions int) int {
	return int(xxhash.Sum64(r.Key) % uint64(partitions))
}

// RoundRobinPartitioner returns the partitioner that spreads records evenly,
// ignoring their keys: for each topic it starts at a random partition and
// moves on by one partition per record.
func RoundRobinPartitioner() Partitioner { return roundRobin{} }

type roundRobin struct{}

func (roundRobin) ForTopic(string) TopicPartitioner { return newRoundRobinTopic() }

// roundRobinTopic is one topic's round-robin counter. Counting in 64 bits
// from a start below 2^32 keeps the sequence consecutive modulo any
// partition count: it does not wrap.
type roundRobinTopic struct {
	next atomic.Uint64
}

func newRoundRobinTopic() *roundRobinTopic {
	t := new(roundRobinTopic)
	t.next.Store(uint64(rand.Uint32()))
	return t
}

func (t *roundRobinTopic) Partition(_ *Record, partitions int) int {
	return int((t.next.Add(1) - 1) % uint64(partitions))
}

// DefaultPartitioner returns the partitioner the producer uses unless told
// otherwise: a record with a key (not nil) goes where KeyHashPartitioner
// sends it; one without goes where RoundRobinPartitioner does.
func DefaultPartitioner() Partitioner { return defaultPartitioner{} }

type defaultPartitioner struct{}

func (defaultPartitioner) ForTopic(string) TopicPartitioner {
	return &defaultTopic{rr: newRoundRobinTopic()}
}

type defaultTopic struct {
	rr *roundRobinTopic
}

func (t *defaultTopic) Partition(r *Record, partitions int) int {
	if r.Key != nil {
		return keyHash(r, partitions)
	}
	return t.rr.Partition(r, partitions)
}
