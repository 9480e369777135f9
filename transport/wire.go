package transport

// wire.go translates between this package's requests and Kafka's wire
// protocol, whose messages franz-go's kmsg encodes and decodes for every
// version. The TCP server and client speak that protocol, so that a Kafka
// client can talk to a partlog node and partlog's clients could talk to a
// Kafka broker.

import (
	"encoding/binary"
	"fmt"
	"time"

	"github.com/partlog/partlog/kafka"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// apiRange is the versions of one Kafka API a partlog node answers.
type apiRange struct {
	key      int16
	min, max int16
}

// supportedAPIs are the APIs and versions partlog's TCP client sends and
// its server answers (some only for a handler that implements an optional
// interface: see optionalAPIs), as ApiVersions reports them. The minimums
// of the data APIs are the first versions that carry RecordBatch v2 (magic
// 2); the maximums the last that name topics rather than topic ids, and
// that carry nothing partlog's types do not hold.
var supportedAPIs = []apiRange{
	{key: 0, min: 3, max: 12}, // Produce (v12: transaction version 2)
	{key: 1, min: 4, max: 12}, // Fetch
	{key: 2, min: 1, max: 7},  // ListOffsets
	{key: 3, min: 1, max: 12}, // Metadata
	{key: 8, min: 2, max: 9},  // OffsetCommit (v0 is ZooKeeper's, v1 has per-offset timestamps)
	{key: 9, min: 1, max: 9},  // OffsetFetch (v0 reads ZooKeeper)
	{key: 10, min: 0, max: 6}, // FindCoordinator (v6: share partitions' keys, KIP-932)
	{key: 11, min: 0, max: 9}, // JoinGroup
	{key: 12, min: 0, max: 4}, // Heartbeat
	{key: 13, min: 0, max: 5}, // LeaveGroup
	{key: 14, min: 0, max: 5}, // SyncGroup
	{key: 15, min: 0, max: 6}, // DescribeGroups
	{key: 16, min: 0, max: 4}, // ListGroups
	{key: 18, min: 0, max: 3}, // ApiVersions
	{key: 19, min: 2, max: 7}, // CreateTopics
	{key: 20, min: 1, max: 5}, // DeleteTopics
	{key: 21, min: 0, max: 2}, // DeleteRecords
	{key: 22, min: 0, max: 5}, // InitProducerId
	{key: 23, min: 2, max: 4}, // OffsetForLeaderEpoch (v2 brings the current leader epoch)
	{key: 24, min: 0, max: 5}, // AddPartitionsToTxn (v4+ batched, from brokers)
	{key: 25, min: 0, max: 4}, // AddOffsetsToTxn
	{key: 26, min: 0, max: 5}, // EndTxn (v5: transaction version 2)
	{key: 27, min: 0, max: 2}, // WriteTxnMarkers
	{key: 28, min: 0, max: 5}, // TxnOffsetCommit (v6 names topics by id)
	{key: 29, min: 0, max: 3}, // DescribeAcls
	{key: 30, min: 0, max: 3}, // CreateAcls
	{key: 31, min: 0, max: 3}, // DeleteAcls
	{key: 32, min: 1, max: 4}, // DescribeConfigs
	{key: 33, min: 0, max: 2}, // AlterConfigs
	{key: 35, min: 0, max: 4}, // DescribeLogDirs
	{key: 37, min: 0, max: 3}, // CreatePartitions
	{key: 42, min: 0, max: 3}, // DeleteGroups
	{key: 43, min: 0, max: 2}, // ElectLeaders
	{key: 44, min: 0, max: 1}, // IncrementalAlterConfigs
	{key: 45, min: 0, max: 0}, // AlterPartitionReassignments
	{key: 46, min: 0, max: 0}, // ListPartitionReassignments
	{key: 48, min: 0, max: 1}, // DescribeClientQuotas
	{key: 49, min: 0, max: 1}, // AlterClientQuotas
	{key: 50, min: 0, max: 0}, // DescribeUserScramCredentials
	{key: 51, min: 0, max: 0}, // AlterUserScramCredentials
	{key: 60, min: 0, max: 1}, // DescribeCluster
	{key: 61, min: 0, max: 0}, // DescribeProducers
	{key: 64, min: 0, max: 0}, // UnregisterBroker
	{key: 65, min: 0, max: 0}, // DescribeTransactions
	{key: 66, min: 0, max: 2}, // ListTransactions
	{key: 68, min: 1, max: 1}, // ConsumerGroupHeartbeat (v1: client member ids, KIP-1082; regexes)
	{key: 69, min: 0, max: 1}, // ConsumerGroupDescribe
	{key: 76, min: 1, max: 1}, // ShareGroupHeartbeat (v0 was Kafka 4.0's early access, gone in 4.1)
	{key: 77, min: 1, max: 1}, // ShareGroupDescribe
	{key: 78, min: 1, max: 2}, // ShareFetch (v2: KIP-1206's acquire mode, KIP-1222's renew acknowledgements)
	{key: 79, min: 1, max: 2}, // ShareAcknowledge (v2: KIP-1222's renew acknowledgements, the lock timeout)
	{key: 83, min: 0, max: 0}, // InitializeShareGroupState
	{key: 84, min: 0, max: 0}, // ReadShareGroupState
	{key: 85, min: 0, max: 0}, // WriteShareGroupState (v1 brings KIP-1226's delivery complete count)
	{key: 86, min: 0, max: 0}, // DeleteShareGroupState
	{key: 90, min: 0, max: 1}, // DescribeShareGroupOffsets (v1: KIP-1226's lag)
	{key: 91, min: 0, max: 0}, // AlterShareGroupOffsets
	{key: 92, min: 0, max: 0}, // DeleteShareGroupOffsets

	{key: APIReplicaMessages, min: 0, max: 0}, // partlog's own: internal.go
	{key: APIController, min: 0, max: 0},
	{key: APIControllerRaft, min: 0, max: 0},
}

// optionalAPIs are the APIs a server answers only when its handler
// implements an optional interface: the predicate says whether it does.
var optionalAPIs = map[int16]func(Client) bool{
	8: isGroupClient, 9: isGroupClient, 11: isGroupClient, 12: isGroupClient,
	13: isGroupClient, 14: isGroupClient, 15: isGroupClient, 16: isGroupClient, 42: isGroupClient,
	19: isAdminClient, 20: isAdminClient, 21: isAdminClient, 32: isAdminClient, 33: isAdminClient,
	35: isAdminClient, 37: isAdminClient, 43: isAdminClient, 44: isAdminClient, 61: isAdminClient,
	23: isEpochClient,
	22: isProducerIDClient,
	24: isTxnClient, 25: isTxnClient, 26: isTxnClient, 27: isTxnClient, 28: isTxnClient, 65: isTxnClient, 66: isTxnClient,
	10: isCoordinatorFinder,
	45: isClusterAdminClient, 46: isClusterAdminClient, 64: isClusterAdminClient,
	50: isUserAdminClient, 51: isUserAdminClient,
	29: isACLAdminClient, 30: isACLAdminClient, 31: isACLAdminClient,
	48: isQuotaAdminClient, 49: isQuotaAdminClient,
	68: isConsumerGroupClient, 69: isConsumerGroupClient,
	76: isShareGroupClient, 77: isShareGroupClient, 78: isShareGroupClient, 79: isShareGroupClient,
	83: isShareStateClient, 84: isShareStateClient, 85: isShareStateClient, 86: isShareStateClient,
	90: isShareGroupOffsetsClient, 91: isShareGroupOffsetsClient, 92: isShareGroupOffsetsClient,

	APIReplicaMessages: isInternalHandler, APIController: isInternalHandler, APIControllerRaft: isInternalHandler,
}

func isAdminClient(h Client) bool      { _, ok := h.(AdminClient); return ok }
func isEpochClient(h Client) bool      { _, ok := h.(EpochClient); return ok }
func isGroupClient(h Client) bool      { _, ok := h.(GroupClient); return ok }
func isProducerIDClient(h Client) bool { _, ok := h.(ProducerIDClient); return ok }
func isTxnClient(h Client) bool        { _, ok := h.(TxnClient); return ok }

// isCoordinatorFinder reports whether h answers FindCoordinator: a
// GroupClient, for groups, or a TxnClient, for transactional ids.
func isCoordinatorFinder(h Client) bool { return isGroupClient(h) || isTxnClient(h) }

// apisFor returns the APIs a server with handler h answers.
func apisFor(h Client) []apiRange {
	var apis []apiRange
	for _, r := range supportedAPIs {
		if has, optional := optionalAPIs[r.key]; !optional || has(h) {
			apis = append(apis, r)
		}
	}
	return apis
}

// findRange returns the versions of the API key in apis.
func findRange(apis []apiRange, key int16) (apiRange, bool) {
	for _, r := range apis {
		if r.key == key {
			return r, true
		}
	}
	return apiRange{}, false
}

// requestHeader is the header of a Kafka request frame.
type requestHeader struct {
	apiKey        int16
	apiVersion    int16
	correlationID int32
	clientID      *string
}

// parseRequestHeader parses the header at the start of a request frame (the
// bytes after its length) and returns it with the bytes after it. Whether
// the header ends with tagged fields depends on the request's version: a
// request is flexible from the version kmsg knows (partlog's internal keys
// never are).
func parseRequestHeader(frame []byte) (requestHeader, kmsg.Request, []byte, error) {
	var h requestHeader
	if len(frame) < 8 {
		return h, nil, nil, fmt.Errorf("%w: request header of %d bytes", kafka.ErrInvalidRequest, len(frame))
	}
	h.apiKey = int16(binary.BigEndian.Uint16(frame[0:]))
	h.apiVersion = int16(binary.BigEndian.Uint16(frame[2:]))
	h.correlationID = int32(binary.BigEndian.Uint32(frame[4:]))
	rest := frame[8:]
	// The client id is a nullable string with an int16 length, even in
	// flexible versions.
	if len(rest) < 2 {
		return h, nil, nil, fmt.Errorf("%w: request header cut in its client id", kafka.ErrInvalidRequest)
	}
	n := int16(binary.BigEndian.Uint16(rest))
	rest = rest[2:]
	if n >= 0 {
		if int(n) > len(rest) {
			return h, nil, nil, fmt.Errorf("%w: client id of %d bytes in %d", kafka.ErrInvalidRequest, n, len(rest))
		}
		id := string(rest[:n])
		h.clientID = &id
		rest = rest[n:]
	}
	req := requestForKey(h.apiKey)
	if req == nil {
		return h, nil, nil, fmt.Errorf("%w: unknown api key %d", kafka.ErrInvalidRequest, h.apiKey)
	}
	req.SetVersion(h.apiVersion)
	if req.IsFlexible() {
		var err error
		if rest, err = skipTags(rest); err != nil {
			return h, nil, nil, err
		}
	}
	return h, req, rest, nil
}

// skipTags skips the tagged fields at the start of b.
func skipTags(b []byte) ([]byte, error) {
	count, n := binary.Uvarint(b)
	if n <= 0 {
		return nil, fmt.Errorf("%w: bad tagged fields", kafka.ErrInvalidRequest)
	}
	b = b[n:]
	for range count {
		if _, n = binary.Uvarint(b); n <= 0 { // tag
			return nil, fmt.Errorf("%w: bad tagged field", kafka.ErrInvalidRequest)
		}
		b = b[n:]
		size, n := binary.Uvarint(b)
		if n <= 0 || size > uint64(len(b)-n) {
			return nil, fmt.Errorf("%w: bad tagged field size", kafka.ErrInvalidRequest)
		}
		b = b[n+int(size):]
	}
	return b, nil
}

// appendResponseFrame appends a whole response frame: its length, the
// response header and body. ApiVersions answers with the old header even
// when flexible, so that any client can read it (KIP-511).
func appendResponseFrame(dst []byte, correlationID int32, resp kmsg.Response) []byte {
	start := len(dst)
	dst = append(dst, 0, 0, 0, 0)
	dst = binary.BigEndian.AppendUint32(dst, uint32(correlationID))
	if resp.IsFlexible() && resp.Key() != 18 {
		dst = append(dst, 0) // no tagged fields
	}
	dst = resp.AppendTo(dst)
	binary.BigEndian.PutUint32(dst[start:], uint32(len(dst)-start-4))
	return dst
}

// millis converts a duration to Kafka's int32 milliseconds.
func millis(d time.Duration) int32 {
	ms := d.Milliseconds()
	if ms > 1<<31-1 {
		return 1<<31 - 1
	}
	return int32(ms)
}

// fromMillis converts Kafka's int32 milliseconds to a duration.
func fromMillis(ms int32) time.Duration { return time.Duration(ms) * time.Millisecond }

// errorMessage returns a pointer to err's text, or nil.
func errorMessage(err error) *string {
	if err == nil {
		return nil
	}
	s := err.Error()
	return &s
}

// wireError turns a code and an optional message from the wire into the
// error a response field holds: the code's sentinel, wrapped with the
// message when the node sent one.
func wireError(code int16, msg *string) error {
	err := kafka.ErrorForCode(code)
	if err == nil || msg == nil || *msg == "" {
		return err
	}
	return fmt.Errorf("%w (%s)", err, *msg)
}

// versioned sets the version of a new wire message and returns it.
func versioned[M interface{ SetVersion(int16) }](m M, version int16) M {
	m.SetVersion(version)
	return m
}

// each returns f of every element of s, in order; nil for nil s. The
// converters translate the arrays of a message with it: where Kafka's
// array is nullable, nil stays null and empty stays empty.
func each[S, D any](s []S, f func(S) D) []D {
	if s == nil {
		return nil
	}
	d := make([]D, len(s))
	for i, x := range s {
		d[i] = f(x)
	}
	return d
}

// topicsToWire translates the topics of a request or an answer, whose
// partitions are P, to a wire message's: part translates a partition,
// newTopic makes a topic of its name and partitions. Nil stays nil, as in
// each.
func topicsToWire[T topicOf[P], P, WT, WP any](topics []T, part func(P) WP, newTopic func(string, []WP) WT) []WT {
	return each(topics, func(t T) WT {
		tp := topicParts[P](t)
		return newTopic(tp.Topic, each(tp.Partitions, part))
	})
}

// topicsFromWire is topicsToWire the other way: parts gives a wire topic's
// name and partitions.
func topicsFromWire[T topicOf[P], P, WT, WP any](ws []WT, parts func(WT) (string, []WP), part func(WP) P) []T {
	return each(ws, func(wt WT) T {
		name, wps := parts(wt)
		return T(topicParts[P]{Topic: name, Partitions: each(wps, part)})
	})
}

// orEmpty returns s, or an empty slice for nil: Kafka's arrays and bytes
// here are not nullable. The data requests and answers read from the wire
// (Produce, Fetch, ListOffsets) hold empty lists, never nil ones, too.
func orEmpty[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// Produce.

func produceToWire(r *ProduceRequest, version int16) *kmsg.ProduceRequest {
	w := versioned(kmsg.NewPtrProduceRequest(), version)
	w.TransactionID, w.Acks, w.TimeoutMillis = nullable(r.TransactionalID), int16(r.Acks), millis(r.Timeout)
	w.Topics = each(r.Topics, func(t ProduceTopic) kmsg.ProduceRequestTopic {
		return kmsg.ProduceRequestTopic{Topic: t.Topic,
			Partitions: each(t.Partitions, func(p ProducePartition) kmsg.ProduceRequestTopicPartition {
				return kmsg.ProduceRequestTopicPartition{Partition: p.Partition, Records: p.Records}
			})}
	})
	return w
}

func produceFromWire(w *kmsg.ProduceRequest) *ProduceRequest {
	return &ProduceRequest{Version: w.Version, TransactionalID: deref(w.TransactionID), Acks: kafka.Acks(w.Acks), Timeout: fromMillis(w.TimeoutMillis),
		Topics: each(orEmpty(w.Topics), func(wt kmsg.ProduceRequestTopic) ProduceTopic {
			return ProduceTopic{Topic: wt.Topic,
				Partitions: each(orEmpty(wt.Partitions), func(wp kmsg.ProduceRequestTopicPartition) ProducePartition {
					return ProducePartition{Partition: wp.Partition, Records: wp.Records}
				})}
		})}
}

func produceResponseToWire(r *ProduceResponse, version int16) *kmsg.ProduceResponse {
	w := versioned(kmsg.NewPtrProduceResponse(), version)
	w.Topics = each(r.Topics, func(t ProduceTopicResponse) kmsg.ProduceResponseTopic {
		return kmsg.ProduceResponseTopic{Topic: t.Topic,
			Partitions: each(t.Partitions, func(p ProducePartitionResponse) kmsg.ProduceResponseTopicPartition {
				wp := kmsg.NewProduceResponseTopicPartition()
				wp.Partition, wp.ErrorCode, wp.ErrorMessage = p.Partition, kafka.CodeOf(p.Err), errorMessage(p.Err)
				wp.BaseOffset, wp.LogAppendTime, wp.LogStartOffset = p.BaseOffset, p.LogAppendTime, p.LogStartOffset
				return wp
			})}
	})
	return w
}

func produceResponseFromWire(w *kmsg.ProduceResponse) *ProduceResponse {
	return &ProduceResponse{Topics: each(orEmpty(w.Topics), func(wt kmsg.ProduceResponseTopic) ProduceTopicResponse {
		return ProduceTopicResponse{Topic: wt.Topic,
			Partitions: each(orEmpty(wt.Partitions), func(wp kmsg.ProduceResponseTopicPartition) ProducePartitionResponse {
				return ProducePartitionResponse{Partition: wp.Partition, Err: wireError(wp.ErrorCode, wp.ErrorMessage),
					BaseOffset: wp.BaseOffset, LogAppendTime: wp.LogAppendTime, LogStartOffset: wp.LogStartOffset}
			})}
	})}
}

// Fetch.

func fetchToWire(r *FetchRequest, version int16) *kmsg.FetchRequest {
	w := versioned(kmsg.NewPtrFetchRequest(), version)
	w.ReplicaID, w.MaxWaitMillis, w.MinBytes, w.MaxBytes = r.ReplicaID, millis(r.MaxWait), r.MinBytes, r.MaxBytes
	w.IsolationLevel = int8(r.Isolation)
	w.SessionID, w.SessionEpoch = 0, -1 // a full fetch, outside any fetch session
	w.Topics = each(r.Topics, func(t FetchTopic) kmsg.FetchRequestTopic {
		return kmsg.FetchRequestTopic{Topic: t.Topic,
			Partitions: each(t.Partitions, func(p FetchPartition) kmsg.FetchRequestTopicPartition {
				wp := kmsg.NewFetchRequestTopicPartition()
				wp.Partition, wp.CurrentLeaderEpoch, wp.FetchOffset = p.Partition, p.CurrentLeaderEpoch, p.FetchOffset
				wp.LastFetchedEpoch, wp.LogStartOffset, wp.PartitionMaxBytes = p.LastFetchedEpoch, p.LogStartOffset, p.MaxBytes
				return wp
			})}
	})
	return w
}

func fetchFromWire(w *kmsg.FetchRequest) *FetchRequest {
	r := &FetchRequest{
		ReplicaID: w.ReplicaID, MaxWait: fromMillis(w.MaxWaitMillis),
		MinBytes: w.MinBytes, MaxBytes: w.MaxBytes, Isolation: kafka.IsolationLevel(w.IsolationLevel),
	}
	if w.Version < 3 || r.MaxBytes <= 0 {
		r.MaxBytes = 1<<31 - 1
	}
	r.Topics = each(orEmpty(w.Topics), func(wt kmsg.FetchRequestTopic) FetchTopic {
		return FetchTopic{Topic: wt.Topic,
			Partitions: each(orEmpty(wt.Partitions), func(wp kmsg.FetchRequestTopicPartition) FetchPartition {
				return FetchPartition{Partition: wp.Partition, CurrentLeaderEpoch: wp.CurrentLeaderEpoch, FetchOffset: wp.FetchOffset,
					LastFetchedEpoch: wp.LastFetchedEpoch, LogStartOffset: wp.LogStartOffset, MaxBytes: wp.PartitionMaxBytes}
			})}
	})
	return r
}

func fetchResponseToWire(r *FetchResponse, version int16) *kmsg.FetchResponse {
	w := versioned(kmsg.NewPtrFetchResponse(), version)
	w.Topics = each(r.Topics, func(t FetchTopicResponse) kmsg.FetchResponseTopic {
		return kmsg.FetchResponseTopic{Topic: t.Topic,
			Partitions: each(t.Partitions, func(p FetchPartitionResponse) kmsg.FetchResponseTopicPartition {
				wp := kmsg.NewFetchResponseTopicPartition()
				wp.Partition, wp.ErrorCode = p.Partition, kafka.CodeOf(p.Err)
				wp.HighWatermark, wp.LastStableOffset, wp.LogStartOffset = p.HighWatermark, p.LastStableOffset, p.LogStartOffset
				wp.AbortedTransactions = each(p.AbortedTransactions, func(a AbortedTransaction) kmsg.FetchResponseTopicPartitionAbortedTransaction {
					return kmsg.FetchResponseTopicPartitionAbortedTransaction{ProducerID: a.ProducerID, FirstOffset: a.FirstOffset}
				})
				// Empty, not null: librdkafka fails to parse a null records
				// field, and Kafka sends an empty one.
				wp.RecordBatches = orEmpty(p.Records)
				return wp
			})}
	})
	return w
}

func fetchResponseFromWire(w *kmsg.FetchResponse) *FetchResponse {
	return &FetchResponse{Topics: each(orEmpty(w.Topics), func(wt kmsg.FetchResponseTopic) FetchTopicResponse {
		return FetchTopicResponse{Topic: wt.Topic,
			Partitions: each(orEmpty(wt.Partitions), func(wp kmsg.FetchResponseTopicPartition) FetchPartitionResponse {
				err := kafka.ErrorForCode(wp.ErrorCode)
				if err == nil && w.ErrorCode != 0 {
					err = kafka.ErrorForCode(w.ErrorCode)
				}
				return FetchPartitionResponse{Partition: wp.Partition, Err: err, HighWatermark: wp.HighWatermark,
					LastStableOffset: wp.LastStableOffset, LogStartOffset: wp.LogStartOffset, Records: wp.RecordBatches,
					AbortedTransactions: each(wp.AbortedTransactions, func(a kmsg.FetchResponseTopicPartitionAbortedTransaction) AbortedTransaction {
						return AbortedTransaction{ProducerID: a.ProducerID, FirstOffset: a.FirstOffset}
					})}
			})}
	})}
}

// ListOffsets.

func listOffsetsToWire(r *ListOffsetsRequest, version int16) *kmsg.ListOffsetsRequest {
	w := versioned(kmsg.NewPtrListOffsetsRequest(), version)
	w.ReplicaID, w.IsolationLevel = r.ReplicaID, int8(r.Isolation)
	w.Topics = each(r.Topics, func(t ListOffsetsTopic) kmsg.ListOffsetsRequestTopic {
		return kmsg.ListOffsetsRequestTopic{Topic: t.Topic,
			Partitions: each(t.Partitions, func(p ListOffsetsPartition) kmsg.ListOffsetsRequestTopicPartition {
				wp := kmsg.NewListOffsetsRequestTopicPartition()
				wp.Partition, wp.CurrentLeaderEpoch, wp.Timestamp = p.Partition, p.CurrentLeaderEpoch, p.Timestamp
				return wp
			})}
	})
	return w
}

func listOffsetsFromWire(w *kmsg.ListOffsetsRequest) *ListOffsetsRequest {
	return &ListOffsetsRequest{ReplicaID: w.ReplicaID, Isolation: kafka.IsolationLevel(w.IsolationLevel),
		Topics: each(orEmpty(w.Topics), func(wt kmsg.ListOffsetsRequestTopic) ListOffsetsTopic {
			return ListOffsetsTopic{Topic: wt.Topic,
				Partitions: each(orEmpty(wt.Partitions), func(wp kmsg.ListOffsetsRequestTopicPartition) ListOffsetsPartition {
					return ListOffsetsPartition{Partition: wp.Partition, CurrentLeaderEpoch: wp.CurrentLeaderEpoch, Timestamp: wp.Timestamp}
				})}
		})}
}

func listOffsetsResponseToWire(r *ListOffsetsResponse, version int16) *kmsg.ListOffsetsResponse {
	w := versioned(kmsg.NewPtrListOffsetsResponse(), version)
	w.Topics = each(r.Topics, func(t ListOffsetsTopicResponse) kmsg.ListOffsetsResponseTopic {
		return kmsg.ListOffsetsResponseTopic{Topic: t.Topic,
			Partitions: each(t.Partitions, func(p ListOffsetsPartitionResponse) kmsg.ListOffsetsResponseTopicPartition {
				wp := kmsg.NewListOffsetsResponseTopicPartition()
				wp.Partition, wp.ErrorCode = p.Partition, kafka.CodeOf(p.Err)
				wp.Timestamp, wp.Offset, wp.LeaderEpoch = p.Timestamp, p.Offset, p.LeaderEpoch
				return wp
			})}
	})
	return w
}

func listOffsetsResponseFromWire(w *kmsg.ListOffsetsResponse) *ListOffsetsResponse {
	return &ListOffsetsResponse{Topics: each(orEmpty(w.Topics), func(wt kmsg.ListOffsetsResponseTopic) ListOffsetsTopicResponse {
		return ListOffsetsTopicResponse{Topic: wt.Topic,
			Partitions: each(orEmpty(wt.Partitions), func(wp kmsg.ListOffsetsResponseTopicPartition) ListOffsetsPartitionResponse {
				return ListOffsetsPartitionResponse{Partition: wp.Partition, Err: kafka.ErrorForCode(wp.ErrorCode),
					Timestamp: wp.Timestamp, Offset: wp.Offset, LeaderEpoch: wp.LeaderEpoch}
			})}
	})}
}

// Metadata.

func metadataToWire(r *MetadataRequest, version int16) *kmsg.MetadataRequest {
	w := versioned(kmsg.NewPtrMetadataRequest(), version)
	w.AllowAutoTopicCreation = r.AllowAutoTopicCreation
	w.Topics = each(r.Topics, func(name string) kmsg.MetadataRequestTopic {
		return kmsg.MetadataRequestTopic{Topic: kmsg.StringPtr(name)}
	})
	return w
}

func metadataFromWire(w *kmsg.MetadataRequest) *MetadataRequest {
	// Before version 4 a Metadata request always allowed auto-creation.
	r := &MetadataRequest{AllowAutoTopicCreation: w.AllowAutoTopicCreation || w.Version < 4}
	if w.Topics != nil {
		r.Topics = make([]string, 0, len(w.Topics))
		for _, t := range w.Topics {
			if t.Topic != nil {
				r.Topics = append(r.Topics, *t.Topic)
			}
		}
	}
	return r
}

func metadataResponseToWire(r *MetadataResponse, version int16) *kmsg.MetadataResponse {
	w := versioned(kmsg.NewPtrMetadataResponse(), version)
	w.ClusterID, w.ControllerID = kmsg.StringPtr(r.ClusterID), r.ControllerID
	w.Brokers = each(r.Brokers, func(b Broker) kmsg.MetadataResponseBroker {
		wb := kmsg.NewMetadataResponseBroker()
		wb.NodeID, wb.Host, wb.Port, wb.Rack = b.NodeID, b.Host, b.Port, nullable(b.Rack)
		return wb
	})
	w.Topics = each(r.Topics, func(t TopicMetadata) kmsg.MetadataResponseTopic {
		wt := kmsg.NewMetadataResponseTopic()
		wt.ErrorCode, wt.Topic, wt.TopicID, wt.IsInternal = kafka.CodeOf(t.Err), kmsg.StringPtr(t.Topic), t.TopicID, t.Internal
		wt.Partitions = each(t.Partitions, func(p PartitionMetadata) kmsg.MetadataResponseTopicPartition {
			wp := kmsg.NewMetadataResponseTopicPartition()
			wp.ErrorCode, wp.Partition, wp.Leader, wp.LeaderEpoch = kafka.CodeOf(p.Err), p.Partition, p.Leader, p.LeaderEpoch
			wp.Replicas, wp.ISR, wp.OfflineReplicas = orEmpty(p.Replicas), orEmpty(p.ISR), orEmpty(p.Offline)
			return wp
		})
		return wt
	})
	return w
}

func metadataResponseFromWire(w *kmsg.MetadataResponse) *MetadataResponse {
	return &MetadataResponse{ClusterID: deref(w.ClusterID), ControllerID: w.ControllerID,
		Brokers: each(w.Brokers, func(wb kmsg.MetadataResponseBroker) Broker {
			return Broker{NodeID: wb.NodeID, Host: wb.Host, Port: wb.Port, Rack: deref(wb.Rack)}
		}),
		Topics: each(w.Topics, func(wt kmsg.MetadataResponseTopic) TopicMetadata {
			return TopicMetadata{Err: kafka.ErrorForCode(wt.ErrorCode), Topic: deref(wt.Topic), TopicID: wt.TopicID, Internal: wt.IsInternal,
				Partitions: each(wt.Partitions, func(wp kmsg.MetadataResponseTopicPartition) PartitionMetadata {
					return PartitionMetadata{Err: kafka.ErrorForCode(wp.ErrorCode), Partition: wp.Partition, Leader: wp.Leader,
						LeaderEpoch: wp.LeaderEpoch, Replicas: wp.Replicas, ISR: wp.ISR, Offline: wp.OfflineReplicas}
				})}
		})}
}
