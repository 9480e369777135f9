package transport

import (
	"context"
	"fmt"

	"github.com/partlog/partlog/kafka"
)

// A ClusterClient is a TxnClient as a Kafka client is. InitProducerId with
// a transactional id, AddPartitionsToTxn, AddOffsetsToTxn, EndTxn and
// DescribeTransactions go to the transaction coordinator of each
// transactional id, which the client finds with FindCoordinator
// (CoordinatorTransaction) and remembers per id; it forgets it as it
// forgets a group's coordinator (NOT_COORDINATOR,
// COORDINATOR_NOT_AVAILABLE, COORDINATOR_LOAD_IN_PROGRESS, no answer), and
// the caller retries after its backoff. TxnOffsetCommit goes to the
// group's coordinator, WriteTxnMarkers to the leaders of its partitions,
// and ListTransactions to every node. A node that answers no transaction
// calls (a NodeClient that is not a TxnClient) fails them with
// kafka.ErrUnsupportedVersion, as a TCPClient does.
var _ TxnClient = (*ClusterClient)(nil)

// txnCall returns a call that sends req to a node with method of its
// TxnClient.
func txnCall[Req, Resp any](ctx context.Context, req Req, method func(TxnClient, context.Context, Req) (Resp, error)) func(NodeClient) (Resp, error) {
	return func(n NodeClient) (Resp, error) {
		tc, ok := n.(TxnClient)
		if !ok {
			var none Resp
			return none, fmt.Errorf("%w: the node answers no transaction calls", kafka.ErrUnsupportedVersion)
		}
		return method(tc, ctx, req)
	}
}

// AddPartitionsToTxn sends each transaction to the coordinator of its
// transactional id, and answers transaction by transaction, in the order
// of their ids' first appearance. A transaction whose coordinator could
// not be found or reached, or that it left out, is answered with the
// error on each of its partitions; so is one whose coordinator answered
// with a request-wide error.
func (c *ClusterClient) AddPartitionsToTxn(ctx context.Context, req *AddPartitionsToTxnRequest) (*AddPartitionsToTxnResponse, error) {
	byID := map[string][]AddPartitionsToTxnTransaction{}
	var ids []string
	for _, t := range req.Transactions {
		if _, ok := byID[t.TransactionalID]; !ok {
			ids = append(ids, t.TransactionalID)
		}
		byID[t.TransactionalID] = append(byID[t.TransactionalID], t)
	}
	failed := func(id string, err error) AddPartitionsToTxnResult {
		r := AddPartitionsToTxnResult{TransactionalID: id}
		for _, t := range byID[id] {
			for _, tp := range t.Partitions {
				r.Partitions = append(r.Partitions, TxnPartitionResult{TopicPartition: tp, Err: err})
			}
		}
		return r
	}
	results, err := perCoordinator(ctx, c, CoordinatorTransaction, ids,
		func(ctx context.Context, n NodeClient, ids []string) ([]AddPartitionsToTxnResult, error) {
			sub := &AddPartitionsToTxnRequest{Version: req.Version}
			for _, id := range ids {
				sub.Transactions = append(sub.Transactions, byID[id]...)
			}
			resp, err := txnCall(ctx, sub, TxnClient.AddPartitionsToTxn)(n)
			if err != nil {
				return nil, err
			}
			if resp.Err != nil {
				return each(ids, func(id string) AddPartitionsToTxnResult { return failed(id, resp.Err) }), nil
			}
			return resp.Transactions, nil
		},
		func(r AddPartitionsToTxnResult) (string, error) {
			return r.TransactionalID, firstTxnError(r.Partitions)
		},
		failed)
	if err != nil {
		return nil, err
	}
	return &AddPartitionsToTxnResponse{Transactions: results}, nil
}

// firstTxnError returns the first error of partition results, or nil.
func firstTxnError(results []TxnPartitionResult) error {
	for _, r := range results {
		if r.Err != nil {
			return r.Err
		}
	}
	return nil
}

// AddOffsetsToTxn sends an AddOffsetsToTxn to the transactional id's
// coordinator.
func (c *ClusterClient) AddOffsetsToTxn(ctx context.Context, req *AddOffsetsToTxnRequest) (*AddOffsetsToTxnResponse, error) {
	return toCoordinator(ctx, c, txnKey(req.TransactionalID), txnCall(ctx, req, TxnClient.AddOffsetsToTxn),
		func(r *AddOffsetsToTxnResponse) []error { return []error{r.Err} })
}

// EndTxn sends an EndTxn to the transactional id's coordinator.
func (c *ClusterClient) EndTxn(ctx context.Context, req *EndTxnRequest) (*EndTxnResponse, error) {
	return toCoordinator(ctx, c, txnKey(req.TransactionalID), txnCall(ctx, req, TxnClient.EndTxn),
		func(r *EndTxnResponse) []error { return []error{r.Err} })
}

// TxnOffsetCommit sends a TxnOffsetCommit to the group's coordinator.
func (c *ClusterClient) TxnOffsetCommit(ctx context.Context, req *TxnOffsetCommitRequest) (*TxnOffsetCommitResponse, error) {
	return toCoordinator(ctx, c, groupKey(req.Group), txnCall(ctx, req, TxnClient.TxnOffsetCommit),
		func(r *TxnOffsetCommitResponse) []error { return commitErrors(r.Topics) })
}

// DescribeTransactions asks each transactional id's coordinator to
// describe it. An id whose coordinator could not be found or reached is
// described with the error.
func (c *ClusterClient) DescribeTransactions(ctx context.Context, req *DescribeTransactionsRequest) (*DescribeTransactionsResponse, error) {
	described, err := perCoordinator(ctx, c, CoordinatorTransaction, req.TransactionalIDs,
		func(ctx context.Context, n NodeClient, ids []string) ([]DescribedTransaction, error) {
			r, err := txnCall(ctx, &DescribeTransactionsRequest{TransactionalIDs: ids}, TxnClient.DescribeTransactions)(n)
			if err != nil {
				return nil, err
			}
			return r.Transactions, nil
		},
		func(d DescribedTransaction) (string, error) { return d.TransactionalID, d.Err },
		func(id string, err error) DescribedTransaction {
			return DescribedTransaction{Err: err, TransactionalID: id, StartTimestamp: -1, ProducerID: -1, ProducerEpoch: -1}
		})
	if err != nil {
		return nil, err
	}
	return &DescribeTransactionsResponse{Transactions: described}, nil
}

// ListTransactions asks every node for the transactional ids it
// coordinates and merges the answers, sorted by transactional id. When a
// node cannot be reached or fails, the ids of the others are answered,
// with Err set to that node's error.
func (c *ClusterClient) ListTransactions(ctx context.Context, req *ListTransactionsRequest) (*ListTransactionsResponse, error) {
	answers, err := everyNode(ctx, c, func(ctx context.Context, n NodeClient) (*ListTransactionsResponse, error) {
		return txnCall(ctx, req, TxnClient.ListTransactions)(n)
	}, func(r *ListTransactionsResponse) error { return r.Err })
	if err != nil {
		return nil, err
	}
	return &ListTransactionsResponse{Err: answers.err,
		UnknownStateFilters: mergeListed(answers.resps, func(r *ListTransactionsResponse) []string { return r.UnknownStateFilters },
			func(s string) string { return s }),
		Transactions: mergeListed(answers.resps, func(r *ListTransactionsResponse) []ListedTransaction { return r.Transactions },
			func(t ListedTransaction) string { return t.TransactionalID }),
	}, nil
}

// WriteTxnMarkers sends each marker's partitions to their leaders, the
// markers for one leader in one request, and answers marker by marker and
// partition by partition in the request's order: the leader's answer, or a
// retriable error when the partition had no known leader, its leader could
// not be reached, or its leader left it out. Errors that say the client's
// view of the leaders is stale mark it so, as a Produce's do.
func (c *ClusterClient) WriteTxnMarkers(ctx context.Context, req *WriteTxnMarkersRequest) (*WriteTxnMarkersResponse, error) {
	var topics []string
	for _, m := range req.Markers {
		for _, tp := range m.Partitions {
			topics = append(topics, tp.Topic)
		}
	}
	c.refresh(ctx, topics)
	route := make([][]string, len(req.Markers)) // the leader of each marker's partitions, "" for none
	shares := map[string]*WriteTxnMarkersRequest{}
	for i, m := range req.Markers {
		route[i] = make([]string, len(m.Partitions))
		byLeader := map[string][]kafka.TopicPartition{}
		var leaders []string
		for j, tp := range m.Partitions {
			addr := c.leaderAddr(tp.Topic, tp.Partition)
			route[i][j] = addr
			if addr == "" {
				continue
			}
			if _, ok := byLeader[addr]; !ok {
				leaders = append(leaders, addr)
			}
			byLeader[addr] = append(byLeader[addr], tp)
		}
		for _, addr := range leaders {
			if shares[addr] == nil {
				shares[addr] = &WriteTxnMarkersRequest{}
			}
			share := m
			share.Partitions = byLeader[addr]
			shares[addr].Markers = append(shares[addr].Markers, share)
		}
	}
	resps, errs := fanOut(ctx, c, mapKeys(shares), func(ctx context.Context, n NodeClient, addr string) (*WriteTxnMarkersResponse, error) {
		return txnCall(ctx, shares[addr], TxnClient.WriteTxnMarkers)(n)
	})
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	out := &WriteTxnMarkersResponse{Markers: make([]TxnMarkerResult, len(req.Markers))}
	for i, m := range req.Markers {
		out.Markers[i].ProducerID = m.ProducerID
		for j, tp := range m.Partitions {
			r := TxnPartitionResult{TopicPartition: tp}
			switch addr := route[i][j]; {
			case addr == "":
				r.Err = fmt.Errorf("%w: no known leader for %s", kafka.ErrLeaderNotAvailable, tp)
			case errs[addr] != nil:
				r.Err = errs[addr]
			default:
				r.Err = markerAnswer(resps[addr], m.ProducerID, tp)
			}
			c.noteAnswer(r.Err)
			out.Markers[i].Partitions = append(out.Markers[i].Partitions, r)
		}
	}
	return out, nil
}

// markerAnswer returns a leader's answer about the marker of producerID on
// tp: Kafka's answer names a marker by its producer id alone.
func markerAnswer(resp *WriteTxnMarkersResponse, producerID int64, tp kafka.TopicPartition) error {
	for _, m := range resp.Markers {
		if m.ProducerID != producerID {
			continue
		}
		for _, p := range m.Partitions {
			if p.TopicPartition == tp {
				return p.Err
			}
		}
	}
	return fmt.Errorf("%w: the leader did not answer for %s", kafka.ErrNetwork, tp)
}
