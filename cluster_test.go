package partlog_test

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"net"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/partlog/partlog"
	"github.com/partlog/partlog/auth"
	"github.com/partlog/partlog/consumer"
	"github.com/partlog/partlog/controller"
	"github.com/partlog/partlog/internal/bufpool"
	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/log"
	"github.com/partlog/partlog/partlogtest"
	"github.com/partlog/partlog/producer"
	"github.com/partlog/partlog/record"
	"github.com/partlog/partlog/replica"
	"github.com/partlog/partlog/transport"
)

// testCluster is a controller and nodes in one process on a MemNetwork,
// with timing fast enough for tests.
type testCluster struct {
	t     *testing.T
	ctl   *partlog.Controller
	net   *partlog.MemNetwork
	dirs  map[int32]string
	nodes map[int32]*partlog.Node
}

func newTestCluster(t *testing.T, ids ...int32) *testCluster {
	t.Helper()
	return newTestClusterSession(t, 400*time.Millisecond, ids...)
}

// newTestClusterSession is newTestCluster with the controller's session
// timeout: a node silent for that long is fenced and loses its
// leaderships.
func newTestClusterSession(t *testing.T, session time.Duration, ids ...int32) *testCluster {
	t.Helper()
	ctl, err := partlog.OpenController(t.TempDir(), partlog.ControllerOptions{
		TickInterval: 10 * time.Millisecond, SessionTimeout: session, NoAutoLeaderRebalance: true,
	})
	require.NoError(t, err)
	c := &testCluster{t: t, ctl: ctl, net: partlog.NewMemNetwork(), dirs: map[int32]string{}, nodes: map[int32]*partlog.Node{}}
	t.Cleanup(func() {
		for _, n := range c.nodes {
			n.Close()
		}
		ctl.Close()
	})
	for _, id := range ids {
		c.dirs[id] = filepath.Join(t.TempDir(), strconv.Itoa(int(id)))
		c.start(id)
	}
	return c
}

// start opens node id (again).
func (c *testCluster) start(id int32) *partlog.Node {
	c.t.Helper()
	n, err := partlog.Open(c.dirs[id], partlog.NodeID(id), partlog.JoinCluster(c.ctl, c.net),
		partlog.HeartbeatInterval(20*time.Millisecond), partlog.GroupInitialRebalanceDelay(0),
		partlog.ReplicaOptions(replica.Options{TickInterval: 10 * time.Millisecond, ReplicaLagTimeMax: 500 * time.Millisecond,
			FetchWaitMax: 50 * time.Millisecond, FetchBackoff: 20 * time.Millisecond, FetchTimeout: time.Second}))
	require.NoError(c.t, err)
	c.nodes[id] = n
	return n
}

// stop closes node id.
func (c *testCluster) stop(id int32) {
	c.t.Helper()
	require.NoError(c.t, c.nodes[id].Close())
	delete(c.nodes, id)
}

// waitFor waits until cond holds of the controller's metadata.
func (c *testCluster) waitFor(what string, cond func(controller.ClusterState) bool) {
	c.t.Helper()
	waitForMetadata(c.t, c.ctl, what, cond)
}

// waitForMetadata waits, up to 20 s, until cond holds of ctl's metadata.
func waitForMetadata(t testing.TB, ctl *partlog.Controller, what string, cond func(controller.ClusterState) bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	require.NoError(t, ctl.WaitFor(ctx, cond), "waiting for %s", what)
}

func (c *testCluster) leader(topic string, p int32) int32 {
	s, err := c.ctl.Partition(topic, p)
	require.NoError(c.t, err)
	return s.Leader
}

// produceValues produces values to topic with an idempotent producer at
// acks=all, and returns them by partition in offset order.
func produceValues(t *testing.T, client transport.Client, topic string, values []string) map[int32][]string {
	t.Helper()
	p, err := producer.New(client, producer.Linger(time.Millisecond), producer.RetryBackoff(20*time.Millisecond))
	require.NoError(t, err)
	defer p.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var mu sync.Mutex
	acked := map[int32]map[int64]string{}
	var wg sync.WaitGroup
	for _, v := range values {
		wg.Add(1)
		p.Produce(ctx, &producer.Record{Topic: topic, Key: []byte(v), Value: []byte(v)}, func(r *producer.Record, err error) {
			defer wg.Done()
			require.NoError(t, err, "record %s", v)
			mu.Lock()
			defer mu.Unlock()
			if acked[r.Partition] == nil {
				acked[r.Partition] = map[int64]string{}
			}
			acked[r.Partition][r.Offset] = string(r.Value)
		})
	}
	wg.Wait()
	out := map[int32][]string{}
	for part, byOffset := range acked {
		for _, off := range slices.Sorted(func(yield func(int64) bool) {
			for o := range byOffset {
				if !yield(o) {
					return
				}
			}
		}) {
			out[part] = append(out[part], byOffset[off])
		}
	}
	return out
}

// consumeAll reads every partition of topic from the start up to want
// records in total, and returns the values by partition.
func consumeCluster(t *testing.T, client transport.Client, topic string, want int) map[int32][]string {
	t.Helper()
	c, err := consumer.New(client, consumer.Topics(topic), consumer.AutoOffsetReset(consumer.Earliest), consumer.RetryBackoff(20*time.Millisecond))
	require.NoError(t, err)
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	got := map[int32][]string{}
	n := 0
	for rec, err := range c.Records(ctx) {
		require.NoError(t, err)
		got[rec.Partition] = append(got[rec.Partition], string(rec.Value))
		if n++; n == want {
			break
		}
	}
	return got
}

func clusterValues(from, to int) []string {
	var vs []string
	for i := from; i < to; i++ {
		vs = append(vs, fmt.Sprintf("v%05d", i))
	}
	return vs
}

// TestClusterFailover replicates a topic over three nodes, closes the
// leader of each partition in turn while producing with acks=all, and
// checks that every acknowledged record is consumed exactly once, in
// order, that the old leader rejoins the ISR, and that every replica ends
// with the same batches.
func TestClusterFailover(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newTestCluster(t, 1, 2, 3)
		ctx := context.Background()
		require.NoError(t, c.nodes[1].CreateTopic(ctx, partlog.NewTopic{Name: "orders", Partitions: 2, ReplicationFactor: 3,
			Configs: map[string]string{"min.insync.replicas": "2"}}))
		client, err := c.net.Client(ctx)
		require.NoError(t, err)
		defer client.Close()

		acked := produceValues(t, client, "orders", clusterValues(0, 300))
		old := c.leader("orders", 0)
		c.stop(old)
		c.waitFor("a new leader of orders-0", func(s controller.ClusterState) bool {
			l := s.Topics["orders"].Partitions[0].Leader
			return l != old && l != replica.NoLeader
		})
		more := produceValues(t, client, "orders", clusterValues(300, 600))
		for p, vs := range more {
			acked[p] = append(acked[p], vs...)
		}

		got := consumeCluster(t, client, "orders", 600)
		require.Equal(t, acked, got, "every acknowledged record once, in offset order")

		// The old leader comes back and catches up into the ISR.
		c.start(old)
		c.waitFor("the full ISR", func(s controller.ClusterState) bool {
			for _, p := range s.Topics["orders"].Partitions {
				if len(p.ISR) != 3 {
					return false
				}
			}
			return true
		})
		for p := range int32(2) {
			var logs [][]uint32
			for _, id := range []int32{1, 2, 3} {
				logs = append(logs, batchCRCs(t, c.nodes[id], "orders", p))
			}
			require.Equal(t, logs[0], logs[1], "orders-%d: replicas 1 and 2 hold the same batches", p)
			require.Equal(t, logs[0], logs[2], "orders-%d: replicas 1 and 3 hold the same batches", p)
		}
	})
}

// batchCRCs returns the CRC of every batch of a node's replica, once it
// holds everything up to its leader's high watermark.
func batchCRCs(t *testing.T, n *partlog.Node, topic string, p int32) []uint32 {
	t.Helper()
	l, err := partlogtest.Log(n, topic, p)
	require.NoError(t, err, "node %d hosts %s-%d", n.NodeID(), topic, p)
	var crcs []uint32
	eachLogBatch(t, l, func(h record.Header, _ *record.Batch) { crcs = append(crcs, h.CRC) })
	return crcs
}

// eachLogBatch calls fn with each batch of l, in offset order: a read
// returns one segment's batches at most, so it reads on from the offset
// after the last batch until the log end offset.
func eachLogBatch(t *testing.T, l *log.Log, fn func(record.Header, *record.Batch)) {
	eachStoredBatch(t, l, func(h record.Header, stored []byte) {
		b, err := record.Decode(stored)
		require.NoError(t, err)
		fn(h, &b)
	})
}

// eachStoredBatch calls fn with each batch of l as stored, in offset
// order (see eachLogBatch).
func eachStoredBatch(t *testing.T, l *log.Log, fn func(h record.Header, stored []byte)) {
	for next, end := l.LogStartOffset(), l.LogEndOffset(); next < end; {
		data, err := l.Read(nil, next, end, 1<<24)
		require.NoError(t, err)
		require.NotEmpty(t, data, "a read below the log end offset returns a batch")
		for len(data) > 0 {
			h, err := record.ParseHeader(data)
			require.NoError(t, err)
			fn(h, data[:h.Size()])
			next = h.BaseOffset + int64(h.LastOffsetDelta) + 1
			data = data[h.Size():]
		}
	}
}

// answerLosingClient is a cluster client that loses the answer of one
// Produce request — the append happened, the producer hears nothing — and
// runs lose first, which moves the leadership.
type answerLosingClient struct {
	*transport.ClusterClient
	mu    sync.Mutex
	calls int
	loseN int
	lose  func()
}

func (c *answerLosingClient) Produce(ctx context.Context, req *transport.ProduceRequest) (*transport.ProduceResponse, error) {
	resp, err := c.ClusterClient.Produce(ctx, req)
	c.mu.Lock()
	c.calls++
	lost := c.calls == c.loseN
	c.mu.Unlock()
	if lost && err == nil {
		c.lose()
		return nil, fmt.Errorf("%w: answer lost (test)", kafka.ErrNetwork)
	}
	return resp, err
}

// TestClusterIdempotentRetryAcrossLeaderChange is issue 6's leader-change
// case: a batch is appended and replicated, its answer is lost, the leader
// goes away, and the producer retries the batch at the new leader, which
// must recognise it from the replicated batch headers and answer with the
// original offsets. Every record is in the log exactly once, in send
// order, for 1, 2 and 5 batches in flight.
func TestClusterIdempotentRetryAcrossLeaderChange(t *testing.T) {
	for _, inFlight := range []int{1, 2, 5} {
		t.Run(fmt.Sprintf("in-flight=%d", inFlight), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				c := newTestCluster(t, 1, 2, 3)
				ctx := context.Background()
				require.NoError(t, c.nodes[1].CreateTopic(ctx, partlog.NewTopic{Name: "pay", Partitions: 1, ReplicationFactor: 3,
					Configs: map[string]string{"min.insync.replicas": "2"}}))
				cc, err := c.net.Client(ctx)
				require.NoError(t, err)
				defer cc.Close()
				old := c.leader("pay", 0)
				oldNode := c.nodes[old]
				var lostAt sync.Once
				client := &answerLosingClient{ClusterClient: cc, loseN: 3, lose: func() {
					lostAt.Do(func() { require.NoError(t, oldNode.Close()) })
				}}
				p, err := producer.New(client, producer.MaxInFlight(inFlight), producer.Linger(time.Millisecond),
					producer.BatchSize(256), producer.RetryBackoff(10*time.Millisecond))
				require.NoError(t, err)
				want := clusterValues(0, 400)
				var wg sync.WaitGroup
				var failed sync.Map
				for _, v := range want {
					wg.Add(1)
					p.Produce(ctx, &producer.Record{Topic: "pay", Value: []byte(v)}, func(_ *producer.Record, err error) {
						defer wg.Done()
						if err != nil {
							failed.Store(v, err)
						}
					})
				}
				wg.Wait()
				require.NoError(t, p.Close())
				failed.Range(func(k, v any) bool { t.Errorf("record %s failed: %v", k, v); return true })
				client.mu.Lock()
				require.GreaterOrEqual(t, client.calls, 3, "the third request's answer was lost")
				client.mu.Unlock()
				delete(c.nodes, old)
				require.NotEqual(t, old, c.leader("pay", 0), "the leadership moved")

				got := consumeCluster(t, cc, "pay", len(want))
				require.Equal(t, want, got[0], "every record once, in send order")
				// Nothing more is in the log than what was consumed.
				n := c.nodes[c.leader("pay", 0)]
				descs, err := n.DescribeTopics("pay")
				require.NoError(t, err)
				require.Equal(t, int64(len(want)), descs[0].Partitions[0].HighWatermark)
			})
		})
	}
}

// tcpCluster is a controller and nodes on loopback TCP, in one process.
type tcpCluster struct {
	t       testing.TB
	ctlDir  string
	ctlAddr string
	ctl     *partlog.Controller
	dirs    map[int32]string
	addrs   map[int32]string
	nodes   map[int32]*partlog.Node
	servers map[int32]*transport.Server
	// tls, when set, serves the nodes' and the controller's listeners
	// with mutual TLS, and the nodes reach each other and the controller
	// with it.
	tls *tlsWorld
	// users, when set, makes the listeners SASL ones, with the user
	// "node" (password "node-secret") for the nodes themselves.
	users *auth.Users
	// sessionTimeout is how long the controller waits for a node's
	// heartbeat before it fences the node; zero means 500ms.
	sessionTimeout time.Duration
}

func newTCPCluster(t testing.TB, ids ...int32) *tcpCluster {
	return newCluster(t, nil, ids...)
}

// newCluster starts a tcpCluster of nodes ids, with TLS from w unless it
// is nil.
func newCluster(t testing.TB, w *tlsWorld, ids ...int32) *tcpCluster {
	return newSecureCluster(t, w, nil, ids...)
}

// newSecureCluster starts a tcpCluster of nodes ids, with TLS from w
// unless it is nil, and SASL listeners with users unless it is nil.
func newSecureCluster(t testing.TB, w *tlsWorld, users *auth.Users, ids ...int32) *tcpCluster {
	return startTCPCluster(&tcpCluster{t: t, tls: w, users: users}, ids...)
}

// newSteadyTCPCluster is newTCPCluster with a controller that waits 3s
// for a node's heartbeat before fencing it, so that a loaded machine does
// not move leaderships under a test that needs them to stay; a halted
// node's leaderships move once those 3s have passed.
func newSteadyTCPCluster(t testing.TB) *tcpCluster {
	return startTCPCluster(&tcpCluster{t: t, sessionTimeout: 3 * time.Second})
}

// startTCPCluster starts c's controller, then nodes ids.
func startTCPCluster(c *tcpCluster, ids ...int32) *tcpCluster {
	t := c.t
	c.ctlDir, c.dirs, c.addrs = t.TempDir(), map[int32]string{}, map[int32]string{}
	c.nodes, c.servers = map[int32]*partlog.Node{}, map[int32]*transport.Server{}
	c.startController("127.0.0.1:0")
	t.Cleanup(func() {
		for id := range c.nodes {
			c.halt(id)
		}
		c.ctl.Close()
	})
	for _, id := range ids {
		c.dirs[id] = filepath.Join(t.TempDir(), strconv.Itoa(int(id)))
		c.start(id, "127.0.0.1:0")
	}
	return c
}

func (c *tcpCluster) startController(addr string) {
	c.t.Helper()
	opts := partlog.ControllerOptions{TickInterval: 10 * time.Millisecond, SessionTimeout: cmp.Or(c.sessionTimeout, 500*time.Millisecond), NoAutoLeaderRebalance: true}
	if w := c.tls; w != nil {
		opts.TLS = w.serverConfig()
	}
	ctl, err := partlog.OpenController(c.ctlDir, opts)
	require.NoError(c.t, err)
	ln, err := net.Listen("tcp", addr)
	require.NoError(c.t, err)
	go ctl.Serve(ln)
	c.ctl, c.ctlAddr = ctl, ln.Addr().String()
}

func (c *tcpCluster) start(id int32, addr string) {
	c.t.Helper()
	ln, err := net.Listen("tcp", addr)
	require.NoError(c.t, err)
	opts := []partlog.Option{partlog.NodeID(id), partlog.ControllerAddress(c.ctlAddr),
		partlog.AdvertisedAddress(ln.Addr().String()), partlog.HeartbeatInterval(20 * time.Millisecond), partlog.GroupInitialRebalanceDelay(0),
		partlog.ReplicaOptions(replica.Options{TickInterval: 10 * time.Millisecond, ReplicaLagTimeMax: 500 * time.Millisecond,
			FetchWaitMax: 50 * time.Millisecond, FetchBackoff: 20 * time.Millisecond, FetchTimeout: time.Second})}
	var serverOpts transport.ServerOptions
	if w := c.tls; w != nil {
		opts = append(opts, partlog.PeerTLS(w.client(w.ca, w.server)), partlog.ControllerTLS(w.client(w.ca, w.server)))
		serverOpts.TLS = w.serverConfig()
	}
	if c.users != nil {
		opts = append(opts, partlog.PeerSASL(transport.SASLCredentials{Mechanism: auth.MechanismScramSHA512, User: "node", Password: "node-secret"}))
		serverOpts.SASL = &transport.SASL{Credentials: c.users}
	}
	n, err := partlog.Open(c.dirs[id], opts...)
	require.NoError(c.t, err)
	if serverOpts.SASL != nil {
		// The static users first (the nodes' own), then those the
		// cluster's metadata holds.
		serverOpts.SASL.Credentials = auth.AnyOf(c.users, n.Credentials())
	}
	s := transport.NewServer(n.Client(), serverOpts)
	go s.Serve(ln)
	c.nodes[id], c.servers[id], c.addrs[id] = n, s, ln.Addr().String()
}

// halt stops node id as a crash would: its connections drop, and it does
// not tell the controller.
func (c *tcpCluster) halt(id int32) {
	c.servers[id].Close()
	partlogtest.Halt(c.nodes[id])
	delete(c.nodes, id)
	delete(c.servers, id)
}

func (c *tcpCluster) waitFor(what string, cond func(controller.ClusterState) bool) {
	c.t.Helper()
	waitForMetadata(c.t, c.ctl, what, cond)
}

// TestClusterOverTCP runs a cluster on loopback: the controller restarts
// and resumes from its log; a leader crashes (no controlled shutdown) and
// is fenced after the session timeout; the producer follows the new
// leader; every acknowledged record is consumed exactly once, in order;
// the crashed node restarts at its address and rejoins the ISR.
func TestClusterOverTCP(t *testing.T) {
	c := newTCPCluster(t, 1, 2, 3)
	ctx := context.Background()
	require.NoError(t, c.nodes[2].CreateTopic(ctx, partlog.NewTopic{Name: "events", Partitions: 3, ReplicationFactor: 3,
		Configs: map[string]string{"min.insync.replicas": "2"}}))
	client, err := transport.DialCluster(ctx, []string{c.addrs[1], c.addrs[2], c.addrs[3]}, transport.DialOptions{})
	require.NoError(t, err)
	defer client.Close()
	acked := produceValues(t, client, "events", clusterValues(0, 300))

	// The controller restarts on its address: it replays its log, and the
	// nodes carry on in the broker epochs they had.
	before := c.ctl.State()
	require.NoError(t, c.ctl.Close())
	c.startController(c.ctlAddr)
	require.Equal(t, before.Topics, c.ctl.State().Topics, "the restarted controller resumes the metadata")

	leader := c.ctl.State().Topics["events"].Partitions[0].Leader
	c.halt(leader)
	c.waitFor("a new leader of events-0 after the session timeout", func(s controller.ClusterState) bool {
		l := s.Topics["events"].Partitions[0].Leader
		return l != leader && l != replica.NoLeader
	})
	more := produceValues(t, client, "events", clusterValues(300, 600))
	for p, vs := range more {
		acked[p] = append(acked[p], vs...)
	}
	got := consumeCluster(t, client, "events", 600)
	require.Equal(t, acked, got, "every acknowledged record once, in offset order")

	c.start(leader, c.addrs[leader])
	c.waitFor("the full ISR", func(s controller.ClusterState) bool {
		for _, p := range s.Topics["events"].Partitions {
			if len(p.ISR) != 3 {
				return false
			}
		}
		return true
	})
}

// TestClusterOverTCPAnswerBuffers: over TCP a leader reads its answers to
// followers' fetches into pooled buffers, which go back once written to
// the follower's connection. With the pool overwriting every buffer given
// back (bufpool.Poison), each replica still ends up with the leader's
// batches byte for byte, and a consumer reads every acknowledged record:
// a buffer given back while its bytes were still to be sent would reach a
// follower as 0xAA and fail its CRC there.
func TestClusterOverTCPAnswerBuffers(t *testing.T) {
	defer bufpool.Poison(bufpool.Poison(true))
	c := newTCPCluster(t, 1, 2, 3)
	ctx := context.Background()
	require.NoError(t, c.nodes[1].CreateTopic(ctx, partlog.NewTopic{Name: "pooled", ReplicationFactor: 3,
		Configs: map[string]string{"min.insync.replicas": "3"}}))
	client, err := transport.DialCluster(ctx, []string{c.addrs[1], c.addrs[2], c.addrs[3]}, transport.DialOptions{})
	require.NoError(t, err)
	defer client.Close()
	// 4 MiB in batches of up to 256 KiB: fetch answers of many sizes.
	// Every replica then holds the leader's batches, byte for byte.
	var values []string
	for i := range 4096 {
		values = append(values, fmt.Sprintf("%06d-%s", i, strings.Repeat(string(rune('a'+i%26)), 1017)))
	}
	p, err := producer.New(client, producer.Linger(2*time.Millisecond), producer.BatchSize(256<<10), producer.RequestTimeout(10*time.Second), producer.DeliveryTimeout(30*time.Second))
	require.NoError(t, err)
	defer p.Close()
	var recs []*producer.Record
	for _, v := range values {
		recs = append(recs, &producer.Record{Topic: "pooled", Value: []byte(v)})
	}
	require.NoError(t, p.ProduceSync(ctx, recs...).FirstErr(), "acks=all with every replica in sync")
	got := consumeCluster(t, client, "pooled", len(values))
	require.Equal(t, values, got[0], "every acknowledged record once, in order")

	requireIdenticalReplicas(t, c, "pooled", len(values))
}

// requireIdenticalReplicas checks that partition 0 of topic holds the same
// batches, byte for byte, on nodes 1 to 3 of c, with records records.
func requireIdenticalReplicas(t *testing.T, c *tcpCluster, topic string, records int) {
	t.Helper()
	var logs [][]byte
	counted := 0
	for id := int32(1); id <= 3; id++ {
		l, err := partlogtest.Log(c.nodes[id], topic, 0)
		require.NoError(t, err)
		var all []byte
		eachStoredBatch(t, l, func(h record.Header, stored []byte) {
			all = append(all, stored...)
			if id == 1 {
				counted += int(h.NumRecords)
			}
		})
		logs = append(logs, all)
	}
	require.Equal(t, records, counted)
	require.True(t, bytes.Equal(logs[0], logs[1]) && bytes.Equal(logs[0], logs[2]), "the replicas' logs differ")
}

// TestClusterDeleteTopic deletes a replicated topic: every node removes its
// replicas, a node that was down at the time removes its own when it
// comes back, and the name can be used again.
func TestClusterDeleteTopic(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newTestCluster(t, 1, 2, 3)
		ctx := context.Background()
		require.NoError(t, c.nodes[1].CreateTopic(ctx, partlog.NewTopic{Name: "gone", Partitions: 2, ReplicationFactor: 3}))
		client, err := c.net.Client(ctx)
		require.NoError(t, err)
		defer client.Close()
		produceValues(t, client, "gone", clusterValues(0, 50))
		c.stop(3)
		require.NoError(t, c.nodes[2].DeleteTopic(ctx, "gone"))
		for _, id := range []int32{1, 2} {
			require.NoError(t, partlogtest.SyncMetadata(ctx, c.nodes[id]))
			require.NotContains(t, c.nodes[id].ListTopics(), "gone")
			for p := range int32(2) {
				require.NoDirExists(t, filepath.Join(c.dirs[id], fmt.Sprintf("gone-%d", p)))
			}
		}
		require.DirExists(t, filepath.Join(c.dirs[3], "gone-0"), "node 3 was down")
		c.start(3)
		for p := range int32(2) {
			require.NoDirExists(t, filepath.Join(c.dirs[3], fmt.Sprintf("gone-%d", p)), "node 3 removes the deleted topic's replicas as it starts")
		}
		_, err = partlogtest.Log(c.nodes[1], "gone", 0)
		require.ErrorIs(t, err, kafka.ErrUnknownTopicOrPartition)

		require.NoError(t, c.nodes[3].CreateTopic(ctx, partlog.NewTopic{Name: "gone", ReplicationFactor: 3}))
		acked := produceValues(t, client, "gone", clusterValues(0, 10))
		require.Equal(t, clusterValues(0, 10), acked[0], "a new topic of the same name starts empty")

		// Deleted and created again while a node is down (halted, its session
		// not yet timed out, so the controller still places replicas on it):
		// the node's old replica must not pass for the new topic's.
		require.NoError(t, partlogtest.Halt(c.nodes[1]))
		delete(c.nodes, 1)
		require.NoError(t, c.nodes[2].DeleteTopic(ctx, "gone"))
		require.NoError(t, c.nodes[2].CreateTopic(ctx, partlog.NewTopic{Name: "gone", ReplicationFactor: 3}))
		acked = produceValues(t, client, "gone", clusterValues(100, 103))
		c.start(1)
		c.waitFor("node 1 back in the ISR", func(s controller.ClusterState) bool {
			return len(s.Topics["gone"].Partitions[0].ISR) == 3
		})
		require.Equal(t, batchCRCs(t, c.nodes[2], "gone", 0), batchCRCs(t, c.nodes[1], "gone", 0))
		require.Equal(t, clusterValues(100, 103), acked[0])
	})
}
