package transport

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"net"
	"slices"
	"strconv"
	"sync"

	"github.com/partlog/partlog/kafka"
)

// ClusterClient is a Client for a cluster of nodes, as a Kafka client is:
// it learns from Metadata which node leads each partition, sends each
// partition's part of a request to its leader over TCP (a TCPClient per
// node), and learns again when a node answers that it no longer leads a
// partition (NOT_LEADER_OR_FOLLOWER, FENCED_LEADER_EPOCH, ...) or cannot be
// reached. Such partitions come back with their retriable error, which a
// producer or consumer retries after its backoff, by then at the new
// leader. It also gets producer ids (from any node), sends each
// consumer group's requests to the group's coordinator (see
// FindCoordinator), and each transaction's to the transaction
// coordinator of its transactional id (see TxnClient).
//
// ClusterClient is safe for concurrent use.
type ClusterClient struct {
	bootstrap []string
	connect   Connector

	mu      sync.Mutex
	closed  bool
	stale   bool                  // a node said the metadata is out of date
	addrs   map[int32]string      // node id -> host:port, from Metadata
	nodes   map[string]NodeClient // by address
	leaders map[string][]int32    // topic -> leader of each partition, -1 for none
	coords  map[coordKey]string   // group or transactional id -> address of its coordinator
	// suspect are the addresses whose last call failed to reach the node
	// or timed out: cut off, or dead. Metadata asks them last.
	suspect map[string]bool
}

// NodeClient is what a ClusterClient needs of one node: a TCPClient, or a
// node in the same process.
type NodeClient interface {
	Client
	ProducerIDClient
	GroupClient
	Close() error
}

// Connector opens a NodeClient to the node at addr, an address as Metadata
// answers give them (host:port).
type Connector func(ctx context.Context, addr string) (NodeClient, error)

// DialCluster connects to the cluster through the first reachable address
// of bootstrap (host:port) and learns its nodes and leaders.
func DialCluster(ctx context.Context, bootstrap []string, opts DialOptions) (*ClusterClient, error) {
	return NewClusterClient(ctx, bootstrap, func(ctx context.Context, addr string) (NodeClient, error) {
		return Dial(ctx, addr, opts)
	})
}

// NewClusterClient is DialCluster with nodes reached by connect: the nodes
// of a cluster in one process, say.
func NewClusterClient(ctx context.Context, bootstrap []string, connect Connector) (*ClusterClient, error) {
	if len(bootstrap) == 0 {
		return nil, errors.New("transport: no bootstrap address")
	}
	c := &ClusterClient{
		bootstrap: append([]string(nil), bootstrap...), connect: connect,
		addrs: map[int32]string{}, nodes: map[string]NodeClient{}, leaders: map[string][]int32{},
		suspect: map[string]bool{},
	}
	if _, err := c.Metadata(ctx, &MetadataRequest{}); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// Close closes the connections to every node.
func (c *ClusterClient) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	for _, n := range c.nodes {
		n.Close()
	}
	clear(c.nodes)
	return nil
}

// node returns the client of the node at addr, dialling it when needed.
func (c *ClusterClient) node(ctx context.Context, addr string) (NodeClient, error) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil, kafka.ErrClosed
	}
	if n, ok := c.nodes[addr]; ok {
		c.mu.Unlock()
		return n, nil
	}
	c.mu.Unlock()
	n, err := c.connect(ctx, addr)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		n.Close()
		return nil, kafka.ErrClosed
	}
	if old, ok := c.nodes[addr]; ok { // another caller dialled meanwhile
		n.Close()
		return old, nil
	}
	c.nodes[addr] = n
	return n, nil
}

// anyNode calls fn with the nodes the client knows, in random order but
// the suspect ones last, then the bootstrap addresses, until one answers.
func (c *ClusterClient) anyNode(ctx context.Context, fn func(NodeClient) error) error {
	c.mu.Lock()
	var addrs, suspect []string
	for _, a := range c.addrs {
		if c.suspect[a] {
			suspect = append(suspect, a)
		} else {
			addrs = append(addrs, a)
		}
	}
	c.mu.Unlock()
	rand.Shuffle(len(addrs), func(i, j int) { addrs[i], addrs[j] = addrs[j], addrs[i] })
	addrs = append(append(addrs, suspect...), c.bootstrap...)
	var errs []error
	for _, a := range addrs {
		n, err := c.node(ctx, a)
		if err == nil {
			err = fn(n)
		}
		c.noteReach(a, err)
		if err == nil {
			return nil
		}
		if ctx.Err() != nil || errors.Is(err, kafka.ErrClosed) {
			return err
		}
		errs = append(errs, err)
	}
	return fmt.Errorf("%w: no node answered: %w", kafka.ErrNetwork, errors.Join(errs...))
}

// Metadata asks any node, and learns the nodes and leaders it answers.
func (c *ClusterClient) Metadata(ctx context.Context, req *MetadataRequest) (*MetadataResponse, error) {
	var resp *MetadataResponse
	err := c.anyNode(ctx, func(n NodeClient) error {
		var err error
		resp, err = n.Metadata(ctx, req)
		return err
	})
	if err != nil {
		return nil, err
	}
	c.learn(resp)
	return resp, nil
}

// learn takes the nodes and leaders of a Metadata answer.
func (c *ClusterClient) learn(resp *MetadataResponse) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, b := range resp.Brokers {
		addr := net.JoinHostPort(b.Host, strconv.Itoa(int(b.Port)))
		if old, ok := c.addrs[b.NodeID]; ok && old != addr {
			if n, ok := c.nodes[old]; ok {
				n.Close()
				delete(c.nodes, old)
			}
		}
		c.addrs[b.NodeID] = addr
	}
	for _, t := range resp.Topics {
		if t.Err != nil {
			delete(c.leaders, t.Topic)
			continue
		}
		leaders := make([]int32, len(t.Partitions))
		for i := range leaders {
			leaders[i] = -1
		}
		for _, p := range t.Partitions {
			if int(p.Partition) < len(leaders) && p.Err == nil {
				leaders[p.Partition] = p.Leader
			}
		}
		c.leaders[t.Topic] = leaders
	}
	c.stale = false
}

// refresh learns the leaders of topics again when a node said the client's
// view is stale, or when it knows nothing of one of topics.
func (c *ClusterClient) refresh(ctx context.Context, topics []string) {
	c.mu.Lock()
	need := c.stale
	for _, t := range topics {
		if _, ok := c.leaders[t]; !ok {
			need = true
		}
	}
	if !need {
		c.mu.Unlock()
		return
	}
	known := make([]string, 0, len(c.leaders)+len(topics))
	for t := range c.leaders {
		known = append(known, t)
	}
	c.mu.Unlock()
	for _, t := range topics {
		if !slices.Contains(known, t) {
			known = append(known, t)
		}
	}
	c.Metadata(ctx, &MetadataRequest{Topics: known}) // on failure, partitions answer LEADER_NOT_AVAILABLE
}

// leaderAddr returns the address of the leader of a partition, or "".
func (c *ClusterClient) leaderAddr(topic string, partition int32) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	leaders := c.leaders[topic]
	if partition < 0 || int(partition) >= len(leaders) || leaders[partition] < 0 {
		return ""
	}
	return c.addrs[leaders[partition]]
}

// noteReach notes whether the call to the node at addr that ended with
// err reached it: a node that could not be dialled, dropped the
// connection or did not answer in time is suspect until it answers again.
func (c *ClusterClient) noteReach(addr string, err error) {
	unreached := errors.Is(err, kafka.ErrNetwork) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, kafka.ErrRequestTimedOut)
	c.mu.Lock()
	defer c.mu.Unlock()
	if unreached {
		c.suspect[addr] = true
	} else if err == nil {
		delete(c.suspect, addr)
	}
}

// noteAnswer marks the view stale when err says a node no longer leads
// a partition, could not be reached, or did not answer in time (a leader
// cut off from the network answers nothing, as Kafka's clients then ask
// for metadata again).
func (c *ClusterClient) noteAnswer(err error) {
	if err == nil {
		return
	}
	for _, stale := range []error{kafka.ErrNotLeaderOrFollower, kafka.ErrLeaderNotAvailable, kafka.ErrUnknownTopicOrPartition,
		kafka.ErrFencedLeaderEpoch, kafka.ErrUnknownLeaderEpoch, kafka.ErrNetwork, kafka.ErrNotEnoughReplicas,
		context.DeadlineExceeded, kafka.ErrRequestTimedOut} {
		if errors.Is(err, stale) {
			c.mu.Lock()
			c.stale = true
			c.mu.Unlock()
			return
		}
	}
}

// topicOf is the shape that the topics of Produce, Fetch and ListOffsets
// requests and answers share: a topic's name and its partitions, of type
// P. The router reads and makes them as topicParts.
type topicOf[P any] interface {
	~struct {
		Topic      string
		Partitions []P
	}
}

// topicParts is the type every topicOf[P] converts to and from.
type topicParts[P any] struct {
	Topic      string
	Partitions []P
}

// answerKind says how perLeader reads the partitions P of one kind of
// request and reads and makes their answers A.
type answerKind[P, A any] struct {
	asked  func(P) int32                        // the partition a request names
	about  func(A) (partition int32, err error) // the partition an answer is about, and its error
	failed func(partition int32, err error) A   // the answer for a partition without its leader's
}

var (
	produceKind = answerKind[ProducePartition, ProducePartitionResponse]{
		asked: func(p ProducePartition) int32 { return p.Partition },
		about: func(r ProducePartitionResponse) (int32, error) { return r.Partition, r.Err },
		failed: func(p int32, err error) ProducePartitionResponse {
			return ProducePartitionResponse{Partition: p, Err: err, BaseOffset: -1, LogAppendTime: -1, LogStartOffset: -1}
		},
	}
	fetchKind = answerKind[FetchPartition, FetchPartitionResponse]{
		asked: func(p FetchPartition) int32 { return p.Partition },
		about: func(r FetchPartitionResponse) (int32, error) { return r.Partition, r.Err },
		failed: func(p int32, err error) FetchPartitionResponse {
			return FetchPartitionResponse{Partition: p, Err: err, HighWatermark: -1, LastStableOffset: -1, LogStartOffset: -1}
		},
	}
	listOffsetsKind = answerKind[ListOffsetsPartition, ListOffsetsPartitionResponse]{
		asked: func(p ListOffsetsPartition) int32 { return p.Partition },
		about: func(r ListOffsetsPartitionResponse) (int32, error) { return r.Partition, r.Err },
		failed: func(p int32, err error) ListOffsetsPartitionResponse {
			return ListOffsetsPartitionResponse{Partition: p, Err: err, Timestamp: -1, Offset: -1, LeaderEpoch: -1}
		},
	}
)

// perLeader sends each partition of a request's topics to its leader, and
// answers topic by topic and partition by partition in the request's
// order: the leader's answer, or a retriable error when the partition had
// no known leader, its leader could not be reached, or its leader left it
// out. It learns the leaders first when the client's view is stale or
// lacks one of the topics, and errors that say the view is stale mark it
// so; it retries nothing itself.
//
// send sends one leader its share, the partitions it leads, as the k-th
// of n leaders called at once. perLeader returns once every call has, so
// that what the request lends the leaders (Produce's batches, Fetch's
// buffer) is the caller's again. It returns an error only when ctx ended.
func perLeader[T topicOf[P], TR topicOf[A], P, A any](ctx context.Context, c *ClusterClient, topics []T, kind answerKind[P, A],
	send func(ctx context.Context, n NodeClient, k, of int, share []T) ([]TR, error)) ([]TR, error) {
	names := make([]string, len(topics))
	for i, t := range topics {
		names[i] = topicParts[P](t).Topic
	}
	c.refresh(ctx, names)
	leaders := make([][]string, len(topics)) // the leader's address for each partition, "" for none
	shares := map[string][]T{}               // what each leader is sent, topic by topic
	for i, t := range topics {
		t := topicParts[P](t)
		leaders[i] = make([]string, len(t.Partitions))
		byLeader := map[string][]P{}
		for j, p := range t.Partitions {
			addr := c.leaderAddr(t.Topic, kind.asked(p))
			leaders[i][j] = addr
			if addr != "" {
				byLeader[addr] = append(byLeader[addr], p)
			}
		}
		for addr, parts := range byLeader {
			shares[addr] = append(shares[addr], T(topicParts[P]{Topic: t.Topic, Partitions: parts}))
		}
	}
	addrs := mapKeys(shares)
	resps, errs := fanOut(ctx, c, addrs, func(ctx context.Context, n NodeClient, addr string) ([]TR, error) {
		return send(ctx, n, slices.Index(addrs, addr), len(addrs), shares[addr])
	})
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	out := make([]TR, len(topics))
	for i, t := range topics {
		t := topicParts[P](t)
		var answers []A
		for j, p := range t.Partitions {
			n, addr := kind.asked(p), leaders[i][j]
			var a A
			switch {
			case addr == "":
				a = kind.failed(n, fmt.Errorf("%w: no known leader for %s-%d", kafka.ErrLeaderNotAvailable, t.Topic, n))
			case errs[addr] != nil:
				a = kind.failed(n, errs[addr])
			default:
				var ok bool
				if a, ok = answerAbout(resps[addr], t.Topic, n, kind.about); !ok {
					a = kind.failed(n, fmt.Errorf("%w: the leader did not answer for %s-%d", kafka.ErrNetwork, t.Topic, n))
				}
			}
			_, err := kind.about(a)
			c.noteAnswer(err)
			answers = append(answers, a)
		}
		out[i] = TR(topicParts[A]{Topic: t.Topic, Partitions: answers})
	}
	return out, nil
}

// answerAbout returns a leader's answer about a partition of topic.
func answerAbout[TR topicOf[A], A any](answer []TR, topic string, partition int32, about func(A) (int32, error)) (A, bool) {
	for _, t := range answer {
		if t := topicParts[A](t); t.Topic == topic {
			for _, a := range t.Partitions {
				if p, _ := about(a); p == partition {
					return a, true
				}
			}
		}
	}
	var none A
	return none, false
}

// fanOut calls send for each leader's share concurrently and returns the
// answers by address, with the error of each address that gave none.
func fanOut[R any](ctx context.Context, c *ClusterClient, addrs []string, send func(context.Context, NodeClient, string) (R, error)) (map[string]R, map[string]error) {
	var (
		mu    sync.Mutex
		wg    sync.WaitGroup
		resps = map[string]R{}
		errs  = map[string]error{}
	)
	for _, addr := range addrs {
		wg.Go(func() {
			n, err := c.node(ctx, addr)
			var r R
			if err == nil {
				r, err = send(ctx, n, addr)
			}
			c.noteReach(addr, err)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs[addr] = err
				c.noteAnswer(err)
				return
			}
			resps[addr] = r
		})
	}
	wg.Wait()
	return resps, errs
}

// Features returns the features of a node the client reached, the first
// by address that reports any: the cluster's, when its nodes agree, as
// Kafka's finalized features are.
func (c *ClusterClient) Features() []Feature {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, addr := range slices.Sorted(maps.Keys(c.nodes)) {
		if fr, ok := c.nodes[addr].(FeatureReporter); ok {
			if fs := fr.Features(); len(fs) > 0 {
				return fs
			}
		}
	}
	return nil
}

// Produce sends each partition's batch to its leader.
func (c *ClusterClient) Produce(ctx context.Context, req *ProduceRequest) (*ProduceResponse, error) {
	topics, err := perLeader(ctx, c, req.Topics, produceKind, func(ctx context.Context, n NodeClient, _, _ int, share []ProduceTopic) ([]ProduceTopicResponse, error) {
		resp, err := n.Produce(ctx, &ProduceRequest{Version: req.Version, TransactionalID: req.TransactionalID, Acks: req.Acks, Timeout: req.Timeout, Topics: share})
		if err != nil {
			return nil, err
		}
		return resp.Topics, nil
	})
	if err != nil {
		return nil, err
	}
	return &ProduceResponse{Topics: topics}, nil
}

// Fetch sends each partition's part to its leader; the leaders' long polls
// run at once, and the answer comes when all have answered.
func (c *ClusterClient) Fetch(ctx context.Context, req *FetchRequest) (*FetchResponse, error) {
	topics, err := perLeader(ctx, c, req.Topics, fetchKind, func(ctx context.Context, n NodeClient, k, of int, share []FetchTopic) ([]FetchTopicResponse, error) {
		// The leaders read at once: each gets a disjoint part of the
		// buffer, its capacity capped so that no leader's read runs into
		// another's.
		size := cap(req.Buffer) / of
		sub := *req
		sub.Topics, sub.Buffer = share, req.Buffer[k*size:k*size:(k+1)*size]
		resp, err := n.Fetch(ctx, &sub)
		if err != nil {
			return nil, err
		}
		return resp.Topics, nil
	})
	if err != nil {
		return nil, err
	}
	return &FetchResponse{Topics: topics}, nil
}

// ListOffsets sends each partition's part to its leader.
func (c *ClusterClient) ListOffsets(ctx context.Context, req *ListOffsetsRequest) (*ListOffsetsResponse, error) {
	topics, err := perLeader(ctx, c, req.Topics, listOffsetsKind, func(ctx context.Context, n NodeClient, _, _ int, share []ListOffsetsTopic) ([]ListOffsetsTopicResponse, error) {
		resp, err := n.ListOffsets(ctx, &ListOffsetsRequest{ReplicaID: req.ReplicaID, Isolation: req.Isolation, Topics: share})
		if err != nil {
			return nil, err
		}
		return resp.Topics, nil
	})
	if err != nil {
		return nil, err
	}
	return &ListOffsetsResponse{Topics: topics}, nil
}

// DeleteRecords sends each partition's part to its leader, as Kafka's
// admin clients do. A partition without a known leader, or whose leader
// does not answer admin calls, is answered with the error.
func (c *ClusterClient) DeleteRecords(ctx context.Context, req *DeleteRecordsRequest) (*DeleteRecordsResponse, error) {
	var topics []string
	for _, p := range req.Partitions {
		topics = append(topics, p.Topic)
	}
	c.refresh(ctx, topics)
	by := map[string][]DeleteRecordsPartition{}
	route := make([]string, len(req.Partitions)) // the leader each partition went to
	for i, p := range req.Partitions {
		route[i] = c.leaderAddr(p.Topic, p.Partition)
		by[route[i]] = append(by[route[i]], p)
	}
	var addrs []string
	for a := range by {
		if a != "" {
			addrs = append(addrs, a)
		}
	}
	resps, errs := fanOut(ctx, c, addrs, func(ctx context.Context, n NodeClient, addr string) (*DeleteRecordsResponse, error) {
		admin, ok := n.(AdminClient)
		if !ok {
			return nil, fmt.Errorf("%w: node %s does not answer admin calls", kafka.ErrInvalidRequest, addr)
		}
		return admin.DeleteRecords(ctx, &DeleteRecordsRequest{Partitions: by[addr], Timeout: req.Timeout})
	})
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	out := &DeleteRecordsResponse{}
	for i, p := range req.Partitions {
		res := DeleteRecordsResult{TopicPartition: p.TopicPartition, LowWatermark: -1,
			Err: fmt.Errorf("%w: %s-%d has no known leader", kafka.ErrLeaderNotAvailable, p.Topic, p.Partition)}
		addr := route[i]
		if err := errs[addr]; err != nil {
			res.Err = err
		} else if r := resps[addr]; r != nil {
			for _, rp := range r.Partitions {
				if rp.TopicPartition == p.TopicPartition {
					res = rp
				}
			}
		}
		out.Partitions = append(out.Partitions, res)
	}
	return out, nil
}

// InitProducerID gets a producer id from any node, or, for a
// transactional id, from its transaction coordinator (see TxnClient).
func (c *ClusterClient) InitProducerID(ctx context.Context, req *InitProducerIDRequest) (*InitProducerIDResponse, error) {
	if req.TransactionalID != "" {
		return toCoordinator(ctx, c, txnKey(req.TransactionalID),
			func(n NodeClient) (*InitProducerIDResponse, error) { return n.InitProducerID(ctx, req) },
			func(r *InitProducerIDResponse) []error { return []error{r.Err} })
	}
	var resp *InitProducerIDResponse
	err := c.anyNode(ctx, func(n NodeClient) error {
		var err error
		resp, err = n.InitProducerID(ctx, req)
		return err
	})
	return resp, err
}

var (
	_ Client           = (*ClusterClient)(nil)
	_ ProducerIDClient = (*ClusterClient)(nil)
)
