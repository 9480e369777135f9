package kafka

import (
	"errors"
	"fmt"
)

// Error is one of Kafka's protocol errors: its code on the wire, its name,
// and whether a client should retry. The values below are sentinels,
// compared by identity with errors.Is; code that returns one usually wraps it
// with the details (fmt.Errorf("%w: ...", ErrX)).
type Error struct {
	// Code is the error_code Kafka's protocol sends for it; never 0,
	// which is no error.
	Code int16
	// Name is Kafka's name for it, such as "NOT_LEADER_OR_FOLLOWER".
	Name string
	// Retriable says whether Kafka's clients send the request again after
	// it (see IsRetriable).
	Retriable bool
	// Message says in a few words what the error means.
	Message string
}

// Error returns the name and the message: "NAME: message".
func (e *Error) Error() string { return e.Name + ": " + e.Message }

// Kafka's errors, by their names in the protocol.
var (
	ErrUnknownServerError       = &Error{-1, "UNKNOWN_SERVER_ERROR", false, "unexpected server error"}
	ErrOffsetOutOfRange         = &Error{1, "OFFSET_OUT_OF_RANGE", false, "offset outside the range the partition holds"}
	ErrCorruptMessage           = &Error{2, "CORRUPT_MESSAGE", true, "record batch failed its CRC check or is malformed"}
	ErrUnknownTopicOrPartition  = &Error{3, "UNKNOWN_TOPIC_OR_PARTITION", true, "this node does not host the topic or partition"}
	ErrInvalidFetchSize         = &Error{4, "INVALID_FETCH_SIZE", false, "invalid fetch size"}
	ErrLeaderNotAvailable       = &Error{5, "LEADER_NOT_AVAILABLE", true, "no leader for this partition right now"}
	ErrNotLeaderOrFollower      = &Error{6, "NOT_LEADER_OR_FOLLOWER", true, "this node is not the partition's leader"}
	ErrRequestTimedOut          = &Error{7, "REQUEST_TIMED_OUT", true, "request timed out"}
	ErrMessageTooLarge          = &Error{10, "MESSAGE_TOO_LARGE", false, "record batch larger than max.message.bytes"}
	ErrNetwork                  = &Error{13, "NETWORK_EXCEPTION", true, "the connection to the node failed"}
	ErrInvalidTopic             = &Error{17, "INVALID_TOPIC_EXCEPTION", false, "invalid topic name"}
	ErrRecordListTooLarge       = &Error{18, "RECORD_LIST_TOO_LARGE", false, "records larger than the segment size"}
	ErrNotEnoughReplicas        = &Error{19, "NOT_ENOUGH_REPLICAS", true, "fewer in-sync replicas than min.insync.replicas"}
	ErrNotEnoughReplicasAfter   = &Error{20, "NOT_ENOUGH_REPLICAS_AFTER_APPEND", true, "written, but fewer in-sync replicas than min.insync.replicas acknowledged it"}
	ErrInvalidRequiredAcks      = &Error{21, "INVALID_REQUIRED_ACKS", false, "acks must be -1 (all), 0 or 1"}
	ErrInvalidTimestamp         = &Error{32, "INVALID_TIMESTAMP", false, "timestamp out of the accepted range"}
	ErrUnsupportedVersion       = &Error{35, "UNSUPPORTED_VERSION", false, "the node does not support this request's version"}
	ErrTopicAlreadyExists       = &Error{36, "TOPIC_ALREADY_EXISTS", false, "topic already exists"}
	ErrInvalidPartitions        = &Error{37, "INVALID_PARTITIONS", false, "invalid number of partitions"}
	ErrInvalidReplicationFactor = &Error{38, "INVALID_REPLICATION_FACTOR", false, "invalid replication factor"}
	ErrInvalidConfig            = &Error{40, "INVALID_CONFIG", false, "invalid configuration"}
	ErrInvalidRequest           = &Error{42, "INVALID_REQUEST", false, "malformed request"}
	ErrOutOfOrderSequence       = &Error{45, "OUT_OF_ORDER_SEQUENCE_NUMBER", false, "producer sequence number out of order"}
	ErrDuplicateSequence        = &Error{46, "DUPLICATE_SEQUENCE_NUMBER", false, "duplicate producer sequence number"}
	ErrInvalidProducerEpoch     = &Error{47, "INVALID_PRODUCER_EPOCH", false, "producer epoch is older than the current one"}
	ErrKafkaStorage             = &Error{56, "KAFKA_STORAGE_ERROR", true, "the partition's log failed on disk"}
	ErrUnknownProducerID        = &Error{59, "UNKNOWN_PRODUCER_ID", false, "the partition has no state for this producer id"}
	ErrFencedLeaderEpoch        = &Error{74, "FENCED_LEADER_EPOCH", true, "leader epoch in the request is older than the partition's"}
	ErrUnknownLeaderEpoch       = &Error{75, "UNKNOWN_LEADER_EPOCH", true, "leader epoch in the request is newer than the partition's"}
	ErrInvalidRecord            = &Error{87, "INVALID_RECORD", false, "a record failed validation"}
	ErrProducerFenced           = &Error{90, "PRODUCER_FENCED", false, "a newer producer with the same transactional id fenced this one"}
	ErrUnknownTopicID           = &Error{100, "UNKNOWN_TOPIC_ID", true, "unknown topic id"}
	ErrInconsistentTopicID      = &Error{103, "INCONSISTENT_TOPIC_ID", true, "topic id does not match the partition's"}

	// The admin calls' errors.
	ErrPolicyViolation             = &Error{44, "POLICY_VIOLATION", false, "the request breaks a policy of the cluster"}
	ErrPreferredLeaderNotAvailable = &Error{80, "PREFERRED_LEADER_NOT_AVAILABLE", true, "the preferred leader is not available or not in the ISR"}
	ErrEligibleLeadersNotAvailable = &Error{83, "ELIGIBLE_LEADERS_NOT_AVAILABLE", true, "no replica that may lead is available"}
	ErrElectionNotNeeded           = &Error{84, "ELECTION_NOT_NEEDED", false, "the partition already has the leader an election would choose"}
	ErrInvalidReplicaAssignment    = &Error{39, "INVALID_REPLICA_ASSIGNMENT", false, "invalid replica assignment"}
	ErrNoReassignmentInProgress    = &Error{85, "NO_REASSIGNMENT_IN_PROGRESS", false, "no partition reassignment is in progress"}

	// The group coordinator's errors.
	ErrOffsetMetadataTooLarge    = &Error{12, "OFFSET_METADATA_TOO_LARGE", false, "offset metadata longer than offset.metadata.max.bytes"}
	ErrCoordinatorLoadInProgress = &Error{14, "COORDINATOR_LOAD_IN_PROGRESS", true, "the coordinator is loading the group's state"}
	ErrCoordinatorNotAvailable   = &Error{15, "COORDINATOR_NOT_AVAILABLE", true, "the group coordinator is not available"}
	ErrNotCoordinator            = &Error{16, "NOT_COORDINATOR", true, "this node is not the group's coordinator"}
	ErrIllegalGeneration         = &Error{22, "ILLEGAL_GENERATION", false, "the generation id is not the group's current one"}
	ErrInconsistentGroupProtocol = &Error{23, "INCONSISTENT_GROUP_PROTOCOL", false, "the member's protocol type or protocols do not match the group's"}
	ErrInvalidGroupID            = &Error{24, "INVALID_GROUP_ID", false, "invalid group id"}
	ErrUnknownMemberID           = &Error{25, "UNKNOWN_MEMBER_ID", false, "the coordinator does not know this member id"}
	ErrInvalidSessionTimeout     = &Error{26, "INVALID_SESSION_TIMEOUT", false, "session timeout outside group.min.session.timeout.ms and group.max.session.timeout.ms"}
	ErrRebalanceInProgress       = &Error{27, "REBALANCE_IN_PROGRESS", false, "the group is rebalancing; rejoin it"}
	ErrInvalidCommitOffsetSize   = &Error{28, "INVALID_COMMIT_OFFSET_SIZE", false, "the offset commit was too large"}
	ErrNonEmptyGroup             = &Error{68, "NON_EMPTY_GROUP", false, "the group has members"}
	ErrGroupIDNotFound           = &Error{69, "GROUP_ID_NOT_FOUND", false, "the group does not exist"}
	ErrMemberIDRequired          = &Error{79, "MEMBER_ID_REQUIRED", false, "the member must rejoin with the member id given"}
	ErrGroupMaxSizeReached       = &Error{81, "GROUP_MAX_SIZE_REACHED", false, "the group has group.max.size members already"}
	ErrFencedInstanceID          = &Error{82, "FENCED_INSTANCE_ID", false, "another member took over this group instance id"}
	ErrUnstableOffsetCommit      = &Error{88, "UNSTABLE_OFFSET_COMMIT", true, "the partition has pending transactional offsets"}
)

// The controller's errors, for AlterPartition and broker heartbeats
// (KIP-497, KIP-631, KIP-903).
var (
	// ErrInvalidUpdateVersion answers an AlterPartition made in a
	// partition epoch that is no longer the partition's (Kafka's
	// INVALID_UPDATE_VERSION).
	ErrInvalidUpdateVersion = &Error{95, "INVALID_UPDATE_VERSION", false, "the partition epoch of the update is not the current one"}
	// ErrBrokerIDNotRegistered answers a heartbeat or request from a node
	// the controller has no registration for (Kafka's
	// BROKER_ID_NOT_REGISTERED).
	ErrBrokerIDNotRegistered = &Error{102, "BROKER_ID_NOT_REGISTERED", false, "the node is not registered with the controller"}
	// ErrIneligibleReplica answers an AlterPartition adding to the ISR a
	// replica that is fenced or restarted since the leader saw it fetch
	// (Kafka's INELIGIBLE_REPLICA).
	ErrIneligibleReplica = &Error{107, "INELIGIBLE_REPLICA", false, "a replica added to the ISR is not eligible"}
)

// The transaction coordinator's errors (KIP-98, KIP-890), and those of the
// partitions it writes transaction markers to.
var (
	// ErrInvalidTxnState answers a request that the transaction's state
	// does not allow, such as committing a transaction that is being
	// aborted (Kafka's INVALID_TXN_STATE).
	ErrInvalidTxnState = &Error{48, "INVALID_TXN_STATE", false, "the transaction's state does not allow this request"}
	// ErrInvalidProducerIDMapping answers a request whose producer id is
	// not the one its transactional id has (Kafka's
	// INVALID_PRODUCER_ID_MAPPING).
	ErrInvalidProducerIDMapping = &Error{49, "INVALID_PRODUCER_ID_MAPPING", false, "the producer id is not the one the transactional id has"}
	// ErrInvalidTransactionTimeout answers an InitProducerId whose
	// transaction timeout is not positive or above
	// transaction.max.timeout.ms (Kafka's INVALID_TRANSACTION_TIMEOUT).
	ErrInvalidTransactionTimeout = &Error{50, "INVALID_TRANSACTION_TIMEOUT", false, "transaction timeout outside (0, transaction.max.timeout.ms]"}
	// ErrConcurrentTransactions answers a request made while the
	// coordinator is still changing the transaction's state: it is being
	// written to the transaction log, or its markers are being written
	// (Kafka's CONCURRENT_TRANSACTIONS). The producer retries.
	ErrConcurrentTransactions = &Error{51, "CONCURRENT_TRANSACTIONS", true, "the transaction is changing state; retry"}
	// ErrTransactionCoordinatorFenced answers a WriteTxnMarkers from a
	// coordinator whose epoch is older than one the partition has seen
	// for the producer (Kafka's TRANSACTION_COORDINATOR_FENCED).
	ErrTransactionCoordinatorFenced = &Error{52, "TRANSACTION_COORDINATOR_FENCED", false, "a newer transaction coordinator wrote markers for this producer"}
	// ErrTransactionalIDAuthorizationFailed answers a produce request that
	// carries transactional batches but no transactional id, as Kafka
	// does: without one the batches cannot be verified (Kafka's
	// TRANSACTIONAL_ID_AUTHORIZATION_FAILED).
	ErrTransactionalIDAuthorizationFailed = &Error{53, "TRANSACTIONAL_ID_AUTHORIZATION_FAILED", false, "the request may not write in this transactional id's name"}
	// ErrTransactionalIDNotFound answers a question about a transactional
	// id the coordinator has no state for (Kafka's
	// TRANSACTIONAL_ID_NOT_FOUND).
	ErrTransactionalIDNotFound = &Error{105, "TRANSACTIONAL_ID_NOT_FOUND", false, "the coordinator has no state for the transactional id"}
	// ErrTransactionAbortable answers a transactional write to a
	// partition that the producer's ongoing transaction does not include
	// (KIP-890): the producer must abort the transaction (Kafka's
	// TRANSACTION_ABORTABLE).
	ErrTransactionAbortable = &Error{120, "TRANSACTION_ABORTABLE", false, "the transaction cannot go on; abort it"}
	// ErrOperationNotAttempted answers the parts of a batched request
	// that the node did not try because another part failed: an
	// AddPartitionsToTxn answers it for every partition that is fine when
	// one is not, such as an unknown topic's (Kafka's
	// OPERATION_NOT_ATTEMPTED). The producer fixes the failed part and
	// sends the whole request again.
	ErrOperationNotAttempted = &Error{55, "OPERATION_NOT_ATTEMPTED", false, "not tried, because another part of the request failed"}
)

// The errors of authentication (KIP-43, KIP-152).
var (
	// ErrUnsupportedSaslMechanism answers a SaslHandshake naming a
	// mechanism the listener does not offer; the answer lists those it
	// does (Kafka's UNSUPPORTED_SASL_MECHANISM).
	ErrUnsupportedSaslMechanism = &Error{33, "UNSUPPORTED_SASL_MECHANISM", false, "the listener does not offer this SASL mechanism"}
	// ErrIllegalSaslState answers a SASL request out of turn: a
	// SaslAuthenticate before a SaslHandshake, or a second handshake
	// (Kafka's ILLEGAL_SASL_STATE).
	ErrIllegalSaslState = &Error{34, "ILLEGAL_SASL_STATE", false, "SASL request out of turn"}
	// ErrSaslAuthenticationFailed answers a SaslAuthenticate whose user
	// name or password is wrong; the node then closes the connection
	// (Kafka's SASL_AUTHENTICATION_FAILED).
	ErrSaslAuthenticationFailed = &Error{58, "SASL_AUTHENTICATION_FAILED", false, "SASL authentication failed"}
	// ErrResourceNotFound answers a request about a resource that does
	// not exist, such as the deletion of a SCRAM credential a user does
	// not have (Kafka's RESOURCE_NOT_FOUND).
	ErrResourceNotFound = &Error{91, "RESOURCE_NOT_FOUND", false, "no such resource"}
	// ErrDuplicateResource answers a request that names a resource twice,
	// such as two changes of one user's credentials (Kafka's
	// DUPLICATE_RESOURCE).
	ErrDuplicateResource = &Error{92, "DUPLICATE_RESOURCE", false, "a resource named twice in the request"}
	// ErrUnacceptableCredential answers a SCRAM credential the node will
	// not keep: an iteration count outside 4096 to 16384, an empty user
	// name or salted password (Kafka's UNACCEPTABLE_CREDENTIAL).
	ErrUnacceptableCredential = &Error{93, "UNACCEPTABLE_CREDENTIAL", false, "the credential is not acceptable"}
)

// The errors of authorization: a principal the ACLs do not let do what
// its request asks (KIP-11).
var (
	// ErrTopicAuthorizationFailed answers a topic the principal may not
	// do this to: read, write, describe, create, delete, alter (Kafka's
	// TOPIC_AUTHORIZATION_FAILED).
	ErrTopicAuthorizationFailed = &Error{29, "TOPIC_AUTHORIZATION_FAILED", false, "not authorized to access the topic"}
	// ErrGroupAuthorizationFailed answers a request about a group the
	// principal may not read or describe (GROUP_AUTHORIZATION_FAILED).
	ErrGroupAuthorizationFailed = &Error{30, "GROUP_AUTHORIZATION_FAILED", false, "not authorized to access the group"}
	// ErrClusterAuthorizationFailed answers a request about the cluster
	// as a whole the principal may not make: ACLs, users, reassignment,
	// an idempotent producer's id (CLUSTER_AUTHORIZATION_FAILED).
	ErrClusterAuthorizationFailed = &Error{31, "CLUSTER_AUTHORIZATION_FAILED", false, "not authorized for this cluster operation"}
	// ErrSecurityDisabled answers an ACL request to a listener that checks
	// no ACLs (SECURITY_DISABLED).
	ErrSecurityDisabled = &Error{54, "SECURITY_DISABLED", false, "no authorizer is configured on the node"}
)

// The errors of the consumer group protocol (KIP-848).
var (
	// ErrFencedMemberEpoch answers a ConsumerGroupHeartbeat whose member
	// epoch is neither the member's current one nor, with owned
	// partitions its assignment holds, its previous one: the member gives
	// up its partitions and rejoins with epoch 0 (FENCED_MEMBER_EPOCH).
	ErrFencedMemberEpoch = &Error{110, "FENCED_MEMBER_EPOCH", false, "the member epoch is not the group coordinator's; give up all partitions and rejoin"}
	// ErrStaleMemberEpoch answers an offset commit of a consumer-protocol
	// member with an epoch behind the member's: the member learns its
	// new epoch from its next heartbeat and commits again
	// (STALE_MEMBER_EPOCH).
	ErrStaleMemberEpoch = &Error{113, "STALE_MEMBER_EPOCH", true, "the member epoch is behind the coordinator's"}
	// ErrUnreleasedInstanceID answers a member joining with an instance id
	// another member still holds (UNRELEASED_INSTANCE_ID).
	ErrUnreleasedInstanceID = &Error{111, "UNRELEASED_INSTANCE_ID", false, "another member still holds the instance id"}
	// ErrUnsupportedAssignor answers a heartbeat naming a server assignor
	// the coordinator does not have (UNSUPPORTED_ASSIGNOR).
	ErrUnsupportedAssignor = &Error{112, "UNSUPPORTED_ASSIGNOR", false, "the group coordinator has no server assignor by this name"}
	// ErrInvalidRegularExpression answers a heartbeat whose subscribed
	// topic regex does not compile (INVALID_REGULAR_EXPRESSION).
	ErrInvalidRegularExpression = &Error{128, "INVALID_REGULAR_EXPRESSION", false, "the subscribed topic regex is invalid"}
)

// The errors of share groups (KIP-932).
var (
	// ErrInvalidRecordState answers an acknowledgement of a record the
	// member does not hold acquired: never delivered to it, already
	// acknowledged, or its acquisition lock expired (INVALID_RECORD_STATE).
	ErrInvalidRecordState = &Error{121, "INVALID_RECORD_STATE", false, "the record is not acquired by this member; its acknowledgement was not applied"}
	// ErrShareSessionNotFound answers a ShareFetch or ShareAcknowledge
	// naming a share session the node does not have
	// (SHARE_SESSION_NOT_FOUND).
	ErrShareSessionNotFound = &Error{122, "SHARE_SESSION_NOT_FOUND", false, "the share session was not found"}
	// ErrInvalidShareSessionEpoch answers a ShareFetch or ShareAcknowledge
	// whose share session epoch is not the next one
	// (INVALID_SHARE_SESSION_EPOCH).
	ErrInvalidShareSessionEpoch = &Error{123, "INVALID_SHARE_SESSION_EPOCH", false, "the share session epoch is invalid"}
	// ErrFencedStateEpoch answers a write of a share partition's state
	// whose state epoch is older than the one stored (FENCED_STATE_EPOCH).
	ErrFencedStateEpoch = &Error{124, "FENCED_STATE_EPOCH", false, "the state epoch is older than the share coordinator's"}
	// ErrShareSessionLimitReached answers a ShareFetch opening a share
	// session on a node that holds as many as it may
	// (SHARE_SESSION_LIMIT_REACHED).
	ErrShareSessionLimitReached = &Error{133, "SHARE_SESSION_LIMIT_REACHED", true, "the node holds as many share sessions as it may"}
)

// ErrNotController answers a call that only the active controller
// carries out, made to a controller that is not active: the caller finds
// the one that is (Kafka's NOT_CONTROLLER).
var ErrNotController = &Error{41, "NOT_CONTROLLER", true, "this is not the active controller"}

// ErrStaleBrokerEpoch answers a request sent by a node in a broker epoch
// older than one the receiver has seen from it: the node restarted since
// (Kafka's STALE_BROKER_EPOCH).
var ErrStaleBrokerEpoch = &Error{77, "STALE_BROKER_EPOCH", false, "request from an earlier incarnation of the node"}

var (
	errUnknownCode = &Error{-1, "UNKNOWN_SERVER_ERROR", false, "unknown error code"}
	errorsByCode   = map[int16]*Error{}
)

func init() {
	for _, e := range []*Error{
		ErrUnknownServerError, ErrOffsetOutOfRange, ErrCorruptMessage, ErrUnknownTopicOrPartition,
		ErrInvalidFetchSize, ErrLeaderNotAvailable, ErrNotLeaderOrFollower, ErrRequestTimedOut, ErrNetwork,
		ErrMessageTooLarge, ErrInvalidTopic, ErrRecordListTooLarge, ErrNotEnoughReplicas,
		ErrNotEnoughReplicasAfter, ErrInvalidRequiredAcks, ErrInvalidTimestamp, ErrUnsupportedVersion, ErrTopicAlreadyExists,
		ErrInvalidPartitions, ErrInvalidReplicationFactor, ErrInvalidConfig, ErrInvalidRequest,
		ErrOutOfOrderSequence, ErrDuplicateSequence, ErrInvalidProducerEpoch, ErrKafkaStorage,
		ErrUnknownProducerID, ErrFencedLeaderEpoch, ErrUnknownLeaderEpoch, ErrInvalidRecord,
		ErrProducerFenced, ErrUnknownTopicID, ErrInconsistentTopicID,
		ErrPolicyViolation, ErrPreferredLeaderNotAvailable, ErrEligibleLeadersNotAvailable,
		ErrElectionNotNeeded, ErrInvalidReplicaAssignment, ErrNoReassignmentInProgress,
		ErrOffsetMetadataTooLarge, ErrCoordinatorLoadInProgress, ErrCoordinatorNotAvailable,
		ErrNotCoordinator, ErrIllegalGeneration, ErrInconsistentGroupProtocol, ErrInvalidGroupID,
		ErrUnknownMemberID, ErrInvalidSessionTimeout, ErrRebalanceInProgress, ErrInvalidCommitOffsetSize,
		ErrNonEmptyGroup, ErrGroupIDNotFound, ErrMemberIDRequired, ErrGroupMaxSizeReached,
		ErrFencedInstanceID, ErrUnstableOffsetCommit,
		ErrNotController, ErrStaleBrokerEpoch, ErrInvalidUpdateVersion, ErrBrokerIDNotRegistered, ErrIneligibleReplica,
		ErrInvalidTxnState, ErrInvalidProducerIDMapping, ErrInvalidTransactionTimeout, ErrConcurrentTransactions,
		ErrTransactionCoordinatorFenced, ErrTransactionalIDAuthorizationFailed, ErrTransactionalIDNotFound, ErrTransactionAbortable, ErrOperationNotAttempted,
		ErrUnsupportedSaslMechanism, ErrIllegalSaslState, ErrSaslAuthenticationFailed,
		ErrResourceNotFound, ErrDuplicateResource, ErrUnacceptableCredential,
		ErrTopicAuthorizationFailed, ErrGroupAuthorizationFailed, ErrClusterAuthorizationFailed, ErrSecurityDisabled,
		ErrFencedMemberEpoch, ErrStaleMemberEpoch, ErrUnreleasedInstanceID, ErrUnsupportedAssignor, ErrInvalidRegularExpression,
		ErrInvalidRecordState, ErrShareSessionNotFound, ErrInvalidShareSessionEpoch, ErrFencedStateEpoch, ErrShareSessionLimitReached,
	} {
		errorsByCode[e.Code] = e
	}
}

// ErrClosed means the node was closed: the request was not handled.
var ErrClosed = errors.New("kafka: node closed")

// ErrorForCode returns the error a code stands for, nil for 0.
func ErrorForCode(code int16) error {
	if code == 0 {
		return nil
	}
	if e, ok := errorsByCode[code]; ok {
		return e
	}
	return fmt.Errorf("%w: code %d", errUnknownCode, code)
}

// CodeOf returns the Kafka error code for err: 0 for nil, the code of the
// *Error it wraps, or -1 (UNKNOWN_SERVER_ERROR) for anything else.
func CodeOf(err error) int16 {
	if err == nil {
		return 0
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ErrUnknownServerError.Code
}

// IsRetriable reports whether sending the request again may succeed: err
// wraps a Kafka error that Kafka marks retriable.
func IsRetriable(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.Retriable
}
