// Package txn is Kafka's transaction coordinator (KIP-98, KIP-890) as a
// deterministic state machine. It binds a transactional id to a producer id
// and epoch, so that a restarted producer resumes its transactions and
// fences the instance it replaces; tracks each transaction's partitions;
// decides its outcome; has the COMMIT or ABORT markers written to every
// partition; and logs every state change to the internal topic
// __transaction_state, so that transactions survive a restart or a move of
// the coordinator.
//
// # The state machine
//
// A Coordinator starts no goroutine, reads no clock and writes nothing.
// Inputs are the producers' requests (InitProducerID, AddPartitions,
// AddOffsets, EndTxn), the passing of time (Tick), the outcomes of the
// effects it asked for (AppendDone, MarkersDone) and the coming and going
// of leadership of partitions of __transaction_state (Load, Unload). Its
// outputs are effects, handed out by Ready: records to append, markers to
// write, answers to send. VerifyPartitions and Describe answer at once and
// change nothing. Every input takes the caller's clock in ms, which must
// not go backwards.
//
// A transactional id's states, after Kafka's TransactionState:
//
//	           AddPartitions                  EndTxn(COMMIT)
//	Empty ─────────────────────────▶ Ongoing ───────────────────▶ PrepareCommit
//	  ▲                              │   ▲                              │
//	  │                              │   └── AddPartitions              │ every COMMIT
//	  │            EndTxn(ABORT),    │       (more partitions)          │ marker written
//	  │            the timeout, or   │                                  ▼
//	  │            InitProducerId    ▼                            CompleteCommit
//	  │            (PrepareEpochFence)                                  │
//	  │                        PrepareAbort                             │
//	  │                              │ every ABORT marker written       │
//	  │                              ▼                                  │
//	  │                        CompleteAbort                            │
//	  │                              │                                  │
//	  └──────── InitProducerId ──────┴──────────────────────────────────┘
//	            (and from Empty)     AddPartitions from a Complete state: Ongoing
//
// Each change takes effect only once its record is durable. Until then
// (Kafka's pending state), and while the markers of a decided transaction
// are written, requests for the id get kafka.ErrConcurrentTransactions and
// the producer retries. InitProducerId from Empty or a Complete state bumps
// the epoch, or moves to a new producer id at epoch 0 once the epoch is
// exhausted. From Ongoing it aborts the transaction first: the abort's
// record carries the epoch bumped by one (PrepareEpochFence, a state never
// written), which fences the old instance, and the producer is answered
// kafka.ErrConcurrentTransactions; its retry gets the epoch after that. An
// Ongoing transaction older than its transaction.timeout.ms is aborted the
// same way at a Tick. An id in Empty or a Complete state that has not
// changed for transactional.id.expiration.ms is removed with a tombstone
// (Dead, never written either).
//
// Once a Prepare record is durable the outcome is decided and never
// changes: EndTxn is answered, the markers are written, and the Complete
// record is appended only after every partition has its marker. A retried
// EndTxn gets kafka.ErrConcurrentTransactions until then, and the same
// outcome after.
//
// # Transaction version 2 (KIP-890)
//
// EndTxnRequest.TransactionVersion says which protocol the client speaks;
// Kafka's clients speak TV2 with EndTxn version 5 and up. Under TV2 the
// Prepare record bumps the epoch, so that a late EndTxn or produce of the
// finished transaction carries an old epoch and is fenced
// (kafka.ErrProducerFenced); the EndTxn answer carries the new epoch. Under
// TV0 the epoch stays, as in Kafka before 4.0. For KIP-890 part 1, a
// partition leader asks VerifyPartitions before it accepts a transactional
// write: is this producer, at this epoch, in a transaction that includes
// the partition? Under TV2 the client adds no partition itself: the
// partition's leader, and the group's coordinator for the offsets, send
// AddPartitions (AddPartitionsToTxn version 5) for it, which begins the
// transaction when none is open. An EndTxn with no transaction open
// follows Kafka's table (see Coordinator.EndTxn): an ABORT at the current
// epoch is an empty abort, which moves to the next epoch and writes no
// marker.
//
// # The caller's duties
//
// Whoever drives a Coordinator loops: feed it inputs, and whenever HasReady
// is true, take Ready and do all of it, in any order:
//
//  1. Append each Append's Records to its Partition of __transaction_state
//     as one batch, acks=all, and only while this node leads the partition
//     in the Append's CoordinatorEpoch (otherwise fail it with
//     kafka.ErrNotLeaderOrFollower). Appends to one partition go in the
//     order they were handed out. Report each with AppendDone: nil once
//     durable, or the error. Report an error only when the records will
//     never become durable; when unsure (a timeout), Unload the partition
//     and Load it again from its log, or a record the coordinator took
//     back could come back at the next load.
//  2. Send each MarkerWrite to the leaders of its partitions
//     (WriteTxnMarkers, partitions grouped by leader) and report each
//     partition with MarkersDone: nil once its marker is written,
//     ErrPartitionDeleted for a partition that no longer exists, the error
//     otherwise — kafka.ErrRequestTimedOut for a request that got no
//     answer. Failed partitions are sent again at the next Tick.
//  3. Send each Answer to the request it names.
//
// Besides:
//
//  4. Call Tick every 100 ms or so: it retries markers and Complete
//     records, aborts transactions that timed out and removes expired ids.
//  5. When this node becomes leader of a partition of __transaction_state,
//     read the partition from its log start to its end and Load it with
//     the leader epoch; answer requests for its ids with
//     kafka.ErrCoordinatorLoadInProgress meanwhile. Load resumes the
//     decided transactions it finds. When the node stops leading the
//     partition, Unload it. A request for an id whose partition is not
//     loaded is answered kafka.ErrNotCoordinator.
//  6. Give the coordinator producer ids (ProducerIDAllocator) without
//     blocking it.
//
// # Records
//
// A transactional id lives in partition PartitionFor(id, 50) of
// __transaction_state, a compacted topic. Each state change is one record,
// Kafka's TransactionLogKey and TransactionLogValue, so that Kafka's tools
// read them:
//
//	key, version 0 (classic)
//	+---------+----------------------------+
//	| version | transactional_id           |
//	| int16 0 | int16 length, UTF-8 bytes  |
//	+---------+----------------------------+
//
//	value, version 1 (flexible); version 0 is classic and has no tagged fields
//	+---------+-------------+----------------+-----------------+----------+
//	| version | producer_id | producer_epoch | timeout_ms      | status   |
//	| int16 1 | int64       | int16          | int32           | int8     |
//	+---------+-------------+----------------+-----------------+----------+
//	| partitions: compact nullable array of {topic compact string,        |
//	|             partition_ids compact [int32], tagged fields}           |
//	+---------------------------------+-----------------------------------+
//	| last_update_timestamp_ms int64  | start_timestamp_ms int64          |
//	+---------------------------------+-----------------------------------+
//	| tagged fields: a varint count, then each field's varint tag,        |
//	| varint size and bytes, by tag, those that hold their defaults left  |
//	| out: 0 previous_producer_id int64 (-1), 1 next_producer_id int64    |
//	| (-1), 2 client_transaction_version int16 (0), 3 next_producer_epoch |
//	| int16 (-1, Kafka 4.1)                                               |
//	+---------------------------------------------------------------------+
//
// status is the State's number; partitions are null in Empty and empty once
// the transaction completed. A compact length is a varint of n+1, 0 for
// null. A record with a null value (a tombstone) removes the id. The
// coordinator writes value version 1; Kafka 3.5 and later read it.
//
// # Where it differs from Kafka
//
// A fence (InitProducerId from a new instance, or the timeout) bumps the
// epoch once, where Kafka, under TV2, bumps it twice (and can overflow at
// the last epoch): the fenced epoch is never handed to a client, so one
// bump fences. A failed append leaves the state as it was, epoch included,
// so Kafka's hasFailedEpochFence is not needed. When a TV2 transaction's
// epoch runs out, EndTxn answers the producer id and epoch 0 the producer
// moves to, and requests with them get kafka.ErrConcurrentTransactions
// until the transaction completes. Timeouts are checked at every Tick, not
// every 10 s. A corrupt record fails the load instead of loading what came
// before it.
package txn
