// Package sharecoord is Kafka's share coordinator (KIP-932): the durable
// state of share partitions. A share group's consumers take records of a
// partition one by one; the share partition leader, on the partition's
// leader, tracks which offsets are in flight, acknowledged or archived,
// and persists that through this coordinator, which keeps it in the
// internal topic __share_group_state. A node runs one Coordinator for the
// partitions of the topic it leads; a share partition — a group id, a
// topic id and a partition — lives in partition PartitionFor(...) of it,
// abs(Java hashCode of "group:topicId:partition") % n, n being
// share.coordinator.state.topic.num.partitions (50 by default), as in
// Kafka.
//
// # Requests
//
// The coordinator answers Kafka's five persister RPCs, in Go types:
//
//	InitializeShareGroupState (83)   Initialize
//	ReadShareGroupState (84)         Read
//	WriteShareGroupState (85)        Write
//	DeleteShareGroupState (86)       Delete
//	ReadShareGroupStateSummary (87)  ReadSummary
//
// A share partition is initialized (by the group coordinator) before it
// is read or written. A share partition leader reads the state when it
// takes over, which records its leader epoch; a write or read with an
// older leader epoch then fails with kafka.ErrFencedLeaderEpoch, and a
// write with an older state epoch (a share partition initialized again,
// say by an offset reset) with kafka.ErrFencedStateEpoch.
//
// # Records
//
// Every change is written to the share partition's partition before it
// is answered, as one of two records whose keys differ only in their
// leading version:
//
//	key (not flexible)           ShareSnapshotValue (flexible, v0)
//	+---------------------+      +-------------------------------+
//	| type      int16     |      | version          int16 = 0    |
//	|   0 ShareSnapshot   |      | snapshot_epoch   int32        |
//	|   1 ShareUpdate     |      | state_epoch      int32        |
//	| group_id  string    |      | leader_epoch     int32        |
//	| topic_id  uuid      |      | start_offset     int64        |
//	| partition int32     |      | create_timestamp int64        |
//	+---------------------+      | write_timestamp  int64        |
//	                             | state_batches    [batch]      |
//	ShareUpdateValue (v0)        | tagged fields                 |
//	+---------------------+      +-------------------------------+
//	| version      int16  |
//	| snapshot_epoch int32|      batch
//	| leader_epoch int32  |      +-------------------------------+
//	| start_offset int64  |      | first_offset   int64          |
//	| state_batches       |      | last_offset    int64          |
//	|   [batch]           |      | delivery_state int8           |
//	| tagged fields       |      | delivery_count int16          |
//	+---------------------+      | tagged fields                 |
//	                             +-------------------------------+
//
// (A string is an int16 length and its bytes; an array a uvarint count
// plus one and its elements; tagged fields a uvarint count, then for
// each a uvarint tag, a uvarint size and the bytes. Snapshot and update
// values are told apart by the key.) A ShareSnapshot holds the whole
// state; each ShareUpdate changes it, and after
// share.coordinator.snapshot.update.records.per.snapshot updates (500)
// the next write is a new snapshot. Deleting a share partition writes a
// tombstone of its ShareSnapshot key. Load replays a partition to rebuild
// the state after a restart or when a node takes the partition over.
//
// # Combining batches
//
// State batches written over others combine as Kafka's
// PersisterStateBatchCombiner does (CombineBatches): offsets below the
// start offset go, and where batches overlap the delivery that is further
// along — the higher delivery count, then the higher delivery state —
// wins, whichever was written first.
//
// # Compaction
//
// Kafka keeps __share_group_state with cleanup.policy=delete and deletes
// the records below every share partition's latest snapshot, since its
// ShareUpdate carries only its own write and compaction would keep only
// the latest. This coordinator writes each ShareUpdate with everything
// written since the snapshot, and a snapshot when a write moves the start
// offset back, so that the topic may also be compacted: the latest
// snapshot and update of a share partition give its state. Kafka replays
// such records to the same state.
package sharecoord
