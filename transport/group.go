package transport

import (
	"context"
	"time"
)

// GroupClient is what a consumer group needs of a cluster: Kafka's group
// requests, answered by the group's coordinator. It is an optional
// interface: find it with a type assertion on a Client,
//
//	gc, ok := client.(transport.GroupClient)
//
// A *partlog.Node implements it for the groups it coordinates. As with
// Client, a method's error says the request got no answer; the answer's Err
// says what the coordinator made of it.
type GroupClient interface {
	FindCoordinator(ctx context.Context, req *FindCoordinatorRequest) (*FindCoordinatorResponse, error)
	JoinGroup(ctx context.Context, req *JoinGroupRequest) (*JoinGroupResponse, error)
	SyncGroup(ctx context.Context, req *SyncGroupRequest) (*SyncGroupResponse, error)
	Heartbeat(ctx context.Context, req *HeartbeatRequest) (*HeartbeatResponse, error)
	LeaveGroup(ctx context.Context, req *LeaveGroupRequest) (*LeaveGroupResponse, error)
	OffsetCommit(ctx context.Context, req *OffsetCommitRequest) (*OffsetCommitResponse, error)
	OffsetFetch(ctx context.Context, req *OffsetFetchRequest) (*OffsetFetchResponse, error)
	DescribeGroups(ctx context.Context, req *DescribeGroupsRequest) (*DescribeGroupsResponse, error)
	ListGroups(ctx context.Context, req *ListGroupsRequest) (*ListGroupsResponse, error)
	DeleteGroups(ctx context.Context, req *DeleteGroupsRequest) (*DeleteGroupsResponse, error)
}

// CoordinatorType says what a FindCoordinator key names.
type CoordinatorType int8

// The coordinator types.
const (
	// CoordinatorGroup: the key is a consumer group id.
	CoordinatorGroup CoordinatorType = 0
	// CoordinatorTransaction: the key is a transactional id.
	CoordinatorTransaction CoordinatorType = 1
	// CoordinatorShare: the key is a share partition,
	// "group:topicId:partition" (sharecoord.CoordinatorKey), coordinated
	// by the leader of its partition of __share_group_state (KIP-932). A
	// node answers it from FindCoordinator version 6, and an older
	// version INVALID_REQUEST, as Kafka does.
	CoordinatorShare CoordinatorType = 2
)

// FindCoordinatorRequest asks which node coordinates a group or a
// transactional id (Kafka's FindCoordinator).
type FindCoordinatorRequest struct {
	// Key is the key looked up (Kafka's key): a group id, or a
	// transactional id.
	Key string
	// KeyType is key_type: what Key names; the zero value,
	// CoordinatorGroup, is a group id. A node that coordinates no
	// transactions (it is not a TxnClient) answers CoordinatorTransaction
	// with an error.
	KeyType CoordinatorType
}

// FindCoordinatorResponse names the coordinator.
type FindCoordinatorResponse struct {
	// Err is nil, or why no coordinator is named
	// (kafka.ErrCoordinatorNotAvailable while __consumer_offsets has no
	// leader for the group's partition, ...).
	Err error
	// NodeID is the coordinator's node id: the leader of the group's
	// partition of __consumer_offsets, or of the transactional id's of
	// __transaction_state; -1 with Err.
	NodeID int32
	// Host is the coordinator's host name or IP address; "" with Err. A
	// Server fills Host and Port in for a handler that leaves them empty.
	Host string
	// Port is the coordinator's TCP port; -1 with Err.
	Port int32
}

// NoGeneration is the generation id of a member that has joined no
// generation, or of a commit made outside group membership (Kafka's -1).
const NoGeneration int32 = -1

// JoinGroupProtocol is one assignment protocol a member supports — for a
// consumer, an assignor — with the member's subscription encoded for it.
type JoinGroupProtocol struct {
	// Name is the protocol's name; for a consumer, the assignor's
	// ("range", "roundrobin", "cooperative-sticky", ...).
	Name string
	// Metadata is what the member tells the group's leader for this
	// protocol; for a consumer, its subscription (Kafka's
	// ConsumerProtocolSubscription: topics, owned partitions, rack). The
	// coordinator does not read it.
	Metadata []byte
}

// JoinGroupRequest asks to join a group, or to rejoin it for a rebalance
// (Kafka's JoinGroup). The answer waits until every known member has
// rejoined, or the rebalance timeout has passed.
type JoinGroupRequest struct {
	// Group is the group id (the consumer's group.id).
	Group string
	// SessionTimeout is how long the coordinator keeps the member without
	// a heartbeat (session.timeout.ms).
	SessionTimeout time.Duration
	// RebalanceTimeout is how long the coordinator waits for members to
	// rejoin in a rebalance (the consumer's max.poll.interval.ms).
	RebalanceTimeout time.Duration
	// MemberID is empty on the first join; the coordinator gives one.
	MemberID string
	// GroupInstanceID is set for a static member (group.instance.id),
	// else empty.
	GroupInstanceID string
	// ProtocolType is "consumer" for consumer groups.
	ProtocolType string
	// Protocols are the member's protocols, most preferred first.
	Protocols []JoinGroupProtocol
	// ClientID and ClientHost describe the member for DescribeGroups.
	// They are not JoinGroup fields: over TCP, a Server sets them from the
	// request header and the connection, as Kafka does.
	//
	// ClientID is the member's client.id.
	ClientID string
	// ClientHost is the IP address the member connects from.
	ClientHost string
	// Reason says why the member (re)joins, for the coordinator's log.
	Reason string
}

// JoinGroupMember is a member as the leader sees it in a JoinGroupResponse:
// its id and its metadata for the chosen protocol.
type JoinGroupMember struct {
	// MemberID is the member's id.
	MemberID string
	// GroupInstanceID is the member's group.instance.id, or empty.
	GroupInstanceID string
	// Metadata is the member's JoinGroupProtocol.Metadata for the chosen
	// protocol: for a consumer, its subscription.
	Metadata []byte
}

// JoinGroupResponse says which generation the member joined, who leads it
// and, for the leader only, the members to assign partitions to.
type JoinGroupResponse struct {
	// Err is nil when the member joined, else why not
	// (kafka.ErrUnknownMemberID, ErrInconsistentGroupProtocol,
	// ErrInvalidSessionTimeout, ErrRebalanceInProgress, ...).
	Err error
	// GenerationID is the generation the member joined: raised by one at
	// every rebalance, it fences members of earlier ones. NoGeneration
	// with Err.
	GenerationID int32
	// ProtocolType is the group's protocol type: "consumer" for consumer
	// groups.
	ProtocolType string
	// ProtocolName is the protocol chosen: one every member supports.
	ProtocolName string
	// Leader is the leader's member id: the member that assigns the
	// partitions. The member is the leader when Leader is its MemberID.
	Leader string
	// MemberID is the member's own id, given by the coordinator on the
	// first join; the member sends it with every later request.
	MemberID string
	// Members is empty unless this member is the leader.
	Members []JoinGroupMember
}

// SyncGroupAssignment is the leader's assignment for one member.
type SyncGroupAssignment struct {
	// MemberID is the member assigned to.
	MemberID string
	// Assignment is the member's assignment, as the protocol encodes it;
	// for a consumer, Kafka's ConsumerProtocolAssignment (its topics and
	// partitions). The coordinator does not read it.
	Assignment []byte
}

// SyncGroupRequest finishes a rebalance (Kafka's SyncGroup): the leader
// sends every member's assignment, the others send none, and each gets its
// own back.
type SyncGroupRequest struct {
	// Group is the group id (the consumer's group.id).
	Group string
	// GenerationID is the generation the member joined, from its
	// JoinGroupResponse.
	GenerationID int32
	// MemberID is the id the coordinator gave the member.
	MemberID string
	// GroupInstanceID is a static member's group.instance.id (KIP-345),
	// else empty.
	GroupInstanceID string
	// ProtocolType is the group's protocol type from the
	// JoinGroupResponse. When it or ProtocolName is set and differs from
	// the group's, the coordinator answers
	// kafka.ErrInconsistentGroupProtocol; empty skips the check.
	ProtocolType string
	// ProtocolName is the protocol chosen, from the JoinGroupResponse,
	// or empty.
	ProtocolName string
	// Assignments is the leader's; nil for the other members.
	Assignments []SyncGroupAssignment
}

// SyncGroupResponse carries the member's assignment.
type SyncGroupResponse struct {
	// Err is nil, or why the member has no assignment
	// (kafka.ErrRebalanceInProgress: rejoin; ErrIllegalGeneration,
	// ErrUnknownMemberID, ...).
	Err error
	// ProtocolType is the group's protocol type ("consumer").
	ProtocolType string
	// ProtocolName is the group's chosen protocol (for consumers, the
	// assignor).
	ProtocolName string
	// Assignment is the member's assignment from the leader; nil when it
	// got none.
	Assignment []byte
}

// HeartbeatRequest keeps a member's session alive (Kafka's Heartbeat).
// kafka.ErrRebalanceInProgress in the answer tells it to rejoin.
type HeartbeatRequest struct {
	// Group is the group id (the consumer's group.id).
	Group string
	// GenerationID is the generation the member joined, from its
	// JoinGroupResponse.
	GenerationID int32
	// MemberID is the id the coordinator gave the member.
	MemberID string
	// GroupInstanceID is a static member's group.instance.id (KIP-345),
	// else empty.
	GroupInstanceID string
}

// HeartbeatResponse answers a heartbeat.
type HeartbeatResponse struct {
	// Err is nil while the member's generation is current, else
	// kafka.ErrRebalanceInProgress (rejoin), ErrIllegalGeneration,
	// ErrUnknownMemberID, ErrFencedInstanceID, ...
	Err error
}

// LeaveGroupMember names a member that leaves.
type LeaveGroupMember struct {
	// MemberID is the member's id; a static member may leave by its
	// GroupInstanceID alone, with MemberID empty.
	MemberID string
	// GroupInstanceID is the member's group.instance.id, or empty.
	GroupInstanceID string
	// Reason says why the member leaves, for the coordinator's log
	// (KIP-800); empty for none.
	Reason string
}

// LeaveGroupRequest takes members out of a group at once, rather than at
// their session timeout (Kafka's LeaveGroup).
type LeaveGroupRequest struct {
	// Group is the group id (the consumer's group.id).
	Group string
	// Members are the members that leave. Before LeaveGroup v3 the wire
	// carries one, by member id only.
	Members []LeaveGroupMember
}

// LeaveGroupMemberResponse says whether one member left.
type LeaveGroupMemberResponse struct {
	// MemberID is the member's id, as asked.
	MemberID string
	// GroupInstanceID is the member's group.instance.id, as asked.
	GroupInstanceID string
	// Err is nil when the member left, else kafka.ErrUnknownMemberID or
	// ErrFencedInstanceID.
	Err error
}

// LeaveGroupResponse answers a LeaveGroupRequest; Err is set when the
// request as a whole failed.
type LeaveGroupResponse struct {
	// Err is the request's error, as opposed to a member's.
	Err error
	// Members answers each member, in the request's order.
	Members []LeaveGroupMemberResponse
}

// OffsetCommitRequest commits offsets for a group (Kafka's OffsetCommit).
// A member of the group sends its generation and member id, and a commit
// from an older generation is rejected (kafka.ErrIllegalGeneration); a client
// outside group membership sends NoGeneration and no member id, which only
// a group without members accepts.
type OffsetCommitRequest struct {
	// Group is the group id (the consumer's group.id).
	Group string
	// GenerationID is the member's generation, or NoGeneration from a
	// client outside group membership.
	GenerationID int32
	// MemberID is the member's id, or empty outside group membership.
	MemberID string
	// GroupInstanceID is a static member's group.instance.id (KIP-345),
	// else empty.
	GroupInstanceID string
	// Topics holds the offsets to commit, topic by topic.
	Topics []OffsetCommitTopic
}

// OffsetCommitTopic is the part of an OffsetCommitRequest for one topic.
type OffsetCommitTopic struct {
	// Topic is the topic's name.
	Topic string
	// Partitions holds the topic's offsets to commit.
	Partitions []OffsetCommitPartition
}

// OffsetCommitPartition is one partition's committed offset: the offset of
// the next record to consume.
type OffsetCommitPartition struct {
	// Partition is the partition's index in the topic.
	Partition int32
	// Offset is committed_offset: the offset of the next record to
	// consume, one past the last one processed.
	Offset int64
	// LeaderEpoch is the epoch of the last record consumed, or -1.
	LeaderEpoch int32
	// Metadata is committed_metadata: a string of the client's own kept
	// with the offset, at most offset.metadata.max.bytes (4096) long.
	Metadata string
}

// OffsetCommitResponse answers a commit, partition by partition.
type OffsetCommitResponse struct {
	// Topics answers the request's topics, in the request's order.
	Topics []OffsetCommitTopicResponse
}

// OffsetCommitTopicResponse is the part of an OffsetCommitResponse for one
// topic.
type OffsetCommitTopicResponse struct {
	// Topic is the topic's name, as asked.
	Topic string
	// Partitions answers the topic's partitions, in the request's order.
	Partitions []OffsetCommitPartitionResponse
}

// OffsetCommitPartitionResponse says whether one partition's offset was
// committed.
type OffsetCommitPartitionResponse struct {
	// Partition is the partition's index, as asked.
	Partition int32
	// Err is nil when the offset was committed, else why not
	// (kafka.ErrIllegalGeneration, ErrUnknownMemberID,
	// ErrRebalanceInProgress, ErrOffsetMetadataTooLarge, ...).
	Err error
}

// OffsetFetchRequest asks for a group's committed offsets (Kafka's
// OffsetFetch). Nil Topics asks for every partition the group has an
// offset for.
type OffsetFetchRequest struct {
	// Group is the group id (the consumer's group.id).
	Group string
	// Topics names the partitions asked for; nil means every partition
	// the group has an offset for.
	Topics []OffsetFetchTopic
	// RequireStable is require_stable (KIP-447, version 7 and up): a
	// partition with offsets pending in an open transaction
	// (TxnOffsetCommit) is answered kafka.ErrUnstableOffsetCommit, which
	// the consumer retries, rather than with the offset committed before.
	// Kafka's consumers set it.
	RequireStable bool
}

// OffsetFetchTopic names partitions of one topic.
type OffsetFetchTopic struct {
	// Topic is the topic's name.
	Topic string
	// Partitions are the partitions' indexes in the topic.
	Partitions []int32
}

// OffsetFetchResponse gives the committed offsets; Err is set when the
// request as a whole failed.
type OffsetFetchResponse struct {
	// Err is the request's error (kafka.ErrNotCoordinator,
	// ErrCoordinatorLoadInProgress, ...), as opposed to a partition's.
	Err error
	// Topics holds the offsets, topic by topic.
	Topics []OffsetFetchTopicResponse
}

// OffsetFetchTopicResponse is the part of an OffsetFetchResponse for one
// topic.
type OffsetFetchTopicResponse struct {
	// Topic is the topic's name.
	Topic string
	// Partitions holds the topic's offsets.
	Partitions []OffsetFetchPartitionResponse
}

// OffsetFetchPartitionResponse is one partition's committed offset, or -1
// when the group has none for it.
type OffsetFetchPartitionResponse struct {
	// Partition is the partition's index in the topic.
	Partition int32
	// Offset is committed_offset: the next record to consume, or -1 when
	// the group has committed none.
	Offset int64
	// LeaderEpoch is committed_leader_epoch: the epoch committed with the
	// offset (that of the last record consumed), or -1.
	LeaderEpoch int32
	// Metadata is the string committed with the offset.
	Metadata string
	// Err is the partition's error, if any.
	Err error
}

// DescribeGroupsRequest asks for the state and members of groups (Kafka's
// DescribeGroups).
type DescribeGroupsRequest struct {
	// Groups are the group ids to describe.
	Groups []string
}

// DescribeGroupsResponse describes each group asked for.
type DescribeGroupsResponse struct {
	// Groups describes each group asked for, in the request's order.
	Groups []DescribedGroup
}

// DescribedGroup is a group's state and members. A group the coordinator
// does not know is described as in state "Dead" with no members, as Kafka
// does.
type DescribedGroup struct {
	// Err is nil, or why the group is not described
	// (kafka.ErrNotCoordinator, ...).
	Err error
	// Group is the group id, as asked.
	Group string
	// State is the group's state as Kafka spells it: "Empty",
	// "PreparingRebalance", "CompletingRebalance", "Stable" or "Dead".
	State string
	// ProtocolType is the group's protocol type ("consumer"), or empty.
	ProtocolType string
	// Protocol is the chosen protocol (for consumers, the assignor).
	Protocol string
	// GenerationID is the group's current generation. Kafka's
	// DescribeGroups does not carry it: over the wire it is NoGeneration.
	GenerationID int32
	// Leader is the leader's member id. Kafka's DescribeGroups does not
	// carry it: over the wire it is empty.
	Leader string
	// Members are the group's members, in the order they joined.
	Members []DescribedMember
}

// DescribedMember is one member of a group, with its subscription metadata
// and assignment as the protocol encodes them.
type DescribedMember struct {
	// MemberID is the member's id.
	MemberID string
	// GroupInstanceID is the member's group.instance.id, or empty.
	GroupInstanceID string
	// ClientID is the member's client.id.
	ClientID string
	// ClientHost is the IP address the member joined from.
	ClientHost string
	// Metadata is the member's metadata for the group's protocol: for a
	// consumer, its subscription.
	Metadata []byte
	// Assignment is what the leader assigned the member in the current
	// generation; nil until the leader's SyncGroup.
	Assignment []byte
}

// ListGroupsRequest asks for the groups the coordinator knows (Kafka's
// ListGroups). StatesFilter, when not empty, keeps only groups in those
// states ("Stable", "Empty", ...).
type ListGroupsRequest struct {
	// StatesFilter is states_filter (KIP-518): the states to keep, as
	// DescribedGroup.State spells them; empty keeps every group.
	StatesFilter []string
}

// ListGroupsResponse lists groups.
type ListGroupsResponse struct {
	// Err is nil, or why the coordinator could not list its groups.
	Err error
	// Groups are the groups the coordinator knows.
	Groups []ListedGroup
}

// ListedGroup is one group of a ListGroupsResponse.
type ListedGroup struct {
	// Group is the group id.
	Group string
	// ProtocolType is the group's protocol type ("consumer"), or empty.
	ProtocolType string
	// State is the group's state, as DescribedGroup.State spells it.
	State string
}

// DeleteGroupsRequest deletes groups without members, with their committed
// offsets (Kafka's DeleteGroups).
type DeleteGroupsRequest struct {
	// Groups are the group ids to delete.
	Groups []string
}

// DeleteGroupsResponse says, group by group, whether it was deleted.
type DeleteGroupsResponse struct {
	// Results answers each group, in the request's order.
	Results []DeletedGroup
}

// DeletedGroup is the outcome for one group: nil, kafka.ErrGroupIDNotFound or
// kafka.ErrNonEmptyGroup.
type DeletedGroup struct {
	// Group is the group id, as asked.
	Group string
	// Err is nil when the group was deleted.
	Err error
}
