package controller

import "errors"

// Errors of the controller's state machine and its metadata log. What
// nodes and clients see of a refused call are Kafka's errors
// (kafka.ErrUnknownTopicOrPartition, kafka.ErrStaleBrokerEpoch, ...),
// wrapped with the details.
var (
	// ErrCorruptMetadata means a metadata record did not decode: it is
	// truncated, has bytes after its fields, an unknown version or type,
	// or a field out of range.
	ErrCorruptMetadata = errors.New("controller: corrupt metadata record")
	// ErrMetadataReplay means a restarted Machine found records in its
	// store that do not apply to the state before them.
	ErrMetadataReplay = errors.New("controller: metadata log does not replay")
)
