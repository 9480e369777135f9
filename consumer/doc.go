// Package consumer reads records from partlog topics as Kafka's consumer
// does: it pulls record batches from the partitions' leaders with Fetch
// requests, through a transport.Client — a *partlog.Node in the same
// process, or a network client — and hands out their records in offset
// order, partition by partition.
//
//	c, err := consumer.New(node.Client(), consumer.Topics("study"), consumer.AutoOffsetReset(consumer.Earliest))
//	if err != nil { ... }
//	defer c.Close()
//	for rec, err := range c.Records(ctx) {
//		if err != nil { ... }
//		fmt.Printf("%s-%d@%d: %s\n", rec.Topic, rec.Partition, rec.Offset, rec.Value)
//	}
//
// # What to consume
//
// A consumer subscribes to topics (Topics: every partition of each,
// found from the cluster's metadata and looked for again every
// MetadataMaxAge, so that added partitions are consumed too), or is
// assigned partitions (Partitions, PartitionsAt). With Group, a subscribing
// consumer shares the topics' partitions with the other members of its
// consumer group instead (see Consumer groups below).
//
// # Positions
//
// Each assigned partition has a position: the offset of the next record
// Poll returns for it. A partition starts without one, unless PartitionsAt
// gives it, and looks one up with ListOffsets as AutoOffsetReset says:
// Latest (the default, as in Kafka) at the high watermark, Earliest at the
// log start offset, None not at all — Poll then reports ErrNoOffset and
// the partition waits for a Seek. A position that falls out of the
// partition, because retention deleted the records there or the log was
// truncated, is reset the same way, or with None reported as
// kafka.ErrOffsetOutOfRange.
//
// Seek, SeekToBeginning, SeekToEnd and SeekToTimestamp move positions;
// Position reads one. Poll moves a partition's position past the records
// it returns, and past the transaction markers that follow them, which are
// never returned.
//
// # Polling
//
// Poll returns the records ready, at most MaxPollRecords, or waits up to
// its timeout for some: records come as soon as a fetch brings them,
// since the node holds a fetch (up to FetchMaxWait) until records arrive
// rather than being asked again and again. Records is the same as an
// iterator, for a range loop.
//
// A goroutine of the consumer fetches ahead — one fetch in flight, while
// less than FetchMaxBytes of fetched batches wait to be read — so that the
// next fetch is on its way while the caller works through the records
// before it. It only fetches: the batches wait as fetched, and Poll or the
// loop decodes them, outside the consumer's lock, so that the buffer holds
// raw bytes and the fetcher is never held up. Close stops the goroutine
// and waits for it.
//
// By default nothing a caller gets is ever reused. Keys, values and
// header values point into the fetched bytes; each fetch gets bytes of its
// own. FetchBuffers(ReuseBuffers) trades that for speed: fetches reuse
// the memory of records already handed out, which are then valid only
// until the next Poll or the next turn of the Records loop. Poll
// returns a Fetches: per partition, a slice of records decoded for that
// Poll, which it never touches again. Records yields records by value,
// decoding each batch into a buffer of its own and copying each record
// out, so that it allocates nothing per record: it is the fastest way
// through a partition, and Poll's Fetches.EachRecord the next.
//
// # Guarantees
//
//   - The records of a partition come in offset order, each once, from the
//     position on, with no gap other than the log's own (compacted
//     records, transaction markers), until the position is moved.
//   - No record at or above the high watermark is returned: only records
//     that the partition's in-sync replicas all have (and, on a node that
//     syncs before acknowledging, that are on disk).
//   - A batch whose CRC or structure is wrong is never returned; the
//     records before it are, then Poll reports record.ErrCorrupt at its
//     offset, and the partition stops there.
//   - Retriable errors (a leader moving, a topic whose metadata is
//     catching up) are retried with backoff and reported only once they
//     last RetryTimeout.
//
// # Consumer groups
//
// Group("lzl") with Topics makes the consumer a member of group lzl, as
// Kafka's subscribe with a group.id: the members share the partitions, each
// partition read by one member at a time. The group's coordinator (the
// node leading the group's partition of __consumer_offsets; see package
// group) runs membership with Kafka's classic protocol: JoinGroup,
// SyncGroup, heartbeats every HeartbeatInterval, removal after
// SessionTimeout without one. The group's leader assigns partitions with
// the first Assignor every member supports — Range, RoundRobin,
// CooperativeSticky or the user's own — encoded in Kafka's consumer
// protocol.
//
// A rebalance runs inside Poll (or the Records loop), as in Kafka's poll:
// the heartbeat goroutine only notices that one is due and wakes Poll,
// which gives partitions up — calling OnPartitionsRevoked first, the place
// to Commit — rejoins, and takes its new partitions, each at the group's
// committed offset (or as AutoOffsetReset says when there is none), then
// calls OnPartitionsAssigned. With Eager assignors (Range, RoundRobin) a
// member gives up everything before it rejoins; with CooperativeSticky it
// keeps its partitions and gives up only those that move, which a second
// rebalance hands over (KIP-429). A member that does not Poll for
// MaxPollInterval leaves the group, and its partitions are lost
// (OnPartitionsLost): its commits are refused with ErrCommitFailed.
//
// Commits go through an OffsetStore — by default the coordinator, which
// fences them by generation — synchronously (Commit, CommitOffsets),
// asynchronously (CommitAsync) or automatically (every
// AutoCommitInterval, at the start of a Poll, before a revocation and on
// Close; DisableAutoCommit turns it off). Committed reads committed
// offsets, Lag the records left per partition. Close commits (with
// auto-commit), revokes and leaves the group at once, so the others take
// its partitions over without waiting for its session to time out.
//
// GroupProtocol(ConsumerProtocol) speaks Kafka 4's consumer group protocol
// (KIP-848) instead: the coordinator assigns with a server assignor
// ("uniform" by default, GroupRemoteAssignor to choose), and the consumer
// only heartbeats (ConsumerGroupHeartbeat) at the interval the coordinator
// sets. A new assignment arrives in a heartbeat's answer and is
// reconciled inside Poll as above — revoked partitions given up first,
// then the new ones taken — and the next heartbeat tells the coordinator,
// which only then gives the revoked partitions to other members. There is
// no group-wide rebalance: members that keep their partitions never stop
// reading. Commits carry the member epoch where the classic protocol's
// carry the generation.
//
// With commit on revoke and commits of what was processed, every record is
// processed exactly once across polite rebalances (joins, leaves); a crash
// redelivers what was processed after the last commit, never skips a
// record.
//
// With Isolation(ReadCommitted) the consumer reads only what transactions
// committed: its fetches stop at the last stable offset, and the records
// of aborted transactions, which each fetch answer names
// (AbortedTransactions), are skipped. Read_uncommitted (the default) reads
// every record below the high watermark, aborted transactions included.
// Either way the markers (control batches) are never returned, and a
// position moves past them.
//
// # Share groups
//
// NewShare makes a ShareConsumer: a member of a share group (KIP-932,
// Kafka's KafkaShareConsumer), named by ShareGroup, subscribed to Topics.
// The members of a share group read the same partitions at once and share
// their records one by one, as a queue's consumers do: the partition's
// leader acquires each record for one member at a time, for a while (its
// acquisition lock), and the member acknowledges it — accepted (done),
// released (to be delivered again, to it or another, its DeliveryCount
// one higher) or rejected (never delivered again). A record not
// acknowledged before its lock expires goes back to the group.
//
// A goroutine heartbeats (ShareGroupHeartbeat) at the interval the
// coordinator sets; the assignment in its answers names topics by id,
// which the consumer names from metadata. Poll fetches with ShareFetch in
// a share session on a node (epoch 0 opens it, each request moves the
// epoch on; new partitions are added and unassigned ones forgotten), and
// returns the records acquired, at most MaxPollRecords, with their
// delivery counts. Acknowledgement is implicit, with explicit overrides:
// the next Poll accepts every record the last one returned unless
// Acknowledge said otherwise, and sends the acknowledgements with its
// ShareFetch; Commit sends them at once (ShareAcknowledge) and waits, as
// commitSync; Close sends the last ones, releases records fetched and
// not returned, closes the session and leaves the group.
// OnShareAcknowledged hears how acknowledgements fared. Offsets acquired
// that hold no record (compaction) are acknowledged as gaps, and records
// outside the acquired ranges are never returned. A share session the
// node lost is replaced by a new one; the records acquired in the old one
// come back after their locks expire.
//
// On a cluster (a transport.ClusterClient, which is a
// transport.NodeRouter) the heartbeats go to the group's coordinator, and
// the consumer keeps a share session with each node that leads one of
// its partitions, as Kafka's share consumer does: Poll fetches from all
// of them at once and returns as soon as one brings records (the other
// fetches stay in flight, for a later Poll); each record is acknowledged
// to the node that delivered it; a partition a node no longer leads is
// looked up again and moves to its new leader's session. Any other client
// is one node — a TCPClient's node, or a node in the same process — the
// coordinator and the leader of every partition.
package consumer
