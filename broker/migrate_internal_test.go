package broker

import (
	"encoding/json"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/partlog/partlog/controller"
	"github.com/partlog/partlog/log"
	"github.com/partlog/partlog/record"
	"github.com/partlog/partlog/replica"
	"github.com/partlog/partlog/vfs"
)

// appendLegacy appends old-format topic records, one batch each; a nil
// record deletes the topic.
func appendLegacy(t *testing.T, l *log.Log, name string, rec *legacyTopicRecord) {
	t.Helper()
	r := record.Record{Timestamp: time.Now().UnixMilli(), Key: []byte(name)}
	if rec != nil {
		v, err := json.Marshal(rec)
		require.NoError(t, err)
		r.Value = v
	}
	b := record.NewBuilder(record.DefaultBatchOptions())
	b.Append(r)
	_, err := l.Append(b.Build())
	require.NoError(t, err)
}

// replayed returns the controller's records a log holds from its start.
func replayed(t *testing.T, l *log.Log) []controller.Record {
	t.Helper()
	var recs []controller.Record
	require.NoError(t, controller.NewLogStore(l).Replay(func(r controller.Record) error {
		recs = append(recs, r)
		return nil
	}))
	return recs
}

// TestMigrateTopicRecordsOnce: the migration appends the controller's
// records of the topics the old records leave, then moves the log start
// past the old records; run again — after a crash between the two steps,
// or after both — it appends nothing more, and the controller replays the
// topics once.
func TestMigrateTopicRecordsOnce(t *testing.T) {
	l, err := log.Open("/meta", log.Options{FS: vfs.NewMem()})
	require.NoError(t, err)
	defer l.Close()
	appendLegacy(t, l, "a", &legacyTopicRecord{Version: 1, ID: "ida", Partitions: 2, ReplicationFactor: 1, LeaderEpoch: 3,
		Configs: map[string]string{"cleanup.policy": "compact"}})
	appendLegacy(t, l, "b", &legacyTopicRecord{Version: 1, ID: "idb", Partitions: 1, ReplicationFactor: 1})
	appendLegacy(t, l, "b", nil)
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))

	// The crash: the controller's records are written, the start is not
	// moved.
	topics, migrated, found, err := readLegacyTopics(l)
	require.NoError(t, err)
	require.True(t, found)
	require.EqualValues(t, -1, migrated)
	require.Len(t, topics, 1)
	require.NoError(t, migrateTopicRecords(l, 7, logger))
	end := l.LogEndOffset()
	require.EqualValues(t, 3, l.LogStartOffset(), "past the three old records")
	want := []controller.Record{
		{Type: controller.RecordTopic, Topic: "a", Partitions: 2, ID: "ida", Configs: map[string]string{"cleanup.policy": "compact"}},
		{Type: controller.RecordPartition, Topic: "a", Partition: 0, State: replica.LeaderAndISR{Leader: replica.NoLeader, LeaderEpoch: 3, Replicas: []int32{7}, ISR: []int32{7}}},
		{Type: controller.RecordPartition, Topic: "a", Partition: 1, State: replica.LeaderAndISR{Leader: replica.NoLeader, LeaderEpoch: 3, Replicas: []int32{7}, ISR: []int32{7}}},
	}
	require.Equal(t, want, replayed(t, l))

	require.NoError(t, l.DeleteRecordsBefore(3)) // no-op: already there
	require.NoError(t, migrateTopicRecords(l, 7, logger))
	require.Equal(t, end, l.LogEndOffset(), "nothing appended a second time")
	require.Equal(t, want, replayed(t, l))
}

// TestMigrateTopicRecordsFinishesAfterCrash: a log whose old records are
// followed by the controller's — the migration crashed before moving the
// log start — only has its start moved.
func TestMigrateTopicRecordsFinishesAfterCrash(t *testing.T) {
	l, err := log.Open("/meta", log.Options{FS: vfs.NewMem()})
	require.NoError(t, err)
	defer l.Close()
	appendLegacy(t, l, "a", &legacyTopicRecord{Version: 1, ID: "ida", Partitions: 1, ReplicationFactor: 1})
	recs := []controller.Record{{Type: controller.RecordTopic, Topic: "a", Partitions: 1, ID: "ida"}}
	require.NoError(t, controller.NewLogStore(l).Append(recs))
	end := l.LogEndOffset()
	require.NoError(t, migrateTopicRecords(l, 1, slog.New(slog.NewTextHandler(io.Discard, nil))))
	require.EqualValues(t, 1, l.LogStartOffset())
	require.Equal(t, end, l.LogEndOffset())
	require.Equal(t, recs, replayed(t, l))
}
