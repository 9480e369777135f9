package transport

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/partlog/partlog/kafka"
	"github.com/stretchr/testify/require"
)

// txnFakes is a fake cluster of in-memory nodes "n:<id>" for the
// transaction requests of a ClusterClient. Each node answers as the
// coordinator of the transactional ids txnCoord gives it and of every
// group when it is groupCoord, and as the leader of the partitions of
// topic "t" that leaders gives it; anything else is answered
// NOT_COORDINATOR or NOT_LEADER_OR_FOLLOWER.
type txnFakes struct {
	mu         sync.Mutex
	txnCoord   map[string]int32
	groupCoord int32
	leaders    []int32 // of topic "t"
	down       map[int32]bool
	finds      []FindCoordinatorRequest
	got        map[int32][]any // each node's requests, in order
}

// txnFake is one node of txnFakes; the methods it lacks panic.
type txnFake struct {
	NodeClient
	c  *txnFakes
	id int32
}

var _ TxnClient = txnFake{}

func (f txnFake) Close() error { return nil }

func (f txnFake) Metadata(context.Context, *MetadataRequest) (*MetadataResponse, error) {
	f.c.mu.Lock()
	defer f.c.mu.Unlock()
	tm := TopicMetadata{Topic: "t"}
	for p, l := range f.c.leaders {
		tm.Partitions = append(tm.Partitions, PartitionMetadata{Partition: int32(p), Leader: l})
	}
	return &MetadataResponse{Brokers: []Broker{{NodeID: 1, Host: "n", Port: 1}, {NodeID: 2, Host: "n", Port: 2}}, Topics: []TopicMetadata{tm}}, nil
}

func (f txnFake) FindCoordinator(_ context.Context, req *FindCoordinatorRequest) (*FindCoordinatorResponse, error) {
	f.c.mu.Lock()
	defer f.c.mu.Unlock()
	f.c.finds = append(f.c.finds, *req)
	coord := f.c.groupCoord
	if req.KeyType == CoordinatorTransaction {
		coord = f.c.txnCoord[req.Key]
	}
	if coord == 0 {
		return &FindCoordinatorResponse{Err: kafka.ErrCoordinatorNotAvailable, NodeID: -1, Port: -1}, nil
	}
	return &FindCoordinatorResponse{NodeID: coord, Host: "n", Port: coord}, nil
}

// take records req and reports whether the node is up.
func (f txnFake) take(req any) error {
	f.c.mu.Lock()
	defer f.c.mu.Unlock()
	if f.c.down[f.id] {
		return fmt.Errorf("%w: node %d is down", kafka.ErrNetwork, f.id)
	}
	if f.c.got == nil {
		f.c.got = map[int32][]any{}
	}
	f.c.got[f.id] = append(f.c.got[f.id], req)
	return nil
}

// coordinates returns nil when the node coordinates the transactional id
// (or, with group set, the groups), else NOT_COORDINATOR.
func (f txnFake) coordinates(id string, group bool) error {
	f.c.mu.Lock()
	defer f.c.mu.Unlock()
	if group && f.c.groupCoord == f.id || !group && f.c.txnCoord[id] == f.id {
		return nil
	}
	return fmt.Errorf("%w: node %d", kafka.ErrNotCoordinator, f.id)
}

// leads returns nil when the node leads tp, else NOT_LEADER_OR_FOLLOWER.
func (f txnFake) leads(tp kafka.TopicPartition) error {
	f.c.mu.Lock()
	defer f.c.mu.Unlock()
	if tp.Topic == "t" && int(tp.Partition) < len(f.c.leaders) && f.c.leaders[tp.Partition] == f.id {
		return nil
	}
	return kafka.ErrNotLeaderOrFollower
}

func (f txnFake) InitProducerID(_ context.Context, req *InitProducerIDRequest) (*InitProducerIDResponse, error) {
	if err := f.take(req); err != nil {
		return nil, err
	}
	if req.TransactionalID == "" {
		return &InitProducerIDResponse{ProducerID: int64(f.id), ProducerEpoch: 0}, nil
	}
	if err := f.coordinates(req.TransactionalID, false); err != nil {
		return &InitProducerIDResponse{Err: err, ProducerID: -1, ProducerEpoch: -1}, nil
	}
	return &InitProducerIDResponse{ProducerID: int64(f.id), ProducerEpoch: 0}, nil
}

func (f txnFake) AddPartitionsToTxn(_ context.Context, req *AddPartitionsToTxnRequest) (*AddPartitionsToTxnResponse, error) {
	if err := f.take(req); err != nil {
		return nil, err
	}
	resp := &AddPartitionsToTxnResponse{}
	for _, t := range req.Transactions {
		r := AddPartitionsToTxnResult{TransactionalID: t.TransactionalID}
		for _, p := range t.Partitions {
			r.Partitions = append(r.Partitions, TxnPartitionResult{TopicPartition: p, Err: f.coordinates(t.TransactionalID, false)})
		}
		resp.Transactions = append(resp.Transactions, r)
	}
	return resp, nil
}

func (f txnFake) AddOffsetsToTxn(_ context.Context, req *AddOffsetsToTxnRequest) (*AddOffsetsToTxnResponse, error) {
	if err := f.take(req); err != nil {
		return nil, err
	}
	return &AddOffsetsToTxnResponse{Err: f.coordinates(req.TransactionalID, false)}, nil
}

func (f txnFake) EndTxn(_ context.Context, req *EndTxnRequest) (*EndTxnResponse, error) {
	if err := f.take(req); err != nil {
		return nil, err
	}
	if err := f.coordinates(req.TransactionalID, false); err != nil {
		return &EndTxnResponse{Err: err, ProducerID: -1, ProducerEpoch: -1}, nil
	}
	return &EndTxnResponse{ProducerID: int64(f.id), ProducerEpoch: req.ProducerEpoch + 1}, nil
}

func (f txnFake) WriteTxnMarkers(_ context.Context, req *WriteTxnMarkersRequest) (*WriteTxnMarkersResponse, error) {
	if err := f.take(req); err != nil {
		return nil, err
	}
	resp := &WriteTxnMarkersResponse{}
	for _, m := range req.Markers {
		r := TxnMarkerResult{ProducerID: m.ProducerID}
		for _, p := range m.Partitions {
			r.Partitions = append(r.Partitions, TxnPartitionResult{TopicPartition: p, Err: f.leads(p)})
		}
		resp.Markers = append(resp.Markers, r)
	}
	return resp, nil
}

func (f txnFake) TxnOffsetCommit(_ context.Context, req *TxnOffsetCommitRequest) (*TxnOffsetCommitResponse, error) {
	if err := f.take(req); err != nil {
		return nil, err
	}
	err := f.coordinates(req.Group, true)
	resp := &TxnOffsetCommitResponse{}
	for _, t := range req.Topics {
		tr := OffsetCommitTopicResponse{Topic: t.Topic}
		for _, p := range t.Partitions {
			tr.Partitions = append(tr.Partitions, OffsetCommitPartitionResponse{Partition: p.Partition, Err: err})
		}
		resp.Topics = append(resp.Topics, tr)
	}
	return resp, nil
}

func (f txnFake) DescribeTransactions(_ context.Context, req *DescribeTransactionsRequest) (*DescribeTransactionsResponse, error) {
	if err := f.take(req); err != nil {
		return nil, err
	}
	resp := &DescribeTransactionsResponse{}
	for _, id := range req.TransactionalIDs {
		d := DescribedTransaction{TransactionalID: id, State: "Ongoing", ProducerID: int64(f.id), StartTimestamp: -1}
		if d.Err = f.coordinates(id, false); d.Err != nil {
			d.State, d.ProducerID = "", -1
		}
		resp.Transactions = append(resp.Transactions, d)
	}
	return resp, nil
}

func (f txnFake) ListTransactions(_ context.Context, req *ListTransactionsRequest) (*ListTransactionsResponse, error) {
	if err := f.take(req); err != nil {
		return nil, err
	}
	f.c.mu.Lock()
	defer f.c.mu.Unlock()
	resp := &ListTransactionsResponse{UnknownStateFilters: []string{"Bogus"}}
	for id, coord := range f.c.txnCoord {
		if coord == f.id {
			resp.Transactions = append(resp.Transactions, ListedTransaction{TransactionalID: id, ProducerID: int64(f.id), State: "Ongoing"})
		}
	}
	return resp, nil
}

// newTxnCluster returns a ClusterClient of the fake cluster.
func newTxnCluster(t *testing.T, fakes *txnFakes) *ClusterClient {
	t.Helper()
	c, err := NewClusterClient(context.Background(), []string{"n:1"}, func(_ context.Context, addr string) (NodeClient, error) {
		var id int32
		if _, err := fmt.Sscanf(addr, "n:%d", &id); err != nil {
			return nil, fmt.Errorf("%w: %s", kafka.ErrNetwork, addr)
		}
		return txnFake{c: fakes, id: id}, nil
	})
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	return c
}

// served returns the kinds of request each node got since the last call,
// by node id, and forgets them.
func (fakes *txnFakes) served() map[int32][]string {
	fakes.mu.Lock()
	defer fakes.mu.Unlock()
	out := map[int32][]string{}
	for id, reqs := range fakes.got {
		for _, r := range reqs {
			out[id] = append(out[id], fmt.Sprintf("%T", r)[len("*transport."):])
		}
	}
	fakes.got = nil
	return out
}

// findsOf returns the FindCoordinator requests so far, and forgets them.
func (fakes *txnFakes) findsOf() []FindCoordinatorRequest {
	fakes.mu.Lock()
	defer fakes.mu.Unlock()
	f := fakes.finds
	fakes.finds = nil
	return f
}

// TestClusterClientTxnCoordinator: the transaction coordinator's requests
// go to the coordinator FindCoordinator names for the transactional id,
// found once and cached apart from the group coordinators (the same string
// as a group id and a transactional id has two); NOT_COORDINATOR or a
// failed call makes the client find it again. TxnOffsetCommit goes to the
// group's coordinator, and InitProducerId without a transactional id to
// any node.
func TestClusterClientTxnCoordinator(t *testing.T) {
	fakes := &txnFakes{txnCoord: map[string]int32{"x": 2}, groupCoord: 1, down: map[int32]bool{}}
	c := newTxnCluster(t, fakes)
	ctx := context.Background()
	fakes.served()

	ir, err := c.InitProducerID(ctx, &InitProducerIDRequest{TransactionalID: "x", ProducerID: -1, ProducerEpoch: -1})
	require.NoError(t, err)
	require.NoError(t, ir.Err)
	require.Equal(t, int64(2), ir.ProducerID, "from the coordinator")
	er, err := c.EndTxn(ctx, &EndTxnRequest{TransactionalID: "x", ProducerID: 2, Result: TxnCommit})
	require.NoError(t, err)
	require.NoError(t, er.Err)
	ar, err := c.AddOffsetsToTxn(ctx, &AddOffsetsToTxnRequest{TransactionalID: "x", Group: "x"})
	require.NoError(t, err)
	require.NoError(t, ar.Err)
	cr, err := c.TxnOffsetCommit(ctx, &TxnOffsetCommitRequest{TransactionalID: "x", Group: "x", GenerationID: NoGeneration,
		Topics: []OffsetCommitTopic{{Topic: "t", Partitions: []OffsetCommitPartition{{Partition: 0, Offset: 5}}}}})
	require.NoError(t, err)
	require.NoError(t, cr.Topics[0].Partitions[0].Err)
	require.Equal(t, map[int32][]string{2: {"InitProducerIDRequest", "EndTxnRequest", "AddOffsetsToTxnRequest"}, 1: {"TxnOffsetCommitRequest"}}, fakes.served())
	require.Equal(t, []FindCoordinatorRequest{{Key: "x", KeyType: CoordinatorTransaction}, {Key: "x", KeyType: CoordinatorGroup}}, fakes.findsOf(),
		"one find for each, cached")

	// The coordinator moves: NOT_COORDINATOR, then found again.
	fakes.mu.Lock()
	fakes.txnCoord["x"] = 1
	fakes.mu.Unlock()
	er, err = c.EndTxn(ctx, &EndTxnRequest{TransactionalID: "x"})
	require.NoError(t, err)
	require.ErrorIs(t, er.Err, kafka.ErrNotCoordinator)
	require.True(t, kafka.IsRetriable(er.Err))
	er, err = c.EndTxn(ctx, &EndTxnRequest{TransactionalID: "x"})
	require.NoError(t, err)
	require.NoError(t, er.Err)
	require.Equal(t, map[int32][]string{2: {"EndTxnRequest"}, 1: {"EndTxnRequest"}}, fakes.served())
	require.Equal(t, []FindCoordinatorRequest{{Key: "x", KeyType: CoordinatorTransaction}}, fakes.findsOf())

	// It goes down: the call fails, and the next finds it again, where
	// none is available for now.
	fakes.mu.Lock()
	fakes.down[1], fakes.txnCoord["x"] = true, 0
	fakes.mu.Unlock()
	_, err = c.EndTxn(ctx, &EndTxnRequest{TransactionalID: "x"})
	require.ErrorIs(t, err, kafka.ErrNetwork)
	_, err = c.AddOffsetsToTxn(ctx, &AddOffsetsToTxnRequest{TransactionalID: "x"})
	require.ErrorIs(t, err, kafka.ErrCoordinatorNotAvailable)
	require.True(t, kafka.IsRetriable(err))
	fakes.mu.Lock()
	fakes.down[1], fakes.txnCoord["x"] = false, 2
	fakes.mu.Unlock()
	_, err = c.AddOffsetsToTxn(ctx, &AddOffsetsToTxnRequest{TransactionalID: "x"})
	require.NoError(t, err)

	ir, err = c.InitProducerID(ctx, &InitProducerIDRequest{ProducerID: -1, ProducerEpoch: -1})
	require.NoError(t, err)
	require.NoError(t, ir.Err, "an idempotent producer's id comes from any node")
}

// TestClusterClientTxnBatches: a batch of AddPartitionsToTxn and a
// DescribeTransactions are split by coordinator and answered in the
// request's order; an id without a coordinator is answered with the
// error. ListTransactions merges every node's, with a failed node's error.
func TestClusterClientTxnBatches(t *testing.T) {
	fakes := &txnFakes{txnCoord: map[string]int32{"a": 1, "b": 2, "c": 1}, groupCoord: 1, down: map[int32]bool{}}
	c := newTxnCluster(t, fakes)
	ctx := context.Background()
	fakes.served()

	req := &AddPartitionsToTxnRequest{Version: 5, Transactions: []AddPartitionsToTxnTransaction{
		{TransactionalID: "b", VerifyOnly: true, Partitions: []kafka.TopicPartition{tp("t", 0)}},
		{TransactionalID: "none", Partitions: []kafka.TopicPartition{tp("t", 1), tp("t", 2)}},
		{TransactionalID: "a", Partitions: []kafka.TopicPartition{tp("t", 1)}},
		{TransactionalID: "c", Partitions: []kafka.TopicPartition{tp("t", 2)}},
	}}
	resp, err := c.AddPartitionsToTxn(ctx, req)
	require.NoError(t, err)
	require.NoError(t, resp.Err)
	var ids []string
	for _, r := range resp.Transactions {
		ids = append(ids, r.TransactionalID)
	}
	require.Equal(t, []string{"b", "none", "a", "c"}, ids)
	require.Equal(t, []TxnPartitionResult{{TopicPartition: tp("t", 0)}}, resp.Transactions[0].Partitions)
	require.Len(t, resp.Transactions[1].Partitions, 2)
	for _, p := range resp.Transactions[1].Partitions {
		require.ErrorIs(t, p.Err, kafka.ErrCoordinatorNotAvailable)
	}
	require.NoError(t, resp.Transactions[2].Partitions[0].Err)
	require.NoError(t, resp.Transactions[3].Partitions[0].Err)
	fakes.mu.Lock()
	node1 := fakes.got[1][0].(*AddPartitionsToTxnRequest)
	node2 := fakes.got[2][0].(*AddPartitionsToTxnRequest)
	fakes.mu.Unlock()
	require.Equal(t, int16(5), node1.Version, "the version asked for goes along")
	require.Equal(t, []AddPartitionsToTxnTransaction{req.Transactions[2], req.Transactions[3]}, node1.Transactions, "one request per coordinator")
	require.Equal(t, []AddPartitionsToTxnTransaction{req.Transactions[0]}, node2.Transactions)
	fakes.served()

	dr, err := c.DescribeTransactions(ctx, &DescribeTransactionsRequest{TransactionalIDs: []string{"c", "b", "none", "a"}})
	require.NoError(t, err)
	require.Len(t, dr.Transactions, 4)
	for i, want := range []struct {
		id       string
		producer int64
	}{{"c", 1}, {"b", 2}, {"none", -1}, {"a", 1}} {
		require.Equal(t, want.id, dr.Transactions[i].TransactionalID)
		require.Equal(t, want.producer, dr.Transactions[i].ProducerID)
	}
	require.ErrorIs(t, dr.Transactions[2].Err, kafka.ErrCoordinatorNotAvailable)
	require.Equal(t, map[int32][]string{1: {"DescribeTransactionsRequest"}, 2: {"DescribeTransactionsRequest"}}, fakes.served())

	lr, err := c.ListTransactions(ctx, &ListTransactionsRequest{})
	require.NoError(t, err)
	require.NoError(t, lr.Err)
	require.Equal(t, []ListedTransaction{{"a", 1, "Ongoing"}, {"b", 2, "Ongoing"}, {"c", 1, "Ongoing"}}, lr.Transactions)
	require.Equal(t, []string{"Bogus"}, lr.UnknownStateFilters, "each node's unknown states, once")
	fakes.mu.Lock()
	fakes.down[2] = true
	fakes.mu.Unlock()
	lr, err = c.ListTransactions(ctx, &ListTransactionsRequest{})
	require.NoError(t, err)
	require.ErrorIs(t, lr.Err, kafka.ErrNetwork)
	require.Equal(t, []ListedTransaction{{"a", 1, "Ongoing"}, {"c", 1, "Ongoing"}}, lr.Transactions, "the others' ids")
}

// TestClusterClientWriteTxnMarkers: markers go to the leaders of their
// partitions, one request per leader holding each marker's share; the
// answer follows the request's order, a partition without a leader gets
// LEADER_NOT_AVAILABLE, a down leader's partitions its error, and
// NOT_LEADER_OR_FOLLOWER makes the client learn the leaders again.
func TestClusterClientWriteTxnMarkers(t *testing.T) {
	fakes := &txnFakes{leaders: []int32{1, 2, 1, -1}, down: map[int32]bool{}}
	c := newTxnCluster(t, fakes)
	ctx := context.Background()
	fakes.served()
	req := &WriteTxnMarkersRequest{Markers: []TxnMarker{
		{ProducerID: 7, ProducerEpoch: 3, Result: TxnCommit, CoordinatorEpoch: 4, TransactionVersion: 2,
			Partitions: []kafka.TopicPartition{tp("t", 0), tp("t", 1), tp("t", 2), tp("t", 3)}},
		{ProducerID: 8, ProducerEpoch: 1, Result: TxnAbort, CoordinatorEpoch: 4, Partitions: []kafka.TopicPartition{tp("t", 1)}},
	}}
	resp, err := c.WriteTxnMarkers(ctx, req)
	require.NoError(t, err)
	require.Len(t, resp.Markers, 2)
	require.Equal(t, int64(7), resp.Markers[0].ProducerID)
	m := resp.Markers[0].Partitions
	require.Equal(t, []kafka.TopicPartition{tp("t", 0), tp("t", 1), tp("t", 2), tp("t", 3)},
		[]kafka.TopicPartition{m[0].TopicPartition, m[1].TopicPartition, m[2].TopicPartition, m[3].TopicPartition})
	require.NoError(t, m[0].Err)
	require.NoError(t, m[1].Err)
	require.NoError(t, m[2].Err)
	require.ErrorIs(t, m[3].Err, kafka.ErrLeaderNotAvailable)
	require.Equal(t, []TxnPartitionResult{{TopicPartition: tp("t", 1)}}, resp.Markers[1].Partitions)
	fakes.mu.Lock()
	to1, to2 := fakes.got[1][0].(*WriteTxnMarkersRequest), fakes.got[2][0].(*WriteTxnMarkersRequest)
	fakes.mu.Unlock()
	share := req.Markers[0]
	share.Partitions = []kafka.TopicPartition{tp("t", 0), tp("t", 2)}
	require.Equal(t, []TxnMarker{share}, to1.Markers, "each leader gets its partitions, the marker's fields kept")
	require.Len(t, to2.Markers, 2)
	require.Equal(t, []kafka.TopicPartition{tp("t", 1)}, to2.Markers[0].Partitions)
	require.Equal(t, req.Markers[1], to2.Markers[1])
	fakes.served()

	// The partition without a leader made the client learn the leaders
	// again at the next call. Then leadership moves under the client, and
	// node 1 goes down.
	resp, err = c.WriteTxnMarkers(ctx, &WriteTxnMarkersRequest{Markers: []TxnMarker{{ProducerID: 7, Partitions: []kafka.TopicPartition{tp("t", 0)}}}})
	require.NoError(t, err)
	require.NoError(t, resp.Markers[0].Partitions[0].Err)
	fakes.mu.Lock()
	fakes.leaders[1], fakes.down[1] = 1, true
	fakes.mu.Unlock()
	resp, err = c.WriteTxnMarkers(ctx, &WriteTxnMarkersRequest{Markers: []TxnMarker{{ProducerID: 7, Partitions: []kafka.TopicPartition{tp("t", 0), tp("t", 1)}}}})
	require.NoError(t, err)
	require.ErrorIs(t, resp.Markers[0].Partitions[0].Err, kafka.ErrNetwork)
	require.ErrorIs(t, resp.Markers[0].Partitions[1].Err, kafka.ErrNotLeaderOrFollower)
	require.True(t, kafka.IsRetriable(resp.Markers[0].Partitions[1].Err))
	fakes.mu.Lock()
	fakes.down[1] = false
	fakes.mu.Unlock()
	resp, err = c.WriteTxnMarkers(ctx, &WriteTxnMarkersRequest{Markers: []TxnMarker{{ProducerID: 7, Partitions: []kafka.TopicPartition{tp("t", 1)}}}})
	require.NoError(t, err)
	require.NoError(t, resp.Markers[0].Partitions[0].Err, "the leaders learnt again")
	served := fakes.served()
	require.Equal(t, []string{"WriteTxnMarkersRequest"}, served[1][len(served[1])-1:])
}

// TestClusterClientTxnNodeWithoutTxn: a node that answers no transaction
// calls fails them with UNSUPPORTED_VERSION, as over TCP.
func TestClusterClientTxnNodeWithoutTxn(t *testing.T) {
	fakes := &coordFakes{coord: 1, down: map[int32]bool{}, beats: map[int32]int{}}
	c, err := NewClusterClient(context.Background(), []string{"n:1"}, func(_ context.Context, addr string) (NodeClient, error) {
		return coordFake{c: fakes, id: 1}, nil
	})
	require.NoError(t, err)
	defer c.Close()
	_, err = c.EndTxn(context.Background(), &EndTxnRequest{TransactionalID: "x"})
	require.ErrorIs(t, err, kafka.ErrUnsupportedVersion)
	require.False(t, kafka.IsRetriable(err))
}
