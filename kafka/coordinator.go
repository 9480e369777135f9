package kafka

import "unicode/utf16"

// The internal topics that hold the coordinators' state: a group's in
// OffsetsTopic, a transactional id's in TransactionStateTopic, each in the
// partition CoordinatorPartition gives.
const (
	// OffsetsTopic is __consumer_offsets: committed offsets and group
	// metadata.
	OffsetsTopic = "__consumer_offsets"
	// TransactionStateTopic is __transaction_state: the transaction
	// coordinator's log.
	TransactionStateTopic = "__transaction_state"
	// DefaultCoordinatorPartitions is both topics' default partition
	// count: offsets.topic.num.partitions and
	// transaction.state.log.num.partitions.
	DefaultCoordinatorPartitions = 50
)

// CoordinatorPartition returns the partition, out of n, of a coordinator
// topic that holds key (a group id or a transactional id):
// abs(hashCode(key)) % n, with Java's String.hashCode and Kafka's
// Utils.abs, so that a key lands in the partition Kafka would put it in.
func CoordinatorPartition(key string, n int32) int32 {
	if n <= 0 {
		return 0
	}
	return abs(javaHashCode(key)) % n
}

// javaHashCode is Java's String.hashCode: s[0]*31^(k-1) + ... + s[k-1]
// over the UTF-16 code units of s, in int32 arithmetic.
func javaHashCode(s string) int32 {
	var h int32
	for _, r := range s { // without converting s: this runs on every commit
		if r1, r2 := utf16.EncodeRune(r); r1 != '\uFFFD' {
			h = 31*(31*h+int32(r1)) + int32(r2) // a surrogate pair
		} else {
			h = 31*h + int32(r)
		}
	}
	return h
}

// abs is Kafka's Utils.abs: |n|, with MinInt32 taken to 0.
func abs(n int32) int32 {
	switch {
	case n == -1<<31:
		return 0
	case n < 0:
		return -n
	}
	return n
}
