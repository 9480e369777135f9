package broker

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"time"

	"github.com/partlog/partlog/group"
	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/transport"
	"github.com/partlog/partlog/txn"
)

// The Broker answers the transaction requests: those of a transaction
// coordinator for the transactional ids whose partition of
// __transaction_state it leads, TxnOffsetCommit for the groups it
// coordinates, and WriteTxnMarkers for the partitions it leads.
var _ transport.TxnClient = (*Broker)(nil)

// transactionVersion is the transaction version a request of version
// version speaks: 2 from EndTxn version 5 (and AddPartitionsToTxn version
// 5, which only brokers send), as Kafka decides it.
func transactionVersion(version int16) txn.TransactionVersion {
	if version >= 5 {
		return txn.TV2
	}
	return txn.TV0
}

// The Broker reports the feature transaction.version to Kafka's clients.
var _ transport.FeatureReporter = (*Broker)(nil)

// Features returns the node's features for ApiVersions: transaction.version,
// supported from 0 to 2 and finalized at 2 (at 0 with
// Options.NoTransactionVersion2).
func (n *Broker) Features() []transport.Feature {
	tv := transport.Feature{Name: transport.FeatureTransactionVersion, MinLevel: 0, MaxLevel: int16(txn.TV2), Finalized: int16(txn.TV2)}
	if n.opts.NoTransactionVersion2 {
		tv.Finalized = int16(txn.TV0)
	}
	return []transport.Feature{tv}
}

// txnCall runs a coordinator request for transactional id id: it finds
// the id's partition (NOT_COORDINATOR on another node) and waits for the
// answer.
func (n *Broker) txnCall(ctx context.Context, id string, do func(rid uint64, nowMs int64)) txn.Answer {
	if _, err := n.txns.state.partitionOf(ctx, id, txnStatePartitions, txnStateConfigs()); err != nil {
		return txn.Answer{Err: err, ProducerID: -1, ProducerEpoch: -1}
	}
	a, err := n.txns.request(ctx, do)
	if err != nil {
		return txn.Answer{Err: err, ProducerID: -1, ProducerEpoch: -1}
	}
	return a
}

// AddPartitionsToTxn adds partitions to transactions, or with VerifyOnly
// checks that they are in them (KIP-890 part 1).
func (n *Broker) AddPartitionsToTxn(ctx context.Context, req *transport.AddPartitionsToTxnRequest) (*transport.AddPartitionsToTxnResponse, error) {
	if err := n.begin(); err != nil {
		return nil, err
	}
	defer n.end()
	resp := &transport.AddPartitionsToTxnResponse{}
	for _, t := range req.Transactions {
		res := transport.AddPartitionsToTxnResult{TransactionalID: t.TransactionalID}
		if t.VerifyOnly {
			errs := n.verifyTxnPartitions(ctx, t)
			for i, tp := range t.Partitions {
				res.Partitions = append(res.Partitions, transport.TxnPartitionResult{TopicPartition: tp, Err: errs[i]})
			}
		} else {
			err := n.addTxnPartitions(ctx, t, req.Version)
			for _, tp := range t.Partitions {
				res.Partitions = append(res.Partitions, transport.TxnPartitionResult{TopicPartition: tp, Err: err})
			}
		}
		resp.Transactions = append(resp.Transactions, res)
	}
	return resp, nil
}

// addTxnPartitions adds the partitions of t, a transaction of an
// AddPartitionsToTxn of the given version, to its transaction.
func (n *Broker) addTxnPartitions(ctx context.Context, t transport.AddPartitionsToTxnTransaction, version int16) error {
	h := n.txns
	a := n.txnCall(ctx, t.TransactionalID, func(rid uint64, nowMs int64) {
		h.c.AddPartitions(txn.AddPartitionsRequest{ID: rid, Version: version, TransactionalID: t.TransactionalID,
			ProducerID: t.ProducerID, ProducerEpoch: t.ProducerEpoch, Partitions: t.Partitions,
			TransactionVersion: transactionVersion(version)}, nowMs)
	})
	return a.Err
}

// verifyTxnPartitions answers a VerifyOnly transaction of
// AddPartitionsToTxn, partition by partition.
func (n *Broker) verifyTxnPartitions(ctx context.Context, t transport.AddPartitionsToTxnTransaction) []error {
	errs := make([]error, len(t.Partitions))
	if _, err := n.txns.state.partitionOf(ctx, t.TransactionalID, txnStatePartitions, txnStateConfigs()); err != nil {
		for i := range errs {
			errs[i] = err
		}
		return errs
	}
	h := n.txns
	rs, err := onLoop(h, func() []txn.PartitionResult {
		return h.c.VerifyPartitions(t.TransactionalID, t.ProducerID, t.ProducerEpoch, t.Partitions)
	})
	for i := range errs {
		if err != nil {
			errs[i] = err
		} else {
			errs[i] = rs[i].Err
		}
	}
	return errs
}

// AddOffsetsToTxn adds a group's partition of __consumer_offsets to a
// transaction.
func (n *Broker) AddOffsetsToTxn(ctx context.Context, req *transport.AddOffsetsToTxnRequest) (*transport.AddOffsetsToTxnResponse, error) {
	if err := n.begin(); err != nil {
		return nil, err
	}
	defer n.end()
	h := n.txns
	a := n.txnCall(ctx, req.TransactionalID, func(rid uint64, nowMs int64) {
		h.c.AddOffsets(txn.AddOffsetsRequest{ID: rid, Version: req.Version, TransactionalID: req.TransactionalID,
			ProducerID: req.ProducerID, ProducerEpoch: req.ProducerEpoch, GroupID: req.Group,
			TransactionVersion: transactionVersion(req.Version)}, nowMs)
	})
	return &transport.AddOffsetsToTxnResponse{Err: a.Err}, nil
}

// EndTxn commits or aborts a transaction: answered once the outcome is
// durable; the markers follow.
func (n *Broker) EndTxn(ctx context.Context, req *transport.EndTxnRequest) (*transport.EndTxnResponse, error) {
	if err := n.begin(); err != nil {
		return nil, err
	}
	defer n.end()
	h := n.txns
	result := txn.Abort
	if req.Result == transport.TxnCommit {
		result = txn.Commit
	}
	a := n.txnCall(ctx, req.TransactionalID, func(rid uint64, nowMs int64) {
		h.c.EndTxn(txn.EndTxnRequest{ID: rid, Version: req.Version, TransactionalID: req.TransactionalID,
			ProducerID: req.ProducerID, ProducerEpoch: req.ProducerEpoch, Result: result,
			TransactionVersion: transactionVersion(req.Version)}, nowMs)
	})
	return &transport.EndTxnResponse{Err: a.Err, ProducerID: a.ProducerID, ProducerEpoch: a.ProducerEpoch}, nil
}

// DescribeTransactions describes the transactional ids this node
// coordinates, and answers the error for the others.
func (n *Broker) DescribeTransactions(ctx context.Context, req *transport.DescribeTransactionsRequest) (*transport.DescribeTransactionsResponse, error) {
	if err := n.begin(); err != nil {
		return nil, err
	}
	defer n.end()
	resp := &transport.DescribeTransactionsResponse{}
	for _, id := range req.TransactionalIDs {
		d := transport.DescribedTransaction{TransactionalID: id, ProducerID: -1, ProducerEpoch: -1, StartTimestamp: -1}
		if _, err := n.txns.state.partitionOf(ctx, id, txnStatePartitions, txnStateConfigs()); err != nil {
			d.Err = err
		} else if s, err := n.txns.describe(id); err != nil {
			d.Err = err
		} else {
			d = describedTransaction(s)
		}
		resp.Transactions = append(resp.Transactions, d)
	}
	return resp, nil
}

// describedTransaction is s as DescribeTransactions answers it.
func describedTransaction(s txn.Status) transport.DescribedTransaction {
	return transport.DescribedTransaction{TransactionalID: s.TransactionalID, State: s.State.String(),
		TransactionTimeout: time.Duration(s.TransactionTimeoutMs) * time.Millisecond, StartTimestamp: s.StartTimestampMs,
		ProducerID: s.ProducerID, ProducerEpoch: s.ProducerEpoch, Partitions: s.Partitions}
}

// ListTransactions lists the transactional ids of the partitions of
// __transaction_state this node leads and has loaded.
func (n *Broker) ListTransactions(ctx context.Context, req *transport.ListTransactionsRequest) (*transport.ListTransactionsResponse, error) {
	if err := n.begin(); err != nil {
		return nil, err
	}
	defer n.end()
	resp := &transport.ListTransactionsResponse{}
	states := map[string]bool{}
	for _, s := range req.StateFilters {
		if !knownState(s) {
			resp.UnknownStateFilters = append(resp.UnknownStateFilters, s)
		}
		states[s] = true
	}
	var pattern *regexp.Regexp
	if req.TransactionalIDPattern != "" {
		var err error
		if pattern, err = regexp.Compile(req.TransactionalIDPattern); err != nil {
			resp.Err = fmt.Errorf("%w: transactional id pattern: %v", kafka.ErrInvalidRequest, err)
			return resp, nil
		}
	}
	list, err := n.txns.list()
	if err != nil {
		resp.Err = err
		return resp, nil
	}
	now := n.opts.Now().UnixMilli()
	for _, s := range list {
		switch {
		case len(states) > 0 && !states[s.State.String()],
			len(req.ProducerIDFilters) > 0 && !slices.Contains(req.ProducerIDFilters, s.ProducerID),
			req.MinDuration > 0 && (s.StartTimestampMs < 0 || time.Duration(now-s.StartTimestampMs)*time.Millisecond <= req.MinDuration),
			pattern != nil && !pattern.MatchString(s.TransactionalID):
			continue
		}
		resp.Transactions = append(resp.Transactions, transport.ListedTransaction{TransactionalID: s.TransactionalID,
			ProducerID: s.ProducerID, State: s.State.String()})
	}
	return resp, nil
}

// TxnOffsetCommit commits a group's offsets in a transaction: pending
// until the transaction's marker reaches the group's partition.
func (n *Broker) TxnOffsetCommit(ctx context.Context, req *transport.TxnOffsetCommitRequest) (*transport.TxnOffsetCommitResponse, error) {
	if err := n.begin(); err != nil {
		return nil, err
	}
	defer n.end()
	c, err := n.coordinatorOf(ctx, req.Group)
	if err == nil {
		tc := group.TxnCommit{Group: req.Group, ProducerID: req.ProducerID, ProducerEpoch: req.ProducerEpoch,
			GenerationID: req.GenerationID, MemberID: req.MemberID, GroupInstanceID: req.GroupInstanceID}
		for _, t := range req.Topics {
			for _, p := range t.Partitions {
				tc.Offsets = append(tc.Offsets, group.TxnOffset{TopicPartition: kafka.TopicPartition{Topic: t.Topic, Partition: p.Partition},
					Offset: p.Offset, LeaderEpoch: p.LeaderEpoch, Metadata: p.Metadata})
			}
		}
		err = n.askTxnOffsetCommit(ctx, req, kafka.TopicPartition{Topic: kafka.OffsetsTopic, Partition: c.PartitionFor(req.Group)})
		if err == nil {
			err = c.TxnCommit(tc)
		}
	}
	resp := &transport.TxnOffsetCommitResponse{}
	for _, t := range req.Topics {
		tr := transport.OffsetCommitTopicResponse{Topic: t.Topic}
		for _, p := range t.Partitions {
			tr.Partitions = append(tr.Partitions, transport.OffsetCommitPartitionResponse{Partition: p.Partition, Err: err})
		}
		resp.Topics = append(resp.Topics, tr)
	}
	return resp, nil
}

// knownState reports whether s names a transaction state, as Kafka
// spells them.
func knownState(s string) bool {
	for st := txn.Empty; st <= txn.PrepareEpochFence; st++ {
		if st.String() == s {
			return true
		}
	}
	return false
}

// WriteTxnMarkers writes transactions' markers to the partitions this
// node leads, each as an acks=all append, and answers the error for the
// others.
func (n *Broker) WriteTxnMarkers(ctx context.Context, req *transport.WriteTxnMarkersRequest) (*transport.WriteTxnMarkersResponse, error) {
	if err := n.begin(); err != nil {
		return nil, err
	}
	defer n.end()
	resp := &transport.WriteTxnMarkersResponse{}
	for _, m := range req.Markers {
		res := transport.TxnMarkerResult{ProducerID: m.ProducerID}
		for _, tp := range m.Partitions {
			err := n.appendMarker(ctx, tp, m.ProducerID, m.ProducerEpoch, m.CoordinatorEpoch, m.Result == transport.TxnCommit)
			res.Partitions = append(res.Partitions, transport.TxnPartitionResult{TopicPartition: tp, Err: err})
		}
		resp.Markers = append(resp.Markers, res)
	}
	return resp, nil
}
