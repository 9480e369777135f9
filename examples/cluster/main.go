// Cluster is Kafka's replication in one program: a controller and three
// nodes (brokers) in one process, talking over an in-memory network. It
// creates topic "orders" with one partition, replication factor 3 and
// min.insync.replicas=2, and an idempotent producer writes to it with
// acks=all while a consumer reads it. Then the partition's leader goes
// away: the controller elects a new leader from the in-sync replicas
// (ISR), the ISR shrinks to two, and the producer and the consumer carry
// on at the new leader. The old leader comes back from its data directory,
// catches up and rejoins the ISR. At the end every acknowledged record
// must have been consumed exactly once, at the offset it was acknowledged
// with; the program exits non-zero if not. It prints each step.
//
//	go run ./examples/cluster [-dir DIR] [-crash]
//
// The leader shuts down cleanly (Close, Kafka's controlled shutdown), or
// with -crash stops as a crash would (Halt): the controller then notices
// only when its heartbeats have stopped for the session timeout.
//
// The directory is emptied first: the default one lives under the OS's
// temporary directory, and a directory of your own must hold only what
// this program puts there (or nothing) to be used.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/partlog/partlog"
	"github.com/partlog/partlog/consumer"
	"github.com/partlog/partlog/controller"
	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/partlogtest"
	"github.com/partlog/partlog/producer"
	"github.com/partlog/partlog/replica"
	"github.com/partlog/partlog/transport"
)

func main() {
	dir := flag.String("dir", filepath.Join(os.TempDir(), "partlog-cluster"), "data directory (emptied first)")
	crash := flag.Bool("crash", false, "stop the leader as a crash would, without a controlled shutdown")
	flag.Parse()
	stop := controlledShutdown
	if *crash {
		stop = crashed
	}
	if err := run(context.Background(), *dir, stop, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "cluster:", err)
		os.Exit(1)
	}
}

const (
	topic             = "orders"
	nodes             = 3
	minInsyncReplicas = 2
)

// The timings are much shorter than Kafka's defaults so that the whole
// run takes a few seconds: nodes heartbeat every 50 ms (Kafka: 2 s), the
// controller fences a node that has been silent for 1 s
// (broker.session.timeout.ms, Kafka: 9 s), and replicas tick every 10 ms
// and drop a follower from the ISR after 500 ms behind
// (replica.lag.time.max.ms, Kafka: 30 s).
var (
	controllerTiming = partlog.ControllerOptions{
		TickInterval:   10 * time.Millisecond,
		SessionTimeout: time.Second,
		// Kafka moves leadership back to each partition's preferred
		// replica at its leader imbalance check, every 300 s by default;
		// off here, so that the leader stays where the failover put it.
		NoAutoLeaderRebalance: true,
	}
	heartbeat     = 50 * time.Millisecond
	replicaTiming = replica.Options{
		TickInterval:      10 * time.Millisecond,
		ReplicaLagTimeMax: 500 * time.Millisecond,
		FetchWaitMax:      50 * time.Millisecond, // replica.fetch.wait.max.ms, Kafka: 500 ms
		FetchBackoff:      20 * time.Millisecond, // replica.fetch.backoff.ms, Kafka: 1 s
		FetchTimeout:      time.Second,           // replica.socket.timeout.ms, Kafka: 30 s
	}
	waitAtMost     = 20 * time.Second // for any one step; a step normally takes milliseconds
	producerWindow = 32               // records awaiting acknowledgement at once
)

// leaderStop is how the leader goes away.
type leaderStop int

const (
	// controlledShutdown closes the leader (Node.Close): it asks the
	// controller to move its leadership first.
	controlledShutdown leaderStop = iota
	// crashed halts the leader (partlogtest.Halt): it stops without a word to
	// the controller, as a crash would, though it still closes its files
	// cleanly (after a real crash it would recover its log when opened).
	crashed
)

// cluster is the controller and the nodes, with each node's directory so
// that a node can be opened again.
type cluster struct {
	out   io.Writer
	ctl   *partlog.Controller
	net   *partlog.MemNetwork
	dirs  map[int32]string
	nodes map[int32]*partlog.Node // the nodes up
}

func run(ctx context.Context, dir string, stop leaderStop, out io.Writer) (err error) {
	if err := emptyDataDir(dir); err != nil {
		return err
	}
	say := func(format string, args ...any) { fmt.Fprintf(out, format+"\n", args...) }
	say("data directory: %s", dir)
	say("  controller/            the controller's metadata log (KRaft's __cluster_metadata)")
	say("  node-1/ node-2/ node-3/  one data directory per node, as each Kafka broker has its own")

	// 1. The controller and three nodes.
	say("\n1. A controller and %d nodes start, in this one process.", nodes)
	ctl, err := partlog.OpenController(filepath.Join(dir, "controller"), controllerTiming)
	if err != nil {
		return err
	}
	c := &cluster{out: out, ctl: ctl, net: partlog.NewMemNetwork(), dirs: map[int32]string{}, nodes: map[int32]*partlog.Node{}}
	defer func() {
		for _, id := range slices.Sorted(maps.Keys(c.nodes)) {
			if cerr := c.nodes[id].Close(); err == nil {
				err = cerr
			}
		}
		if cerr := ctl.Close(); err == nil {
			err = cerr
		}
	}()
	for id := int32(1); id <= nodes; id++ {
		c.dirs[id] = filepath.Join(dir, fmt.Sprintf("node-%d", id))
		if _, err := c.start(id); err != nil {
			return err
		}
	}
	say("   Each node registered with the controller, which gave it a broker epoch, and")
	say("   heartbeats every %v; a node silent for %v is fenced (broker.session.timeout.ms).", heartbeat, controllerTiming.SessionTimeout)
	say("   Replica messages (followers' fetches and the leaders' answers) go over an")
	say("   in-memory network; over TCP it would be the same messages.")

	// 2. The topic.
	say("\n2. Create topic %q: 1 partition, replication factor %d, min.insync.replicas=%d.", topic, nodes, minInsyncReplicas)
	err = c.nodes[1].CreateTopic(ctx, partlog.NewTopic{Name: topic, Partitions: 1, ReplicationFactor: nodes,
		Configs: map[string]string{"min.insync.replicas": strconv.Itoa(minInsyncReplicas)}})
	if err != nil {
		return err
	}
	s, err := c.waitFor(ctx, "the partition to have a leader and a full ISR", func(s replica.LeaderAndISR) bool {
		return s.Leader != replica.NoLeader && len(s.ISR) == nodes
	})
	if err != nil {
		return err
	}
	first := s.Leader
	say("   %s", describe(s))
	say("   The controller placed a replica on every node; the first replica listed is the")
	say("   preferred leader. The leader takes all writes and reads; the followers fetch from it.")
	say("   The ISR is the replicas caught up with the leader: an acks=all write is acknowledged")
	say("   once every ISR member has it, and only while the ISR has at least min.insync.replicas.")

	// The clients: they learn from the nodes' metadata which node leads
	// the partition, and follow the leader when it moves.
	client, err := c.net.Client(ctx)
	if err != nil {
		return err
	}
	defer client.Close()
	p, err := producer.New(client, producer.Acks(kafka.AcksAll), producer.Idempotent(true),
		producer.Linger(time.Millisecond), producer.RetryBackoff(20*time.Millisecond))
	if err != nil {
		return err
	}
	defer p.Close()
	cons, err := startConsumer(client)
	if err != nil {
		return err
	}
	defer cons.stop()
	prod := &ackLog{offsets: map[string]int64{}, progress: make(chan struct{}, 1)}

	// 3. Produce while everything is up.
	say("\n3. An idempotent producer sends 200 records with acks=all; a consumer reads from offset 0.")
	if err := prod.sync(ctx, p, 0, 200); err != nil {
		return err
	}
	say("   acknowledged: offsets %s", prod.summary())
	if err := cons.await(ctx, 200); err != nil {
		return err
	}
	say("   consumed so far: %s", cons.summary())
	if err := c.awaitReplicas(ctx, 200); err != nil {
		return err
	}
	if err := c.printReplicas("replicas:"); err != nil {
		return err
	}

	// 4. The leader goes away while the producer keeps sending.
	how := "shuts down"
	if stop == crashed {
		how = "crashes"
	}
	say("\n4. The producer keeps sending, up to %d records in flight; node %d, the leader, %s.", producerWindow, first, how)
	bg := prod.background(ctx, p, 200)
	if err := prod.awaitAcked(ctx, 400); err != nil {
		return errors.Join(err, bg.stop())
	}
	// A follower that fell behind for ReplicaLagTimeMax (a machine under
	// load) left the ISR; it is back once it caught up.
	before, err := c.waitFor(ctx, "a full ISR", func(s replica.LeaderAndISR) bool { return len(s.ISR) == nodes })
	if err != nil {
		return errors.Join(err, bg.stop())
	}
	say("   %d records acknowledged so far; node %d %s now.", prod.count(), first, how)
	down := time.Now()
	if err := c.stop(first, stop); err != nil {
		return errors.Join(err, bg.stop())
	}
	s, err = c.waitFor(ctx, "a new leader", func(s replica.LeaderAndISR) bool {
		return s.Leader != replica.NoLeader && s.Leader != first && !slices.Contains(s.ISR, first)
	})
	if err != nil {
		return errors.Join(err, bg.stop())
	}
	elected := time.Since(down)
	say("   before: %s", describe(before))
	say("   after:  %s  (%v later)", describe(s), elected.Round(time.Millisecond))
	if stop == controlledShutdown {
		say("   Closing a node is a controlled shutdown: the node tells the controller, which moves")
		say("   leadership to another ISR member at once and takes the node out of the ISR. A crash")
		say("   (kill -9, power loss; try -crash) is handled the same way, only later: the controller")
		say("   fences the node once its heartbeats have stopped for the session timeout (%v here).", controllerTiming.SessionTimeout)
	} else {
		say("   A crashed node tells nobody. The controller fenced it once its heartbeats had stopped")
		say("   for the session timeout (%v here, broker.session.timeout.ms), then moved leadership", controllerTiming.SessionTimeout)
		say("   to another ISR member and took the node out of the ISR. Meanwhile writes waited: the")
		say("   producer retried them until the new leader took them. Without -crash the node shuts")
		say("   down cleanly and leadership moves at once.")
	}
	say("   The new leader was in the ISR, so it holds every acknowledged record. Its leader epoch")
	say("   is %d: the clients find node %d gone (a leader still up would refuse them with", s.LeaderEpoch, first)
	say("   NOT_LEADER_OR_FOLLOWER), ask for the metadata again and follow the new leader.")
	if len(s.ISR) >= minInsyncReplicas {
		say("   ISR %v has %d members, still at least min.insync.replicas=%d, so acks=all goes on;", s.ISR, len(s.ISR), minInsyncReplicas)
		say("   with one more node down the leader would refuse writes with NOT_ENOUGH_REPLICAS")
		say("   rather than acknowledge records that only one replica holds.")
	} else {
		say("   ISR %v has fewer than min.insync.replicas=%d members (a follower fell behind), so", s.ISR, minInsyncReplicas)
		say("   the leader refuses acks=all writes with NOT_ENOUGH_REPLICAS, which the producer")
		say("   retries, until the follower catches up and rejoins the ISR.")
	}

	ackedAtFailover := prod.count()
	if err := prod.awaitAcked(ctx, ackedAtFailover+300); err != nil {
		return errors.Join(err, bg.stop())
	}
	if err := bg.stop(); err != nil {
		return err
	}
	say("   The producer sent what was in flight when node %d went away again, to the new leader.", first)
	say("   Idempotence (a producer id and sequence numbers) lets a leader drop a retry of a batch")
	say("   it already has, so a retry writes nothing twice.")
	say("   acknowledged: offsets %s; the longest wait for an acknowledgement was %v", prod.summary(), prod.longestGap().Round(time.Millisecond))
	if err := cons.await(ctx, prod.count()); err != nil {
		return err
	}
	say("   consumed so far: %s", cons.summary())
	if err := c.printReplicas("replicas:"); err != nil {
		return err
	}

	// 5. The old leader comes back.
	say("\n5. Node %d starts again from its data directory.", first)
	back := time.Now()
	if _, err := c.start(first); err != nil {
		return err
	}
	if err := c.printReplicas("replicas just after it opens:"); err != nil {
		return err
	}
	s, err = c.waitFor(ctx, fmt.Sprintf("node %d to rejoin the ISR", first), func(s replica.LeaderAndISR) bool {
		return slices.Contains(s.ISR, first)
	})
	if err != nil {
		return err
	}
	say("   %s  (%v after the restart began)", describe(s), time.Since(back).Round(time.Millisecond))
	if err := c.printReplicas("replicas once it is back in the ISR:"); err != nil {
		return err
	}
	say("   Node %d opened its log where it left off, with the high watermark it had written to", first)
	say("   replication-offset-checkpoint when it stopped. It registered in a new broker epoch and")
	say("   came back as a follower of node %d, behind by what was written without it. It asked the", s.Leader)
	say("   leader where leader epoch %d, its last, ends in the leader's log (OffsetsForLeaderEpoch,", before.LeaderEpoch)
	say("   KIP-101): at offset %d, where epoch %d begins. Had its own log gone further, with records", cons.epochStart(s.LeaderEpoch), s.LeaderEpoch)
	say("   it appended as leader that the new leader never got, it would have truncated them:")
	say("   they were never acknowledged (acks=all waits for every ISR member), and the producer")
	say("   sent them again. Then it fetched what it missed and, once caught up with the")
	say("   leader's log end, the leader asked the controller to add it back to the ISR.")
	say("   It stays a follower: leadership would move back only with a preferred leader election.")

	say("\n6. The producer sends 200 more records; the ISR has 3 members again, so each")
	say("   acknowledgement waits for all three.")
	if err := prod.sync(ctx, p, prod.count(), prod.count()+200); err != nil {
		return err
	}
	say("   acknowledged: offsets %s", prod.summary())
	total := prod.count()
	if err := c.awaitReplicas(ctx, int64(total)); err != nil {
		return err
	}
	if err := c.printReplicas("replicas, every one caught up:"); err != nil {
		return err
	}
	say("   LEO is the log end offset: where a replica's next record goes. HW is the high")
	say("   watermark: the offset below which every ISR member has the records, and so the end")
	say("   of what consumers may read. Followers learn the HW from the leader's fetch answers.")
	if err := cons.await(ctx, total); err != nil {
		return err
	}

	// 7. The check.
	say("\n7. Every acknowledged record, consumed exactly once?")
	if err := p.Close(); err != nil {
		return err
	}
	if err := cons.stop(); err != nil {
		return err
	}
	if err := verify(prod, cons); err != nil {
		return err
	}
	say("   yes: %d records acknowledged, each consumed once at its acknowledged offset,", total)
	say("   %s", cons.summaryByEpoch())
	return nil
}

// start opens node id, from its directory if it ran before.
func (c *cluster) start(id int32) (*partlog.Node, error) {
	n, err := partlog.Open(c.dirs[id], partlog.NodeID(id), partlog.JoinCluster(c.ctl, c.net),
		partlog.HeartbeatInterval(heartbeat), partlog.ReplicaOptions(replicaTiming))
	if err != nil {
		return nil, err
	}
	c.nodes[id] = n
	return n, nil
}

// stop closes or halts node id.
func (c *cluster) stop(id int32, how leaderStop) error {
	n := c.nodes[id]
	delete(c.nodes, id)
	if how == crashed {
		return partlogtest.Halt(n)
	}
	return n.Close()
}

// waitFor waits until the controller's state of the partition satisfies
// cond, and returns it.
func (c *cluster) waitFor(ctx context.Context, what string, cond func(replica.LeaderAndISR) bool) (replica.LeaderAndISR, error) {
	ctx, cancel := context.WithTimeout(ctx, waitAtMost)
	defer cancel()
	var last replica.LeaderAndISR
	err := c.ctl.WaitFor(ctx, func(cs controller.ClusterState) bool {
		t, ok := cs.Topics[topic]
		if !ok || len(t.Partitions) == 0 {
			return false
		}
		last = t.Partitions[0]
		return cond(last)
	})
	if err != nil {
		return last, fmt.Errorf("waiting for %s: %w (last seen: %s)", what, err, describe(last))
	}
	return last, nil
}

// describe prints a partition's state as the controller has it.
func describe(s replica.LeaderAndISR) string {
	return fmt.Sprintf("%s-0: leader node %d, leader epoch %d, replicas %v, ISR %v", topic, s.Leader, s.LeaderEpoch, s.Replicas, s.ISR)
}

// replicaState is one node's replica of the partition.
type replicaState struct {
	id      int32
	up      bool
	leader  bool
	leo, hw int64
}

// replicas returns each node's replica as the node itself sees it.
func (c *cluster) replicas() ([]replicaState, error) {
	var rs []replicaState
	for id := int32(1); id <= nodes; id++ {
		n := c.nodes[id]
		if n == nil {
			rs = append(rs, replicaState{id: id})
			continue
		}
		d, err := n.DescribeTopics(topic)
		if err != nil {
			return nil, err
		}
		pd := d[0].Partitions[0]
		rs = append(rs, replicaState{id: id, up: true, leader: pd.Leader == id, leo: pd.LogEndOffset, hw: pd.HighWatermark})
	}
	return rs, nil
}

func (c *cluster) printReplicas(title string) error {
	rs, err := c.replicas()
	if err != nil {
		return err
	}
	fmt.Fprintf(c.out, "   %s\n", title)
	for _, r := range rs {
		switch {
		case !r.up:
			fmt.Fprintf(c.out, "     node %d: down\n", r.id)
		default:
			role := "follower"
			if r.leader {
				role = "leader"
			}
			fmt.Fprintf(c.out, "     node %d: %-8s LEO %5d  HW %5d\n", r.id, role, r.leo, r.hw)
		}
	}
	return nil
}

// awaitReplicas waits until every replica has end records and knows that
// they are all committed. A node tells nobody when a follower's high
// watermark moves, so this looks every 10 ms; it takes a fetch round or
// two.
func (c *cluster) awaitReplicas(ctx context.Context, end int64) error {
	ctx, cancel := context.WithTimeout(ctx, waitAtMost)
	defer cancel()
	t := time.NewTicker(10 * time.Millisecond)
	defer t.Stop()
	for {
		rs, err := c.replicas()
		if err != nil {
			return err
		}
		if !slices.ContainsFunc(rs, func(r replicaState) bool { return r.leo != end || r.hw != end }) {
			return nil
		}
		select {
		case <-t.C:
		case <-ctx.Done():
			return fmt.Errorf("the replicas did not all reach LEO = HW = %d: %+v", end, rs)
		}
	}
}

// ackLog is what the producer had acknowledged: each record's offset, by
// value ("order-17").
type ackLog struct {
	mu       sync.Mutex
	offsets  map[string]int64
	failed   []error
	lastAck  time.Time
	gap      time.Duration // the longest time between two acknowledgements
	progress chan struct{}
}

func value(i int) string { return "order-" + strconv.Itoa(i) }

// ack is the promise of every record.
func (a *ackLog) ack(r *producer.Record, err error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if err != nil {
		a.failed = append(a.failed, fmt.Errorf("%s: %w", r.Value, err))
		return
	}
	now := time.Now()
	if !a.lastAck.IsZero() {
		a.gap = max(a.gap, now.Sub(a.lastAck))
	}
	a.lastAck = now
	a.offsets[string(r.Value)] = r.Offset
	select {
	case a.progress <- struct{}{}:
	default:
	}
}

func (a *ackLog) count() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.offsets)
}

func (a *ackLog) longestGap() time.Duration {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.gap
}

func (a *ackLog) err() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.failed) > 0 {
		return fmt.Errorf("%d records failed, first %w", len(a.failed), a.failed[0])
	}
	return nil
}

// summary gives the range of offsets acknowledged.
func (a *ackLog) summary() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return offsetRange(slices.Collect(maps.Values(a.offsets)))
}

// sync produces records from to to-1 and waits for them.
func (a *ackLog) sync(ctx context.Context, p *producer.Producer, from, to int) error {
	var wg sync.WaitGroup
	for i := from; i < to; i++ {
		wg.Add(1)
		p.Produce(ctx, &producer.Record{Topic: topic, Value: []byte(value(i))}, func(r *producer.Record, err error) {
			defer wg.Done()
			a.ack(r, err)
		})
	}
	wg.Wait()
	return a.err()
}

// awaitAcked waits until n records have been acknowledged.
func (a *ackLog) awaitAcked(ctx context.Context, n int) error {
	ctx, cancel := context.WithTimeout(ctx, waitAtMost)
	defer cancel()
	for a.count() < n {
		if err := a.err(); err != nil {
			return err
		}
		select {
		case <-a.progress:
		case <-ctx.Done():
			return fmt.Errorf("%d records acknowledged, waiting for %d: %w", a.count(), n, ctx.Err())
		}
	}
	return nil
}

// backgroundProducer produces records one after another, with up to
// producerWindow unacknowledged at once, until stop.
type backgroundProducer struct {
	quit chan struct{}
	done chan struct{}
	a    *ackLog
}

func (a *ackLog) background(ctx context.Context, p *producer.Producer, from int) *backgroundProducer {
	b := &backgroundProducer{quit: make(chan struct{}), done: make(chan struct{}), a: a}
	go func() {
		defer close(b.done)
		var wg sync.WaitGroup
		defer wg.Wait()
		window := make(chan struct{}, producerWindow)
		for i := from; ; i++ {
			select {
			case window <- struct{}{}:
			case <-b.quit:
				return
			}
			wg.Add(1)
			p.Produce(ctx, &producer.Record{Topic: topic, Value: []byte(value(i))}, func(r *producer.Record, err error) {
				defer wg.Done()
				a.ack(r, err)
				<-window
			})
		}
	}()
	return b
}

// stop stops producing and waits for every record sent to be
// acknowledged (or to fail).
func (b *backgroundProducer) stop() error {
	close(b.quit)
	<-b.done
	return b.a.err()
}

// readConsumer reads the partition from offset 0 on a goroutine of its
// own, as an application does, and keeps every record it gets.
type readConsumer struct {
	c      *consumer.Consumer
	cancel context.CancelFunc
	done   chan error

	mu       sync.Mutex
	records  []consumer.Record
	progress chan struct{}
}

func startConsumer(client transport.Client) (*readConsumer, error) {
	c, err := consumer.New(client, consumer.Topics(topic), consumer.AutoOffsetReset(consumer.Earliest),
		consumer.FetchMaxWait(50*time.Millisecond), consumer.RetryBackoff(20*time.Millisecond))
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	rc := &readConsumer{c: c, cancel: cancel, done: make(chan error, 1), progress: make(chan struct{}, 1)}
	go func() {
		for rec, err := range c.Records(ctx) {
			if err != nil {
				if ctx.Err() == nil {
					rc.done <- err
				}
				break
			}
			rc.mu.Lock()
			rc.records = append(rc.records, rec)
			rc.mu.Unlock()
			select {
			case rc.progress <- struct{}{}:
			default:
			}
		}
		close(rc.done)
	}()
	return rc, nil
}

// stop stops reading and closes the consumer.
func (rc *readConsumer) stop() error {
	if rc.cancel == nil {
		return nil
	}
	rc.cancel()
	rc.cancel = nil
	err := <-rc.done // nil once closed
	return errors.Join(err, rc.c.Close())
}

func (rc *readConsumer) count() int {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return len(rc.records)
}

// await waits until n records have been consumed.
func (rc *readConsumer) await(ctx context.Context, n int) error {
	ctx, cancel := context.WithTimeout(ctx, waitAtMost)
	defer cancel()
	for rc.count() < n {
		select {
		case <-rc.progress:
		case err := <-rc.done:
			return fmt.Errorf("the consumer stopped after %d records: %w", rc.count(), err)
		case <-ctx.Done():
			return fmt.Errorf("%d records consumed, waiting for %d: %w", rc.count(), n, ctx.Err())
		}
	}
	return nil
}

func (rc *readConsumer) summary() string {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	offs := make([]int64, len(rc.records))
	for i, r := range rc.records {
		offs[i] = r.Offset
	}
	return offsetRange(offs)
}

// epochStart returns the offset of the first record consumed that leader
// epoch wrote, or -1.
func (rc *readConsumer) epochStart(epoch int32) int64 {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	for _, r := range rc.records {
		if r.LeaderEpoch == epoch {
			return r.Offset
		}
	}
	return -1
}

// summaryByEpoch says which leader epoch wrote which offsets.
func (rc *readConsumer) summaryByEpoch() string {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	var parts []string
	for i := 0; i < len(rc.records); {
		j := i
		for j < len(rc.records) && rc.records[j].LeaderEpoch == rc.records[i].LeaderEpoch {
			j++
		}
		parts = append(parts, fmt.Sprintf("offsets %d..%d written in leader epoch %d", rc.records[i].Offset, rc.records[j-1].Offset, rc.records[i].LeaderEpoch))
		i = j
	}
	return strings.Join(parts, ", ")
}

// verify checks that every acknowledged record was consumed exactly once,
// at the offset it was acknowledged with, and that nothing else was.
func verify(a *ackLog, rc *readConsumer) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	rc.mu.Lock()
	defer rc.mu.Unlock()
	seen := map[string]int64{}
	var problems []string
	for i, r := range rc.records {
		v := string(r.Value)
		if r.Offset != int64(i) {
			problems = append(problems, fmt.Sprintf("record %d consumed at offset %d: offsets skip or repeat", i, r.Offset))
		}
		if prev, dup := seen[v]; dup {
			problems = append(problems, fmt.Sprintf("%s consumed twice, at offsets %d and %d", v, prev, r.Offset))
		}
		seen[v] = r.Offset
		if off, ok := a.offsets[v]; !ok {
			problems = append(problems, fmt.Sprintf("%s consumed at offset %d but never acknowledged", v, r.Offset))
		} else if off != r.Offset {
			problems = append(problems, fmt.Sprintf("%s acknowledged at offset %d but consumed at %d", v, off, r.Offset))
		}
	}
	for _, v := range slices.Sorted(maps.Keys(a.offsets)) {
		if _, ok := seen[v]; !ok {
			problems = append(problems, fmt.Sprintf("%s acknowledged at offset %d but never consumed", v, a.offsets[v]))
		}
	}
	if len(problems) > 0 {
		if len(problems) > 10 {
			problems = append(problems[:10], fmt.Sprintf("and %d more", len(problems)-10))
		}
		return fmt.Errorf("acknowledged records lost or duplicated:\n  %s", strings.Join(problems, "\n  "))
	}
	return nil
}

// offsetRange prints offsets as "0..199 (200 records)", and says so when
// they are not one contiguous run.
func offsetRange(offs []int64) string {
	if len(offs) == 0 {
		return "none"
	}
	slices.Sort(offs)
	lo, hi := offs[0], offs[len(offs)-1]
	s := fmt.Sprintf("%d..%d (%d records)", lo, hi, len(offs))
	if hi-lo+1 != int64(len(offs)) {
		s += ", NOT contiguous"
	}
	return s
}

// emptyDataDir removes dir if it holds nothing but what this program puts
// there: the controller's and the nodes' directories.
func emptyDataDir(dir string) error {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, e := range entries {
		name := e.Name()
		ours := name == "controller"
		if strings.HasPrefix(name, "node-") {
			_, err := os.Stat(filepath.Join(dir, name, partlog.MetaPropertiesFileName))
			ours = err == nil
		}
		if !ours || !e.IsDir() {
			return fmt.Errorf("%s holds %s, which this program did not make; give an empty directory", dir, name)
		}
	}
	return os.RemoveAll(dir)
}
