package log

import (
	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/vfs"
)

// ReadOffsetCheckpoint reads a "topic partition offset" checkpoint in
// Kafka's format, such as replication-offset-checkpoint. A missing file is
// an empty map; a malformed one is ErrBadCheckpoint.
func ReadOffsetCheckpoint(fsys vfs.FS, name string) (map[kafka.TopicPartition]int64, error) {
	byName, err := readOffsetCheckpoint(fsys, name)
	if err != nil {
		return nil, err
	}
	out := make(map[kafka.TopicPartition]int64, len(byName))
	for k, off := range byName {
		if tp, ok := ParseTopicPartition(k); ok {
			out[tp] = off
		}
	}
	return out, nil
}

// WriteOffsetCheckpoint replaces a "topic partition offset" checkpoint
// with offsets, atomically and durably.
func WriteOffsetCheckpoint(fsys vfs.FS, name string, offsets map[kafka.TopicPartition]int64) error {
	byName := make(map[string]int64, len(offsets))
	for tp, off := range offsets {
		byName[tp.String()] = off
	}
	return writeOffsetCheckpoint(fsys, name, byName)
}
