package partlog

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/log"
	"github.com/partlog/partlog/record"
)

// metadataTopic is the internal partition that holds the node's topic
// metadata, named as Kafka's KRaft metadata log.
var metadataTopic = kafka.TopicPartition{Topic: "__cluster_metadata", Partition: 0}

// topicRecord is what the metadata log keeps of a topic: one record per
// change, keyed by the topic's name; a tombstone deletes it. The latest
// record of each key is the topic's state, so the log can be compacted.
type topicRecord struct {
	Version           int               `json:"version"`
	ID                string            `json:"id"`
	Partitions        int32             `json:"partitions"`
	ReplicationFactor int16             `json:"replication_factor"`
	Configs           map[string]string `json:"configs,omitempty"`
	LeaderEpoch       int32             `json:"leader_epoch"`
}

const topicRecordVersion = 1

// metadataLog stores topic records in the metadata partition's log, every
// change synced before it is acknowledged.
type metadataLog struct {
	log *log.Log
}

func openMetadataLog(d *log.Dir) (*metadataLog, error) {
	l, err := d.Open(metadataTopic, log.Options{SyncBeforeAck: true, SegmentBytes: 16 << 20, MaxIndexBytes: 1 << 20, RetentionMs: -1})
	if err != nil {
		return nil, fmt.Errorf("partlog: open metadata log: %w", err)
	}
	return &metadataLog{log: l}, nil
}

// load replays the log: the latest state of every topic not deleted.
func (m *metadataLog) load() (map[string]topicRecord, error) {
	topics := map[string]topicRecord{}
	for off := m.log.LogStartOffset(); off < m.log.LogEndOffset(); {
		data, err := m.log.Read(nil, off, m.log.LogEndOffset(), 1<<20)
		if err != nil {
			return nil, fmt.Errorf("partlog: read metadata log: %w", err)
		}
		for len(data) > 0 {
			h, err := record.ParseHeader(data)
			if err != nil {
				return nil, fmt.Errorf("partlog: metadata log: %w", err)
			}
			b, err := record.Decode(data[:h.Size()])
			if err != nil {
				return nil, fmt.Errorf("partlog: metadata log: %w", err)
			}
			for _, r := range b.Records {
				if r.Offset < off {
					continue
				}
				if r.Value == nil {
					delete(topics, string(r.Key))
					continue
				}
				var t topicRecord
				if err := json.Unmarshal(r.Value, &t); err != nil {
					return nil, fmt.Errorf("partlog: metadata log record at offset %d: %w", r.Offset, err)
				}
				if t.Version > topicRecordVersion {
					return nil, fmt.Errorf("partlog: metadata log record at offset %d has version %d; this partlog reads up to %d", r.Offset, t.Version, topicRecordVersion)
				}
				topics[string(r.Key)] = t
			}
			off = h.NextOffset()
			data = data[h.Size():]
		}
	}
	return topics, nil
}

// put records a topic's state durably; a nil t deletes the topic.
func (m *metadataLog) put(name string, t *topicRecord) error {
	r := record.Record{Timestamp: time.Now().UnixMilli(), Key: []byte(name)}
	if t != nil {
		t.Version = topicRecordVersion
		v, err := json.Marshal(t)
		if err != nil {
			return err
		}
		r.Value = v
	}
	b := record.NewBuilder(record.DefaultBatchOptions())
	b.Append(r)
	if _, err := m.log.Append(b.Build()); err != nil {
		return fmt.Errorf("partlog: write metadata log: %w", err)
	}
	return nil
}
