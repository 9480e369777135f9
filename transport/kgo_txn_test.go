package transport

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/partlog/partlog/kafka"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// kgoTxnCase is how franz-go's kgo (and kadm) builds one kind of
// transaction request, and what a TxnClient handler must get of it in
// each version.
type kgoTxnCase struct {
	key int16
	// build makes the request as kgo does, for version v.
	build func(v int16) kmsg.Request
	// want is what the handler gets in version v.
	want func(v int16) any
	// answer is what the handler answers; code, the error code kgo must
	// read from it.
	answer any
	code   func(kmsg.Response) int16
}

// kgoTxnCases build the requests as kgo 1.22 does: client.go's sharders
// for AddPartitionsToTxn (which fill both the v3 and the v4 fields),
// FindCoordinator, WriteTxnMarkers and DescribeTransactions; producer.go's
// doInitProducerID; txn.go's EndTransaction, addOffsetsToTxn and
// prepareTxnOffsetCommit; kadm's ListTransactions.
var kgoTxnCases = []kgoTxnCase{
	{key: 10,
		build: func(v int16) kmsg.Request {
			r := kmsg.NewPtrFindCoordinatorRequest()
			r.CoordinatorType = 1
			if v >= 4 {
				r.CoordinatorKeys = []string{"tx"}
			} else {
				r.CoordinatorKey = "tx" // kgo pins a single key to v3
			}
			return r
		},
		want: func(v int16) any {
			if v < 1 { // no key type before v1: a group
				return &FindCoordinatorRequest{Key: "tx"}
			}
			return &FindCoordinatorRequest{Key: "tx", KeyType: CoordinatorTransaction}
		},
		answer: &FindCoordinatorResponse{Err: kafka.ErrCoordinatorLoadInProgress, NodeID: -1, Port: -1},
		code: func(r kmsg.Response) int16 {
			w := r.(*kmsg.FindCoordinatorResponse)
			if w.Version >= 4 {
				return w.Coordinators[0].ErrorCode
			}
			return w.ErrorCode
		},
	},
	{key: 22,
		build: func(int16) kmsg.Request {
			r := kmsg.NewPtrInitProducerIDRequest()
			r.TransactionalID, r.ProducerID, r.ProducerEpoch = kmsg.StringPtr("tx"), 7, 2
			r.TransactionTimeoutMillis = 60000
			return r
		},
		want: func(v int16) any {
			r := &InitProducerIDRequest{Version: v, TransactionalID: "tx", TransactionTimeout: time.Minute, ProducerID: 7, ProducerEpoch: 2}
			if v < 3 {
				r.ProducerID, r.ProducerEpoch = -1, -1
			}
			return r
		},
		answer: &InitProducerIDResponse{Err: kafka.ErrProducerFenced, ProducerID: -1, ProducerEpoch: -1},
		code:   func(r kmsg.Response) int16 { return r.(*kmsg.InitProducerIDResponse).ErrorCode },
	},
	{key: 24,
		build: func(v int16) kmsg.Request {
			r := kmsg.NewPtrAddPartitionsToTxnRequest()
			t := kmsg.NewAddPartitionsToTxnRequestTransaction()
			t.TransactionalID, t.ProducerID, t.ProducerEpoch, t.VerifyOnly = "tx", 7, 2, v >= 4
			t.Topics = []kmsg.AddPartitionsToTxnRequestTransactionTopic{{Topic: "t", Partitions: []int32{0, 1}}, {Topic: "u", Partitions: []int32{3}}}
			r.Transactions = []kmsg.AddPartitionsToTxnRequestTransaction{t}
			// addPartitionsTxnToReq: one transaction fills the v3 fields too.
			r.TransactionalID, r.ProducerID, r.ProducerEpoch = t.TransactionalID, t.ProducerID, t.ProducerEpoch
			for _, tt := range t.Topics {
				r.Topics = append(r.Topics, kmsg.AddPartitionsToTxnRequestTopic{Topic: tt.Topic, Partitions: tt.Partitions})
			}
			return r
		},
		want: func(v int16) any {
			return &AddPartitionsToTxnRequest{Version: v, Transactions: []AddPartitionsToTxnTransaction{{TransactionalID: "tx", ProducerID: 7, ProducerEpoch: 2,
				VerifyOnly: v >= 4, Partitions: []kafka.TopicPartition{tp("t", 0), tp("t", 1), tp("u", 3)}}}}
		},
		answer: &AddPartitionsToTxnResponse{Transactions: []AddPartitionsToTxnResult{{TransactionalID: "tx", Partitions: []TxnPartitionResult{
			{TopicPartition: tp("t", 0), Err: kafka.ErrConcurrentTransactions}, {TopicPartition: tp("t", 1), Err: kafka.ErrConcurrentTransactions},
			{TopicPartition: tp("u", 3), Err: kafka.ErrConcurrentTransactions}}}}},
		code: func(r kmsg.Response) int16 {
			w := r.(*kmsg.AddPartitionsToTxnResponse)
			if w.Version >= 4 {
				return w.Transactions[0].Topics[1].Partitions[0].ErrorCode
			}
			return w.Topics[1].Partitions[0].ErrorCode
		},
	},
	{key: 25,
		build: func(int16) kmsg.Request {
			r := kmsg.NewPtrAddOffsetsToTxnRequest()
			r.TransactionalID, r.ProducerID, r.ProducerEpoch, r.Group = "tx", 7, 2, "g"
			return r
		},
		want: func(v int16) any {
			return &AddOffsetsToTxnRequest{Version: v, TransactionalID: "tx", ProducerID: 7, ProducerEpoch: 2, Group: "g"}
		},
		answer: &AddOffsetsToTxnResponse{Err: kafka.ErrInvalidProducerIDMapping},
		code:   func(r kmsg.Response) int16 { return r.(*kmsg.AddOffsetsToTxnResponse).ErrorCode },
	},
	{key: 26,
		build: func(int16) kmsg.Request {
			r := kmsg.NewPtrEndTxnRequest()
			r.TransactionalID, r.ProducerID, r.ProducerEpoch, r.Commit = "tx", 7, 2, true
			return r
		},
		want: func(v int16) any {
			return &EndTxnRequest{Version: v, TransactionalID: "tx", ProducerID: 7, ProducerEpoch: 2, Result: TxnCommit}
		},
		answer: &EndTxnResponse{Err: kafka.ErrInvalidTxnState, ProducerID: -1, ProducerEpoch: -1},
		code:   func(r kmsg.Response) int16 { return r.(*kmsg.EndTxnResponse).ErrorCode },
	},
	{key: 27,
		build: func(v int16) kmsg.Request {
			r := kmsg.NewPtrWriteTxnMarkersRequest()
			m := kmsg.NewWriteTxnMarkersRequestMarker()
			m.ProducerID, m.ProducerEpoch, m.Committed, m.CoordinatorEpoch = 7, 3, false, 4
			if v >= 2 {
				m.TransactionVersion = 2
			}
			m.Topics = []kmsg.WriteTxnMarkersRequestMarkerTopic{{Topic: "t", Partitions: []int32{1}}}
			r.Markers = append(r.Markers, m)
			return r
		},
		want: func(v int16) any {
			m := TxnMarker{ProducerID: 7, ProducerEpoch: 3, Result: TxnAbort, CoordinatorEpoch: 4, Partitions: []kafka.TopicPartition{tp("t", 1)}}
			if v >= 2 {
				m.TransactionVersion = 2
			}
			return &WriteTxnMarkersRequest{Markers: []TxnMarker{m}}
		},
		answer: &WriteTxnMarkersResponse{Markers: []TxnMarkerResult{{ProducerID: 7, Partitions: []TxnPartitionResult{
			{TopicPartition: tp("t", 1), Err: kafka.ErrTransactionCoordinatorFenced}}}}},
		code: func(r kmsg.Response) int16 {
			return r.(*kmsg.WriteTxnMarkersResponse).Markers[0].Topics[0].Partitions[0].ErrorCode
		},
	},
	{key: 28,
		build: func(int16) kmsg.Request {
			r := kmsg.NewPtrTxnOffsetCommitRequest()
			r.TransactionalID, r.Group, r.ProducerID, r.ProducerEpoch = "tx", "g", 7, 2
			r.Generation, r.MemberID, r.InstanceID = 4, "m", kmsg.StringPtr("i")
			rt := kmsg.NewTxnOffsetCommitRequestTopic()
			rt.Topic, rt.TopicID = "t", [16]byte{1}
			rp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
			rp.Partition, rp.Offset, rp.LeaderEpoch, rp.Metadata = 0, 42, 3, &r.MemberID
			rt.Partitions = append(rt.Partitions, rp)
			r.Topics = append(r.Topics, rt)
			return r
		},
		want: func(v int16) any {
			r := &TxnOffsetCommitRequest{Version: v, TransactionalID: "tx", Group: "g", ProducerID: 7, ProducerEpoch: 2,
				GenerationID: 4, MemberID: "m", GroupInstanceID: "i", Topics: []OffsetCommitTopic{{Topic: "t",
					Partitions: []OffsetCommitPartition{{Partition: 0, Offset: 42, LeaderEpoch: 3, Metadata: "m"}}}}}
			if v < 3 {
				r.GenerationID, r.MemberID, r.GroupInstanceID = NoGeneration, "", ""
			}
			if v < 2 {
				r.Topics[0].Partitions[0].LeaderEpoch = -1
			}
			return r
		},
		answer: &TxnOffsetCommitResponse{Topics: []OffsetCommitTopicResponse{{Topic: "t", Partitions: []OffsetCommitPartitionResponse{
			{Partition: 0, Err: kafka.ErrFencedInstanceID}}}}},
		code: func(r kmsg.Response) int16 {
			return r.(*kmsg.TxnOffsetCommitResponse).Topics[0].Partitions[0].ErrorCode
		},
	},
	{key: 65,
		build: func(int16) kmsg.Request {
			r := kmsg.NewPtrDescribeTransactionsRequest()
			r.TransactionalIDs = []string{"tx", "ty"}
			return r
		},
		want: func(int16) any { return &DescribeTransactionsRequest{TransactionalIDs: []string{"tx", "ty"}} },
		answer: &DescribeTransactionsResponse{Transactions: []DescribedTransaction{{Err: kafka.ErrTransactionalIDNotFound, TransactionalID: "tx",
			StartTimestamp: -1, ProducerID: -1, ProducerEpoch: -1}}},
		code: func(r kmsg.Response) int16 {
			return r.(*kmsg.DescribeTransactionsResponse).TransactionStates[0].ErrorCode
		},
	},
	{key: 66,
		build: func(v int16) kmsg.Request {
			r := kmsg.NewPtrListTransactionsRequest()
			r.ProducerIDFilters, r.StateFilters = []int64{7}, []string{"Ongoing"}
			if v >= 2 {
				r.TransactionalIDPattern = kmsg.StringPtr("t.*")
			}
			return r
		},
		want: func(v int16) any {
			r := &ListTransactionsRequest{StateFilters: []string{"Ongoing"}, ProducerIDFilters: []int64{7}}
			if v >= 2 {
				r.TransactionalIDPattern = "t.*"
			}
			return r
		},
		answer: &ListTransactionsResponse{Err: kafka.ErrCoordinatorLoadInProgress},
		code:   func(r kmsg.Response) int16 { return r.(*kmsg.ListTransactionsResponse).ErrorCode },
	},
}

// TestKgoTxnRequestsDecode: every transaction request as kgo builds it, in
// every version the server advertises, framed as kgo frames it, goes
// through the server's path (header, version check, decoding, dispatch)
// to a TxnClient handler as the partlog request it means; the answer
// decodes as kgo decodes it, with the handler's error code.
func TestKgoTxnRequestsDecode(t *testing.T) {
	f := newFakeTxnNode(map[string]any{})
	s := NewServer(f, ServerOptions{})
	defer s.Close()
	kgoFormat := kmsg.NewRequestFormatter(kmsg.FormatterClientID("kgo"))
	for _, tc := range kgoTxnCases {
		rng, ok := findRange(s.apis, tc.key)
		require.True(t, ok, "%s is advertised", kmsg.NameForKey(tc.key))
		name := fmt.Sprintf("%T", tc.answer)[len("*transport."):]
		name = name[:len(name)-len("Response")]
		f.set(name, tc.answer)
		for v := rng.min; v <= rng.max; v++ {
			t.Run(fmt.Sprintf("%s/v%d", kmsg.NameForKey(tc.key), v), func(t *testing.T) {
				req := tc.build(v)
				req.SetVersion(v)
				frame := kgoFormat.AppendRequest(nil, req, 42)
				out, _, _, err := s.answer(nil, frame[4:], &peer{advertised: "127.0.0.1:9092", ctx: s.ctx}, nil)
				require.NoError(t, err)
				require.Equal(t, tc.want(v), f.last())

				body := out[8:] // length and correlation id
				resp := req.ResponseKind()
				if resp.IsFlexible() {
					body, err = skipTags(body)
					require.NoError(t, err)
				}
				require.NoError(t, resp.ReadFrom(body))
				require.ErrorIs(t, kerr.ErrorForCode(tc.code(resp)), kerr.ErrorForCode(kafka.CodeOf(answerErr(tc.answer))))
			})
		}
	}
}

// answerErr returns the first error the answer of a kgoTxnCase holds.
func answerErr(answer any) error {
	switch a := answer.(type) {
	case *FindCoordinatorResponse:
		return a.Err
	case *InitProducerIDResponse:
		return a.Err
	case *AddPartitionsToTxnResponse:
		return a.Transactions[0].Partitions[0].Err
	case *AddOffsetsToTxnResponse:
		return a.Err
	case *EndTxnResponse:
		return a.Err
	case *WriteTxnMarkersResponse:
		return a.Markers[0].Partitions[0].Err
	case *TxnOffsetCommitResponse:
		return a.Topics[0].Partitions[0].Err
	case *DescribeTransactionsResponse:
		return a.Transactions[0].Err
	case *ListTransactionsResponse:
		return a.Err
	}
	panic(fmt.Sprintf("no case for %T", answer))
}

// TestKgoTxnProduceAndFetch: kgo's transactional Produce (with its
// transactional id) reaches a TxnClient, and its read_committed Fetch
// gets the aborted transactions, in every version the server speaks.
func TestKgoTxnProduceAndFetch(t *testing.T) {
	f := newFakeTxnNode(map[string]any{})
	h := &abortedTxnHandler{fakeTxnNode: f}
	s := NewServer(h, ServerOptions{})
	defer s.Close()
	kgoFormat := kmsg.NewRequestFormatter(kmsg.FormatterClientID("kgo"))
	rng, _ := findRange(s.apis, 0)
	for v := int16(3); v <= rng.max; v++ {
		req := kmsg.NewPtrProduceRequest()
		req.Version, req.TransactionID, req.Acks, req.TimeoutMillis = v, kmsg.StringPtr("tx"), -1, 1000
		req.Topics = []kmsg.ProduceRequestTopic{{Topic: "t", Partitions: []kmsg.ProduceRequestTopicPartition{{Partition: 0, Records: []byte("batch")}}}}
		_, _, _, err := s.answer(nil, kgoFormat.AppendRequest(nil, req, 1)[4:], &peer{ctx: s.ctx}, nil)
		require.NoError(t, err, "Produce v%d", v)
		f.mu.Lock()
		require.Equal(t, "tx", f.produces[len(f.produces)-1].TransactionalID, "Produce v%d", v)
		f.mu.Unlock()
	}
	rng, _ = findRange(s.apis, 1)
	for v := rng.min; v <= rng.max; v++ {
		req := kmsg.NewPtrFetchRequest()
		req.Version, req.ReplicaID, req.MaxBytes, req.IsolationLevel = v, -1, 1<<20, 1
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic = "t"
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.PartitionMaxBytes = 1 << 20
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		out, _, _, err := s.answer(nil, kgoFormat.AppendRequest(nil, req, 1)[4:], &peer{ctx: s.ctx}, nil)
		require.NoError(t, err)
		f.mu.Lock()
		require.Equal(t, kafka.ReadCommitted, f.fetches[len(f.fetches)-1].Isolation, "Fetch v%d", v)
		f.mu.Unlock()
		resp := req.ResponseKind().(*kmsg.FetchResponse)
		body := out[8:]
		if resp.IsFlexible() {
			body, err = skipTags(body)
			require.NoError(t, err)
		}
		require.NoError(t, resp.ReadFrom(body))
		p := resp.Topics[0].Partitions[0]
		require.Len(t, p.AbortedTransactions, 1, "Fetch v%d", v)
		require.Equal(t, [2]int64{7, 3}, [2]int64{p.AbortedTransactions[0].ProducerID, p.AbortedTransactions[0].FirstOffset}, "Fetch v%d", v)
		require.Equal(t, int64(90), p.LastStableOffset, "Fetch v%d", v)
	}
}

// abortedTxnHandler is a fakeTxnNode whose Fetch answers an aborted
// transaction on every partition.
type abortedTxnHandler struct{ fakeTxnNode }

func (h *abortedTxnHandler) Fetch(ctx context.Context, req *FetchRequest) (*FetchResponse, error) {
	resp, err := h.fakeTxnNode.Fetch(ctx, req)
	if err != nil {
		return nil, err
	}
	for _, t := range resp.Topics {
		for i := range t.Partitions {
			t.Partitions[i].AbortedTransactions = []AbortedTransaction{{ProducerID: 7, FirstOffset: 3}}
		}
	}
	return resp, nil
}
