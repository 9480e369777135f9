// Package group is Kafka's group coordinator, the server side of consumer
// groups (package consumer is the client side). A node runs one
// Coordinator for the partitions of the internal topic __consumer_offsets
// it leads; a group lives in partition PartitionFor(group, n), n being
// offsets.topic.num.partitions (50 by default), so that its coordinator is
// the leader of that partition, as in Kafka.
//
// # Membership
//
// The coordinator speaks Kafka's classic protocol. A member joins
// (JoinGroup) and the group prepares a rebalance: the coordinator waits
// until every known member has rejoined, or the rebalance timeout has
// passed, then starts a new generation, picks a protocol every member
// supports and a leader, and answers every JoinGroup — the leader's with
// the members and their subscriptions. The leader assigns partitions (in
// the consumer: the assignors run there) and sends the assignments with
// its SyncGroup; every member's SyncGroup is answered with its own, and the
// group is Stable. Members heartbeat; one that stops for its session
// timeout is removed, and so is one that leaves (LeaveGroup), and the
// group rebalances. A heartbeat answered with REBALANCE_IN_PROGRESS tells a
// member to rejoin. The states are those of Kafka's GroupMetadata (see
// State).
//
// # Share groups
//
// The coordinator also runs share groups (KIP-932, ShareHeartbeat and
// ShareDescribe), whose members share the records of their partitions:
// a member joins with an id of its own (epoch 0), heartbeats with only
// what changed and leaves (-1). The simple assignor spreads the
// partitions of the subscribed topics over the members, each member as
// many as the others give or take one, a partition to several members
// when the members outnumber the partitions; there is nothing to revoke,
// so a member gets its target assignment at once. The group is Empty or
// Stable. Only partitions whose share-group state is initialized are
// assigned: a heartbeat's answer lists those to initialize, and the
// broker confirms them with ShareStateInitialized. A share group's
// records (key versions 10 to 15) are Kafka 4.1's. Group ids are one
// namespace: a share request for a classic or consumer group, or the
// reverse, is refused as Kafka refuses it.
//
// # Offsets
//
// A member commits offsets in its generation: a commit from another
// generation is refused with ILLEGAL_GENERATION, one from an unknown member
// with UNKNOWN_MEMBER_ID, one while the group waits for the leader's
// assignment with REBALANCE_IN_PROGRESS — so a member that lost its
// partitions in a rebalance cannot overwrite the offsets of their new
// owner. A member may commit while the group prepares a rebalance, which
// is when a consumer commits what it has processed before it gives
// partitions up. A client outside membership commits with generation -1,
// which only a group without members accepts (Kafka's simple consumer, and
// the offset reset tools).
//
// # Storage
//
// Every change is written to the group's partition of __consumer_offsets
// before it is answered: an offset commit as an offset record, and the
// group's generation, leader, members and assignments, when a rebalance
// completes, as a group metadata record. Keys and values are versioned as
// Kafka's (see records.go): a Kafka user's tools could read them, and the
// format can evolve. The topic is compacted: the latest record of each key
// is the state. Load replays a partition to rebuild the groups after a
// restart or when a node takes the partition over.
//
// # Time
//
// The coordinator has no goroutine and reads time only from Options.Now.
// Sessions and rebalance timeouts expire when its driver calls Tick, so a
// test moves a fake clock and ticks, and needs no sleeps.
package group
