package consumer_test

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/record"
	"github.com/partlog/partlog/transport"
)

// shareNode is a fake node hosting share groups: a transport.Client and a
// transport.ShareGroupClient whose answers the test gives. Every request
// goes to a channel, for the test to read, and waits for the answer the
// test queued, or gives its own:
//
//   - a heartbeat waits for an answer on hbAnswers, or its ctx (a
//     heartbeat with epoch -1, leaving, is answered at once);
//   - a ShareFetch takes the answer queued on fetchAnswers; without one it
//     answers no records at once when its MaxWait is zero or it closes the
//     session, else waits for one up to MaxWait, as a node does, or its
//     ctx;
//   - a ShareAcknowledge takes the answer queued on ackAnswers, or
//     answers success.
//
// Topics are named by ids the fake makes up: topicID.
type shareNode struct {
	mu            sync.Mutex
	topics        []string
	metadataCalls int
	// silent makes a ShareFetch without a queued answer wait for one, or
	// its ctx, never answering by itself: a node cut off.
	silent atomic.Bool

	heartbeats   chan *transport.ShareGroupHeartbeatRequest
	hbAnswers    chan shareAnswer[*transport.ShareGroupHeartbeatResponse]
	fetches      chan *transport.ShareFetchRequest
	fetchAnswers chan shareAnswer[*transport.ShareFetchResponse]
	acks         chan *transport.ShareAcknowledgeRequest
	ackAnswers   chan shareAnswer[*transport.ShareAcknowledgeResponse]
	// waiting is the heartbeat answerHeartbeat read last, which waits
	// for an answer.
	waiting *transport.ShareGroupHeartbeatRequest
}

// shareAnswer is an answer the test gives: a response or an error.
type shareAnswer[T any] struct {
	resp T
	err  error
}

func newShareNode(topics ...string) *shareNode {
	return &shareNode{
		topics:       topics,
		heartbeats:   make(chan *transport.ShareGroupHeartbeatRequest, 100),
		hbAnswers:    make(chan shareAnswer[*transport.ShareGroupHeartbeatResponse], 100),
		fetches:      make(chan *transport.ShareFetchRequest, 100),
		fetchAnswers: make(chan shareAnswer[*transport.ShareFetchResponse], 100),
		acks:         make(chan *transport.ShareAcknowledgeRequest, 100),
		ackAnswers:   make(chan shareAnswer[*transport.ShareAcknowledgeResponse], 100),
	}
}

// topicID is the id of a topic of the fake: its name's first byte.
func topicID(name string) [16]byte { return [16]byte{name[0]} }

var errNotServed = errors.New("shareNode: not served")

func (n *shareNode) Metadata(_ context.Context, req *transport.MetadataRequest) (*transport.MetadataResponse, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.metadataCalls++
	resp := &transport.MetadataResponse{}
	for _, name := range req.Topics {
		resp.Topics = append(resp.Topics, transport.TopicMetadata{Topic: name, TopicID: topicID(name)})
	}
	return resp, nil
}

func (n *shareNode) Produce(context.Context, *transport.ProduceRequest) (*transport.ProduceResponse, error) {
	return nil, errNotServed
}

func (n *shareNode) Fetch(context.Context, *transport.FetchRequest) (*transport.FetchResponse, error) {
	return nil, errNotServed
}

func (n *shareNode) ListOffsets(context.Context, *transport.ListOffsetsRequest) (*transport.ListOffsetsResponse, error) {
	return nil, errNotServed
}

func (n *shareNode) ShareGroupHeartbeat(ctx context.Context, req *transport.ShareGroupHeartbeatRequest) (*transport.ShareGroupHeartbeatResponse, error) {
	n.heartbeats <- req
	if req.MemberEpoch == -1 {
		return &transport.ShareGroupHeartbeatResponse{MemberID: req.MemberID, MemberEpoch: -1}, nil
	}
	select {
	case a := <-n.hbAnswers:
		return a.resp, a.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (n *shareNode) ShareGroupDescribe(context.Context, *transport.ShareGroupDescribeRequest) (*transport.ShareGroupDescribeResponse, error) {
	return nil, errNotServed
}

func (n *shareNode) ShareFetch(ctx context.Context, req *transport.ShareFetchRequest) (*transport.ShareFetchResponse, error) {
	n.fetches <- req
	select {
	case a := <-n.fetchAnswers:
		return a.resp, a.err
	default:
	}
	if !n.silent.Load() && (req.MaxWait == 0 || req.ShareSessionEpoch == -1) {
		return &transport.ShareFetchResponse{}, nil
	}
	wait := req.MaxWait
	if n.silent.Load() {
		wait = time.Hour
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case a := <-n.fetchAnswers:
		return a.resp, a.err
	case <-t.C:
		return &transport.ShareFetchResponse{}, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (n *shareNode) ShareAcknowledge(_ context.Context, req *transport.ShareAcknowledgeRequest) (*transport.ShareAcknowledgeResponse, error) {
	n.acks <- req
	select {
	case a := <-n.ackAnswers:
		return a.resp, a.err
	default:
		return &transport.ShareAcknowledgeResponse{}, nil
	}
}

// joined is the answer to a heartbeat: epoch, heartbeat every
// millisecond (each heartbeat then waits in the fake for the test to
// answer it), and the assignment, if not nil, partitions by topic name.
func joined(epoch int32, assignment map[string][]int32) shareAnswer[*transport.ShareGroupHeartbeatResponse] {
	resp := &transport.ShareGroupHeartbeatResponse{MemberEpoch: epoch, HeartbeatIntervalMillis: 1}
	if assignment != nil {
		resp.Assignment = []transport.TopicIDPartitions{}
		for _, name := range []string{"a", "b", "c", "orders"} {
			if ps, ok := assignment[name]; ok {
				resp.Assignment = append(resp.Assignment, transport.TopicIDPartitions{TopicID: topicID(name), Partitions: ps})
			}
		}
	}
	return shareAnswer[*transport.ShareGroupHeartbeatResponse]{resp: resp}
}

// shareWait bounds how long a test waits for a request that is coming.
const shareWait = 10 * time.Second

// next returns the next request on ch, failing the test after shareWait.
func next[T any](tb testing.TB, ch <-chan T) T {
	tb.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(shareWait):
		tb.Fatalf("no request within %v", shareWait)
		panic("unreachable")
	}
}

// answerHeartbeat answers the heartbeat waiting in n with a, and returns
// it and the next one, which the consumer sends once it has taken the
// answer in (and which waits in turn for the next answerHeartbeat).
func (n *shareNode) answerHeartbeat(tb testing.TB, a shareAnswer[*transport.ShareGroupHeartbeatResponse]) (answered, following *transport.ShareGroupHeartbeatRequest) {
	tb.Helper()
	answered = n.waiting
	if answered == nil {
		answered = next(tb, n.heartbeats)
	}
	n.hbAnswers <- a
	n.waiting = next(tb, n.heartbeats)
	return answered, n.waiting
}

// shareBatch builds a batch of records at the offsets given, from base,
// each valued "v<offset>", keyed "k<offset>", with a header.
func shareBatch(base int64, offsets ...int64) []byte {
	opts := record.DefaultBatchOptions()
	opts.BaseOffset = base
	opts.PartitionLeaderEpoch = 7
	b := record.NewBuilder(opts)
	for _, off := range offsets {
		b.AppendWithOffset(record.Record{
			Offset: off, Timestamp: baseTime + off,
			Key:     []byte("k" + itoa(off)),
			Value:   []byte("v" + itoa(off)),
			Headers: []record.RecordHeader{{Key: "h", Value: []byte("x")}},
		})
	}
	return b.Build()
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// acquired is an acquired range.
func acquired(first, last int64, count int16) transport.AcquiredRecords {
	return transport.AcquiredRecords{FirstOffset: first, LastOffset: last, DeliveryCount: count}
}

// fetched is a ShareFetch answer for one partition.
func fetched(topic string, partition int32, data []byte, acq ...transport.AcquiredRecords) shareAnswer[*transport.ShareFetchResponse] {
	return shareAnswer[*transport.ShareFetchResponse]{resp: &transport.ShareFetchResponse{
		AcquisitionLockTimeout: 30 * time.Second,
		Topics: []transport.ShareFetchTopicResponse{{TopicID: topicID(topic), Partitions: []transport.ShareFetchPartitionResponse{{
			Partition: partition, Records: data, AcquiredRecords: acq,
		}}}},
	}}
}

// ackStrings turns a request's acknowledgement batches into a compact form for
// comparing: first-last:type.
func ackStrings(batches []transport.AcknowledgementBatch) []string {
	var out []string
	for _, b := range batches {
		s := itoa(b.FirstOffset)
		if b.LastOffset != b.FirstOffset {
			s += "-" + itoa(b.LastOffset)
		}
		for _, t := range b.AcknowledgeTypes {
			s += ":" + [...]string{"gap", "accept", "release", "reject"}[t]
		}
		out = append(out, s)
	}
	return out
}

// fetchPartitions returns a ShareFetch's partitions, "topic-partition",
// with their acknowledgements.
func fetchPartitions(req *transport.ShareFetchRequest) map[string][]string {
	out := map[string][]string{}
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			out[string(t.TopicID[0])+"-"+itoa(int64(p.Partition))] = ackStrings(p.AcknowledgementBatches)
		}
	}
	return out
}

// ackPartitions is fetchPartitions for a ShareAcknowledge.
func ackPartitions(req *transport.ShareAcknowledgeRequest) map[string][]string {
	out := map[string][]string{}
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			out[string(t.TopicID[0])+"-"+itoa(int64(p.Partition))] = ackStrings(p.AcknowledgementBatches)
		}
	}
	return out
}

// forgotten returns a ShareFetch's forgotten partitions.
func forgotten(req *transport.ShareFetchRequest) []string {
	var out []string
	for _, t := range req.ForgottenTopics {
		for _, p := range t.Partitions {
			out = append(out, string(t.TopicID[0])+"-"+itoa(int64(p)))
		}
	}
	return out
}

// ackLog collects what OnShareAcknowledged is told.
type ackLog struct {
	mu      sync.Mutex
	entries []string
	errs    []error
}

func (l *ackLog) record(topic string, partition int32, offsets []int64, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := topic + "-" + itoa(int64(partition)) + " ["
	for i, off := range offsets {
		if i > 0 {
			s += " "
		}
		s += itoa(off)
	}
	s += "]"
	if err != nil {
		s += " " + kafkaName(err)
	}
	l.entries = append(l.entries, s)
	l.errs = append(l.errs, err)
}

func (l *ackLog) take() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := l.entries
	l.entries, l.errs = nil, nil
	return out
}

// kafkaName is the name of the Kafka error err wraps, or its text.
func kafkaName(err error) string {
	var ke *kafka.Error
	if errors.As(err, &ke) {
		return ke.Name
	}
	return err.Error()
}

// shareCluster is a fake cluster of share nodes, a transport.NodeRouter:
// node 1 (the embedded shareNode) answers heartbeats and metadata, and
// each partition is fetched from the node leaders names.
type shareCluster struct {
	*shareNode
	nodes map[int32]*shareNode

	mu      sync.Mutex
	leaders map[kafka.TopicPartition]int32
}

var _ transport.NodeRouter = (*shareCluster)(nil)

func newShareCluster(coordinator *shareNode, nodes map[int32]*shareNode, leaders map[kafka.TopicPartition]int32) *shareCluster {
	return &shareCluster{shareNode: coordinator, nodes: nodes, leaders: leaders}
}

func (c *shareCluster) Leader(_ context.Context, tp kafka.TopicPartition) (int32, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	id, ok := c.leaders[tp]
	return id, ok
}

func (c *shareCluster) Node(_ context.Context, id int32) (transport.Client, error) {
	n, ok := c.nodes[id]
	if !ok {
		return nil, kafka.ErrLeaderNotAvailable
	}
	return n, nil
}

func (c *shareCluster) NoteError(int32, error) {}

// move makes node lead tp.
func (c *shareCluster) move(tp kafka.TopicPartition, node int32) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.leaders[tp] = node
}
