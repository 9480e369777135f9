package broker

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strconv"

	"github.com/partlog/partlog/controller"
	"github.com/partlog/partlog/log"
	"github.com/partlog/partlog/record"
	"github.com/partlog/partlog/replica"
	"github.com/partlog/partlog/topicconfig"
)

// Before a node on its own became a cluster of one, it kept its topics in
// its own format in the same __cluster_metadata-0 log the controller now
// keeps: one record per change, keyed by the topic's name, whose value is
// the topic's state in JSON (legacyTopicRecord) or null when it was
// deleted. The controller's records have no key, or, in its Raft log, a
// one-byte key. migrateTopicRecords rewrites such a log for the controller
// when the node opens.

// legacyTopicRecord is a topic's state in the old format.
type legacyTopicRecord struct {
	Version           int               `json:"version"`
	ID                string            `json:"id"`
	Partitions        int32             `json:"partitions"`
	ReplicationFactor int16             `json:"replication_factor"`
	Configs           map[string]string `json:"configs,omitempty"`
	LeaderEpoch       int32             `json:"leader_epoch"`
}

// legacyTopicRecordVersion is the last version of the old format.
const legacyTopicRecordVersion = 1

// migrateTopicRecords makes the metadata log l of a node on its own the
// controller's: when it starts with topic records in the old format, it
// appends, in one batch, the controller's records of the topics they
// leave — each partition on node alone, without a leader yet, at the
// leader epoch it had — and then moves the log start offset past the old
// records. One batch is written whole or not at all, and a crash before
// the log start moves is finished by the next call, which finds the
// controller's records after the old ones: the topics are never lost or
// doubled. A log that starts with the controller's records, or is empty,
// is left as it is.
func migrateTopicRecords(l *log.Log, node int32, logger *slog.Logger) error {
	topics, migrated, found, err := readLegacyTopics(l)
	switch {
	case err != nil:
		return err
	case !found:
		return nil
	case migrated >= 0:
		return l.DeleteRecordsBefore(migrated)
	}
	var recs []controller.Record
	for _, name := range slices.Sorted(maps.Keys(topics)) {
		t := topics[name]
		unclean, _ := strconv.ParseBool(t.Configs[topicconfig.UncleanLeaderElects])
		recs = append(recs, controller.Record{Type: controller.RecordTopic, Topic: name, Partitions: t.Partitions,
			Unclean: controller.Unclean(unclean), ID: t.ID, Configs: t.Configs})
		for p := range t.Partitions {
			recs = append(recs, controller.Record{Type: controller.RecordPartition, Topic: name, Partition: p,
				State: replica.LeaderAndISR{Leader: replica.NoLeader, LeaderEpoch: t.LeaderEpoch,
					Replicas: []int32{node}, ISR: []int32{node}}})
		}
	}
	start := l.LogEndOffset()
	if err := controller.NewLogStore(l).Append(recs); err != nil {
		return fmt.Errorf("partlog: migrate the metadata log: %w", err)
	}
	logger.Info("migrated the topics of a node on its own to its controller's metadata log", "topics", len(topics))
	return l.DeleteRecordsBefore(start)
}

// isRaftEntryKey reports whether key is the key of an entry of the
// controller's Raft log (see package controller/raftlog): one byte, the
// entry's type, a control character that no topic name holds.
func isRaftEntryKey(key []byte) bool { return len(key) == 1 && key[0] < ' ' }

// readLegacyTopics reads the old-format records at the start of l: the
// topics they leave, and the offset of the first record after them in the
// controller's format, or -1 if there is none. found is false when l
// does not start with an old-format record.
func readLegacyTopics(l *log.Log) (topics map[string]legacyTopicRecord, migrated int64, found bool, err error) {
	topics, migrated = map[string]legacyTopicRecord{}, -1
	err = eachRecord(l, l.LogEndOffset(), func(r record.Record) (bool, error) {
		if r.Key == nil || isRaftEntryKey(r.Key) {
			// The controller's: the old records, if any, end here.
			if found {
				migrated = r.Offset
			}
			return false, nil
		}
		found = true
		if r.Value == nil {
			delete(topics, string(r.Key))
			return true, nil
		}
		var t legacyTopicRecord
		if err := json.Unmarshal(r.Value, &t); err != nil {
			return false, fmt.Errorf("record at offset %d: %w", r.Offset, err)
		}
		if t.Version > legacyTopicRecordVersion {
			return false, fmt.Errorf("record at offset %d has version %d; this partlog reads up to %d", r.Offset, t.Version, legacyTopicRecordVersion)
		}
		topics[string(r.Key)] = t
		return true, nil
	})
	if err != nil {
		return nil, -1, false, fmt.Errorf("partlog: metadata log: %w", err)
	}
	if !found {
		return nil, -1, false, nil
	}
	return topics, migrated, true, nil
}
