// Package replica replicates a partition from its leader to its followers
// as Kafka does: followers pull batches with Fetch, the leader tracks each
// follower's log end offset and when it was last caught up, keeps the
// in-sync replicas (ISR), moves the high watermark to the smallest log end
// offset in the ISR, and answers acks=all appends once the high watermark
// passes them. A follower whose log parts from the leader's truncates by
// leader epoch (KIP-101, KIP-279), never to its own high watermark.
//
// # The state machine
//
// A Replica is one replica of one partition written as a deterministic
// state machine, after etcd raft's RawNode. Inputs:
//
//   - Step(Message): a fetch, a fetch answer, or an OffsetsForLeaderEpoch
//     request from another replica of the partition;
//   - Tick(): one TickInterval passed (the lag limit, fetch waits and
//     timeouts are counted in ticks);
//   - Propose(batch, acks): an append, on the leader;
//   - Apply(LeaderAndISR): the controller's command — lead or follow in a
//     new leader epoch, or take a new ISR;
//   - RejectISRChange(ISRChange): the controller refused a proposed ISR
//     change.
//
// A Replica starts no goroutine, reads no clock and writes nothing, so every
// scenario — a lost fetch answer, a crash between two writes, a follower
// paused for 31 seconds — is a test with no sleeps. It reads its log
// through Storage, which *log.Log satisfies.
//
// # The driver's duties
//
// Whoever drives a Replica loops: feed it inputs, and whenever HasReady is
// true, take Ready and do, in this order:
//
//  1. Write the log: Truncate first, then Append with AppendAsFollower
//     (offsets and leader epochs are already in the batches), then, when
//     MustSync is set, sync. Ready.Persist does this on a LogWriter. A
//     follower's next fetch reports this log end offset to the leader as
//     what it holds, and a leader counts its own toward the high
//     watermark; skipping the sync makes acks=all mean "in the page cache
//     of every ISR member", as in Kafka with its default flush settings.
//  2. Send Messages, to the nodes named by Message.To. The transport may
//     lose, delay, duplicate or reorder them: replicas match answers to
//     requests by Seq and re-send on FetchTimeout. Between processes,
//     AppendMessages encodes a batch of them and DecodeMessages decodes
//     it, leaving records in the received buffer.
//  3. Publish HighWatermark when it is not -1: readers may read below it.
//     Checkpoint it now and then (replication-offset-checkpoint) and pass
//     it back as Options.HighWatermark on restart.
//  4. Send AlterPartition, when set, to the controller. The controller
//     commits it by Apply-ing the partition's new state (a new partition
//     epoch) to the leader and its followers, or refuses it: the driver
//     then calls RejectISRChange with it. It must refuse a change made in
//     another leader or partition epoch, and one that adds a replica whose
//     broker epoch is no longer the one ISRChange.BrokerEpochs names
//     (KIP-903). One ISR change is in flight at a time; one left unanswered
//     for FetchTimeout is sent again.
//  5. Answer the producers of Completed appends.
//  6. Call Advance.
//
// Node is such a driver: it runs the loop on a goroutine with a ticker,
// sends through a Transport, and lets callers wait for their appends
// (Propose with a context). partlog's Node runs one per partition replica
// it hosts, over a Transport that sends everything queued for a node as one
// request, as Kafka's fetcher threads fetch all of a leader's partitions
// at once (Message, AppendMessages); a host may instead write its own loop
// over many Replicas.
//
// Apply the controller's LeaderAndISR to every replica of the partition,
// leader first or not: a replica answers requests from other epochs with
// kafka.ErrFencedLeaderEpoch or ErrUnknownLeaderEpoch, and followers
// retry. Give each start of a node a new Options.BrokerEpoch: answers to
// fetches sent before a restart may still arrive after it.
//
// # Leaders and followers
//
// A leader stamps its epoch on each batch it appends. It answers a fetch
// whose last fetched epoch and offset part from its own epoch history with
// a diverging epoch {epoch, end offset} and no records; the follower
// truncates to the smaller of that end offset and its own end for the epoch
// and fetches again, until the logs agree. A fetch that finds nothing new
// waits on the leader (FetchWaitMax) until there is a batch or a new high
// watermark to send.
//
// A follower leaves the ISR when it has not been caught up to the leader's
// log end offset for ReplicaLagTimeMax — time since last caught up, not how
// far behind it is — and rejoins once it reaches the high watermark and the
// start of the leader's epoch. Both changes are proposed in
// Ready.AlterPartition for a controller to commit. Until it does, the high
// watermark waits for the larger of the two ISRs. While the committed ISR is
// below MinInsyncReplicas the high watermark stands still and acks=all
// appends fail with kafka.ErrNotEnoughReplicas.
//
// # The controller
//
// The LeaderAndISR a replica Applies, and the answer to its AlterPartition,
// come from the cluster's controller, which package controller holds: its
// state machine (controller.Machine), the service that runs it, and the
// client nodes call it with.
package replica
