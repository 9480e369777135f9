package group

import "unicode/utf16"

// OffsetsTopic is the internal topic that holds committed offsets and group
// metadata.
const OffsetsTopic = "__consumer_offsets"

// DefaultOffsetsTopicPartitions is Kafka's offsets.topic.num.partitions.
const DefaultOffsetsTopicPartitions = 50

// PartitionFor returns the partition of __consumer_offsets, out of n, that
// holds a group: abs(hashCode(group)) % n, with Java's String.hashCode and
// Kafka's Utils.abs, so that a group lands in the partition Kafka would put
// it in.
func PartitionFor(group string, n int32) int32 {
	if n <= 0 {
		return 0
	}
	return abs(javaHashCode(group)) % n
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
