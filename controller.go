package partlog

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"math"
	"net"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/log"
	"github.com/partlog/partlog/replica"
	"github.com/partlog/partlog/transport"
	"github.com/partlog/partlog/vfs"
)

// ControllerOptions configures a Controller. The zero value works.
type ControllerOptions struct {
	// Controller holds the controller's timing: TickInterval (100 ms),
	// SessionTimeout (broker.session.timeout.ms, 9 s) and the leader
	// imbalance check. Nodes must heartbeat well within SessionTimeout.
	Controller replica.ControllerOptions
	// FS is the filesystem; nil means the OS.
	FS vfs.FS
	// Logger receives the controller's decisions and failures. Nil
	// discards them.
	Logger *slog.Logger
}

// Controller is a cluster's controller run as a service, as a KRaft
// controller process runs: it owns the metadata — registered nodes and
// their liveness, topics and the assignment of their partitions, each
// partition's leader, ISR and epochs — in a replica.LocalController whose
// every change is synced to a log in its directory before it takes effect,
// so a restarted controller resumes where it stopped. It ticks the
// controller (fencing nodes whose heartbeats stopped, electing leaders from
// the ISR), answers nodes' calls — registration, heartbeats that carry the
// metadata back, AlterPartition, topic creation and deletion, blocks of
// producer ids — in process (JoinCluster) or over TCP (Serve,
// ControllerAddress).
//
// One Controller serves a cluster; the metadata lives in one directory, not
// a Raft quorum, so the controller is a single point of failure while it is
// down: nodes keep serving with the metadata they have, and no leader is
// elected until it is back. A Controller is safe for concurrent use.
type Controller struct {
	dir    string
	fs     vfs.FS
	logger *slog.Logger
	logs   *log.Dir
	// ownsLogs says logs is the controller's own, which Close closes.
	ownsLogs bool

	mu      sync.Mutex
	ctl     *replica.LocalController
	addrs   map[int32]string
	epoch   int32 // the controller's incarnation, one more at each start
	version int64 // grows with every change of the metadata nodes see
	pids    producerIDs
	closed  bool

	changed chan struct{} // closed and replaced on every change
	stop    chan struct{}
	done    chan struct{}
}

// controllerTopic is the controller's metadata log in its directory, named
// as KRaft's.
var controllerTopic = kafka.TopicPartition{Topic: "__cluster_metadata", Partition: 0}

// OpenController opens (creating as needed) the controller's directory,
// replays its metadata log and starts ticking. Close stops it.
func OpenController(dir string, opts ControllerOptions) (*Controller, error) {
	if opts.FS == nil {
		opts.FS = vfs.Default
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if err := vfs.MkdirAllDurable(opts.FS, dir, 0o755); err != nil {
		return nil, fmt.Errorf("partlog: create %s: %w", dir, err)
	}
	logs, err := log.OpenDir(dir, log.DirOptions{FS: opts.FS, Logger: opts.Logger})
	if err != nil {
		return nil, fmt.Errorf("partlog: controller: %w", err)
	}
	c, err := startController(dir, logs, opts, nil)
	if err != nil {
		logs.Close()
		return nil, err
	}
	c.ownsLogs = true
	return c, nil
}

// startController starts a controller whose metadata log and files live
// in dir, whose log directory logs is: its own (OpenController), or a
// node's, for the controller of a node on its own, which keeps the
// cluster metadata in its data directory as a KRaft node in combined mode
// does. opts has its defaults. prepare, if not nil, may rewrite the
// metadata log before the controller replays it.
func startController(dir string, logs *log.Dir, opts ControllerOptions, prepare func(*log.Log) error) (*Controller, error) {
	l, err := logs.Open(controllerTopic, log.Options{SegmentBytes: 16 << 20, MaxIndexBytes: 1 << 20, RetentionMs: -1})
	if err != nil {
		return nil, fmt.Errorf("partlog: controller: open metadata log: %w", err)
	}
	if prepare != nil {
		if err := prepare(l); err != nil {
			return nil, err
		}
	}
	epoch, err := bumpControllerEpoch(opts.FS, dir)
	if err != nil {
		return nil, err
	}
	// Versions grow across restarts: nodes take metadata only when it is
	// newer than theirs.
	c := &Controller{dir: dir, fs: opts.FS, logger: opts.Logger, logs: logs, addrs: map[int32]string{},
		epoch: epoch, version: int64(epoch) << 32,
		changed: make(chan struct{}), stop: make(chan struct{}), done: make(chan struct{})}
	store := &countingStore{MetadataStore: replica.NewLogStore(l), c: c}
	if c.ctl, err = replica.NewController(store, opts.Controller); err != nil {
		return nil, fmt.Errorf("partlog: controller: %w", err)
	}
	tick := opts.Controller.TickInterval
	if tick <= 0 {
		tick = 100 * time.Millisecond
	}
	go c.run(tick)
	return c, nil
}

// countingStore counts the records the controller commits: every commit
// is a change of the metadata the nodes must see.
type countingStore struct {
	replica.MetadataStore
	c *Controller
}

func (s *countingStore) Append(recs []replica.MetadataRecord) error {
	if err := s.MetadataStore.Append(recs); err != nil {
		return err
	}
	s.c.bumpLocked()
	return nil
}

// bumpLocked records a change of the metadata and wakes its watchers. The
// caller holds mu.
func (c *Controller) bumpLocked() {
	c.version++
	close(c.changed)
	c.changed = make(chan struct{})
}

// run ticks the controller until Close.
func (c *Controller) run(tick time.Duration) {
	defer close(c.done)
	t := time.NewTicker(tick)
	defer t.Stop()
	for {
		select {
		case <-c.stop:
			return
		case <-t.C:
			c.mu.Lock()
			if err := c.ctl.Tick(); err != nil {
				c.logger.Error("controller tick failed", "err", err)
			}
			c.ctl.Updates() // nodes pull the metadata with their heartbeats
			c.mu.Unlock()
		}
	}
}

// Close stops the controller and closes its directory.
func (c *Controller) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	c.mu.Unlock()
	close(c.stop)
	<-c.done
	if !c.ownsLogs {
		return nil
	}
	return c.logs.Close()
}

// State returns a copy of the cluster metadata.
func (c *Controller) State() replica.ClusterState {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ctl.State()
}

// Partition returns a partition's leader, ISR and epochs.
func (c *Controller) Partition(topic string, partition int32) (replica.LeaderAndISR, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ctl.Partition(kafka.TopicPartition{Topic: topic, Partition: partition})
}

// WaitFor waits until cond, called with the metadata after each change,
// holds, or ctx ends.
func (c *Controller) WaitFor(ctx context.Context, cond func(replica.ClusterState) bool) error {
	for {
		c.mu.Lock()
		s, changed := c.ctl.State(), c.changed
		c.mu.Unlock()
		if cond(s) {
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// The controller's calls: one request type, by Op, so that the in-process
// and the TCP paths are the same code. Over TCP a request travels as JSON
// under transport.APIController.
const (
	opRegister       = "register"
	opHeartbeat      = "heartbeat"
	opShutdown       = "shutdown"
	opAlterPartition = "alter_partition"
	opCreateTopic    = "create_topic"
	opDeleteTopic    = "delete_topic"
	opProducerIDs    = "producer_ids"
	// The admin calls a node forwards for Kafka's clients (KIP-590).
	opCreatePartitions = "create_partitions"
	opAlterConfigs     = "alter_configs"
	opElectLeader      = "elect_leader"
)

type controllerRequest struct {
	Op          string `json:"op"`
	Node        int32  `json:"node"`
	BrokerEpoch int64  `json:"broker_epoch,omitempty"`
	// Address is where the node serves (register).
	Address string `json:"address,omitempty"`
	// KnownVersion is the metadata version the node has (heartbeat).
	KnownVersion int64 `json:"known_version,omitempty"`
	// WaitMs, on a heartbeat, lets the controller hold the answer up to
	// this long while the metadata is no newer than KnownVersion: a long
	// poll, so that a node learns of a change — a new leader — as it
	// happens rather than at its next heartbeat.
	WaitMs int64 `json:"wait_ms,omitempty"`

	Topic     string              `json:"topic,omitempty"`
	Partition int32               `json:"partition,omitempty"`
	Change    *replica.ISRChange  `json:"change,omitempty"`
	NewTopic  *controllerNewTopic `json:"new_topic,omitempty"`
	// Count is the partition count a topic grows to (create_partitions).
	Count int32 `json:"count,omitempty"`
	// Alteration is the changes to a topic's configs (alter_configs),
	// which the controller applies to the set it has, so that changes
	// made through different nodes at once are not lost.
	Alteration *transport.ConfigAlteration `json:"alteration,omitempty"`
}

type controllerNewTopic struct {
	Partitions        int32             `json:"partitions"`
	ReplicationFactor int16             `json:"replication_factor"`
	Configs           map[string]string `json:"configs,omitempty"`
	ID                string            `json:"id"`
}

type controllerResponse struct {
	BrokerEpoch int64 `json:"broker_epoch,omitempty"`
	Fenced      bool  `json:"fenced,omitempty"`
	// Version is the metadata version after the call; Metadata, on a
	// heartbeat, is the whole metadata when it is newer than the node's.
	Version  int64                 `json:"version"`
	Metadata *clusterMetadata      `json:"metadata,omitempty"`
	State    *replica.LeaderAndISR `json:"state,omitempty"`
	// ProducerIDs is a block of producer ids: [start, end).
	ProducerIDStart int64 `json:"producer_id_start,omitempty"`
	ProducerIDEnd   int64 `json:"producer_id_end,omitempty"`
}

// clusterMetadata is what a node learns of the cluster from the
// controller.
type clusterMetadata struct {
	Version int64                         `json:"version"`
	Nodes   map[int32]nodeMetadata        `json:"nodes"`
	Topics  map[string]replica.TopicState `json:"topics"`
}

type nodeMetadata struct {
	BrokerEpoch int64  `json:"broker_epoch"`
	Fenced      bool   `json:"fenced"`
	Address     string `json:"address,omitempty"`
}

// controllerProducerIDBlock is how many producer ids a node gets at once.
const controllerProducerIDBlock = 1000

// call answers one request: the controller's side of every path. A
// heartbeat that may wait (WaitMs) and finds nothing new waits for the
// next change, without holding the controller.
func (c *Controller) call(ctx context.Context, req *controllerRequest) (*controllerResponse, error) {
	resp, changed, err := c.callLocked(req)
	if err != nil || req.Op != opHeartbeat || req.WaitMs <= 0 || resp.Metadata != nil {
		return resp, err
	}
	t := time.NewTimer(time.Duration(req.WaitMs) * time.Millisecond)
	defer t.Stop()
	select {
	case <-changed:
	case <-t.C:
		return resp, nil
	case <-ctx.Done():
		return resp, nil
	case <-c.stop:
		return resp, nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if req.KnownVersion != c.version {
		resp.Metadata = c.metadataLocked()
	}
	resp.Version = c.version
	return resp, nil
}

// callLocked answers req under the controller's lock, and returns the
// channel its next change closes.
func (c *Controller) callLocked(req *controllerRequest) (*controllerResponse, <-chan struct{}, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	resp, err := c.answerLocked(req)
	return resp, c.changed, err
}

// answerLocked carries out one request. The caller holds mu.
func (c *Controller) answerLocked(req *controllerRequest) (*controllerResponse, error) {
	if c.closed {
		return nil, fmt.Errorf("%w: the controller is closed", kafka.ErrCoordinatorNotAvailable)
	}
	resp := &controllerResponse{}
	var err error
	switch req.Op {
	case opRegister:
		if resp.BrokerEpoch, err = c.ctl.RegisterNode(req.Node); err == nil && c.addrs[req.Node] != req.Address {
			c.addrs[req.Node] = req.Address
			c.bumpLocked()
		}
	case opHeartbeat:
		if err = c.ctl.Heartbeat(req.Node, req.BrokerEpoch); err == nil {
			if req.Address != "" && c.addrs[req.Node] != req.Address {
				c.addrs[req.Node] = req.Address // a restarted controller learns it again
				c.bumpLocked()
			}
			resp.Fenced = c.ctl.State().Nodes[req.Node].Fenced
			if req.KnownVersion != c.version {
				resp.Metadata = c.metadataLocked()
			}
		}
	case opShutdown:
		err = c.ctl.ShutdownNode(req.Node, req.BrokerEpoch)
	case opAlterPartition:
		if req.Change == nil {
			return nil, fmt.Errorf("%w: AlterPartition without a change", kafka.ErrInvalidRequest)
		}
		var s replica.LeaderAndISR
		s, err = c.ctl.AlterPartition(req.Node, kafka.TopicPartition{Topic: req.Topic, Partition: req.Partition}, *req.Change)
		resp.State = &s
	case opCreateTopic:
		nt := req.NewTopic
		if nt == nil {
			return nil, fmt.Errorf("%w: CreateTopic without a topic", kafka.ErrInvalidRequest)
		}
		unclean, _ := strconv.ParseBool(nt.Configs["unclean.leader.election.enable"])
		err = c.ctl.CreateTopic(req.Topic, int(nt.Partitions), int(nt.ReplicationFactor),
			replica.TopicConfig{Unclean: replica.Unclean(unclean), Configs: maps.Clone(nt.Configs), ID: nt.ID})
	case opDeleteTopic:
		err = c.ctl.DeleteTopic(req.Topic)
	case opCreatePartitions:
		err = c.ctl.CreatePartitions(req.Topic, int(req.Count))
	case opAlterConfigs:
		t, ok := c.ctl.State().Topics[req.Topic]
		switch {
		case req.Alteration == nil:
			return nil, fmt.Errorf("%w: AlterConfigs without changes", kafka.ErrInvalidRequest)
		case !ok:
			return nil, fmt.Errorf("%w: %q", kafka.ErrUnknownTopicOrPartition, req.Topic)
		}
		var next map[string]string
		if next, err = applyConfigChanges(t.Configs, *req.Alteration); err == nil {
			unclean, _ := strconv.ParseBool(next[ConfigUncleanLeaderElects])
			err = c.ctl.AlterTopicConfig(req.Topic, replica.TopicConfig{Unclean: replica.Unclean(unclean), Configs: next})
		}
	case opElectLeader:
		err = c.ctl.ElectPreferredLeader(kafka.TopicPartition{Topic: req.Topic, Partition: req.Partition})
	case opProducerIDs:
		resp.ProducerIDStart, err = c.pids.allocateBlock(c.fs, path.Join(c.dir, ProducerIDsFileName), controllerProducerIDBlock)
		resp.ProducerIDEnd = resp.ProducerIDStart + controllerProducerIDBlock
	default:
		return nil, fmt.Errorf("%w: unknown controller call %q", kafka.ErrInvalidRequest, req.Op)
	}
	if err != nil {
		return nil, err
	}
	resp.Version = c.version
	return resp, nil
}

// metadataLocked returns the metadata nodes see. The caller holds mu.
func (c *Controller) metadataLocked() *clusterMetadata {
	s := c.ctl.State()
	md := &clusterMetadata{Version: c.version, Nodes: map[int32]nodeMetadata{}, Topics: s.Topics}
	for id, n := range s.Nodes {
		md.Nodes[id] = nodeMetadata{BrokerEpoch: n.BrokerEpoch, Fenced: n.Fenced, Address: c.addrs[id]}
	}
	return md
}

// controllerAPI is how a node reaches the controller: the Controller
// itself in process, or a TCP client.
type controllerAPI interface {
	call(ctx context.Context, req *controllerRequest) (*controllerResponse, error)
}

// tcpController calls a controller over TCP.
// A server answers one connection's requests in order, so a long-polling
// heartbeat has a client (and connection) of its own, and never holds up
// an AlterPartition.
type tcpController struct {
	addr string

	mu      sync.Mutex
	clients [2]*transport.TCPClient // for other calls, and for long polls
}

func (t *tcpController) call(ctx context.Context, req *controllerRequest) (*controllerResponse, error) {
	kind := 0
	if req.Op == opHeartbeat && req.WaitMs > 0 {
		kind = 1
	}
	t.mu.Lock()
	cl := t.clients[kind]
	t.mu.Unlock()
	if cl == nil {
		var err error
		if cl, err = transport.Dial(ctx, t.addr, transport.DialOptions{ClientID: "partlog-node", DialTimeout: 2 * time.Second}); err != nil {
			return nil, err
		}
		t.mu.Lock()
		if t.clients[kind] == nil {
			t.clients[kind] = cl
		} else {
			cl.Close()
			cl = t.clients[kind]
		}
		t.mu.Unlock()
	}
	body, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	out, err := cl.CallInternal(ctx, transport.APIController, body)
	if err != nil {
		return nil, err
	}
	resp := &controllerResponse{}
	if err := json.Unmarshal(out, resp); err != nil {
		return nil, fmt.Errorf("%w: controller answer: %v", kafka.ErrCorruptMessage, err)
	}
	return resp, nil
}

func (t *tcpController) close() {
	t.mu.Lock()
	defer t.mu.Unlock()
	for i, cl := range t.clients {
		if cl != nil {
			cl.Close()
			t.clients[i] = nil
		}
	}
}

// HandleInternal answers controller calls that arrive over TCP
// (transport.APIController); it makes the Controller a
// transport.InternalHandler.
func (c *Controller) HandleInternal(ctx context.Context, key int16, body []byte) ([]byte, error) {
	if key != transport.APIController {
		return nil, fmt.Errorf("%w: the controller answers only controller calls", kafka.ErrInvalidRequest)
	}
	req := &controllerRequest{}
	if err := json.Unmarshal(body, req); err != nil {
		return nil, fmt.Errorf("%w: controller call: %v", kafka.ErrInvalidRequest, err)
	}
	resp, err := c.call(ctx, req)
	if err != nil {
		return nil, err
	}
	return json.Marshal(resp)
}

// Serve answers controller calls from nodes, and Metadata from clients
// (which then find each partition's leader), on ln until Close or until ln
// fails.
func (c *Controller) Serve(ln net.Listener) error {
	s := transport.NewServer(controllerHandler{c}, transport.ServerOptions{Logger: c.logger})
	go func() {
		<-c.stop
		s.Close()
	}()
	err := s.Serve(ln)
	if errors.Is(err, transport.ErrServerClosed) {
		return nil
	}
	return err
}

// controllerHandler is a Controller as a TCP server's handler: it answers
// controller calls and Metadata; it hosts no partitions.
type controllerHandler struct{ c *Controller }

func (h controllerHandler) HandleInternal(ctx context.Context, key int16, body []byte) ([]byte, error) {
	return h.c.HandleInternal(ctx, key, body)
}

func (h controllerHandler) Metadata(ctx context.Context, req *transport.MetadataRequest) (*transport.MetadataResponse, error) {
	h.c.mu.Lock()
	md := h.c.metadataLocked()
	h.c.mu.Unlock()
	return md.response(req.Topics, -1), nil
}

var errNoPartitions = fmt.Errorf("%w: a controller hosts no partitions", kafka.ErrNotLeaderOrFollower)

func (controllerHandler) Produce(context.Context, *transport.ProduceRequest) (*transport.ProduceResponse, error) {
	return nil, errNoPartitions
}

func (controllerHandler) Fetch(context.Context, *transport.FetchRequest) (*transport.FetchResponse, error) {
	return nil, errNoPartitions
}

func (controllerHandler) ListOffsets(context.Context, *transport.ListOffsetsRequest) (*transport.ListOffsetsResponse, error) {
	return nil, errNoPartitions
}

// response answers a Metadata request from the metadata: the live nodes
// with their addresses, and the topics named (every topic when nil).
func (md *clusterMetadata) response(topics []string, controllerID int32) *transport.MetadataResponse {
	resp := &transport.MetadataResponse{ControllerID: controllerID}
	ids := slices.Sorted(maps.Keys(md.Nodes))
	for _, id := range ids {
		n := md.Nodes[id]
		if n.Fenced {
			continue
		}
		b := transport.Broker{NodeID: id}
		if host, port, ok := splitHostPort(n.Address); ok {
			b.Host, b.Port = host, port
		}
		resp.Brokers = append(resp.Brokers, b)
	}
	if topics == nil {
		topics = slices.Sorted(maps.Keys(md.Topics))
	}
	for _, name := range topics {
		t, ok := md.Topics[name]
		tm := transport.TopicMetadata{Topic: name}
		if !ok {
			tm.Err = fmt.Errorf("%w: %q", kafka.ErrUnknownTopicOrPartition, name)
			resp.Topics = append(resp.Topics, tm)
			continue
		}
		tm.TopicID = topicIDBytes(t.ID)
		tm.Internal = strings.HasPrefix(name, "__") // __consumer_offsets
		for p, s := range t.Partitions {
			pm := transport.PartitionMetadata{Partition: int32(p), Leader: s.Leader, LeaderEpoch: s.LeaderEpoch,
				Replicas: slices.Clone(s.Replicas), ISR: slices.Clone(s.ISR)}
			if s.Leader == replica.NoLeader {
				pm.Err = fmt.Errorf("%w: %s-%d has no leader", kafka.ErrLeaderNotAvailable, name, p)
			}
			for _, r := range s.Replicas {
				if n, ok := md.Nodes[r]; !ok || n.Fenced {
					pm.Offline = append(pm.Offline, r)
				}
			}
			tm.Partitions = append(tm.Partitions, pm)
		}
		resp.Topics = append(resp.Topics, tm)
	}
	return resp
}

// splitHostPort splits host:port for a Metadata answer.
func splitHostPort(addr string) (string, int32, bool) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", 0, false
	}
	p, err := strconv.ParseInt(port, 10, 32)
	if err != nil {
		return "", 0, false
	}
	return host, int32(p), true
}

// ControllerEpochFileName is the file in a controller's directory that
// counts its starts (Kafka's controller epoch): metadata versions start at
// the epoch times 2^32, so a restarted controller's versions are newer
// than any a node saw from the last one.
const ControllerEpochFileName = "controller-epoch"

// bumpControllerEpoch reads the controller epoch, adds one and writes it
// back durably.
func bumpControllerEpoch(fsys vfs.FS, dir string) (int32, error) {
	name := path.Join(dir, ControllerEpochFileName)
	props, err := readProperties(fsys, name)
	if err != nil {
		return 0, err
	}
	epoch := int64(0)
	if v, ok := props["epoch"]; ok {
		if epoch, err = strconv.ParseInt(v, 10, 32); err != nil || epoch < 0 {
			return 0, fmt.Errorf("partlog: %s: bad epoch %q", name, v)
		}
	}
	if epoch >= math.MaxInt32 {
		return 0, fmt.Errorf("partlog: %s: controller epochs used up", name)
	}
	epoch++
	if err := writeAtomic(fsys, name, []byte(fmt.Sprintf("version=0\nepoch=%d\n", epoch))); err != nil {
		return 0, err
	}
	return int32(epoch), nil
}
