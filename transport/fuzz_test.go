package transport

import (
	"testing"
	"time"

	"github.com/partlog/partlog/auth"
	"github.com/partlog/partlog/kafka"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// FuzzServerRequest feeds arbitrary request frames to the server's
// parsing: it returns an error or a request, never panics, and a request it
// takes translates into partlog's types and is authorized (answered or
// filtered) without a panic.
func FuzzServerRequest(f *testing.F) {
	fmt := kmsg.NewRequestFormatter(kmsg.FormatterClientID("fuzz"))
	seeds := []kmsg.Request{
		produceToWire(&ProduceRequest{Acks: kafka.AcksAll, Topics: []ProduceTopic{{Topic: "t", Partitions: []ProducePartition{{Partition: 1, Records: []byte("batch")}}}}}, 9),
		fetchToWire(&FetchRequest{MaxBytes: 100, Topics: []FetchTopic{{Topic: "t", Partitions: []FetchPartition{{FetchOffset: 4}}}}}, 12),
		listOffsetsToWire(&ListOffsetsRequest{Topics: []ListOffsetsTopic{{Topic: "t", Partitions: []ListOffsetsPartition{{Timestamp: -1}}}}}, 7),
		metadataToWire(&MetadataRequest{Topics: []string{"a", "b"}}, 12),
		produceToWire(&ProduceRequest{Acks: kafka.AcksLeader}, 3),
		fetchToWire(&FetchRequest{}, 4),
		findCoordinatorToWire(&FindCoordinatorRequest{Key: "g"}, 5),
		findCoordinatorToWire(&FindCoordinatorRequest{Key: "tx", KeyType: CoordinatorTransaction}, 3),
		joinGroupToWire(&JoinGroupRequest{Group: "g", SessionTimeout: time.Second, MemberID: "m", GroupInstanceID: "i",
			ProtocolType: "consumer", Protocols: []JoinGroupProtocol{{Name: "range", Metadata: []byte("sub")}}, Reason: "r"}, 9),
		joinGroupToWire(&JoinGroupRequest{Group: "g", ProtocolType: "consumer"}, 0),
		syncGroupToWire(&SyncGroupRequest{Group: "g", GenerationID: 1, MemberID: "m", ProtocolType: "consumer",
			Assignments: []SyncGroupAssignment{{MemberID: "m", Assignment: []byte("a")}}}, 5),
		heartbeatToWire(&HeartbeatRequest{Group: "g", GenerationID: 1, MemberID: "m", GroupInstanceID: "i"}, 4),
		leaveGroupToWire(&LeaveGroupRequest{Group: "g", Members: []LeaveGroupMember{{MemberID: "m", Reason: "bye"}}}, 5),
		leaveGroupToWire(&LeaveGroupRequest{Group: "g", Members: []LeaveGroupMember{{MemberID: "m"}}}, 0),
		offsetCommitToWire(&OffsetCommitRequest{Group: "g", GenerationID: 1, MemberID: "m", Topics: []OffsetCommitTopic{{Topic: "t",
			Partitions: []OffsetCommitPartition{{Partition: 0, Offset: 5, LeaderEpoch: 1, Metadata: "x"}}}}}, 9),
		offsetCommitToWire(&OffsetCommitRequest{Group: "g", GenerationID: -1}, 2),
		offsetFetchToWire(&OffsetFetchRequest{Group: "g", Topics: []OffsetFetchTopic{{Topic: "t", Partitions: []int32{0, 1}}}}, 9),
		offsetFetchToWire(&OffsetFetchRequest{Group: "g"}, 7),
		describeGroupsToWire(&DescribeGroupsRequest{Groups: []string{"g", "h"}}, 6),
		listGroupsToWire(&ListGroupsRequest{StatesFilter: []string{"Stable"}}, 4),
		deleteGroupsToWire(&DeleteGroupsRequest{Groups: []string{"g"}}, 3),
		initProducerIDToWire(&InitProducerIDRequest{ProducerID: -1, ProducerEpoch: -1}, 5),
		initProducerIDToWire(&InitProducerIDRequest{TransactionalID: "tx", TransactionTimeout: time.Minute}, 0),
		produceToWire(&ProduceRequest{TransactionalID: "tx", Acks: kafka.AcksAll, Topics: []ProduceTopic{{Topic: "t", Partitions: []ProducePartition{{Records: []byte("batch")}}}}}, 9),
		addPartitionsToTxnToWire(&AddPartitionsToTxnRequest{Transactions: []AddPartitionsToTxnTransaction{{TransactionalID: "tx", ProducerID: 7, ProducerEpoch: 2,
			Partitions: []kafka.TopicPartition{{Topic: "t", Partition: 1}, {Topic: "u"}}}}}, 3),
		addPartitionsToTxnToWire(&AddPartitionsToTxnRequest{Transactions: []AddPartitionsToTxnTransaction{
			{TransactionalID: "a", ProducerID: 1, VerifyOnly: true, Partitions: []kafka.TopicPartition{{Topic: "t"}}},
			{TransactionalID: "b", ProducerID: 2, Partitions: []kafka.TopicPartition{{Topic: "u", Partition: 3}}}}}, 5),
		addPartitionsToTxnToWire(&AddPartitionsToTxnRequest{Transactions: []AddPartitionsToTxnTransaction{{TransactionalID: "tx"}}}, 0),
		addOffsetsToTxnToWire(&AddOffsetsToTxnRequest{TransactionalID: "tx", ProducerID: 7, ProducerEpoch: 2, Group: "g"}, 4),
		endTxnToWire(&EndTxnRequest{TransactionalID: "tx", ProducerID: 7, ProducerEpoch: 2, Result: TxnCommit}, 5),
		endTxnToWire(&EndTxnRequest{TransactionalID: "tx", ProducerID: 7, ProducerEpoch: 2}, 0),
		writeTxnMarkersToWire(&WriteTxnMarkersRequest{Markers: []TxnMarker{{ProducerID: 7, ProducerEpoch: 3, Result: TxnCommit, CoordinatorEpoch: 4,
			TransactionVersion: 2, Partitions: []kafka.TopicPartition{{Topic: "t", Partition: 1}}}}}, 2),
		writeTxnMarkersToWire(&WriteTxnMarkersRequest{Markers: []TxnMarker{{ProducerID: 7, Partitions: []kafka.TopicPartition{{Topic: "t"}}}}}, 0),
		txnOffsetCommitToWire(&TxnOffsetCommitRequest{TransactionalID: "tx", Group: "g", ProducerID: 7, GenerationID: 4, MemberID: "m", GroupInstanceID: "i",
			Topics: []OffsetCommitTopic{{Topic: "t", Partitions: []OffsetCommitPartition{{Offset: 5, LeaderEpoch: 1, Metadata: "x"}}}}}, 5),
		txnOffsetCommitToWire(&TxnOffsetCommitRequest{TransactionalID: "tx", Group: "g", GenerationID: -1}, 0),
		describeTransactionsToWire(&DescribeTransactionsRequest{TransactionalIDs: []string{"tx", "ty"}}, 0),
		listTransactionsToWire(&ListTransactionsRequest{StateFilters: []string{"Ongoing"}, ProducerIDFilters: []int64{7}, MinDuration: time.Minute,
			TransactionalIDPattern: "tx.*"}, 2),
		listTransactionsToWire(&ListTransactionsRequest{}, 0),
		shareGroupHeartbeatToWire(fullShareGroupHeartbeat(), 1),
		shareGroupDescribeToWire(fullShareGroupDescribe(), 1),
		shareFetchToWire(fullShareFetch(), 1),
		shareFetchToWire(&ShareFetchRequest{Group: "gg", Topics: []ShareFetchTopic{{TopicID: openTopic, Partitions: []ShareFetchPartition{{}}},
			{TopicID: secretTopic, Partitions: []ShareFetchPartition{{}}}}}, 1),
		shareAcknowledgeToWire(fullShareAcknowledge(), 1),
		&internalRequest{key: APIReplicaMessages, body: []byte("replica messages")},
		&internalRequest{key: APIController},
	}
	for _, req := range seeds {
		f.Add(fmt.AppendRequest(nil, req, 7)[4:])
	}
	f.Fuzz(func(t *testing.T, frame []byte) {
		h, req, body, err := parseRequestHeader(frame)
		if err != nil {
			return
		}
		rng, ok := findRange(supportedAPIs, h.apiKey)
		if !ok || h.apiVersion < rng.min || h.apiVersion > rng.max {
			return
		}
		if err := req.ReadFrom(body); err != nil {
			return
		}
		switch req := req.(type) {
		case *kmsg.ProduceRequest:
			produceFromWire(req)
		case *kmsg.FetchRequest:
			fetchFromWire(req)
		case *kmsg.ListOffsetsRequest:
			listOffsetsFromWire(req)
		case *kmsg.MetadataRequest:
			metadataFromWire(req)
		case *kmsg.FindCoordinatorRequest:
			reqs := findCoordinatorFromWire(req)
			resps := make([]*FindCoordinatorResponse, len(reqs))
			for i := range resps {
				resps[i] = &FindCoordinatorResponse{}
			}
			if len(reqs) > 0 {
				findCoordinatorResponseToWire(reqs, resps, h.apiVersion).AppendTo(nil)
			}
		case *kmsg.JoinGroupRequest:
			joinGroupFromWire(req)
		case *kmsg.SyncGroupRequest:
			syncGroupFromWire(req)
		case *kmsg.HeartbeatRequest:
			heartbeatFromWire(req)
		case *kmsg.LeaveGroupRequest:
			leaveGroupFromWire(req)
		case *kmsg.OffsetCommitRequest:
			offsetCommitFromWire(req)
		case *kmsg.OffsetFetchRequest:
			reqs := offsetFetchFromWire(req)
			resps := make([]*OffsetFetchResponse, len(reqs))
			for i := range resps {
				resps[i] = &OffsetFetchResponse{}
			}
			if len(reqs) > 0 {
				offsetFetchResponseToWire(reqs, resps, h.apiVersion).AppendTo(nil)
			}
		case *kmsg.DescribeGroupsRequest:
			describeGroupsFromWire(req)
		case *kmsg.ListGroupsRequest:
			listGroupsFromWire(req)
		case *kmsg.DeleteGroupsRequest:
			deleteGroupsFromWire(req)
		case *kmsg.InitProducerIDRequest:
			initProducerIDFromWire(req)
		case *kmsg.AddPartitionsToTxnRequest:
			r := addPartitionsToTxnFromWire(req)
			addPartitionsToTxnResponseToWire(r, &AddPartitionsToTxnResponse{Err: kafka.ErrCoordinatorLoadInProgress}, h.apiVersion).AppendTo(nil)
		case *kmsg.AddOffsetsToTxnRequest:
			addOffsetsToTxnFromWire(req)
		case *kmsg.EndTxnRequest:
			endTxnFromWire(req)
		case *kmsg.WriteTxnMarkersRequest:
			writeTxnMarkersFromWire(req)
		case *kmsg.TxnOffsetCommitRequest:
			txnOffsetCommitFromWire(req)
		case *kmsg.DescribeTransactionsRequest:
			describeTransactionsFromWire(req)
		case *kmsg.ListTransactionsRequest:
			listTransactionsFromWire(req)
		case *kmsg.ShareGroupHeartbeatRequest:
			shareGroupHeartbeatFromWire(req)
		case *kmsg.ShareGroupDescribeRequest:
			shareGroupDescribeFromWire(req)
		case *kmsg.ShareFetchRequest:
			shareFetchFromWire(req)
		case *kmsg.ShareAcknowledgeRequest:
			shareAcknowledgeFromWire(req)
		}
		// Checking it against ACLs that allow some names and not others
		// answers it, or lets it through, and the answer encodes.
		// (The handler names the topics of ShareFetch and ShareAcknowledge.)
		s := &Server{handler: newFakeShareGroupNode(nil), opts: ServerOptions{Authorizer: evenNames{}}}
		authz, err := s.authorize(req, h.apiVersion, &peer{principal: auth.User("fuzz")})
		if err != nil {
			return
		}
		resp := authz.answer
		if resp == nil && authz.merge != nil {
			resp = emptyResponse(req, h.apiVersion)
			authz.merge(resp)
		}
		if resp != nil {
			resp.AppendTo(nil)
		}
	})
}

// evenNames allows what is done to resources whose names are of even
// length.
type evenNames struct{}

func (evenNames) Authorize(_ auth.Principal, _ string, _ auth.Operation, _ auth.ResourceType, name string) bool {
	return len(name)%2 == 0
}
func (evenNames) AuthorizeAny(auth.Principal, string, auth.Operation, auth.ResourceType) bool {
	return false
}
