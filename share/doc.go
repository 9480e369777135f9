// Package share is the state of a share partition (KIP-932, "queues for
// Kafka"): how the leader of a topic partition hands its records out to
// the members of a share group, one member at a time per record, and
// learns which are done. It is Kafka's SharePartition as a pure state
// machine: no I/O, no goroutines, no clock.
//
// # Records
//
// Members of a share group consume a partition together. A member's
// fetch acquires records: each is Acquired by that member alone, under an
// acquisition lock that lasts RecordLockDuration, and its delivery count
// goes up by one. The member acknowledges each record it got — Accept
// (processed), Release (give it back), Reject (cannot be processed) or
// Gap (no record at that offset). A released record, or one whose lock
// expires, is Available for the next fetch, unless it has been delivered
// DeliveryCountLimit times: then it is Archived, as a rejected one is.
// A member that needs longer acknowledges it Renew (KIP-1222): the record
// stays Acquired by it, with the same delivery count, under a lock that
// runs RecordLockDuration again from then.
//
//	             acquire                 Accept
//	Available ────────────▶ Acquired ──────────────▶ Acknowledged
//	    ▲                      │
//	    │ Release or expiry,   │ Reject or Gap; Release or
//	    └──────────────────────┤ expiry at the limit
//	      below the limit      └─────────────────────▶ Archived
//
// The share-partition start offset (SPSO) is the lowest offset not yet
// Acknowledged or Archived; the end offset is where the next new record
// will be acquired. The records between are in flight, at most
// MaxInFlightRecords offsets. The start offset only moves up: past the
// records that are done with, and past those the log no longer has.
//
// # Driving a Partition
//
// The leader of the topic partition keeps one Partition per share group
// consuming it, and does this:
//
//  1. On becoming leader, read the State from the share coordinator
//     (ReadShareGroupState), set its LeaderEpoch to the leader's, and call
//     New. A share partition never consumed starts at the offset
//     share.auto.offset.reset gives — the log end by default, the log
//     start for earliest — written to the coordinator first.
//  2. On a ShareFetch, if CanAcquire: read the log from FetchOffset, pass
//     the offset ranges of the batches read to AcquireWith, with the
//     request's MaxRecords and ShareAcquireMode (BatchOptimized before
//     version 2), write the Update, then answer with the records and the
//     AcquiredRecords ranges. A ShareFetch with IsRenewAck set only
//     acknowledges: it acquires nothing, and is answered with no records.
//  3. On a ShareAcknowledge (or the acknowledgements in a ShareFetch):
//     Acknowledge, write the Update, answer.
//  4. Keep a timer at NextDeadline; when it fires, Expire and write the
//     Update.
//  5. When a member leaves the group or its share session closes,
//     ReleaseMember and write the Update.
//  6. When the log start offset moves past StartOffset (retention,
//     DeleteRecords), AdvanceStartOffset and write the Update.
//
// Every call that changes the partition takes the time and first expires
// the locks due by then, so what a call does depends on its arguments
// alone, not on when the timer last fired.
//
// # Persistence
//
// Every such call returns an Update: the state batches of the records
// that changed and the new start offset, as a WriteShareGroupState writes
// them. The caller writes it before it answers, so that what a member is
// told is stored. State.Apply is how the share coordinator folds an
// Update into the State it stores; State returns the result directly.
// If a write fails, the Partition is ahead of the coordinator: drop it and
// restore from the coordinator with New.
//
// A lock is never stored: a new leader cannot honour the old one's
// locks, so what was Acquired comes back Available. Unlike Kafka, the
// acquisition itself is written — the record as Available with its new
// delivery count — so a leader change cannot let a record be delivered
// more than DeliveryCountLimit times.
//
// # Differences from Kafka
//
//   - AcquireWith never lets the window exceed MaxInFlightRecords, in
//     either AcquireMode; Kafka's batch_optimized mode may, to finish a
//     batch.
//   - Offsets a fetch shows are not in the log — between the batches
//     read, or from the fetch offset to the first — are archived at
//     once. Kafka acquires the offsets between the batches of one fetch
//     with them, for the member to acknowledge as Gap, and archives only
//     the cached records before the first batch.
//   - An acknowledgement request is applied whole or not at all, as in
//     Kafka, whose answer carries one error per partition.
//   - AdvanceStartOffset drops acquired records below the new start at
//     once; Kafka lets their locks run out.
//   - Kafka's delivery throttling (acquiring one record at a time once a
//     record's delivery count passes half the limit) is not done.
package share
