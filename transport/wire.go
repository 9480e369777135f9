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
	{key: 0, min: 3, max: 9},  // Produce
	{key: 1, min: 4, max: 12}, // Fetch
	{key: 2, min: 1, max: 7},  // ListOffsets
	{key: 3, min: 1, max: 12}, // Metadata
	{key: 8, min: 2, max: 9},  // OffsetCommit (v0 is ZooKeeper's, v1 has per-offset timestamps)
	{key: 9, min: 1, max: 9},  // OffsetFetch (v0 reads ZooKeeper)
	{key: 10, min: 0, max: 5}, // FindCoordinator
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
	{key: 32, min: 1, max: 4}, // DescribeConfigs
	{key: 33, min: 0, max: 2}, // AlterConfigs
	{key: 35, min: 0, max: 4}, // DescribeLogDirs
	{key: 37, min: 0, max: 3}, // CreatePartitions
	{key: 42, min: 0, max: 3}, // DeleteGroups
	{key: 43, min: 0, max: 2}, // ElectLeaders
	{key: 44, min: 0, max: 1}, // IncrementalAlterConfigs
	{key: 60, min: 0, max: 1}, // DescribeCluster
	{key: 61, min: 0, max: 0}, // DescribeProducers

	{key: APIReplicaMessages, min: 0, max: 0}, // partlog's own: internal.go
	{key: APIController, min: 0, max: 0},
}

// optionalAPIs are the APIs a server answers only when its handler
// implements an optional interface: the predicate says whether it does.
var optionalAPIs = map[int16]func(Client) bool{
	8: isGroupClient, 9: isGroupClient, 10: isGroupClient, 11: isGroupClient, 12: isGroupClient,
	13: isGroupClient, 14: isGroupClient, 15: isGroupClient, 16: isGroupClient, 42: isGroupClient,
	19: isAdminClient, 20: isAdminClient, 21: isAdminClient, 32: isAdminClient, 33: isAdminClient,
	35: isAdminClient, 37: isAdminClient, 43: isAdminClient, 44: isAdminClient, 61: isAdminClient,
	23: isEpochClient,
	22: isProducerIDClient,

	APIReplicaMessages: isInternalHandler, APIController: isInternalHandler,
}

func isAdminClient(h Client) bool      { _, ok := h.(AdminClient); return ok }
func isEpochClient(h Client) bool      { _, ok := h.(EpochClient); return ok }
func isGroupClient(h Client) bool      { _, ok := h.(GroupClient); return ok }
func isProducerIDClient(h Client) bool { _, ok := h.(ProducerIDClient); return ok }

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
		return h, nil, nil, fmt.Errorf("%w: request header of %d bytes", ErrInvalidRequest, len(frame))
	}
	h.apiKey = int16(binary.BigEndian.Uint16(frame[0:]))
	h.apiVersion = int16(binary.BigEndian.Uint16(frame[2:]))
	h.correlationID = int32(binary.BigEndian.Uint32(frame[4:]))
	rest := frame[8:]
	// The client id is a nullable string with an int16 length, even in
	// flexible versions.
	if len(rest) < 2 {
		return h, nil, nil, fmt.Errorf("%w: request header cut in its client id", ErrInvalidRequest)
	}
	n := int16(binary.BigEndian.Uint16(rest))
	rest = rest[2:]
	if n >= 0 {
		if int(n) > len(rest) {
			return h, nil, nil, fmt.Errorf("%w: client id of %d bytes in %d", ErrInvalidRequest, n, len(rest))
		}
		id := string(rest[:n])
		h.clientID = &id
		rest = rest[n:]
	}
	req := requestForKey(h.apiKey)
	if req == nil {
		return h, nil, nil, fmt.Errorf("%w: unknown api key %d", ErrInvalidRequest, h.apiKey)
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
		return nil, fmt.Errorf("%w: bad tagged fields", ErrInvalidRequest)
	}
	b = b[n:]
	for range count {
		if _, n = binary.Uvarint(b); n <= 0 { // tag
			return nil, fmt.Errorf("%w: bad tagged field", ErrInvalidRequest)
		}
		b = b[n:]
		size, n := binary.Uvarint(b)
		if n <= 0 || size > uint64(len(b)-n) {
			return nil, fmt.Errorf("%w: bad tagged field size", ErrInvalidRequest)
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
	err := ErrorForCode(code)
	if err == nil || msg == nil || *msg == "" {
		return err
	}
	return fmt.Errorf("%w (%s)", err, *msg)
}

// Produce.

func produceToWire(r *ProduceRequest, version int16) *kmsg.ProduceRequest {
	w := kmsg.NewPtrProduceRequest()
	w.Version = version
	w.Acks = int16(r.Acks)
	w.TimeoutMillis = millis(r.Timeout)
	w.Topics = make([]kmsg.ProduceRequestTopic, len(r.Topics))
	for i, t := range r.Topics {
		wt := &w.Topics[i]
		wt.Topic = t.Topic
		wt.Partitions = make([]kmsg.ProduceRequestTopicPartition, len(t.Partitions))
		for j, p := range t.Partitions {
			wt.Partitions[j] = kmsg.ProduceRequestTopicPartition{Partition: p.Partition, Records: p.Records}
		}
	}
	return w
}

func produceFromWire(w *kmsg.ProduceRequest) *ProduceRequest {
	r := &ProduceRequest{Acks: Acks(w.Acks), Timeout: time.Duration(w.TimeoutMillis) * time.Millisecond}
	r.Topics = make([]ProduceTopic, len(w.Topics))
	for i, wt := range w.Topics {
		t := &r.Topics[i]
		t.Topic = wt.Topic
		t.Partitions = make([]ProducePartition, len(wt.Partitions))
		for j, wp := range wt.Partitions {
			t.Partitions[j] = ProducePartition{Partition: wp.Partition, Records: wp.Records}
		}
	}
	return r
}

func produceResponseToWire(r *ProduceResponse, version int16) *kmsg.ProduceResponse {
	w := kmsg.NewPtrProduceResponse()
	w.Version = version
	w.Topics = make([]kmsg.ProduceResponseTopic, len(r.Topics))
	for i, t := range r.Topics {
		wt := &w.Topics[i]
		wt.Topic = t.Topic
		wt.Partitions = make([]kmsg.ProduceResponseTopicPartition, len(t.Partitions))
		for j, p := range t.Partitions {
			wp := kmsg.NewProduceResponseTopicPartition()
			wp.Partition = p.Partition
			wp.ErrorCode = CodeOf(p.Err)
			wp.ErrorMessage = errorMessage(p.Err)
			wp.BaseOffset = p.BaseOffset
			wp.LogAppendTime = p.LogAppendTime
			wp.LogStartOffset = p.LogStartOffset
			wt.Partitions[j] = wp
		}
	}
	return w
}

func produceResponseFromWire(w *kmsg.ProduceResponse) *ProduceResponse {
	r := &ProduceResponse{Topics: make([]ProduceTopicResponse, len(w.Topics))}
	for i, wt := range w.Topics {
		t := &r.Topics[i]
		t.Topic = wt.Topic
		t.Partitions = make([]ProducePartitionResponse, len(wt.Partitions))
		for j, wp := range wt.Partitions {
			t.Partitions[j] = ProducePartitionResponse{
				Partition: wp.Partition, Err: wireError(wp.ErrorCode, wp.ErrorMessage),
				BaseOffset: wp.BaseOffset, LogAppendTime: wp.LogAppendTime, LogStartOffset: wp.LogStartOffset,
			}
		}
	}
	return r
}

// Fetch.

func fetchToWire(r *FetchRequest, version int16) *kmsg.FetchRequest {
	w := kmsg.NewPtrFetchRequest()
	w.Version = version
	w.ReplicaID = r.ReplicaID
	w.MaxWaitMillis = millis(r.MaxWait)
	w.MinBytes = r.MinBytes
	w.MaxBytes = r.MaxBytes
	w.IsolationLevel = int8(r.Isolation)
	w.SessionID, w.SessionEpoch = 0, -1 // a full fetch, outside any fetch session
	w.Topics = make([]kmsg.FetchRequestTopic, len(r.Topics))
	for i, t := range r.Topics {
		wt := &w.Topics[i]
		wt.Topic = t.Topic
		wt.Partitions = make([]kmsg.FetchRequestTopicPartition, len(t.Partitions))
		for j, p := range t.Partitions {
			wp := kmsg.NewFetchRequestTopicPartition()
			wp.Partition = p.Partition
			wp.CurrentLeaderEpoch = p.CurrentLeaderEpoch
			wp.FetchOffset = p.FetchOffset
			wp.LastFetchedEpoch = p.LastFetchedEpoch
			wp.LogStartOffset = p.LogStartOffset
			wp.PartitionMaxBytes = p.MaxBytes
			wt.Partitions[j] = wp
		}
	}
	return w
}

func fetchFromWire(w *kmsg.FetchRequest) *FetchRequest {
	r := &FetchRequest{
		ReplicaID: w.ReplicaID, MaxWait: time.Duration(w.MaxWaitMillis) * time.Millisecond,
		MinBytes: w.MinBytes, MaxBytes: w.MaxBytes, Isolation: IsolationLevel(w.IsolationLevel),
	}
	if w.Version < 3 || r.MaxBytes <= 0 {
		r.MaxBytes = 1<<31 - 1
	}
	r.Topics = make([]FetchTopic, len(w.Topics))
	for i, wt := range w.Topics {
		t := &r.Topics[i]
		t.Topic = wt.Topic
		t.Partitions = make([]FetchPartition, len(wt.Partitions))
		for j, wp := range wt.Partitions {
			t.Partitions[j] = FetchPartition{
				Partition: wp.Partition, CurrentLeaderEpoch: wp.CurrentLeaderEpoch,
				FetchOffset: wp.FetchOffset, LastFetchedEpoch: wp.LastFetchedEpoch,
				LogStartOffset: wp.LogStartOffset, MaxBytes: wp.PartitionMaxBytes,
			}
		}
	}
	return r
}

func fetchResponseToWire(r *FetchResponse, version int16) *kmsg.FetchResponse {
	w := kmsg.NewPtrFetchResponse()
	w.Version = version
	w.Topics = make([]kmsg.FetchResponseTopic, len(r.Topics))
	for i, t := range r.Topics {
		wt := &w.Topics[i]
		wt.Topic = t.Topic
		wt.Partitions = make([]kmsg.FetchResponseTopicPartition, len(t.Partitions))
		for j, p := range t.Partitions {
			wp := kmsg.NewFetchResponseTopicPartition()
			wp.Partition = p.Partition
			wp.ErrorCode = CodeOf(p.Err)
			wp.HighWatermark = p.HighWatermark
			wp.LastStableOffset = p.LastStableOffset
			wp.LogStartOffset = p.LogStartOffset
			wp.RecordBatches = p.Records
			if wp.RecordBatches == nil {
				// Empty, not null: librdkafka fails to parse a null
				// records field, and Kafka sends an empty one.
				wp.RecordBatches = []byte{}
			}
			wt.Partitions[j] = wp
		}
	}
	return w
}

func fetchResponseFromWire(w *kmsg.FetchResponse) *FetchResponse {
	r := &FetchResponse{Topics: make([]FetchTopicResponse, len(w.Topics))}
	for i, wt := range w.Topics {
		t := &r.Topics[i]
		t.Topic = wt.Topic
		t.Partitions = make([]FetchPartitionResponse, len(wt.Partitions))
		for j, wp := range wt.Partitions {
			err := ErrorForCode(wp.ErrorCode)
			if err == nil && w.ErrorCode != 0 {
				err = ErrorForCode(w.ErrorCode)
			}
			t.Partitions[j] = FetchPartitionResponse{
				Partition: wp.Partition, Err: err, HighWatermark: wp.HighWatermark,
				LastStableOffset: wp.LastStableOffset, LogStartOffset: wp.LogStartOffset,
				Records: wp.RecordBatches,
			}
		}
	}
	return r
}

// ListOffsets.

func listOffsetsToWire(r *ListOffsetsRequest, version int16) *kmsg.ListOffsetsRequest {
	w := kmsg.NewPtrListOffsetsRequest()
	w.Version = version
	w.ReplicaID = r.ReplicaID
	w.IsolationLevel = int8(r.Isolation)
	w.Topics = make([]kmsg.ListOffsetsRequestTopic, len(r.Topics))
	for i, t := range r.Topics {
		wt := &w.Topics[i]
		wt.Topic = t.Topic
		wt.Partitions = make([]kmsg.ListOffsetsRequestTopicPartition, len(t.Partitions))
		for j, p := range t.Partitions {
			wp := kmsg.NewListOffsetsRequestTopicPartition()
			wp.Partition = p.Partition
			wp.CurrentLeaderEpoch = p.CurrentLeaderEpoch
			wp.Timestamp = p.Timestamp
			wt.Partitions[j] = wp
		}
	}
	return w
}

func listOffsetsFromWire(w *kmsg.ListOffsetsRequest) *ListOffsetsRequest {
	r := &ListOffsetsRequest{ReplicaID: w.ReplicaID, Isolation: IsolationLevel(w.IsolationLevel)}
	r.Topics = make([]ListOffsetsTopic, len(w.Topics))
	for i, wt := range w.Topics {
		t := &r.Topics[i]
		t.Topic = wt.Topic
		t.Partitions = make([]ListOffsetsPartition, len(wt.Partitions))
		for j, wp := range wt.Partitions {
			t.Partitions[j] = ListOffsetsPartition{Partition: wp.Partition, CurrentLeaderEpoch: wp.CurrentLeaderEpoch, Timestamp: wp.Timestamp}
		}
	}
	return r
}

func listOffsetsResponseToWire(r *ListOffsetsResponse, version int16) *kmsg.ListOffsetsResponse {
	w := kmsg.NewPtrListOffsetsResponse()
	w.Version = version
	w.Topics = make([]kmsg.ListOffsetsResponseTopic, len(r.Topics))
	for i, t := range r.Topics {
		wt := &w.Topics[i]
		wt.Topic = t.Topic
		wt.Partitions = make([]kmsg.ListOffsetsResponseTopicPartition, len(t.Partitions))
		for j, p := range t.Partitions {
			wp := kmsg.NewListOffsetsResponseTopicPartition()
			wp.Partition = p.Partition
			wp.ErrorCode = CodeOf(p.Err)
			wp.Timestamp = p.Timestamp
			wp.Offset = p.Offset
			wp.LeaderEpoch = p.LeaderEpoch
			wt.Partitions[j] = wp
		}
	}
	return w
}

func listOffsetsResponseFromWire(w *kmsg.ListOffsetsResponse) *ListOffsetsResponse {
	r := &ListOffsetsResponse{Topics: make([]ListOffsetsTopicResponse, len(w.Topics))}
	for i, wt := range w.Topics {
		t := &r.Topics[i]
		t.Topic = wt.Topic
		t.Partitions = make([]ListOffsetsPartitionResponse, len(wt.Partitions))
		for j, wp := range wt.Partitions {
			t.Partitions[j] = ListOffsetsPartitionResponse{
				Partition: wp.Partition, Err: ErrorForCode(wp.ErrorCode),
				Timestamp: wp.Timestamp, Offset: wp.Offset, LeaderEpoch: wp.LeaderEpoch,
			}
		}
	}
	return r
}

// Metadata.

func metadataToWire(r *MetadataRequest, version int16) *kmsg.MetadataRequest {
	w := kmsg.NewPtrMetadataRequest()
	w.Version = version
	w.AllowAutoTopicCreation = r.AllowAutoTopicCreation
	if r.Topics != nil {
		w.Topics = make([]kmsg.MetadataRequestTopic, len(r.Topics))
		for i, name := range r.Topics {
			w.Topics[i] = kmsg.MetadataRequestTopic{Topic: kmsg.StringPtr(name)}
		}
	}
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
	w := kmsg.NewPtrMetadataResponse()
	w.Version = version
	w.ClusterID = kmsg.StringPtr(r.ClusterID)
	w.ControllerID = r.ControllerID
	for _, b := range r.Brokers {
		wb := kmsg.NewMetadataResponseBroker()
		wb.NodeID, wb.Host, wb.Port = b.NodeID, b.Host, b.Port
		if b.Rack != "" {
			wb.Rack = kmsg.StringPtr(b.Rack)
		}
		w.Brokers = append(w.Brokers, wb)
	}
	w.Topics = make([]kmsg.MetadataResponseTopic, len(r.Topics))
	for i, t := range r.Topics {
		wt := kmsg.NewMetadataResponseTopic()
		wt.ErrorCode = CodeOf(t.Err)
		wt.Topic = kmsg.StringPtr(t.Topic)
		wt.TopicID = t.TopicID
		wt.IsInternal = t.Internal
		for _, p := range t.Partitions {
			wp := kmsg.NewMetadataResponseTopicPartition()
			wp.ErrorCode = CodeOf(p.Err)
			wp.Partition, wp.Leader, wp.LeaderEpoch = p.Partition, p.Leader, p.LeaderEpoch
			wp.Replicas, wp.ISR, wp.OfflineReplicas = orEmpty(p.Replicas), orEmpty(p.ISR), orEmpty(p.Offline)
			wt.Partitions = append(wt.Partitions, wp)
		}
		w.Topics[i] = wt
	}
	return w
}

// orEmpty returns s, or an empty slice for nil: Kafka's arrays and bytes
// here are not nullable.
func orEmpty[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

func metadataResponseFromWire(w *kmsg.MetadataResponse) *MetadataResponse {
	r := &MetadataResponse{ControllerID: w.ControllerID}
	if w.ClusterID != nil {
		r.ClusterID = *w.ClusterID
	}
	for _, wb := range w.Brokers {
		b := Broker{NodeID: wb.NodeID, Host: wb.Host, Port: wb.Port}
		if wb.Rack != nil {
			b.Rack = *wb.Rack
		}
		r.Brokers = append(r.Brokers, b)
	}
	for _, wt := range w.Topics {
		t := TopicMetadata{Err: ErrorForCode(wt.ErrorCode), TopicID: wt.TopicID, Internal: wt.IsInternal}
		if wt.Topic != nil {
			t.Topic = *wt.Topic
		}
		for _, wp := range wt.Partitions {
			t.Partitions = append(t.Partitions, PartitionMetadata{
				Err: ErrorForCode(wp.ErrorCode), Partition: wp.Partition, Leader: wp.Leader,
				LeaderEpoch: wp.LeaderEpoch, Replicas: wp.Replicas, ISR: wp.ISR, Offline: wp.OfflineReplicas,
			})
		}
		r.Topics = append(r.Topics, t)
	}
	return r
}
