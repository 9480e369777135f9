// Package controller is a cluster's controller, as a KRaft controller is:
// it owns the cluster metadata — the registered nodes and their liveness,
// the topics and the assignment of their partitions, each partition's
// leader, ISR and epochs — and tells nodes what to host. It has four
// parts: a deterministic state machine, a member of the Raft quorum that
// replicates it, the service that runs one, and the typed clients nodes
// call it with.
//
// # The machine
//
// Machine is the state machine, written as a replica.Replica is: it starts
// no goroutine, reads no clock and does no I/O but through its Store, so
// that every scenario is a test without sleeps. Nodes call RegisterNode
// (getting the broker epoch their replicas run in) and Heartbeat; Tick
// fences a node whose heartbeats stopped for SessionTimeout, moving the
// leadership of its partitions to the next live ISR member (ElectLeader)
// in a new leader epoch and taking it out of ISRs (never emptying one);
// ShutdownNode does the same at once for a controlled shutdown;
// AlterPartition commits or refuses a leader's replica.Ready.AlterPartition;
// leadership goes back to preferred replicas on the imbalance check, or to
// a chosen ISR member with ElectReplica. ReassignPartition moves a
// partition's replicas to other nodes (KIP-455), and UnregisterNode
// removes a node. Updates lists the
// replica.LeaderAndISR each node must Apply. State holds each topic's
// TopicConfig.ID and Configs, for every node to open the topic's
// partitions with the same settings.
//
// Every change is a Record appended to the Store before it is applied, and
// NewMachine replays the store: a restarted machine resumes the same
// state. MemStore keeps the records in memory, for tests; LogStore keeps
// them in a log.Log, as a single controller did before the quorum. In a
// controller the records go through the quorum's Raft log instead.
//
// # The records
//
// Each record is encoded by AppendRecord, big endian:
//
//	+---------+------+----------------------------------------------+
//	| version | type | fields of the type                           |
//	| u8 = 2  | u8   |                                              |
//	+---------+------+----------------------------------------------+
//
//	1 RegisterNode:  node i32 | broker epoch i64 | address (version 2)
//	2 FenceNode, 3 UnfenceNode:  node i32 | broker epoch i64
//	4 Topic:        topic | partitions i32 | unclean u8 | id | configs
//	5 Partition:    topic | partition i32 | leader i32 | leader epoch i32 |
//	                partition epoch i32 | replicas | isr
//	6 RemoveTopic:  topic
//	7 TopicConfig:  topic | unclean u8 | configs
//	8 NodeAddress:  node i32 | broker epoch i64 | address
//	9 ProducerIDs:  node i32 | next producer id i64
//
//	topic, id, address:  len u16 | bytes
//	replicas, isr:       count u16 | count × node i32
//	configs:             count u16 | count × (key | value), keys ascending
//
// A Partition record holds the partition's whole state, not a delta. A
// decoder refuses a version above RecordVersion; version 0 Topic records
// have no id and no configs, and RegisterNode records before version 2 no
// address.
//
// # The quorum
//
// Member is one controller of a Raft quorum (go.etcd.io/raft/v3), as a
// KRaft controller is. The Raft log is the metadata log, kept by package
// raftlog in the member's __cluster_metadata-0 partition (Topic) as record
// batches stamped with their terms, with quorum-state and
// %020d-%010d.checkpoint snapshots beside it. Each entry is one commit of
// the Machine: a proposal sequence number (u64) and its records, each
// prefixed with its length (u32). Every member applies committed entries,
// and only those, to a Machine that follows the log: the metadata nodes
// see, whose version is the index of the last entry applied. The Raft
// leader becomes the active controller once it has applied an entry of
// its own term; it changes the metadata through a copy of that machine
// (Member.Do), and a change is acknowledged once the quorum commits it. A
// new active controller gives live nodes FailoverSessionTimeout to
// heartbeat to it, not a whole session. Like the Machine, a Member is
// deterministic: tests run three of them on a simulated network.
// QuorumNode runs a Member on goroutines, with a RaftTransport to the
// other members.
//
// # The service
//
// Controller is a QuorumNode as a service: Open (or Start, over a node's
// log directory, for the controller of a node on its own) reads the
// metadata log and joins the quorum of Options.Voters — by default a
// quorum of itself alone, active as soon as it starts — and answers nodes'
// calls through API, in process (a *Controller is an API) or over TCP
// (Serve), while it is the active controller: every change is answered
// once the quorum committed it, with the metadata version that holds it.
// Blocks of producer ids are records too. A metadata log written by a
// single controller before the quorum (a LogStore's) becomes a Raft log
// of a quorum of one when it opens, starting at a version above every one
// that controller handed out (it counted its starts in EpochFileName).
//
// # The clients
//
// Client, from Dial or NewClient, is the API over TCP: the calls travel as
// JSON under transport.APIController, and a long-polling heartbeat has a
// connection of its own. Given every voter's address, it calls the active
// controller, moving on when one answers kafka.ErrNotController, cannot be
// reached, or does not answer within ClientOptions.AttemptTimeout, and
// waits out an election. Local is the same over controllers in this
// process.
//
// # The Raft transports
//
// TCPRaft carries the quorum's Raft messages over TCP under
// transport.APIControllerRaft, to the voters' addresses (the default, when
// Options.Voters has them); MemRaft carries them in memory, for a quorum
// in one process.
package controller
