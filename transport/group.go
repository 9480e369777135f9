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
)

// FindCoordinatorRequest asks which node coordinates a group (Kafka's
// FindCoordinator).
type FindCoordinatorRequest struct {
	Key     string
	KeyType CoordinatorType
}

// FindCoordinatorResponse names the coordinator.
type FindCoordinatorResponse struct {
	Err    error
	NodeID int32
	Host   string
	Port   int32
}

// NoGeneration is the generation id of a member that has joined no
// generation, or of a commit made outside group membership (Kafka's -1).
const NoGeneration int32 = -1

// JoinGroupProtocol is one assignment protocol a member supports — for a
// consumer, an assignor — with the member's subscription encoded for it.
type JoinGroupProtocol struct {
	Name     string
	Metadata []byte
}

// JoinGroupRequest asks to join a group, or to rejoin it for a rebalance
// (Kafka's JoinGroup). The answer waits until every known member has
// rejoined, or the rebalance timeout has passed.
type JoinGroupRequest struct {
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
	ClientID   string
	ClientHost string
	// Reason says why the member (re)joins, for the coordinator's log.
	Reason string
}

// JoinGroupMember is a member as the leader sees it in a JoinGroupResponse:
// its id and its metadata for the chosen protocol.
type JoinGroupMember struct {
	MemberID        string
	GroupInstanceID string
	Metadata        []byte
}

// JoinGroupResponse says which generation the member joined, who leads it
// and, for the leader only, the members to assign partitions to.
type JoinGroupResponse struct {
	Err          error
	GenerationID int32
	ProtocolType string
	// ProtocolName is the protocol chosen: one every member supports.
	ProtocolName string
	Leader       string
	MemberID     string
	// Members is empty unless this member is the leader.
	Members []JoinGroupMember
}

// SyncGroupAssignment is the leader's assignment for one member.
type SyncGroupAssignment struct {
	MemberID   string
	Assignment []byte
}

// SyncGroupRequest finishes a rebalance (Kafka's SyncGroup): the leader
// sends every member's assignment, the others send none, and each gets its
// own back.
type SyncGroupRequest struct {
	Group           string
	GenerationID    int32
	MemberID        string
	GroupInstanceID string
	ProtocolType    string
	ProtocolName    string
	// Assignments is the leader's; nil for the other members.
	Assignments []SyncGroupAssignment
}

// SyncGroupResponse carries the member's assignment.
type SyncGroupResponse struct {
	Err          error
	ProtocolType string
	ProtocolName string
	Assignment   []byte
}

// HeartbeatRequest keeps a member's session alive (Kafka's Heartbeat).
// kafka.ErrRebalanceInProgress in the answer tells it to rejoin.
type HeartbeatRequest struct {
	Group           string
	GenerationID    int32
	MemberID        string
	GroupInstanceID string
}

// HeartbeatResponse answers a heartbeat.
type HeartbeatResponse struct {
	Err error
}

// LeaveGroupMember names a member that leaves.
type LeaveGroupMember struct {
	MemberID        string
	GroupInstanceID string
	Reason          string
}

// LeaveGroupRequest takes members out of a group at once, rather than at
// their session timeout (Kafka's LeaveGroup).
type LeaveGroupRequest struct {
	Group   string
	Members []LeaveGroupMember
}

// LeaveGroupMemberResponse says whether one member left.
type LeaveGroupMemberResponse struct {
	MemberID        string
	GroupInstanceID string
	Err             error
}

// LeaveGroupResponse answers a LeaveGroupRequest; Err is set when the
// request as a whole failed.
type LeaveGroupResponse struct {
	Err     error
	Members []LeaveGroupMemberResponse
}

// OffsetCommitRequest commits offsets for a group (Kafka's OffsetCommit).
// A member of the group sends its generation and member id, and a commit
// from an older generation is rejected (kafka.ErrIllegalGeneration); a client
// outside group membership sends NoGeneration and no member id, which only
// a group without members accepts.
type OffsetCommitRequest struct {
	Group           string
	GenerationID    int32
	MemberID        string
	GroupInstanceID string
	Topics          []OffsetCommitTopic
}

// OffsetCommitTopic is the part of an OffsetCommitRequest for one topic.
type OffsetCommitTopic struct {
	Topic      string
	Partitions []OffsetCommitPartition
}

// OffsetCommitPartition is one partition's committed offset: the offset of
// the next record to consume.
type OffsetCommitPartition struct {
	Partition int32
	Offset    int64
	// LeaderEpoch is the epoch of the last record consumed, or -1.
	LeaderEpoch int32
	Metadata    string
}

// OffsetCommitResponse answers a commit, partition by partition.
type OffsetCommitResponse struct {
	Topics []OffsetCommitTopicResponse
}

// OffsetCommitTopicResponse is the part of an OffsetCommitResponse for one
// topic.
type OffsetCommitTopicResponse struct {
	Topic      string
	Partitions []OffsetCommitPartitionResponse
}

// OffsetCommitPartitionResponse says whether one partition's offset was
// committed.
type OffsetCommitPartitionResponse struct {
	Partition int32
	Err       error
}

// OffsetFetchRequest asks for a group's committed offsets (Kafka's
// OffsetFetch). Nil Topics asks for every partition the group has an
// offset for.
type OffsetFetchRequest struct {
	Group  string
	Topics []OffsetFetchTopic
}

// OffsetFetchTopic names partitions of one topic.
type OffsetFetchTopic struct {
	Topic      string
	Partitions []int32
}

// OffsetFetchResponse gives the committed offsets; Err is set when the
// request as a whole failed.
type OffsetFetchResponse struct {
	Err    error
	Topics []OffsetFetchTopicResponse
}

// OffsetFetchTopicResponse is the part of an OffsetFetchResponse for one
// topic.
type OffsetFetchTopicResponse struct {
	Topic      string
	Partitions []OffsetFetchPartitionResponse
}

// OffsetFetchPartitionResponse is one partition's committed offset, or -1
// when the group has none for it.
type OffsetFetchPartitionResponse struct {
	Partition   int32
	Offset      int64
	LeaderEpoch int32
	Metadata    string
	Err         error
}

// DescribeGroupsRequest asks for the state and members of groups (Kafka's
// DescribeGroups).
type DescribeGroupsRequest struct {
	Groups []string
}

// DescribeGroupsResponse describes each group asked for.
type DescribeGroupsResponse struct {
	Groups []DescribedGroup
}

// DescribedGroup is a group's state and members. A group the coordinator
// does not know is described as in state "Dead" with no members, as Kafka
// does.
type DescribedGroup struct {
	Err          error
	Group        string
	State        string
	ProtocolType string
	// Protocol is the chosen protocol (for consumers, the assignor).
	Protocol     string
	GenerationID int32
	Leader       string
	Members      []DescribedMember
}

// DescribedMember is one member of a group, with its subscription metadata
// and assignment as the protocol encodes them.
type DescribedMember struct {
	MemberID        string
	GroupInstanceID string
	ClientID        string
	ClientHost      string
	Metadata        []byte
	Assignment      []byte
}

// ListGroupsRequest asks for the groups the coordinator knows (Kafka's
// ListGroups). StatesFilter, when not empty, keeps only groups in those
// states ("Stable", "Empty", ...).
type ListGroupsRequest struct {
	StatesFilter []string
}

// ListGroupsResponse lists groups.
type ListGroupsResponse struct {
	Err    error
	Groups []ListedGroup
}

// ListedGroup is one group of a ListGroupsResponse.
type ListedGroup struct {
	Group        string
	ProtocolType string
	State        string
}

// DeleteGroupsRequest deletes groups without members, with their committed
// offsets (Kafka's DeleteGroups).
type DeleteGroupsRequest struct {
	Groups []string
}

// DeleteGroupsResponse says, group by group, whether it was deleted.
type DeleteGroupsResponse struct {
	Results []DeletedGroup
}

// DeletedGroup is the outcome for one group: nil, kafka.ErrGroupIDNotFound or
// kafka.ErrNonEmptyGroup.
type DeletedGroup struct {
	Group string
	Err   error
}
