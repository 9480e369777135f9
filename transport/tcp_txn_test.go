package transport

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/partlog/partlog/kafka"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// fakeTxnNode is a fakeGroupNode that is also a TxnClient: it keeps each
// request and answers what the test set.
type fakeTxnNode struct{ *fakeGroupNode }

func newFakeTxnNode(resp map[string]any) fakeTxnNode {
	return fakeTxnNode{&fakeGroupNode{resp: resp}}
}

func (f fakeTxnNode) AddPartitionsToTxn(ctx context.Context, req *AddPartitionsToTxnRequest) (*AddPartitionsToTxnResponse, error) {
	return handle[AddPartitionsToTxnResponse](f.fakeGroupNode, "AddPartitionsToTxn", req), nil
}

func (f fakeTxnNode) AddOffsetsToTxn(ctx context.Context, req *AddOffsetsToTxnRequest) (*AddOffsetsToTxnResponse, error) {
	return handle[AddOffsetsToTxnResponse](f.fakeGroupNode, "AddOffsetsToTxn", req), nil
}

func (f fakeTxnNode) EndTxn(ctx context.Context, req *EndTxnRequest) (*EndTxnResponse, error) {
	return handle[EndTxnResponse](f.fakeGroupNode, "EndTxn", req), nil
}

func (f fakeTxnNode) WriteTxnMarkers(ctx context.Context, req *WriteTxnMarkersRequest) (*WriteTxnMarkersResponse, error) {
	return handle[WriteTxnMarkersResponse](f.fakeGroupNode, "WriteTxnMarkers", req), nil
}

func (f fakeTxnNode) TxnOffsetCommit(ctx context.Context, req *TxnOffsetCommitRequest) (*TxnOffsetCommitResponse, error) {
	return handle[TxnOffsetCommitResponse](f.fakeGroupNode, "TxnOffsetCommit", req), nil
}

func (f fakeTxnNode) DescribeTransactions(ctx context.Context, req *DescribeTransactionsRequest) (*DescribeTransactionsResponse, error) {
	return handle[DescribeTransactionsResponse](f.fakeGroupNode, "DescribeTransactions", req), nil
}

func (f fakeTxnNode) ListTransactions(ctx context.Context, req *ListTransactionsRequest) (*ListTransactionsResponse, error) {
	return handle[ListTransactionsResponse](f.fakeGroupNode, "ListTransactions", req), nil
}

var _ TxnClient = fakeTxnNode{}

// tp is a kafka.TopicPartition, for short.
func tp(topic string, partition int32) kafka.TopicPartition {
	return kafka.TopicPartition{Topic: topic, Partition: partition}
}

// TestTCPTxnRoundTrip sends every TxnClient request through a TCPClient to
// a server, in the newest versions both speak unless the request's
// Version caps it: the handler gets exactly the request sent, Version set
// to the version it came in, and the client exactly the handler's answer,
// with the transaction errors as kafka's sentinels and their retriability.
func TestTCPTxnRoundTrip(t *testing.T) {
	f := newFakeTxnNode(map[string]any{})
	_, addr := serve(t, f, ServerOptions{})
	c := dial(t, addr)
	ctx := context.Background()

	fc, err := c.FindCoordinator(ctx, &FindCoordinatorRequest{Key: "tx", KeyType: CoordinatorTransaction})
	require.NoError(t, err)
	require.Equal(t, &FindCoordinatorRequest{Key: "tx", KeyType: CoordinatorTransaction}, f.last())
	require.NoError(t, fc.Err)

	f.set("InitProducerID", &InitProducerIDResponse{Err: kafka.ErrProducerFenced, ProducerID: -1, ProducerEpoch: -1})
	ir, err := c.InitProducerID(ctx, &InitProducerIDRequest{TransactionalID: "tx", TransactionTimeout: time.Minute, ProducerID: 7, ProducerEpoch: 2})
	require.NoError(t, err)
	require.Equal(t, &InitProducerIDRequest{Version: 5, TransactionalID: "tx", TransactionTimeout: time.Minute, ProducerID: 7, ProducerEpoch: 2}, f.last())
	require.ErrorIs(t, ir.Err, kafka.ErrProducerFenced)
	require.False(t, kafka.IsRetriable(ir.Err))

	// A producer's AddPartitionsToTxn goes in version 3, as Kafka's
	// producers send it; a broker's batch in the newest.
	add := &AddPartitionsToTxnRequest{Transactions: []AddPartitionsToTxnTransaction{{TransactionalID: "tx", ProducerID: 7, ProducerEpoch: 2,
		Partitions: []kafka.TopicPartition{tp("t", 0), tp("t", 1), tp("u", 0)}}}}
	addResp := &AddPartitionsToTxnResponse{Transactions: []AddPartitionsToTxnResult{{TransactionalID: "tx", Partitions: []TxnPartitionResult{
		{TopicPartition: tp("t", 0), Err: kafka.ErrInvalidProducerIDMapping}, {TopicPartition: tp("t", 1), Err: kafka.ErrInvalidProducerEpoch},
		{TopicPartition: tp("u", 0), Err: kafka.ErrConcurrentTransactions}}}}}
	f.set("AddPartitionsToTxn", addResp)
	ar, err := c.AddPartitionsToTxn(ctx, add)
	require.NoError(t, err)
	want := *add
	want.Version = 3
	require.Equal(t, &want, f.last())
	require.Equal(t, addResp, ar)
	require.True(t, kafka.IsRetriable(ar.Transactions[0].Partitions[2].Err), "CONCURRENT_TRANSACTIONS is retried")
	f.set("AddPartitionsToTxn", &AddPartitionsToTxnResponse{Err: kafka.ErrInvalidTxnState})
	ar, err = c.AddPartitionsToTxn(ctx, add)
	require.NoError(t, err)
	require.Equal(t, &AddPartitionsToTxnResponse{Transactions: []AddPartitionsToTxnResult{{TransactionalID: "tx", Partitions: []TxnPartitionResult{
		{TopicPartition: tp("t", 0), Err: kafka.ErrInvalidTxnState}, {TopicPartition: tp("t", 1), Err: kafka.ErrInvalidTxnState},
		{TopicPartition: tp("u", 0), Err: kafka.ErrInvalidTxnState}}}}}, ar, "before v4 a request-wide error is each partition's")

	verify := &AddPartitionsToTxnRequest{Transactions: []AddPartitionsToTxnTransaction{
		{TransactionalID: "a", ProducerID: 1, ProducerEpoch: 0, VerifyOnly: true, Partitions: []kafka.TopicPartition{tp("t", 2)}},
		{TransactionalID: "b", ProducerID: 2, ProducerEpoch: 5, Partitions: []kafka.TopicPartition{tp("u", 1)}}}}
	verifyResp := &AddPartitionsToTxnResponse{Transactions: []AddPartitionsToTxnResult{
		{TransactionalID: "a", Partitions: []TxnPartitionResult{{TopicPartition: tp("t", 2), Err: kafka.ErrTransactionAbortable}}},
		{TransactionalID: "b", Partitions: []TxnPartitionResult{{TopicPartition: tp("u", 1)}}}}}
	f.set("AddPartitionsToTxn", verifyResp)
	ar, err = c.AddPartitionsToTxn(ctx, verify)
	require.NoError(t, err)
	want = *verify
	want.Version = 5
	require.Equal(t, &want, f.last())
	require.Equal(t, verifyResp, ar)
	f.set("AddPartitionsToTxn", &AddPartitionsToTxnResponse{Err: kafka.ErrNotCoordinator})
	ar, err = c.AddPartitionsToTxn(ctx, verify)
	require.NoError(t, err)
	require.Equal(t, &AddPartitionsToTxnResponse{Err: kafka.ErrNotCoordinator}, ar)
	_, err = c.AddPartitionsToTxn(ctx, &AddPartitionsToTxnRequest{Version: 3, Transactions: verify.Transactions})
	require.ErrorIs(t, err, kafka.ErrUnsupportedVersion, "a batch does not fit version 3")

	f.set("AddOffsetsToTxn", &AddOffsetsToTxnResponse{Err: kafka.ErrConcurrentTransactions})
	aor, err := c.AddOffsetsToTxn(ctx, &AddOffsetsToTxnRequest{TransactionalID: "tx", ProducerID: 7, ProducerEpoch: 2, Group: "g"})
	require.NoError(t, err)
	require.Equal(t, &AddOffsetsToTxnRequest{Version: 4, TransactionalID: "tx", ProducerID: 7, ProducerEpoch: 2, Group: "g"}, f.last())
	require.ErrorIs(t, aor.Err, kafka.ErrConcurrentTransactions)

	// EndTxn v5 answers the next producer id and epoch; v4 carries none.
	f.set("EndTxn", &EndTxnResponse{ProducerID: 7, ProducerEpoch: 3})
	er, err := c.EndTxn(ctx, &EndTxnRequest{TransactionalID: "tx", ProducerID: 7, ProducerEpoch: 2, Result: TxnCommit})
	require.NoError(t, err)
	require.Equal(t, &EndTxnRequest{Version: 5, TransactionalID: "tx", ProducerID: 7, ProducerEpoch: 2, Result: TxnCommit}, f.last())
	require.Equal(t, &EndTxnResponse{ProducerID: 7, ProducerEpoch: 3}, er)
	er, err = c.EndTxn(ctx, &EndTxnRequest{Version: 4, TransactionalID: "tx", ProducerID: 7, ProducerEpoch: 2, Result: TxnAbort})
	require.NoError(t, err)
	require.Equal(t, &EndTxnRequest{Version: 4, TransactionalID: "tx", ProducerID: 7, ProducerEpoch: 2, Result: TxnAbort}, f.last())
	require.Equal(t, &EndTxnResponse{ProducerID: -1, ProducerEpoch: -1}, er, "transaction version 0: no epoch bump to answer")
	f.set("EndTxn", &EndTxnResponse{Err: fmt.Errorf("%w: aborting", kafka.ErrInvalidTxnState), ProducerID: -1, ProducerEpoch: -1})
	er, err = c.EndTxn(ctx, &EndTxnRequest{TransactionalID: "tx", ProducerID: 7, ProducerEpoch: 2, Result: TxnCommit})
	require.NoError(t, err)
	require.ErrorIs(t, er.Err, kafka.ErrInvalidTxnState)

	markers := &WriteTxnMarkersRequest{Markers: []TxnMarker{
		{ProducerID: 7, ProducerEpoch: 3, Result: TxnCommit, CoordinatorEpoch: 4, TransactionVersion: 2, Partitions: []kafka.TopicPartition{tp("t", 0), tp("u", 0)}},
		{ProducerID: 8, ProducerEpoch: 1, Result: TxnAbort, CoordinatorEpoch: 4, Partitions: []kafka.TopicPartition{tp("t", 1)}}}}
	markersResp := &WriteTxnMarkersResponse{Markers: []TxnMarkerResult{
		{ProducerID: 7, Partitions: []TxnPartitionResult{{TopicPartition: tp("t", 0)}, {TopicPartition: tp("u", 0), Err: kafka.ErrTransactionCoordinatorFenced}}},
		{ProducerID: 8, Partitions: []TxnPartitionResult{{TopicPartition: tp("t", 1), Err: kafka.ErrInvalidProducerEpoch}}}}}
	f.set("WriteTxnMarkers", markersResp)
	mr, err := c.WriteTxnMarkers(ctx, markers)
	require.NoError(t, err)
	require.Equal(t, markers, f.last())
	require.Equal(t, markersResp, mr)
	require.ErrorIs(t, mr.Markers[0].Partitions[1].Err, kafka.ErrTransactionCoordinatorFenced)

	commit := &TxnOffsetCommitRequest{TransactionalID: "tx", Group: "g", ProducerID: 7, ProducerEpoch: 2, GenerationID: 4, MemberID: "m",
		GroupInstanceID: "i", Topics: []OffsetCommitTopic{{Topic: "t", Partitions: []OffsetCommitPartition{{Partition: 0, Offset: 42, LeaderEpoch: 3, Metadata: "m"}}}}}
	commitResp := &TxnOffsetCommitResponse{Topics: []OffsetCommitTopicResponse{{Topic: "t", Partitions: []OffsetCommitPartitionResponse{{Partition: 0, Err: kafka.ErrProducerFenced}}}}}
	f.set("TxnOffsetCommit", commitResp)
	cr, err := c.TxnOffsetCommit(ctx, commit)
	require.NoError(t, err)
	wantCommit := *commit
	wantCommit.Version = 5
	require.Equal(t, &wantCommit, f.last())
	require.Equal(t, commitResp, cr)
	_, err = c.TxnOffsetCommit(ctx, &TxnOffsetCommitRequest{Version: 2, TransactionalID: "tx", Group: "g", GenerationID: 4})
	require.ErrorIs(t, err, kafka.ErrUnsupportedVersion, "version 2 carries no group membership")

	// A read_committed consumer's OffsetFetch asks for stable offsets.
	f.set("OffsetFetch", &OffsetFetchResponse{Topics: []OffsetFetchTopicResponse{{Topic: "t", Partitions: []OffsetFetchPartitionResponse{
		{Partition: 0, Offset: -1, LeaderEpoch: -1, Err: kafka.ErrUnstableOffsetCommit}}}}})
	fetch := &OffsetFetchRequest{Group: "g", Topics: []OffsetFetchTopic{{Topic: "t", Partitions: []int32{0}}}, RequireStable: true}
	fr, err := c.OffsetFetch(ctx, fetch)
	require.NoError(t, err)
	require.Equal(t, fetch, f.last())
	require.ErrorIs(t, fr.Topics[0].Partitions[0].Err, kafka.ErrUnstableOffsetCommit)
	require.True(t, kafka.IsRetriable(fr.Topics[0].Partitions[0].Err))

	describeResp := &DescribeTransactionsResponse{Transactions: []DescribedTransaction{
		{TransactionalID: "tx", State: "Ongoing", TransactionTimeout: time.Minute, StartTimestamp: 1000, ProducerID: 7, ProducerEpoch: 2,
			Partitions: []kafka.TopicPartition{tp("t", 0), tp("t", 1), tp("u", 0)}},
		{Err: kafka.ErrTransactionalIDNotFound, TransactionalID: "gone", StartTimestamp: -1, ProducerID: -1, ProducerEpoch: -1}}}
	f.set("DescribeTransactions", describeResp)
	dr, err := c.DescribeTransactions(ctx, &DescribeTransactionsRequest{TransactionalIDs: []string{"tx", "gone"}})
	require.NoError(t, err)
	require.Equal(t, &DescribeTransactionsRequest{TransactionalIDs: []string{"tx", "gone"}}, f.last())
	require.Equal(t, describeResp, dr)

	list := &ListTransactionsRequest{StateFilters: []string{"Ongoing"}, ProducerIDFilters: []int64{7}, MinDuration: time.Minute, TransactionalIDPattern: "t.*"}
	listResp := &ListTransactionsResponse{UnknownStateFilters: []string{"Bogus"}, Transactions: []ListedTransaction{{TransactionalID: "tx", ProducerID: 7, State: "Ongoing"}}}
	f.set("ListTransactions", listResp)
	lr, err := c.ListTransactions(ctx, list)
	require.NoError(t, err)
	require.Equal(t, list, f.last())
	require.Equal(t, listResp, lr)
}

// TestTCPTxnAPIsAdvertised checks that a server advertises the
// transaction APIs, in the versions kmsg and partlog's types both carry,
// only for a TxnClient handler; that FindCoordinator is advertised for a
// TxnClient that is not a GroupClient, and reaches it; and that a
// transactional Produce reaches only a TxnClient.
func TestTCPTxnAPIsAdvertised(t *testing.T) {
	txnKeys := map[int16][2]int16{24: {0, 5}, 25: {0, 4}, 26: {0, 5}, 27: {0, 2}, 28: {0, 5}, 65: {0, 0}, 66: {0, 2}}
	ranges := func(h Client) map[int16][2]int16 {
		m := map[int16][2]int16{}
		for _, r := range apisFor(h) {
			m[r.key] = [2]int16{r.min, r.max}
		}
		return m
	}
	onlyTxn := struct{ TxnClient }{newFakeTxnNode(map[string]any{})}
	for h, name := range map[Client]string{&fakeNode{}: "plain", &fakeGroupNode{}: "group"} {
		got := ranges(h)
		for k := range txnKeys {
			_, ok := got[k]
			require.False(t, ok, "%s for a %s handler", kmsg.NameForKey(k), name)
		}
	}
	got := ranges(onlyTxn)
	for k, want := range txnKeys {
		require.Equal(t, want, got[k], kmsg.NameForKey(k))
		require.LessOrEqual(t, want[1], kmsg.RequestForKey(k).MaxVersion(), "kmsg knows the versions advertised")
	}
	require.Contains(t, got, int16(10), "FindCoordinator, for transactional ids")
	require.Contains(t, got, int16(22), "InitProducerId")
	require.NotContains(t, got, int16(11), "no group APIs")

	_, addr := serve(t, onlyTxn, ServerOptions{})
	c := dial(t, addr)
	ctx := context.Background()
	fc, err := c.FindCoordinator(ctx, &FindCoordinatorRequest{Key: "tx", KeyType: CoordinatorTransaction})
	require.NoError(t, err)
	require.NoError(t, fc.Err)
	produce := &ProduceRequest{TransactionalID: "tx", Acks: kafka.AcksAll, Topics: []ProduceTopic{{Topic: "t",
		Partitions: []ProducePartition{{Partition: 0, Records: []byte("batch")}}}}}
	pr, err := c.Produce(ctx, produce)
	require.NoError(t, err)
	require.NoError(t, pr.Topics[0].Partitions[0].Err)
	txnNode := onlyTxn.TxnClient.(fakeTxnNode)
	txnNode.mu.Lock()
	require.Len(t, txnNode.produces, 1)
	require.Equal(t, "tx", txnNode.produces[0].TransactionalID)
	txnNode.mu.Unlock()

	// A plain node neither advertises nor takes them.
	plain := &fakeNode{}
	_, addr = serve(t, plain, ServerOptions{})
	c = dial(t, addr)
	_, err = c.EndTxn(ctx, &EndTxnRequest{TransactionalID: "tx"})
	require.ErrorIs(t, err, kafka.ErrUnsupportedVersion)
	_, err = c.FindCoordinator(ctx, &FindCoordinatorRequest{Key: "tx", KeyType: CoordinatorTransaction})
	require.ErrorIs(t, err, kafka.ErrUnsupportedVersion)
	_, err = c.Produce(ctx, produce)
	require.ErrorIs(t, err, kafka.ErrNetwork, "a transactional produce closes the connection of a node without transactions")
	plain.mu.Lock()
	require.Empty(t, plain.produces)
	plain.mu.Unlock()
}

// TestTCPFetchAbortedTransactions: a read_committed Fetch's isolation
// level reaches the node, and its aborted transactions and last stable
// offset reach the consumer, null kept apart from empty, through the
// server's sendfile path and its copying one.
func TestTCPFetchAbortedTransactions(t *testing.T) {
	for _, copyRecords := range []bool{false, true} {
		f := &abortedFetcher{}
		_, addr := serve(t, f, ServerOptions{CopyRecords: copyRecords})
		c := dial(t, addr)
		resp, err := c.Fetch(context.Background(), &FetchRequest{ReplicaID: -1, MaxBytes: 1 << 20, Isolation: kafka.ReadCommitted,
			Topics: []FetchTopic{{Topic: "t", Partitions: []FetchPartition{{Partition: 0}, {Partition: 1}, {Partition: 2}}}}})
		require.NoError(t, err)
		f.mu.Lock()
		require.Equal(t, kafka.ReadCommitted, f.fetches[0].Isolation)
		f.mu.Unlock()
		parts := resp.Topics[0].Partitions
		require.Equal(t, []AbortedTransaction{{ProducerID: 7, FirstOffset: 3}, {ProducerID: 9, FirstOffset: 5}}, parts[0].AbortedTransactions)
		require.Equal(t, []AbortedTransaction{}, parts[1].AbortedTransactions)
		require.Nil(t, parts[2].AbortedTransactions)
		require.Equal(t, int64(90), parts[0].LastStableOffset)
		require.Equal(t, []byte("records of t-0 from 0"), parts[0].Records)
	}
}

// abortedFetcher is a fakeNode whose Fetch answers partition 0 with two
// aborted transactions, partition 1 with none and partition 2 with null.
type abortedFetcher struct{ fakeNode }

func (f *abortedFetcher) Fetch(ctx context.Context, req *FetchRequest) (*FetchResponse, error) {
	resp, err := f.fakeNode.Fetch(ctx, req)
	if err != nil {
		return nil, err
	}
	parts := resp.Topics[0].Partitions
	parts[0].AbortedTransactions = []AbortedTransaction{{ProducerID: 7, FirstOffset: 3}, {ProducerID: 9, FirstOffset: 5}}
	parts[1].AbortedTransactions = []AbortedTransaction{}
	return resp, nil
}
