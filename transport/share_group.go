package transport

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/partlog/partlog/auth"
	"github.com/partlog/partlog/kafka"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ShareGroupClient is the optional interface of a handler that hosts
// share groups (KIP-932, queues for Kafka), whose members share the
// records of a partition and acknowledge each: ShareGroupHeartbeat and
// ShareGroupDescribe (76, 77), answered by the group's coordinator, and
// ShareFetch and ShareAcknowledge (78, 79), answered by the leaders of
// the partitions. Topics are named by their ids on the wire, as Kafka
// names them; the handler knows which topic an id is.
type ShareGroupClient interface {
	ShareCoordinatorClient
	ShareFetch(ctx context.Context, req *ShareFetchRequest) (*ShareFetchResponse, error)
	ShareAcknowledge(ctx context.Context, req *ShareAcknowledgeRequest) (*ShareAcknowledgeResponse, error)
}

func isShareGroupClient(h Client) bool { _, ok := h.(ShareGroupClient); return ok }

// ShareGroupHeartbeatRequest is a share group member's heartbeat: it
// joins (epoch 0), stays (its epoch) or leaves (-1). A field that did
// not change since the last heartbeat is left out: nil.
type ShareGroupHeartbeatRequest struct {
	// Group is the group id.
	Group string
	// MemberID is the member's id, chosen by the client and kept for its
	// lifetime.
	MemberID string
	// MemberEpoch is the member's epoch: 0 to join, -1 to leave.
	MemberEpoch int32
	// RackID is the member's rack; nil unchanged.
	RackID *string
	// SubscribedTopicNames are the topics the member subscribes to; nil
	// unchanged.
	SubscribedTopicNames []string
	// ClientID and ClientHost are the request header's client id and the
	// address the client connects from: the server fills them.
	ClientID, ClientHost string
}

// ShareGroupHeartbeatResponse answers a share group heartbeat.
type ShareGroupHeartbeatResponse struct {
	// Err is nil, or why the heartbeat failed: kafka.ErrUnknownMemberID,
	// ErrGroupMaxSizeReached, ErrNotCoordinator, ...
	Err error
	// MemberID and MemberEpoch are the member's id and its epoch now.
	MemberID    string
	MemberEpoch int32
	// HeartbeatIntervalMillis is how often the member heartbeats.
	HeartbeatIntervalMillis int32
	// Assignment is the member's assignment when it changed; nil
	// otherwise.
	Assignment []TopicIDPartitions
}

// ShareGroupDescribeRequest asks about share groups.
type ShareGroupDescribeRequest struct {
	// Groups are the group ids.
	Groups []string
}

// ShareGroupDescribeResponse describes each share group asked about.
type ShareGroupDescribeResponse struct {
	// Groups are one per group of the request.
	Groups []ShareGroupDescription
}

// ShareGroupDescription is one share group.
type ShareGroupDescription struct {
	// Group is the group id.
	Group string
	// Err is nil, or why the group is not described:
	// kafka.ErrGroupIDNotFound, ErrNotCoordinator, ...
	Err error
	// State is the group's state: Empty, Stable, Dead.
	State string
	// Epoch is the group epoch; AssignmentEpoch the target assignment's.
	Epoch, AssignmentEpoch int32
	// AssignorName is the assignor the group uses ("simple").
	AssignorName string
	// Members are the group's members.
	Members []ShareGroupMemberDescription
}

// ShareGroupMemberDescription is one member of a share group.
type ShareGroupMemberDescription struct {
	// MemberID and RackID identify the member.
	MemberID, RackID string
	// MemberEpoch is the member's epoch.
	MemberEpoch int32
	// ClientID and ClientHost say where it connects from.
	ClientID, ClientHost string
	// SubscribedTopicNames is its subscription.
	SubscribedTopicNames []string
	// Assignment is what it is assigned, with the topics' names.
	Assignment []NamedTopicIDPartitions
}

// NamedTopicIDPartitions are partitions of a topic named by its id, with
// its name, as a description gives them.
type NamedTopicIDPartitions struct {
	// TopicID is the topic's id.
	TopicID [16]byte
	// Topic is the topic's name.
	Topic string
	// Partitions are the partitions' indexes.
	Partitions []int32
}

// ShareFetchRequest fetches records for a member of a share group, which
// acquires them for a while (the response's AcquisitionLockTimeout), and
// may acknowledge records fetched before. It runs in the member's share
// session on the node: the first request (epoch 0) opens it with its
// partitions, the next ones (epoch 1, 2, ...) add partitions, forget
// some (ForgottenTopics) and fetch from all the session holds, and one
// with epoch -1 closes it.
type ShareFetchRequest struct {
	// Group is the group id.
	Group string
	// MemberID is the member's id.
	MemberID string
	// ShareSessionEpoch is the share session's epoch: 0 to open a
	// session, -1 to close it, otherwise one more than the last request's.
	ShareSessionEpoch int32
	// MaxWait bounds how long the node waits for MinBytes.
	MaxWait time.Duration
	// MinBytes is how many bytes the node waits for, up to MaxWait.
	MinBytes int32
	// MaxBytes bounds the answer's records, except that the first batch
	// goes whole (KIP-74).
	MaxBytes int32
	// MaxRecords bounds the records acquired: a soft limit, which may be
	// exceeded to end on a batch boundary, in ShareAcquireBatchOptimized
	// mode; a hard one in ShareAcquireRecordLimit mode.
	MaxRecords int32
	// BatchSize is the number of records the member would like its
	// acquired records and acknowledgements to come in.
	BatchSize int32
	// ShareAcquireMode is how MaxRecords bounds the records acquired
	// (KIP-1206). Version 2 on; before it, the mode is always
	// ShareAcquireBatchOptimized.
	ShareAcquireMode ShareAcquireMode
	// IsRenewAck says the acknowledgements include AcknowledgeRenew
	// (KIP-1222). Such a request only acknowledges: its MaxWait,
	// MinBytes, MaxBytes and MaxRecords are zero (Kafka answers
	// INVALID_REQUEST otherwise), and the node fetches and acquires
	// nothing for it. Version 2 on.
	IsRenewAck bool
	// Topics are the partitions to fetch from (added to the session),
	// and the acknowledgements of records fetched before.
	Topics []ShareFetchTopic
	// ForgottenTopics are the partitions to take out of the session.
	ForgottenTopics []TopicIDPartitions
	// MayRead, when set, says whether the caller may read a topic: a
	// server with an Authorizer sets it to READ on the topic. The server
	// has already answered TOPIC_AUTHORIZATION_FAILED for the request's
	// own topics it refuses, and left them out; a handler asks MayRead
	// about the partitions of the session the request does not name,
	// and answers those it refuses the same. Nil allows every one.
	MayRead func(topic string) bool
}

// ShareAcquireMode is how a share fetch's MaxRecords bounds the records
// it acquires: the ShareAcquireMode of ShareFetch version 2 (KIP-1206),
// the share consumer's share.acquire.mode.
type ShareAcquireMode int8

// The share acquire modes, with their ids on the wire.
const (
	// ShareAcquireBatchOptimized acquires whole batches: MaxRecords is a
	// soft limit, exceeded to finish the batch that reaches it. It is the
	// default, and the only mode before version 2.
	ShareAcquireBatchOptimized ShareAcquireMode = 0
	// ShareAcquireRecordLimit acquires at most MaxRecords records, ending
	// in the middle of a batch if need be.
	ShareAcquireRecordLimit ShareAcquireMode = 1
)

// ShareFetchTopic is a topic of a share fetch, named by its id.
type ShareFetchTopic struct {
	// TopicID is the topic's id.
	TopicID [16]byte
	// Partitions are its partitions to fetch from.
	Partitions []ShareFetchPartition
}

// ShareFetchPartition is a partition of a share fetch.
type ShareFetchPartition struct {
	// Partition is the partition's index.
	Partition int32
	// AcknowledgementBatches acknowledge records of the partition fetched
	// before, piggybacked on the fetch.
	AcknowledgementBatches []AcknowledgementBatch
}

// AcknowledgeType is how a member acknowledges a record it acquired.
type AcknowledgeType int8

// The acknowledgement types of KIP-932 and KIP-1222.
const (
	// AcknowledgeGap marks an offset that holds no record (compacted
	// away, or a transaction's control record).
	AcknowledgeGap AcknowledgeType = 0
	// AcknowledgeAccept says the record was processed.
	AcknowledgeAccept AcknowledgeType = 1
	// AcknowledgeRelease gives the record back, to be delivered again.
	AcknowledgeRelease AcknowledgeType = 2
	// AcknowledgeReject says the record cannot be processed: it is not
	// delivered again.
	AcknowledgeReject AcknowledgeType = 3
	// AcknowledgeRenew says the member is still processing the record: its
	// acquisition lock starts again, for a full AcquisitionLockTimeout,
	// and it stays the member's (KIP-1222). Only in version 2 requests
	// that set IsRenewAck.
	AcknowledgeRenew AcknowledgeType = 4
)

// AcknowledgementBatch acknowledges a range of offsets.
type AcknowledgementBatch struct {
	// FirstOffset and LastOffset are the range's first and last offsets,
	// both included.
	FirstOffset, LastOffset int64
	// AcknowledgeTypes are one per offset of the range, or a single one
	// for all of them.
	AcknowledgeTypes []AcknowledgeType
}

// ShareFetchResponse answers a share fetch.
type ShareFetchResponse struct {
	// Err is nil, or why the whole request failed:
	// kafka.ErrShareSessionNotFound, ErrInvalidShareSessionEpoch,
	// ErrShareSessionLimitReached, ErrGroupAuthorizationFailed, ...
	Err error
	// AcquisitionLockTimeout is how long the member holds the records it
	// acquired before they may go to another.
	AcquisitionLockTimeout time.Duration
	// Topics answer the session's partitions that have records, errors
	// or acknowledgement results.
	Topics []ShareFetchTopicResponse
	// NodeEndpoints are the addresses of the leaders named in the
	// CurrentLeader of partitions answered kafka.ErrNotLeaderOrFollower.
	NodeEndpoints []Broker
}

// ShareFetchTopicResponse answers a topic of a share fetch.
type ShareFetchTopicResponse struct {
	// TopicID is the topic's id.
	TopicID [16]byte
	// Partitions answer its partitions.
	Partitions []ShareFetchPartitionResponse
}

// ShareFetchPartitionResponse answers a partition of a share fetch.
type ShareFetchPartitionResponse struct {
	// Partition is the partition's index.
	Partition int32
	// Err is nil, or why the partition was not fetched:
	// kafka.ErrNotLeaderOrFollower, ErrUnknownTopicOrPartition,
	// ErrTopicAuthorizationFailed, ...
	Err error
	// AcknowledgeErr is nil, or why the partition's acknowledgements were
	// not applied: kafka.ErrInvalidRecordState, ...
	AcknowledgeErr error
	// CurrentLeader is the partition's leader, as the node knows it.
	CurrentLeader LeaderIDAndEpoch
	// Records holds whole record batches, as the log stores them; empty
	// when there are none. The response owns them: a handler hands over
	// bytes it does not change afterwards, and a TCPClient's caller gets
	// bytes of its own.
	Records []byte
	// AcquiredRecords are the ranges of Records' offsets the member
	// acquired; only those are its to process and acknowledge.
	AcquiredRecords []AcquiredRecords
}

// LeaderIDAndEpoch is a partition's leader and its epoch.
type LeaderIDAndEpoch struct {
	// LeaderID is the leader's node id, or -1 when unknown.
	LeaderID int32
	// LeaderEpoch is the leader's epoch, or -1 when unknown.
	LeaderEpoch int32
}

// AcquiredRecords is a range of offsets a member acquired.
type AcquiredRecords struct {
	// FirstOffset and LastOffset are the range's first and last offsets,
	// both included.
	FirstOffset, LastOffset int64
	// DeliveryCount is how many times the records were delivered,
	// counting this one.
	DeliveryCount int16
}

// ShareAcknowledgeRequest acknowledges records a member of a share group
// acquired, in its share session, without fetching.
type ShareAcknowledgeRequest struct {
	// Group is the group id.
	Group string
	// MemberID is the member's id.
	MemberID string
	// ShareSessionEpoch is the share session's epoch, as in
	// ShareFetchRequest; -1 closes the session after the acknowledgements.
	ShareSessionEpoch int32
	// IsRenewAck says the acknowledgements include AcknowledgeRenew
	// (KIP-1222). Version 2 on.
	IsRenewAck bool
	// Topics hold the acknowledgements.
	Topics []ShareAcknowledgeTopic
}

// ShareAcknowledgeTopic holds the acknowledgements of a topic, named by
// its id.
type ShareAcknowledgeTopic struct {
	// TopicID is the topic's id.
	TopicID [16]byte
	// Partitions are its partitions' acknowledgements.
	Partitions []ShareAcknowledgePartition
}

// ShareAcknowledgePartition holds the acknowledgements of a partition.
type ShareAcknowledgePartition struct {
	// Partition is the partition's index.
	Partition int32
	// AcknowledgementBatches are the acknowledgements.
	AcknowledgementBatches []AcknowledgementBatch
}

// ShareAcknowledgeResponse answers a ShareAcknowledge.
type ShareAcknowledgeResponse struct {
	// Err is nil, or why the whole request failed:
	// kafka.ErrShareSessionNotFound, ErrInvalidShareSessionEpoch, ...
	Err error
	// AcquisitionLockTimeout is how long the member holds the records
	// whose locks it renewed, from now (KIP-1222). Version 2 on.
	AcquisitionLockTimeout time.Duration
	// Topics answer the request's topics.
	Topics []ShareAcknowledgeTopicResponse
	// NodeEndpoints are the addresses of the leaders named in the
	// CurrentLeader of partitions answered kafka.ErrNotLeaderOrFollower.
	NodeEndpoints []Broker
}

// ShareAcknowledgeTopicResponse answers a topic of a ShareAcknowledge.
type ShareAcknowledgeTopicResponse struct {
	// TopicID is the topic's id.
	TopicID [16]byte
	// Partitions answer its partitions.
	Partitions []ShareAcknowledgePartitionResponse
}

// ShareAcknowledgePartitionResponse answers a partition of a
// ShareAcknowledge.
type ShareAcknowledgePartitionResponse struct {
	// Partition is the partition's index.
	Partition int32
	// Err is nil, or why its acknowledgements were not applied:
	// kafka.ErrInvalidRecordState, ErrNotLeaderOrFollower,
	// ErrTopicAuthorizationFailed, ...
	Err error
	// CurrentLeader is the partition's leader, as the node knows it.
	CurrentLeader LeaderIDAndEpoch
}

// ShareGroupHeartbeat sends a ShareGroupHeartbeat request.
func (c *TCPClient) ShareGroupHeartbeat(ctx context.Context, req *ShareGroupHeartbeatRequest) (*ShareGroupHeartbeatResponse, error) {
	return roundTrip(ctx, c, connOther, 76, req, shareGroupHeartbeatToWire, shareGroupHeartbeatResponseFromWire)
}

// ShareGroupDescribe sends a ShareGroupDescribe request.
func (c *TCPClient) ShareGroupDescribe(ctx context.Context, req *ShareGroupDescribeRequest) (*ShareGroupDescribeResponse, error) {
	return roundTrip(ctx, c, connOther, 77, req, shareGroupDescribeToWire, shareGroupDescribeResponseFromWire)
}

// ShareFetch sends a ShareFetch request, on the connection fetches go
// by: its long poll holds up no other request, and the requests of a
// share session keep their order. To a node that speaks only version 1,
// one that renews locks or asks for ShareAcquireRecordLimit fails with
// kafka.ErrUnsupportedVersion, unsent, as Kafka's client refuses to
// build it.
func (c *TCPClient) ShareFetch(ctx context.Context, req *ShareFetchRequest) (*ShareFetchResponse, error) {
	return roundTripUpTo(ctx, c, connFetch, 78, 0, req, shareFetchFits, shareFetchToWire, shareFetchResponseFromWire)
}

// ShareAcknowledge sends a ShareAcknowledge request, on the connection
// of ShareFetch, after the fetches sent before it. To a node that speaks
// only version 1, one that renews locks fails with
// kafka.ErrUnsupportedVersion, unsent.
func (c *TCPClient) ShareAcknowledge(ctx context.Context, req *ShareAcknowledgeRequest) (*ShareAcknowledgeResponse, error) {
	return roundTripUpTo(ctx, c, connFetch, 79, 0, req, shareAcknowledgeFits, shareAcknowledgeToWire, shareAcknowledgeResponseFromWire)
}

// shareFetchFits reports whether version v of ShareFetch carries req:
// before version 2 there is no renewing and no mode but
// ShareAcquireBatchOptimized.
func shareFetchFits(req *ShareFetchRequest, v int16) bool {
	if v >= 2 {
		return true
	}
	if req.IsRenewAck || req.ShareAcquireMode != ShareAcquireBatchOptimized {
		return false
	}
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			if renews(p.AcknowledgementBatches) {
				return false
			}
		}
	}
	return true
}

// shareAcknowledgeFits reports whether version v of ShareAcknowledge
// carries req: before version 2 there is no renewing.
func shareAcknowledgeFits(req *ShareAcknowledgeRequest, v int16) bool {
	if v >= 2 {
		return true
	}
	if req.IsRenewAck {
		return false
	}
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			if renews(p.AcknowledgementBatches) {
				return false
			}
		}
	}
	return true
}

// renews reports whether any of batches acknowledges AcknowledgeRenew.
func renews(batches []AcknowledgementBatch) bool {
	for _, b := range batches {
		if slices.Contains(b.AcknowledgeTypes, AcknowledgeRenew) {
			return true
		}
	}
	return false
}

// dispatchShareGroup answers the share group APIs with sg, or reports
// that req is none of them. A ShareFetch gets MayRead from the server's
// Authorizer.
func (s *Server) dispatchShareGroup(ctx context.Context, sg ShareGroupClient, req kmsg.Request, h requestHeader, p peer) (kmsg.Response, bool, error) {
	var resp kmsg.Response
	var err error
	version := h.apiVersion
	switch req := req.(type) {
	case *kmsg.ShareGroupHeartbeatRequest:
		r := shareGroupHeartbeatFromWire(req)
		r.ClientID, r.ClientHost = deref(h.clientID), p.clientHost
		resp, err = answerWith(ctx, sg.ShareGroupHeartbeat, r, shareGroupHeartbeatResponseToWire, version)
	case *kmsg.ShareGroupDescribeRequest:
		resp, err = answerWith(ctx, sg.ShareGroupDescribe, shareGroupDescribeFromWire(req), shareGroupDescribeResponseToWire, version)
	case *kmsg.ShareFetchRequest:
		r := shareFetchFromWire(req)
		if s.opts.Authorizer != nil {
			r.MayRead = p.guard(s.opts.Authorizer).mayTopic(auth.ReadOperation)
		}
		resp, err = answerWith(ctx, sg.ShareFetch, r, shareFetchResponseToWire, version)
	case *kmsg.ShareAcknowledgeRequest:
		resp, err = answerWith(ctx, sg.ShareAcknowledge, shareAcknowledgeFromWire(req), shareAcknowledgeResponseToWire, version)
	default:
		return nil, false, nil
	}
	return resp, true, err
}

// Authorization, as Kafka's KafkaApis checks the share group APIs.

// authorizeShareGroupHeartbeat checks READ on the group, then DESCRIBE on
// each topic subscribed to: one refused refuses the heartbeat,
// TOPIC_AUTHORIZATION_FAILED (KAFKA-18817).
func authorizeShareGroupHeartbeat(g guard, req *kmsg.ShareGroupHeartbeatRequest, version int16) authorization {
	if !g.may(auth.ReadOperation, auth.GroupResource, req.GroupID) {
		return refusedWhole(req, version, kafka.ErrGroupAuthorizationFailed)
	}
	describe := g.mayTopic(auth.DescribeOperation)
	for _, topic := range req.SubscribedTopicNames {
		if !describe(topic) {
			return refusedWhole(req, version, kafka.ErrTopicAuthorizationFailed)
		}
	}
	return authorization{}
}

// errDescribedTopics is what a share group description says in place of
// a group one of whose members is assigned a topic the principal may not
// describe.
var errDescribedTopics = fmt.Errorf("%w: the group has described topic(s) that the client is not authorized to describe", kafka.ErrTopicAuthorizationFailed)

// authorizeShareGroupDescribe checks DESCRIBE on each group, then on each
// topic its members are assigned: a group with one refused is answered
// TOPIC_AUTHORIZATION_FAILED, without its members.
func authorizeShareGroupDescribe(g guard, req *kmsg.ShareGroupDescribeRequest, version int16) authorization {
	kept, refused := splitBy(req.GroupIDs, func(group string) bool { return g.may(auth.DescribeOperation, auth.GroupResource, group) })
	req.GroupIDs = kept
	describe := g.mayTopic(auth.DescribeOperation)
	return partly(req, version, len(kept), func(r kmsg.Response) {
		resp := r.(*kmsg.ShareGroupDescribeResponse)
		for i := range resp.Groups {
			if !mayDescribeAssigned(resp.Groups[i], describe) {
				wg := kmsg.NewShareGroupDescribeResponseGroup()
				wg.GroupID, wg.ErrorCode, wg.ErrorMessage = resp.Groups[i].GroupID, kafka.CodeOf(errDescribedTopics), errorMessage(errDescribedTopics)
				resp.Groups[i] = wg
			}
		}
		for _, group := range refused {
			wg := kmsg.NewShareGroupDescribeResponseGroup()
			wg.GroupID, wg.ErrorCode = group, kafka.ErrGroupAuthorizationFailed.Code
			resp.Groups = append(resp.Groups, wg)
		}
	})
}

// mayDescribeAssigned reports whether describe allows every topic the
// members of g are assigned.
func mayDescribeAssigned(g kmsg.ShareGroupDescribeResponseGroup, describe func(string) bool) bool {
	for _, m := range g.Members {
		for _, t := range m.Assignment.TopicPartitions {
			if !describe(t.Topic) {
				return false
			}
		}
	}
	return true
}

// authorizeShareFetch checks READ on each topic of the request the node
// knows (names: the node's topics by id), once the group was: the
// refused topics leave the request, and each of their partitions is
// answered TOPIC_AUTHORIZATION_FAILED, its acknowledgements too when it
// carried some. A topic id the node does not know goes to the handler,
// which answers UNKNOWN_TOPIC_ID. The handler sees the request even when
// none of its topics is left: it still moves the share session on.
func authorizeShareFetch(g guard, req *kmsg.ShareFetchRequest, names map[[16]byte]string) authorization {
	kept, refused := splitBy(req.Topics, func(t kmsg.ShareFetchRequestTopic) bool { return mayReadID(g, names, t.TopicID) })
	if len(refused) == 0 {
		return authorization{}
	}
	req.Topics = kept
	return authorization{merge: func(r kmsg.Response) {
		resp := r.(*kmsg.ShareFetchResponse)
		if resp.ErrorCode != 0 {
			return // the whole request failed, as Kafka answers it before looking at topics
		}
		for _, t := range refused {
			for _, p := range t.Partitions {
				wp := kmsg.NewShareFetchResponseTopicPartition()
				wp.Partition, wp.ErrorCode, wp.Records = p.Partition, kafka.ErrTopicAuthorizationFailed.Code, []byte{}
				if len(p.AcknowledgementBatches) > 0 {
					wp.AcknowledgeErrorCode = kafka.ErrTopicAuthorizationFailed.Code
				}
				addShareFetchPartition(resp, t.TopicID, wp)
			}
		}
	}}
}

// addShareFetchPartition adds p to the answer's topic id, where the
// handler may have answered other partitions of it (its session's).
func addShareFetchPartition(resp *kmsg.ShareFetchResponse, id [16]byte, p kmsg.ShareFetchResponseTopicPartition) {
	for i := range resp.Topics {
		if resp.Topics[i].TopicID == id {
			resp.Topics[i].Partitions = append(resp.Topics[i].Partitions, p)
			return
		}
	}
	t := kmsg.NewShareFetchResponseTopic()
	t.TopicID, t.Partitions = id, []kmsg.ShareFetchResponseTopicPartition{p}
	resp.Topics = append(resp.Topics, t)
}

// authorizeShareAcknowledge checks READ on each topic named, as
// authorizeShareFetch does: each partition of a refused topic is answered
// TOPIC_AUTHORIZATION_FAILED.
func authorizeShareAcknowledge(g guard, req *kmsg.ShareAcknowledgeRequest, names map[[16]byte]string) authorization {
	kept, refused := splitBy(req.Topics, func(t kmsg.ShareAcknowledgeRequestTopic) bool { return mayReadID(g, names, t.TopicID) })
	if len(refused) == 0 {
		return authorization{}
	}
	req.Topics = kept
	return authorization{merge: func(r kmsg.Response) {
		resp := r.(*kmsg.ShareAcknowledgeResponse)
		if resp.ErrorCode != 0 {
			return
		}
		for _, t := range refused {
			wt := kmsg.NewShareAcknowledgeResponseTopic()
			wt.TopicID = t.TopicID
			for _, p := range t.Partitions {
				wp := kmsg.NewShareAcknowledgeResponseTopicPartition()
				wp.Partition, wp.ErrorCode = p.Partition, kafka.ErrTopicAuthorizationFailed.Code
				wt.Partitions = append(wt.Partitions, wp)
			}
			resp.Topics = append(resp.Topics, wt)
		}
	}}
}

// mayReadID reports whether the principal may read the topic of id: a
// topic the node does not know is the handler's to answer.
func mayReadID(g guard, names map[[16]byte]string, id [16]byte) bool {
	name, ok := names[id]
	return !ok || g.may(auth.ReadOperation, auth.TopicResource, name)
}

// authorizeShare checks a ShareFetch or ShareAcknowledge: READ on the
// group, else the whole request is refused, then READ on each topic.
// Their topics are named by id: the node's metadata names them, as
// Kafka's metadata cache does, asked only when the group is allowed and
// the request names a topic.
func (s *Server) authorizeShare(ctx context.Context, g guard, req kmsg.Request, version int16) (authorization, error) {
	var group *string
	var topics int
	switch req := req.(type) {
	case *kmsg.ShareFetchRequest:
		group, topics = req.GroupID, len(req.Topics)
	case *kmsg.ShareAcknowledgeRequest:
		group, topics = req.GroupID, len(req.Topics)
	}
	if !g.may(auth.ReadOperation, auth.GroupResource, deref(group)) {
		return refusedWhole(req, version, kafka.ErrGroupAuthorizationFailed), nil
	}
	if topics == 0 {
		return authorization{}, nil
	}
	md, err := s.handler.Metadata(ctx, &MetadataRequest{})
	if err != nil {
		return authorization{}, fmt.Errorf("transport: name the topics of %s: %w", kmsg.NameForKey(req.Key()), err)
	}
	names := make(map[[16]byte]string, len(md.Topics))
	for _, t := range md.Topics {
		if t.Err == nil {
			names[t.TopicID] = t.Topic
		}
	}
	switch req := req.(type) {
	case *kmsg.ShareFetchRequest:
		return authorizeShareFetch(g, req, names), nil
	case *kmsg.ShareAcknowledgeRequest:
		return authorizeShareAcknowledge(g, req, names), nil
	}
	return authorization{}, nil
}

// To and from the wire.

func shareGroupHeartbeatToWire(r *ShareGroupHeartbeatRequest, version int16) *kmsg.ShareGroupHeartbeatRequest {
	w := versioned(kmsg.NewPtrShareGroupHeartbeatRequest(), version)
	w.GroupID, w.MemberID, w.MemberEpoch = r.Group, r.MemberID, r.MemberEpoch
	w.RackID, w.SubscribedTopicNames = r.RackID, r.SubscribedTopicNames
	return w
}

func shareGroupHeartbeatFromWire(w *kmsg.ShareGroupHeartbeatRequest) *ShareGroupHeartbeatRequest {
	return &ShareGroupHeartbeatRequest{Group: w.GroupID, MemberID: w.MemberID, MemberEpoch: w.MemberEpoch,
		RackID: w.RackID, SubscribedTopicNames: w.SubscribedTopicNames}
}

func shareGroupHeartbeatResponseToWire(r *ShareGroupHeartbeatResponse, version int16) *kmsg.ShareGroupHeartbeatResponse {
	w := versioned(kmsg.NewPtrShareGroupHeartbeatResponse(), version)
	w.ErrorCode, w.ErrorMessage = kafka.CodeOf(r.Err), errorMessage(r.Err)
	w.MemberID, w.MemberEpoch, w.HeartbeatIntervalMillis = nullable(r.MemberID), r.MemberEpoch, r.HeartbeatIntervalMillis
	if r.Assignment != nil {
		a := kmsg.NewShareGroupHeartbeatResponseAssignment()
		a.TopicPartitions = each(r.Assignment, func(p TopicIDPartitions) kmsg.ShareGroupHeartbeatResponseAssignmentTopicPartition {
			return kmsg.ShareGroupHeartbeatResponseAssignmentTopicPartition{TopicID: p.TopicID, Partitions: orEmpty(p.Partitions)}
		})
		w.Assignment = &a
	}
	return w
}

func shareGroupHeartbeatResponseFromWire(w *kmsg.ShareGroupHeartbeatResponse) *ShareGroupHeartbeatResponse {
	r := &ShareGroupHeartbeatResponse{Err: wireError(w.ErrorCode, w.ErrorMessage), MemberID: deref(w.MemberID),
		MemberEpoch: w.MemberEpoch, HeartbeatIntervalMillis: w.HeartbeatIntervalMillis}
	if w.Assignment != nil {
		r.Assignment = each(orEmpty(w.Assignment.TopicPartitions), func(t kmsg.ShareGroupHeartbeatResponseAssignmentTopicPartition) TopicIDPartitions {
			return TopicIDPartitions{TopicID: t.TopicID, Partitions: orEmpty(t.Partitions)}
		})
	}
	return r
}

func shareGroupDescribeToWire(r *ShareGroupDescribeRequest, version int16) *kmsg.ShareGroupDescribeRequest {
	w := versioned(kmsg.NewPtrShareGroupDescribeRequest(), version)
	w.GroupIDs = orEmpty(r.Groups)
	return w
}

func shareGroupDescribeFromWire(w *kmsg.ShareGroupDescribeRequest) *ShareGroupDescribeRequest {
	return &ShareGroupDescribeRequest{Groups: orEmpty(w.GroupIDs)}
}

func shareGroupDescribeResponseToWire(r *ShareGroupDescribeResponse, version int16) *kmsg.ShareGroupDescribeResponse {
	w := versioned(kmsg.NewPtrShareGroupDescribeResponse(), version)
	w.Groups = each(orEmpty(r.Groups), func(g ShareGroupDescription) kmsg.ShareGroupDescribeResponseGroup {
		wg := kmsg.NewShareGroupDescribeResponseGroup() // AuthorizedOperations: not asked for, or not known
		wg.GroupID, wg.ErrorCode, wg.ErrorMessage = g.Group, kafka.CodeOf(g.Err), errorMessage(g.Err)
		wg.GroupState, wg.GroupEpoch, wg.AssignmentEpoch, wg.Assignor = g.State, g.Epoch, g.AssignmentEpoch, g.AssignorName
		wg.Members = each(orEmpty(g.Members), func(m ShareGroupMemberDescription) kmsg.ShareGroupDescribeResponseGroupMember {
			wm := kmsg.NewShareGroupDescribeResponseGroupMember()
			wm.MemberID, wm.RackID, wm.MemberEpoch = m.MemberID, nullable(m.RackID), m.MemberEpoch
			wm.ClientID, wm.ClientHost, wm.SubscribedTopicNames = m.ClientID, m.ClientHost, orEmpty(m.SubscribedTopicNames)
			wm.Assignment.TopicPartitions = each(orEmpty(m.Assignment), func(p NamedTopicIDPartitions) kmsg.ShareGroupDescribeResponseGroupMemberAssignmentTopicPartition {
				return kmsg.ShareGroupDescribeResponseGroupMemberAssignmentTopicPartition{TopicID: p.TopicID, Topic: p.Topic, Partitions: orEmpty(p.Partitions)}
			})
			return wm
		})
		return wg
	})
	return w
}

func shareGroupDescribeResponseFromWire(w *kmsg.ShareGroupDescribeResponse) *ShareGroupDescribeResponse {
	return &ShareGroupDescribeResponse{Groups: each(orEmpty(w.Groups), func(wg kmsg.ShareGroupDescribeResponseGroup) ShareGroupDescription {
		return ShareGroupDescription{
			Group: wg.GroupID, Err: wireError(wg.ErrorCode, wg.ErrorMessage), State: wg.GroupState, Epoch: wg.GroupEpoch,
			AssignmentEpoch: wg.AssignmentEpoch, AssignorName: wg.Assignor,
			Members: each(orEmpty(wg.Members), func(wm kmsg.ShareGroupDescribeResponseGroupMember) ShareGroupMemberDescription {
				return ShareGroupMemberDescription{
					MemberID: wm.MemberID, RackID: deref(wm.RackID), MemberEpoch: wm.MemberEpoch,
					ClientID: wm.ClientID, ClientHost: wm.ClientHost, SubscribedTopicNames: orEmpty(wm.SubscribedTopicNames),
					Assignment: each(orEmpty(wm.Assignment.TopicPartitions), func(t kmsg.ShareGroupDescribeResponseGroupMemberAssignmentTopicPartition) NamedTopicIDPartitions {
						return NamedTopicIDPartitions{TopicID: t.TopicID, Topic: t.Topic, Partitions: orEmpty(t.Partitions)}
					}),
				}
			}),
		}
	})}
}

// acknowledgeTypesToWire and acknowledgeTypesFromWire convert the
// acknowledgement types of a batch.
func acknowledgeTypesToWire(ts []AcknowledgeType) []int8 {
	return each(orEmpty(ts), func(t AcknowledgeType) int8 { return int8(t) })
}

func acknowledgeTypesFromWire(ts []int8) []AcknowledgeType {
	return each(orEmpty(ts), func(t int8) AcknowledgeType { return AcknowledgeType(t) })
}

func shareFetchToWire(r *ShareFetchRequest, version int16) *kmsg.ShareFetchRequest {
	w := versioned(kmsg.NewPtrShareFetchRequest(), version)
	w.GroupID, w.MemberID, w.ShareSessionEpoch = nullable(r.Group), nullable(r.MemberID), r.ShareSessionEpoch
	w.MaxWaitMillis, w.MinBytes, w.MaxBytes = millis(r.MaxWait), r.MinBytes, r.MaxBytes
	w.MaxRecords, w.BatchSize = r.MaxRecords, r.BatchSize
	w.ShareAcquireMode, w.IsRenewAck = int8(r.ShareAcquireMode), r.IsRenewAck
	w.Topics = each(orEmpty(r.Topics), func(t ShareFetchTopic) kmsg.ShareFetchRequestTopic {
		return kmsg.ShareFetchRequestTopic{TopicID: t.TopicID,
			Partitions: each(orEmpty(t.Partitions), func(p ShareFetchPartition) kmsg.ShareFetchRequestTopicPartition {
				wp := kmsg.NewShareFetchRequestTopicPartition()
				wp.Partition = p.Partition
				wp.AcknowledgementBatches = each(orEmpty(p.AcknowledgementBatches), func(b AcknowledgementBatch) kmsg.ShareFetchRequestTopicPartitionAcknowledgementBatch {
					return kmsg.ShareFetchRequestTopicPartitionAcknowledgementBatch{FirstOffset: b.FirstOffset, LastOffset: b.LastOffset,
						AcknowledgeTypes: acknowledgeTypesToWire(b.AcknowledgeTypes)}
				})
				return wp
			})}
	})
	w.ForgottenTopicsData = each(orEmpty(r.ForgottenTopics), func(p TopicIDPartitions) kmsg.ShareFetchRequestForgottenTopicsData {
		return kmsg.ShareFetchRequestForgottenTopicsData{TopicID: p.TopicID, Partitions: orEmpty(p.Partitions)}
	})
	return w
}

func shareFetchFromWire(w *kmsg.ShareFetchRequest) *ShareFetchRequest {
	return &ShareFetchRequest{Group: deref(w.GroupID), MemberID: deref(w.MemberID), ShareSessionEpoch: w.ShareSessionEpoch,
		MaxWait: fromMillis(w.MaxWaitMillis), MinBytes: w.MinBytes, MaxBytes: w.MaxBytes, MaxRecords: w.MaxRecords, BatchSize: w.BatchSize,
		ShareAcquireMode: ShareAcquireMode(w.ShareAcquireMode), IsRenewAck: w.IsRenewAck,
		Topics: each(orEmpty(w.Topics), func(wt kmsg.ShareFetchRequestTopic) ShareFetchTopic {
			return ShareFetchTopic{TopicID: wt.TopicID,
				Partitions: each(orEmpty(wt.Partitions), func(wp kmsg.ShareFetchRequestTopicPartition) ShareFetchPartition {
					return ShareFetchPartition{Partition: wp.Partition,
						AcknowledgementBatches: each(orEmpty(wp.AcknowledgementBatches), func(b kmsg.ShareFetchRequestTopicPartitionAcknowledgementBatch) AcknowledgementBatch {
							return AcknowledgementBatch{FirstOffset: b.FirstOffset, LastOffset: b.LastOffset, AcknowledgeTypes: acknowledgeTypesFromWire(b.AcknowledgeTypes)}
						})}
				})}
		}),
		ForgottenTopics: each(orEmpty(w.ForgottenTopicsData), func(t kmsg.ShareFetchRequestForgottenTopicsData) TopicIDPartitions {
			return TopicIDPartitions{TopicID: t.TopicID, Partitions: orEmpty(t.Partitions)}
		}),
	}
}

// nodeEndpointsToWire translates the node endpoints of a ShareFetch or
// ShareAcknowledge answer: node makes one of a node's fields.
func nodeEndpointsToWire[W any](nodes []Broker, node func(id int32, host string, port int32, rack *string) W) []W {
	return each(orEmpty(nodes), func(b Broker) W { return node(b.NodeID, b.Host, b.Port, nullable(b.Rack)) })
}

func shareFetchResponseToWire(r *ShareFetchResponse, version int16) *kmsg.ShareFetchResponse {
	w := versioned(kmsg.NewPtrShareFetchResponse(), version)
	w.ErrorCode, w.ErrorMessage, w.AcquisitionLockTimeoutMillis = kafka.CodeOf(r.Err), errorMessage(r.Err), millis(r.AcquisitionLockTimeout)
	w.Topics = each(orEmpty(r.Topics), func(t ShareFetchTopicResponse) kmsg.ShareFetchResponseTopic {
		return kmsg.ShareFetchResponseTopic{TopicID: t.TopicID,
			Partitions: each(orEmpty(t.Partitions), func(p ShareFetchPartitionResponse) kmsg.ShareFetchResponseTopicPartition {
				wp := kmsg.NewShareFetchResponseTopicPartition()
				wp.Partition, wp.ErrorCode, wp.ErrorMessage = p.Partition, kafka.CodeOf(p.Err), errorMessage(p.Err)
				wp.AcknowledgeErrorCode, wp.AcknowledgeErrorMessage = kafka.CodeOf(p.AcknowledgeErr), errorMessage(p.AcknowledgeErr)
				wp.CurrentLeader.LeaderID, wp.CurrentLeader.LeaderEpoch = p.CurrentLeader.LeaderID, p.CurrentLeader.LeaderEpoch
				// Empty, not null: Records is not nullable from version 1.
				wp.Records = orEmpty(p.Records)
				wp.AcquiredRecords = each(orEmpty(p.AcquiredRecords), func(a AcquiredRecords) kmsg.ShareFetchResponseTopicPartitionAcquiredRecord {
					return kmsg.ShareFetchResponseTopicPartitionAcquiredRecord{FirstOffset: a.FirstOffset, LastOffset: a.LastOffset, DeliveryCount: a.DeliveryCount}
				})
				return wp
			})}
	})
	w.NodeEndpoints = nodeEndpointsToWire(r.NodeEndpoints, func(id int32, host string, port int32, rack *string) kmsg.ShareFetchResponseNodeEndpoint {
		return kmsg.ShareFetchResponseNodeEndpoint{NodeID: id, Host: host, Port: port, Rack: rack}
	})
	return w
}

func shareFetchResponseFromWire(w *kmsg.ShareFetchResponse) *ShareFetchResponse {
	return &ShareFetchResponse{Err: wireError(w.ErrorCode, w.ErrorMessage), AcquisitionLockTimeout: fromMillis(w.AcquisitionLockTimeoutMillis),
		Topics: each(orEmpty(w.Topics), func(wt kmsg.ShareFetchResponseTopic) ShareFetchTopicResponse {
			return ShareFetchTopicResponse{TopicID: wt.TopicID,
				Partitions: each(orEmpty(wt.Partitions), func(wp kmsg.ShareFetchResponseTopicPartition) ShareFetchPartitionResponse {
					return ShareFetchPartitionResponse{Partition: wp.Partition, Err: wireError(wp.ErrorCode, wp.ErrorMessage),
						AcknowledgeErr: wireError(wp.AcknowledgeErrorCode, wp.AcknowledgeErrorMessage),
						CurrentLeader:  LeaderIDAndEpoch{LeaderID: wp.CurrentLeader.LeaderID, LeaderEpoch: wp.CurrentLeader.LeaderEpoch},
						Records:        orEmpty(wp.Records),
						AcquiredRecords: each(orEmpty(wp.AcquiredRecords), func(a kmsg.ShareFetchResponseTopicPartitionAcquiredRecord) AcquiredRecords {
							return AcquiredRecords{FirstOffset: a.FirstOffset, LastOffset: a.LastOffset, DeliveryCount: a.DeliveryCount}
						})}
				})}
		}),
		NodeEndpoints: each(orEmpty(w.NodeEndpoints), func(n kmsg.ShareFetchResponseNodeEndpoint) Broker {
			return Broker{NodeID: n.NodeID, Host: n.Host, Port: n.Port, Rack: deref(n.Rack)}
		}),
	}
}

func shareAcknowledgeToWire(r *ShareAcknowledgeRequest, version int16) *kmsg.ShareAcknowledgeRequest {
	w := versioned(kmsg.NewPtrShareAcknowledgeRequest(), version)
	w.GroupID, w.MemberID, w.ShareSessionEpoch = nullable(r.Group), nullable(r.MemberID), r.ShareSessionEpoch
	w.IsRenewAck = r.IsRenewAck
	w.Topics = each(orEmpty(r.Topics), func(t ShareAcknowledgeTopic) kmsg.ShareAcknowledgeRequestTopic {
		return kmsg.ShareAcknowledgeRequestTopic{TopicID: t.TopicID,
			Partitions: each(orEmpty(t.Partitions), func(p ShareAcknowledgePartition) kmsg.ShareAcknowledgeRequestTopicPartition {
				return kmsg.ShareAcknowledgeRequestTopicPartition{Partition: p.Partition,
					AcknowledgementBatches: each(orEmpty(p.AcknowledgementBatches), func(b AcknowledgementBatch) kmsg.ShareAcknowledgeRequestTopicPartitionAcknowledgementBatch {
						return kmsg.ShareAcknowledgeRequestTopicPartitionAcknowledgementBatch{FirstOffset: b.FirstOffset, LastOffset: b.LastOffset,
							AcknowledgeTypes: acknowledgeTypesToWire(b.AcknowledgeTypes)}
					})}
			})}
	})
	return w
}

func shareAcknowledgeFromWire(w *kmsg.ShareAcknowledgeRequest) *ShareAcknowledgeRequest {
	return &ShareAcknowledgeRequest{Group: deref(w.GroupID), MemberID: deref(w.MemberID), ShareSessionEpoch: w.ShareSessionEpoch, IsRenewAck: w.IsRenewAck,
		Topics: each(orEmpty(w.Topics), func(wt kmsg.ShareAcknowledgeRequestTopic) ShareAcknowledgeTopic {
			return ShareAcknowledgeTopic{TopicID: wt.TopicID,
				Partitions: each(orEmpty(wt.Partitions), func(wp kmsg.ShareAcknowledgeRequestTopicPartition) ShareAcknowledgePartition {
					return ShareAcknowledgePartition{Partition: wp.Partition,
						AcknowledgementBatches: each(orEmpty(wp.AcknowledgementBatches), func(b kmsg.ShareAcknowledgeRequestTopicPartitionAcknowledgementBatch) AcknowledgementBatch {
							return AcknowledgementBatch{FirstOffset: b.FirstOffset, LastOffset: b.LastOffset, AcknowledgeTypes: acknowledgeTypesFromWire(b.AcknowledgeTypes)}
						})}
				})}
		})}
}

func shareAcknowledgeResponseToWire(r *ShareAcknowledgeResponse, version int16) *kmsg.ShareAcknowledgeResponse {
	w := versioned(kmsg.NewPtrShareAcknowledgeResponse(), version)
	w.ErrorCode, w.ErrorMessage, w.AcquisitionLockTimeoutMillis = kafka.CodeOf(r.Err), errorMessage(r.Err), millis(r.AcquisitionLockTimeout)
	w.Topics = each(orEmpty(r.Topics), func(t ShareAcknowledgeTopicResponse) kmsg.ShareAcknowledgeResponseTopic {
		return kmsg.ShareAcknowledgeResponseTopic{TopicID: t.TopicID,
			Partitions: each(orEmpty(t.Partitions), func(p ShareAcknowledgePartitionResponse) kmsg.ShareAcknowledgeResponseTopicPartition {
				wp := kmsg.NewShareAcknowledgeResponseTopicPartition()
				wp.Partition, wp.ErrorCode, wp.ErrorMessage = p.Partition, kafka.CodeOf(p.Err), errorMessage(p.Err)
				wp.CurrentLeader.LeaderID, wp.CurrentLeader.LeaderEpoch = p.CurrentLeader.LeaderID, p.CurrentLeader.LeaderEpoch
				return wp
			})}
	})
	w.NodeEndpoints = nodeEndpointsToWire(r.NodeEndpoints, func(id int32, host string, port int32, rack *string) kmsg.ShareAcknowledgeResponseNodeEndpoint {
		return kmsg.ShareAcknowledgeResponseNodeEndpoint{NodeID: id, Host: host, Port: port, Rack: rack}
	})
	return w
}

func shareAcknowledgeResponseFromWire(w *kmsg.ShareAcknowledgeResponse) *ShareAcknowledgeResponse {
	return &ShareAcknowledgeResponse{Err: wireError(w.ErrorCode, w.ErrorMessage), AcquisitionLockTimeout: fromMillis(w.AcquisitionLockTimeoutMillis),
		Topics: each(orEmpty(w.Topics), func(wt kmsg.ShareAcknowledgeResponseTopic) ShareAcknowledgeTopicResponse {
			return ShareAcknowledgeTopicResponse{TopicID: wt.TopicID,
				Partitions: each(orEmpty(wt.Partitions), func(wp kmsg.ShareAcknowledgeResponseTopicPartition) ShareAcknowledgePartitionResponse {
					return ShareAcknowledgePartitionResponse{Partition: wp.Partition, Err: wireError(wp.ErrorCode, wp.ErrorMessage),
						CurrentLeader: LeaderIDAndEpoch{LeaderID: wp.CurrentLeader.LeaderID, LeaderEpoch: wp.CurrentLeader.LeaderEpoch}}
				})}
		}),
		NodeEndpoints: each(orEmpty(w.NodeEndpoints), func(n kmsg.ShareAcknowledgeResponseNodeEndpoint) Broker {
			return Broker{NodeID: n.NodeID, Host: n.Host, Port: n.Port, Rack: deref(n.Rack)}
		}),
	}
}
