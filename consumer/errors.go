package consumer

import (
	"errors"
	"fmt"
)

var (
	// ErrClosed means the consumer was closed: Close has been called.
	ErrClosed = errors.New("consumer: closed")

	// ErrNoOffset means a partition has no position and the reset policy
	// is None (auto.offset.reset=none), as Kafka's
	// NoOffsetForPartitionException. Poll reports it in a *FetchError for
	// the partition, which then waits for a Seek.
	ErrNoOffset = errors.New("consumer: no offset for partition and auto.offset.reset is none")

	// ErrNotAssigned means a call named a partition the consumer is not
	// assigned.
	ErrNotAssigned = errors.New("consumer: partition not assigned")
)

// FetchError is an error in consuming one partition: which partition, at
// which offset, and why. Err matches ErrNoOffset, a Kafka error of package
// transport (kafka.ErrOffsetOutOfRange, ...) or, for a batch that
// failed its checks, record.ErrCorrupt and its kin, with errors.Is.
//
// A FetchError stops its partition or not as Poll's documentation says.
type FetchError struct {
	// Topic is the partition's topic.
	Topic string
	// Partition is the partition's index in the topic.
	Partition int32
	// Offset is the partition's position when the error happened, or -1
	// when it had none.
	Offset int64
	// Err is the cause: ErrNoOffset, a Kafka error or a record error,
	// as above.
	Err error
}

// Error describes the partition, the offset and the error.
func (e *FetchError) Error() string {
	if e.Offset < 0 {
		return fmt.Sprintf("consumer: %s-%d: %v", e.Topic, e.Partition, e.Err)
	}
	return fmt.Sprintf("consumer: %s-%d at offset %d: %v", e.Topic, e.Partition, e.Offset, e.Err)
}

// Unwrap returns Err.
func (e *FetchError) Unwrap() error { return e.Err }
