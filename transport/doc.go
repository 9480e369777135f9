// Package transport holds the requests and responses that producers,
// consumers and nodes exchange — Kafka's Produce, Fetch, ListOffsets and
// Metadata, with Kafka's error codes — and the Client interface through
// which clients send them. Consumer groups use the optional GroupClient
// interface (JoinGroup, SyncGroup, Heartbeat, LeaveGroup, OffsetCommit,
// OffsetFetch, DescribeGroups, ListGroups, DeleteGroups, FindCoordinator), found by a type
// assertion on a Client; transactions the optional TxnClient
// (InitProducerId and FindCoordinator with a transactional id,
// AddPartitionsToTxn, AddOffsetsToTxn, EndTxn, TxnOffsetCommit,
// WriteTxnMarkers, DescribeTransactions, ListTransactions).
//
// A Node in the same process implements Client directly: a request is a Go
// value handed over and answered with no encoding. Between processes the
// same values travel over TCP in Kafka's own wire protocol (encoded by
// franz-go's kmsg): a Server answers on a listener with a Node, and a
// TCPClient from Dial is a Client for a producer or consumer in another
// process. Because the protocol is Kafka's, a Kafka client (franz-go, the
// Java client) can produce to and fetch from a partlog node too, in the
// API versions that carry RecordBatch v2: ApiVersions, Metadata, Produce,
// Fetch and ListOffsets; and use its consumer groups (FindCoordinator,
// JoinGroup, SyncGroup, Heartbeat, LeaveGroup, OffsetCommit, OffsetFetch,
// DescribeGroups, ListGroups, DeleteGroups), its producer ids
// (InitProducerId, for idempotent producers), its transactions (the
// TxnClient APIs, with transactional Produce and read_committed Fetch) and
// its admin APIs (CreateTopics, DeleteTopics, DescribeConfigs). A server
// advertises an optional API in ApiVersions only when its handler
// implements the interface.
//
// Nodes also call each other under two API keys of partlog's own, outside
// Kafka's key space: APIReplicaMessages and APIController, whose bodies
// other packages encode and this one carries as opaque bytes
// (InternalHandler, TCPClient.CallInternal). Kafka has no APIs that fit:
// its KRaft brokers learn metadata by replicating the controller's
// metadata log, which partlog's controller does not keep, and replica
// messages are one-way and batched per destination, unlike any Kafka
// request.
//
// Errors come in two kinds. A method's error return says the request got no
// answer at all (the node is closed, the connection failed, the context
// ended). An answer's per-partition Err says what happened to that
// partition; it matches one of this package's Kafka errors (ErrNotLeader,
// kafka.ErrUnknownTopicOrPartition, ...) with errors.Is, and kafka.IsRetriable says
// whether sending again may succeed.
package transport
