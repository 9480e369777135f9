package transport

// wire_txn.go translates the transaction requests (TxnClient) to and from
// Kafka's wire protocol.
//
// AddPartitionsToTxn changed shape at version 4: before, a request names
// one transaction in top-level fields and its answer has no request-wide
// error; from 4 on, a request batches transactions for brokers. partlog's
// types have the batched shape, and the translation of an answer before
// version 4 needs its request (which transaction, which partitions).

import (
	"math"
	"time"

	"github.com/partlog/partlog/kafka"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// txnPartitionsToWire turns the partition results of a transaction answer
// into its wire topics: part makes a wire partition of a partition's index
// and error code, newTopic a topic of its name and partitions.
func txnPartitionsToWire[WP, WT any](results []TxnPartitionResult, part func(partition int32, code int16) WP, newTopic func(string, []WP) WT) []WT {
	return orEmpty(groupTopics(results, func(r TxnPartitionResult) (string, WP) {
		return r.Topic, part(r.Partition, kafka.CodeOf(r.Err))
	}, newTopic))
}

// txnPartitionsFromWire flattens the wire topics of a transaction answer:
// parts gives a topic's name and partitions, about a partition's index and
// error code.
func txnPartitionsFromWire[WT, WP any](ws []WT, parts func(WT) (string, []WP), about func(WP) (int32, int16)) []TxnPartitionResult {
	return flattenTopics(ws, parts, func(topic string, wp WP) TxnPartitionResult {
		p, code := about(wp)
		return TxnPartitionResult{TopicPartition: kafka.TopicPartition{Topic: topic, Partition: p}, Err: kafka.ErrorForCode(code)}
	})
}

// AddPartitionsToTxn.

// addPartitionsToTxnFits reports whether r can be sent in version: before
// version 4 a request names one transaction, and does not verify.
func addPartitionsToTxnFits(r *AddPartitionsToTxnRequest, version int16) bool {
	return version >= 4 || len(r.Transactions) == 1 && !r.Transactions[0].VerifyOnly
}

// addPartitionsToTxnToWire translates an AddPartitionsToTxn; the caller
// checks that it fits the version (addPartitionsToTxnFits).
func addPartitionsToTxnToWire(r *AddPartitionsToTxnRequest, version int16) *kmsg.AddPartitionsToTxnRequest {
	w := versioned(kmsg.NewPtrAddPartitionsToTxnRequest(), version)
	if version < 4 {
		if len(r.Transactions) > 0 {
			t := r.Transactions[0]
			w.TransactionalID, w.ProducerID, w.ProducerEpoch = t.TransactionalID, t.ProducerID, t.ProducerEpoch
			w.Topics = orEmpty(topicPartitionsToWire(t.Partitions, func(topic string, ids []int32) kmsg.AddPartitionsToTxnRequestTopic {
				return kmsg.AddPartitionsToTxnRequestTopic{Topic: topic, Partitions: ids}
			}))
		}
		return w
	}
	w.Transactions = each(orEmpty(r.Transactions), func(t AddPartitionsToTxnTransaction) kmsg.AddPartitionsToTxnRequestTransaction {
		wt := kmsg.NewAddPartitionsToTxnRequestTransaction()
		wt.TransactionalID, wt.ProducerID, wt.ProducerEpoch, wt.VerifyOnly = t.TransactionalID, t.ProducerID, t.ProducerEpoch, t.VerifyOnly
		wt.Topics = orEmpty(topicPartitionsToWire(t.Partitions, func(topic string, ids []int32) kmsg.AddPartitionsToTxnRequestTransactionTopic {
			return kmsg.AddPartitionsToTxnRequestTransactionTopic{Topic: topic, Partitions: ids}
		}))
		return wt
	})
	return w
}

func addPartitionsToTxnFromWire(w *kmsg.AddPartitionsToTxnRequest) *AddPartitionsToTxnRequest {
	r := &AddPartitionsToTxnRequest{Version: w.Version}
	if w.Version < 4 {
		r.Transactions = []AddPartitionsToTxnTransaction{{
			TransactionalID: w.TransactionalID, ProducerID: w.ProducerID, ProducerEpoch: w.ProducerEpoch,
			Partitions: topicPartitionsFromWire(w.Topics, func(wt kmsg.AddPartitionsToTxnRequestTopic) (string, []int32) { return wt.Topic, wt.Partitions }),
		}}
		return r
	}
	r.Transactions = each(orEmpty(w.Transactions), func(wt kmsg.AddPartitionsToTxnRequestTransaction) AddPartitionsToTxnTransaction {
		return AddPartitionsToTxnTransaction{TransactionalID: wt.TransactionalID, ProducerID: wt.ProducerID, ProducerEpoch: wt.ProducerEpoch,
			VerifyOnly: wt.VerifyOnly, Partitions: topicPartitionsFromWire(wt.Topics, func(wt kmsg.AddPartitionsToTxnRequestTransactionTopic) (string, []int32) {
				return wt.Topic, wt.Partitions
			})}
	})
	return r
}

// addPartitionsToTxnResponseToWire translates the answer to req. Before
// version 4 it answers req's one transaction, and a request-wide Err goes
// on each of req's partitions, as Kafka answers then.
func addPartitionsToTxnResponseToWire(req *AddPartitionsToTxnRequest, r *AddPartitionsToTxnResponse, version int16) *kmsg.AddPartitionsToTxnResponse {
	w := versioned(kmsg.NewPtrAddPartitionsToTxnResponse(), version)
	if version >= 4 {
		w.ErrorCode = kafka.CodeOf(r.Err)
		w.Transactions = each(orEmpty(r.Transactions), func(t AddPartitionsToTxnResult) kmsg.AddPartitionsToTxnResponseTransaction {
			return kmsg.AddPartitionsToTxnResponseTransaction{TransactionalID: t.TransactionalID,
				Topics: txnPartitionsToWire(t.Partitions,
					func(p int32, code int16) kmsg.AddPartitionsToTxnResponseTransactionTopicPartition {
						return kmsg.AddPartitionsToTxnResponseTransactionTopicPartition{Partition: p, ErrorCode: code}
					},
					func(topic string, wps []kmsg.AddPartitionsToTxnResponseTransactionTopicPartition) kmsg.AddPartitionsToTxnResponseTransactionTopic {
						return kmsg.AddPartitionsToTxnResponseTransactionTopic{Topic: topic, Partitions: wps}
					})}
		})
		return w
	}
	var results []TxnPartitionResult
	switch {
	case r.Err != nil:
		for _, t := range req.Transactions {
			for _, tp := range t.Partitions {
				results = append(results, TxnPartitionResult{TopicPartition: tp, Err: r.Err})
			}
		}
	case len(r.Transactions) > 0:
		results = r.Transactions[0].Partitions
	}
	w.Topics = txnPartitionsToWire(results,
		func(p int32, code int16) kmsg.AddPartitionsToTxnResponseTopicPartition {
			return kmsg.AddPartitionsToTxnResponseTopicPartition{Partition: p, ErrorCode: code}
		},
		func(topic string, wps []kmsg.AddPartitionsToTxnResponseTopicPartition) kmsg.AddPartitionsToTxnResponseTopic {
			return kmsg.AddPartitionsToTxnResponseTopic{Topic: topic, Partitions: wps}
		})
	return w
}

// addPartitionsToTxnResponseFromWire translates the answer to req: before
// version 4 it is about req's one transaction, which it does not name.
func addPartitionsToTxnResponseFromWire(req *AddPartitionsToTxnRequest, w *kmsg.AddPartitionsToTxnResponse) *AddPartitionsToTxnResponse {
	if w.Version >= 4 {
		return &AddPartitionsToTxnResponse{Err: kafka.ErrorForCode(w.ErrorCode),
			Transactions: each(w.Transactions, func(wt kmsg.AddPartitionsToTxnResponseTransaction) AddPartitionsToTxnResult {
				return AddPartitionsToTxnResult{TransactionalID: wt.TransactionalID, Partitions: txnPartitionsFromWire(wt.Topics,
					func(wt kmsg.AddPartitionsToTxnResponseTransactionTopic) (string, []kmsg.AddPartitionsToTxnResponseTransactionTopicPartition) {
						return wt.Topic, wt.Partitions
					},
					func(wp kmsg.AddPartitionsToTxnResponseTransactionTopicPartition) (int32, int16) {
						return wp.Partition, wp.ErrorCode
					})}
			})}
	}
	result := AddPartitionsToTxnResult{Partitions: txnPartitionsFromWire(w.Topics,
		func(wt kmsg.AddPartitionsToTxnResponseTopic) (string, []kmsg.AddPartitionsToTxnResponseTopicPartition) {
			return wt.Topic, wt.Partitions
		},
		func(wp kmsg.AddPartitionsToTxnResponseTopicPartition) (int32, int16) {
			return wp.Partition, wp.ErrorCode
		})}
	if len(req.Transactions) > 0 {
		result.TransactionalID = req.Transactions[0].TransactionalID
	}
	return &AddPartitionsToTxnResponse{Transactions: []AddPartitionsToTxnResult{result}}
}

// AddOffsetsToTxn.

func addOffsetsToTxnToWire(r *AddOffsetsToTxnRequest, version int16) *kmsg.AddOffsetsToTxnRequest {
	w := versioned(kmsg.NewPtrAddOffsetsToTxnRequest(), version)
	w.TransactionalID, w.ProducerID, w.ProducerEpoch, w.Group = r.TransactionalID, r.ProducerID, r.ProducerEpoch, r.Group
	return w
}

func addOffsetsToTxnFromWire(w *kmsg.AddOffsetsToTxnRequest) *AddOffsetsToTxnRequest {
	return &AddOffsetsToTxnRequest{Version: w.Version, TransactionalID: w.TransactionalID, ProducerID: w.ProducerID,
		ProducerEpoch: w.ProducerEpoch, Group: w.Group}
}

func addOffsetsToTxnResponseToWire(r *AddOffsetsToTxnResponse, version int16) *kmsg.AddOffsetsToTxnResponse {
	w := versioned(kmsg.NewPtrAddOffsetsToTxnResponse(), version)
	w.ErrorCode = kafka.CodeOf(r.Err)
	return w
}

func addOffsetsToTxnResponseFromWire(w *kmsg.AddOffsetsToTxnResponse) *AddOffsetsToTxnResponse {
	return &AddOffsetsToTxnResponse{Err: kafka.ErrorForCode(w.ErrorCode)}
}

// EndTxn.

func endTxnToWire(r *EndTxnRequest, version int16) *kmsg.EndTxnRequest {
	w := versioned(kmsg.NewPtrEndTxnRequest(), version)
	w.TransactionalID, w.ProducerID, w.ProducerEpoch, w.Commit = r.TransactionalID, r.ProducerID, r.ProducerEpoch, bool(r.Result)
	return w
}

func endTxnFromWire(w *kmsg.EndTxnRequest) *EndTxnRequest {
	return &EndTxnRequest{Version: w.Version, TransactionalID: w.TransactionalID, ProducerID: w.ProducerID,
		ProducerEpoch: w.ProducerEpoch, Result: TxnResult(w.Commit)}
}

func endTxnResponseToWire(r *EndTxnResponse, version int16) *kmsg.EndTxnResponse {
	w := versioned(kmsg.NewPtrEndTxnResponse(), version)
	w.ErrorCode, w.ProducerID, w.ProducerEpoch = kafka.CodeOf(r.Err), r.ProducerID, r.ProducerEpoch
	return w
}

// endTxnResponseFromWire translates an EndTxn answer; before version 5 it
// carries no producer id or epoch, which are then -1.
func endTxnResponseFromWire(w *kmsg.EndTxnResponse) *EndTxnResponse {
	r := &EndTxnResponse{Err: kafka.ErrorForCode(w.ErrorCode), ProducerID: w.ProducerID, ProducerEpoch: w.ProducerEpoch}
	if w.Version < 5 {
		r.ProducerID, r.ProducerEpoch = -1, -1
	}
	return r
}

// WriteTxnMarkers.

func writeTxnMarkersToWire(r *WriteTxnMarkersRequest, version int16) *kmsg.WriteTxnMarkersRequest {
	w := versioned(kmsg.NewPtrWriteTxnMarkersRequest(), version)
	w.Markers = each(orEmpty(r.Markers), func(m TxnMarker) kmsg.WriteTxnMarkersRequestMarker {
		wm := kmsg.NewWriteTxnMarkersRequestMarker()
		wm.ProducerID, wm.ProducerEpoch, wm.Committed = m.ProducerID, m.ProducerEpoch, bool(m.Result)
		wm.CoordinatorEpoch, wm.TransactionVersion = m.CoordinatorEpoch, m.TransactionVersion
		wm.Topics = orEmpty(topicPartitionsToWire(m.Partitions, func(topic string, ids []int32) kmsg.WriteTxnMarkersRequestMarkerTopic {
			return kmsg.WriteTxnMarkersRequestMarkerTopic{Topic: topic, Partitions: ids}
		}))
		return wm
	})
	return w
}

// writeTxnMarkersFits reports whether r can be sent in version: before
// version 2 a marker carries no transaction version.
func writeTxnMarkersFits(r *WriteTxnMarkersRequest, version int16) bool {
	for _, m := range r.Markers {
		if m.TransactionVersion != 0 && version < 2 {
			return false
		}
	}
	return true
}

func writeTxnMarkersFromWire(w *kmsg.WriteTxnMarkersRequest) *WriteTxnMarkersRequest {
	return &WriteTxnMarkersRequest{Markers: each(orEmpty(w.Markers), func(wm kmsg.WriteTxnMarkersRequestMarker) TxnMarker {
		return TxnMarker{ProducerID: wm.ProducerID, ProducerEpoch: wm.ProducerEpoch, Result: TxnResult(wm.Committed),
			CoordinatorEpoch: wm.CoordinatorEpoch, TransactionVersion: wm.TransactionVersion,
			Partitions: topicPartitionsFromWire(wm.Topics, func(wt kmsg.WriteTxnMarkersRequestMarkerTopic) (string, []int32) {
				return wt.Topic, wt.Partitions
			})}
	})}
}

func writeTxnMarkersResponseToWire(r *WriteTxnMarkersResponse, version int16) *kmsg.WriteTxnMarkersResponse {
	w := versioned(kmsg.NewPtrWriteTxnMarkersResponse(), version)
	w.Markers = each(orEmpty(r.Markers), func(m TxnMarkerResult) kmsg.WriteTxnMarkersResponseMarker {
		return kmsg.WriteTxnMarkersResponseMarker{ProducerID: m.ProducerID, Topics: txnPartitionsToWire(m.Partitions,
			func(p int32, code int16) kmsg.WriteTxnMarkersResponseMarkerTopicPartition {
				return kmsg.WriteTxnMarkersResponseMarkerTopicPartition{Partition: p, ErrorCode: code}
			},
			func(topic string, wps []kmsg.WriteTxnMarkersResponseMarkerTopicPartition) kmsg.WriteTxnMarkersResponseMarkerTopic {
				return kmsg.WriteTxnMarkersResponseMarkerTopic{Topic: topic, Partitions: wps}
			})}
	})
	return w
}

func writeTxnMarkersResponseFromWire(w *kmsg.WriteTxnMarkersResponse) *WriteTxnMarkersResponse {
	return &WriteTxnMarkersResponse{Markers: each(w.Markers, func(wm kmsg.WriteTxnMarkersResponseMarker) TxnMarkerResult {
		return TxnMarkerResult{ProducerID: wm.ProducerID, Partitions: txnPartitionsFromWire(wm.Topics,
			func(wt kmsg.WriteTxnMarkersResponseMarkerTopic) (string, []kmsg.WriteTxnMarkersResponseMarkerTopicPartition) {
				return wt.Topic, wt.Partitions
			},
			func(wp kmsg.WriteTxnMarkersResponseMarkerTopicPartition) (int32, int16) {
				return wp.Partition, wp.ErrorCode
			})}
	})}
}

// TxnOffsetCommit.

// txnOffsetCommitFits reports whether r can be sent in version: before
// version 3 it carries no group membership (KIP-447).
func txnOffsetCommitFits(r *TxnOffsetCommitRequest, version int16) bool {
	return version >= 3 || r.GenerationID == NoGeneration && r.MemberID == "" && r.GroupInstanceID == ""
}

func txnOffsetCommitToWire(r *TxnOffsetCommitRequest, version int16) *kmsg.TxnOffsetCommitRequest {
	w := versioned(kmsg.NewPtrTxnOffsetCommitRequest(), version)
	w.TransactionalID, w.Group, w.ProducerID, w.ProducerEpoch = r.TransactionalID, r.Group, r.ProducerID, r.ProducerEpoch
	w.Generation, w.MemberID, w.InstanceID = r.GenerationID, r.MemberID, nullable(r.GroupInstanceID)
	w.Topics = topicsToWire(r.Topics, func(p OffsetCommitPartition) kmsg.TxnOffsetCommitRequestTopicPartition {
		return kmsg.TxnOffsetCommitRequestTopicPartition{Partition: p.Partition, Offset: p.Offset, LeaderEpoch: p.LeaderEpoch, Metadata: kmsg.StringPtr(p.Metadata)}
	}, func(topic string, wps []kmsg.TxnOffsetCommitRequestTopicPartition) kmsg.TxnOffsetCommitRequestTopic {
		return kmsg.TxnOffsetCommitRequestTopic{Topic: topic, Partitions: wps}
	})
	return w
}

// txnOffsetCommitFromWire translates a TxnOffsetCommit: before version 3
// it has no group membership (NoGeneration, no member), and before
// version 2 no leader epochs (-1).
func txnOffsetCommitFromWire(w *kmsg.TxnOffsetCommitRequest) *TxnOffsetCommitRequest {
	r := &TxnOffsetCommitRequest{Version: w.Version, TransactionalID: w.TransactionalID, Group: w.Group,
		ProducerID: w.ProducerID, ProducerEpoch: w.ProducerEpoch,
		GenerationID: w.Generation, MemberID: w.MemberID, GroupInstanceID: deref(w.InstanceID),
		Topics: topicsFromWire[OffsetCommitTopic](w.Topics,
			func(wt kmsg.TxnOffsetCommitRequestTopic) (string, []kmsg.TxnOffsetCommitRequestTopicPartition) {
				return wt.Topic, wt.Partitions
			},
			func(wp kmsg.TxnOffsetCommitRequestTopicPartition) OffsetCommitPartition {
				epoch := wp.LeaderEpoch
				if w.Version < 2 {
					epoch = -1
				}
				return OffsetCommitPartition{Partition: wp.Partition, Offset: wp.Offset, LeaderEpoch: epoch, Metadata: deref(wp.Metadata)}
			})}
	if w.Version < 3 {
		r.GenerationID, r.MemberID, r.GroupInstanceID = NoGeneration, "", ""
	}
	return r
}

func txnOffsetCommitResponseToWire(r *TxnOffsetCommitResponse, version int16) *kmsg.TxnOffsetCommitResponse {
	w := versioned(kmsg.NewPtrTxnOffsetCommitResponse(), version)
	w.Topics = topicsToWire(r.Topics, func(p OffsetCommitPartitionResponse) kmsg.TxnOffsetCommitResponseTopicPartition {
		return kmsg.TxnOffsetCommitResponseTopicPartition{Partition: p.Partition, ErrorCode: kafka.CodeOf(p.Err)}
	}, func(topic string, wps []kmsg.TxnOffsetCommitResponseTopicPartition) kmsg.TxnOffsetCommitResponseTopic {
		return kmsg.TxnOffsetCommitResponseTopic{Topic: topic, Partitions: wps}
	})
	return w
}

func txnOffsetCommitResponseFromWire(w *kmsg.TxnOffsetCommitResponse) *TxnOffsetCommitResponse {
	return &TxnOffsetCommitResponse{Topics: topicsFromWire[OffsetCommitTopicResponse](w.Topics,
		func(wt kmsg.TxnOffsetCommitResponseTopic) (string, []kmsg.TxnOffsetCommitResponseTopicPartition) {
			return wt.Topic, wt.Partitions
		},
		func(wp kmsg.TxnOffsetCommitResponseTopicPartition) OffsetCommitPartitionResponse {
			return OffsetCommitPartitionResponse{Partition: wp.Partition, Err: kafka.ErrorForCode(wp.ErrorCode)}
		})}
}

// DescribeTransactions.

func describeTransactionsToWire(r *DescribeTransactionsRequest, version int16) *kmsg.DescribeTransactionsRequest {
	w := versioned(kmsg.NewPtrDescribeTransactionsRequest(), version)
	w.TransactionalIDs = orEmpty(r.TransactionalIDs)
	return w
}

func describeTransactionsFromWire(w *kmsg.DescribeTransactionsRequest) *DescribeTransactionsRequest {
	return &DescribeTransactionsRequest{TransactionalIDs: w.TransactionalIDs}
}

func describeTransactionsResponseToWire(r *DescribeTransactionsResponse, version int16) *kmsg.DescribeTransactionsResponse {
	w := versioned(kmsg.NewPtrDescribeTransactionsResponse(), version)
	w.TransactionStates = each(orEmpty(r.Transactions), func(d DescribedTransaction) kmsg.DescribeTransactionsResponseTransactionState {
		ws := kmsg.NewDescribeTransactionsResponseTransactionState()
		ws.ErrorCode, ws.TransactionalID, ws.State = kafka.CodeOf(d.Err), d.TransactionalID, d.State
		ws.TimeoutMillis, ws.StartTimestamp = millis(d.TransactionTimeout), d.StartTimestamp
		ws.ProducerID, ws.ProducerEpoch = d.ProducerID, d.ProducerEpoch
		ws.Topics = orEmpty(topicPartitionsToWire(d.Partitions, func(topic string, ids []int32) kmsg.DescribeTransactionsResponseTransactionStateTopic {
			return kmsg.DescribeTransactionsResponseTransactionStateTopic{Topic: topic, Partitions: ids}
		}))
		return ws
	})
	return w
}

func describeTransactionsResponseFromWire(w *kmsg.DescribeTransactionsResponse) *DescribeTransactionsResponse {
	return &DescribeTransactionsResponse{Transactions: each(w.TransactionStates, func(ws kmsg.DescribeTransactionsResponseTransactionState) DescribedTransaction {
		return DescribedTransaction{Err: kafka.ErrorForCode(ws.ErrorCode), TransactionalID: ws.TransactionalID, State: ws.State,
			TransactionTimeout: fromMillis(ws.TimeoutMillis), StartTimestamp: ws.StartTimestamp, ProducerID: ws.ProducerID, ProducerEpoch: ws.ProducerEpoch,
			Partitions: flattenTopics(ws.Topics,
				func(wt kmsg.DescribeTransactionsResponseTransactionStateTopic) (string, []int32) {
					return wt.Topic, wt.Partitions
				},
				func(topic string, id int32) kafka.TopicPartition {
					return kafka.TopicPartition{Topic: topic, Partition: id}
				})}
	})}
}

// ListTransactions.

// listTransactionsFits reports whether r can be sent in version: the
// duration filter came in version 1, the transactional id pattern in 2.
func listTransactionsFits(r *ListTransactionsRequest, version int16) bool {
	return (r.MinDuration <= 0 || version >= 1) && (r.TransactionalIDPattern == "" || version >= 2)
}

func listTransactionsToWire(r *ListTransactionsRequest, version int16) *kmsg.ListTransactionsRequest {
	w := versioned(kmsg.NewPtrListTransactionsRequest(), version)
	w.StateFilters, w.ProducerIDFilters = orEmpty(r.StateFilters), orEmpty(r.ProducerIDFilters)
	if r.MinDuration > 0 {
		w.DurationFilterMillis = r.MinDuration.Milliseconds()
	}
	w.TransactionalIDPattern = nullable(r.TransactionalIDPattern)
	return w
}

// listTransactionsFromWire translates a ListTransactions; empty filters,
// which filter nothing, are nil.
func listTransactionsFromWire(w *kmsg.ListTransactionsRequest) *ListTransactionsRequest {
	r := &ListTransactionsRequest{TransactionalIDPattern: deref(w.TransactionalIDPattern)}
	if len(w.StateFilters) > 0 {
		r.StateFilters = w.StateFilters
	}
	if len(w.ProducerIDFilters) > 0 {
		r.ProducerIDFilters = w.ProducerIDFilters
	}
	if w.DurationFilterMillis > 0 {
		r.MinDuration = fromMillis64(w.DurationFilterMillis)
	}
	return r
}

func listTransactionsResponseToWire(r *ListTransactionsResponse, version int16) *kmsg.ListTransactionsResponse {
	w := versioned(kmsg.NewPtrListTransactionsResponse(), version)
	w.ErrorCode, w.UnknownStateFilters = kafka.CodeOf(r.Err), orEmpty(r.UnknownStateFilters)
	w.TransactionStates = each(orEmpty(r.Transactions), func(t ListedTransaction) kmsg.ListTransactionsResponseTransactionState {
		return kmsg.ListTransactionsResponseTransactionState{TransactionalID: t.TransactionalID, ProducerID: t.ProducerID, TransactionState: t.State}
	})
	return w
}

func listTransactionsResponseFromWire(w *kmsg.ListTransactionsResponse) *ListTransactionsResponse {
	r := &ListTransactionsResponse{Err: kafka.ErrorForCode(w.ErrorCode),
		Transactions: each(w.TransactionStates, func(wt kmsg.ListTransactionsResponseTransactionState) ListedTransaction {
			return ListedTransaction{TransactionalID: wt.TransactionalID, ProducerID: wt.ProducerID, State: wt.TransactionState}
		})}
	if len(w.UnknownStateFilters) > 0 {
		r.UnknownStateFilters = w.UnknownStateFilters
	}
	return r
}

// fromMillis64 converts Kafka's int64 milliseconds to a duration,
// saturating where a duration ends.
func fromMillis64(ms int64) time.Duration {
	if ms > int64(math.MaxInt64/time.Millisecond) {
		return math.MaxInt64
	}
	return time.Duration(ms) * time.Millisecond
}
