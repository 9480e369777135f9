package replicatest

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/partlog/partlog/controller"
	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/log"
	"github.com/partlog/partlog/record"
	"github.com/partlog/partlog/replica"
	"github.com/partlog/partlog/vfs"
)

// Config describes a Cluster.
type Config struct {
	// Seed drives the network and crash choices.
	Seed int64
	// Replicas is the partition's assignment, preferred leader first.
	Replicas []int32
	// Options configure every replica.
	Options replica.Options
	// Unclean is the partition's unclean.leader.election.enable.
	Unclean controller.Unclean
	// NoSync makes the driver skip the sync a Ready asks for, as a node
	// relying on replication alone does: a crash then loses what was not
	// synced in the background.
	NoSync bool
	// SegmentBytes is the logs' segment.bytes. Zero means 16 KiB, so that
	// runs roll segments.
	SegmentBytes int64
	// TruncateToHighWatermark, when not nil, rewrites every replica's
	// Options to the protocol before KIP-101 (truncate to the local high
	// watermark). The replica package's tests supply it, to show their
	// checks catch the data loss it causes; the cluster then leaves the
	// lineage checks to the test.
	TruncateToHighWatermark func(replica.Options) replica.Options
	// AlterPartitionDelay is how many ticks a leader's ISR change takes to
	// reach the controller; zero sends it at once.
	AlterPartitionDelay int64
	// IgnoreBrokerEpochs makes the cluster replace, in each ISR change, the
	// broker epochs the leader saw its new members fetch with by the ones
	// the controller holds now, so that the controller commits an expansion
	// whatever incarnation the leader saw — the bug KIP-903 fixed, for
	// tests to show it.
	IgnoreBrokerEpochs bool
	// Controller configures the cluster's controller.Machine. A zero
	// SessionTimeout means 3 ticks, to keep runs short; a zero
	// LeaderImbalanceCheckInterval turns automatic preferred-leader
	// elections off (NoAutoLeaderRebalance), as tests choose leaders.
	Controller controller.Options
	// Quorum, when not zero, runs the cluster's controller as a Raft quorum
	// of that many controller.Members (Cluster.Quorum) rather than one
	// Machine: brokers call the active controller and apply committed
	// metadata only. Its zero SessionTimeout is then 20 ticks, its
	// ElectionTimeout 5 and its SnapshotEntries 30.
	Quorum int
	// QuorumActBeforeCommit makes the quorum's members acknowledge changes
	// before they commit: the negative control of quorum simulations.
	QuorumActBeforeCommit bool
	// Trace, when not nil, is told each step of the run: elections,
	// crashes, restarts, ISR changes, truncations, high watermarks and
	// diverging fetch answers.
	Trace func(format string, args ...any)
	// OnWriteError, when not nil, is told of a node's failed log write
	// (the node then crashes, keeping what it wrote); nil fails the test.
	OnWriteError func(node int32, err error)
}

// Broker is one broker of a Cluster: a filesystem that survives its
// crashes, and while it is up, the partition's log and replica over it.
type Broker struct {
	// ID is the broker's node id.
	ID int32
	// FS is the node's disk.
	FS *vfs.MemFS
	// Log and Replica are nil while the node is down.
	Log     *log.Log
	Replica *replica.Replica
	// HighWatermark is the node's replication-offset-checkpoint: the last
	// high watermark its replica published. It survives crashes.
	HighWatermark int64
	// lastHW is the high watermark published in this incarnation.
	lastHW int64
	// brokerEpoch is the broker epoch the controller gave this
	// incarnation.
	brokerEpoch int64
	// pending maps this incarnation's proposal ids to produce tokens.
	pending map[uint64]int
}

// BrokerEpoch returns the broker epoch the controller gave the node's
// current (or last) incarnation.
func (n *Broker) BrokerEpoch() int64 { return n.brokerEpoch }

// Up reports whether the node is running.
func (n *Broker) Up() bool { return n.Replica != nil }

// Produced is one Produce call and what became of it.
type Produced struct {
	// Token is the call's index in Cluster.Produced.
	Token int
	// Node is the node the records were proposed to.
	Node int32
	// Acks is the acks the produce waited for.
	Acks kafka.Acks
	// Values are the records' values, in order.
	Values []string
	// Done is set once a Completion came; Err is its error. A produce whose
	// node crashed first stays not Done: its fate is unknown.
	Done bool
	Err  error
	// BaseOffset is where the leader put the batch.
	BaseOffset int64
	// Epoch is the leader epoch of the append.
	Epoch int32
}

// Acked reports whether the produce was acknowledged.
func (p *Produced) Acked() bool { return p.Done && p.Err == nil }

// Cluster is the replicas of one partition on nodes joined by a Network,
// under a controller.Machine that registers the nodes, fences them by
// session timeout, elects leaders from the ISR and commits the ISR changes
// leaders propose; the cluster applies the updates it issues. It checks,
// as it runs, that no replica's high watermark goes backwards and that every batch a leader committed is
// the same on every replica that reports it committed; Check adds the rest.
type Cluster struct {
	// T fails the test when a check does not hold.
	T testing.TB
	// Cfg is the configuration the cluster was made with.
	Cfg Config
	// Net carries the replicas' messages.
	Net *Network
	// TP is the partition the cluster replicates.
	TP kafka.TopicPartition
	// Nodes holds the brokers, by node id.
	Nodes map[int32]*Broker
	// Controller is the cluster's controller, without Config.Quorum.
	Controller *controller.Machine
	// Quorum is the cluster's controllers, with Config.Quorum.
	Quorum *Quorum
	// State is the controller's state of the partition, as of its last
	// change.
	State replica.LeaderAndISR
	// Produced lists every Produce, by token.
	Produced []*Produced
	// Committed maps the base offset of every batch some leader's high
	// watermark passed to the batch's CRC: the one committed lineage.
	Committed map[int64]Batch
	// CommittedEnd is the largest high watermark any leader published.
	CommittedEnd int64
	// UncleanElections counts elections outside the ISR.
	UncleanElections int
	// MaxRounds bounds Stabilize. Zero means 10000.
	MaxRounds int

	rng       *rand.Rand
	truncToHW bool
	lossAt    int64 // ForgetCommitted's offset, or -1
	store     *controller.MemStore
	ctrlOpts  controller.Options
	plane     controlPlane
	alters    []pendingAlter
}

type pendingAlter struct {
	due    int64
	from   int32
	change replica.ISRChange
}

// Batch is one batch of a log, as the checks compare them.
type Batch struct {
	// BaseOffset and LastOffset are the batch's first and last offsets.
	BaseOffset, LastOffset int64
	// Epoch is the batch's partition leader epoch.
	Epoch int32
	// CRC is the batch's CRC-32C.
	CRC uint32
	// Values are the records' values.
	Values []string
}

// NewCluster starts the controller and a node for each replica, registers
// the nodes, and creates the partition: the first replica leads in epoch 0
// with every replica in the ISR. The controller places replicas in node
// order, so Replicas must be ascending.
func NewCluster(t testing.TB, cfg Config) *Cluster {
	t.Helper()
	c := &Cluster{
		T: t, Cfg: cfg, Net: NewNetwork(cfg.Seed),
		TP:        kafka.TopicPartition{Topic: "sim", Partition: 0},
		Nodes:     map[int32]*Broker{},
		Committed: map[int64]Batch{},
		rng:       rand.New(rand.NewPCG(uint64(cfg.Seed), 0x636c7573746572)), // "cluster"
		truncToHW: cfg.TruncateToHighWatermark != nil,
		lossAt:    -1,
	}
	if c.Cfg.SegmentBytes == 0 {
		c.Cfg.SegmentBytes = 16 << 10
	}
	copts := cfg.Controller
	if copts.TickInterval == 0 {
		copts.TickInterval = cfg.Options.TickInterval
	}
	tick := copts.TickInterval
	if tick == 0 {
		tick = 100 * time.Millisecond
	}
	if copts.SessionTimeout == 0 {
		copts.SessionTimeout = 3 * tick
		if cfg.Quorum > 0 {
			copts.SessionTimeout = 20 * tick
		}
	}
	if cfg.Quorum > 0 && copts.ElectionTimeout == 0 {
		copts.ElectionTimeout = 5 * tick
	}
	if cfg.Quorum > 0 && copts.SnapshotEntries == 0 {
		copts.SnapshotEntries = 30
	}
	if copts.LeaderImbalanceCheckInterval == 0 {
		copts.NoAutoLeaderRebalance = true
	}
	c.store, c.ctrlOpts = &controller.MemStore{}, copts
	if cfg.Quorum > 0 {
		c.Quorum = newQuorum(c, cfg.Quorum, copts, cfg.QuorumActBeforeCommit)
		c.plane = c.Quorum
	} else {
		ctrl, err := controller.NewMachine(c.store, copts)
		if err != nil {
			c.Fatalf("new controller: %v", err)
		}
		c.Controller, c.plane = ctrl, machinePlane{ctrl}
	}
	for _, id := range cfg.Replicas {
		n := &Broker{ID: id, FS: vfs.NewMem()}
		c.Nodes[id] = n
		if !c.register(n) {
			c.Fatalf("register node %d", id)
		}
		c.open(n)
	}
	if err := c.plane.createTopic(c.TP.Topic, 1, len(cfg.Replicas), controller.TopicConfig{Unclean: cfg.Unclean}); err != nil {
		c.Fatalf("create topic: %v", err)
	}
	c.applyUpdates()
	if !slices.Equal(c.State.Replicas, cfg.Replicas) {
		c.Fatalf("controller assigned replicas %v, want %v (list them in ascending order)", c.State.Replicas, cfg.Replicas)
	}
	return c
}

// Fatalf fails the test, naming the seed.
func (c *Cluster) Fatalf(format string, args ...any) {
	c.T.Helper()
	c.T.Fatalf("seed %d: %s", c.Cfg.Seed, fmt.Sprintf(format, args...))
}

// open opens a node's log and replica on its disk.
func (c *Cluster) open(n *Broker) {
	c.T.Helper()
	l, err := log.Open("/data/"+c.TP.String(), log.Options{FS: n.FS, SegmentBytes: c.Cfg.SegmentBytes, MaxIndexBytes: 4096})
	if err != nil {
		c.Fatalf("open log of node %d: %v", n.ID, err)
	}
	opts := c.Cfg.Options
	opts.HighWatermark = n.HighWatermark
	opts.BrokerEpoch = uint32(n.brokerEpoch)
	if c.truncToHW {
		opts = c.Cfg.TruncateToHighWatermark(opts)
	}
	r, err := replica.New(n.ID, c.TP, l, opts)
	if err != nil {
		c.Fatalf("new replica %d: %v", n.ID, err)
	}
	n.Log, n.Replica = l, r
	n.lastHW = r.HighWatermark()
	n.pending = map[uint64]int{}
}

func (c *Cluster) tracef(format string, args ...any) {
	if c.Cfg.Trace != nil {
		c.Cfg.Trace("t=%d "+format, append([]any{c.Net.Now()}, args...)...)
	}
}

// register registers node n with the controller, which fences its previous
// incarnation, and keeps the broker epoch it hands out. A quorum may not
// answer (no active controller, or no commit in time): register reports
// whether it did; a single controller always does.
func (c *Cluster) register(n *Broker) bool {
	c.T.Helper()
	epoch, err := c.plane.register(n.ID)
	switch {
	case err != nil && c.Quorum != nil:
		c.tracef("register %d: %v", n.ID, err)
		return false
	case err != nil:
		c.Fatalf("register node %d: %v", n.ID, err)
	}
	n.brokerEpoch = epoch
	return true
}

// applyUpdates carries out the controller's updates: each running node
// applies the latest state of its replica. It then refreshes State, and
// counts an election of a leader from outside the previous ISR as unclean.
func (c *Cluster) applyUpdates() {
	c.T.Helper()
	ups, s, err := c.plane.updates(c.TP)
	if err != nil {
		c.Fatalf("controller: %v", err)
	}
	for _, u := range ups {
		n := c.Nodes[u.Node]
		if u.TopicPartition != c.TP || n == nil || !n.Up() {
			continue
		}
		if u.Deleted {
			c.Fatalf("controller deleted %s on node %d", c.TP, u.Node)
		}
		if err := n.Replica.Apply(u.State); err != nil {
			c.Fatalf("apply %+v to node %d: %v", u.State, u.Node, err)
		}
	}
	prev := c.State
	if s.PartitionEpoch == prev.PartitionEpoch && s.LeaderEpoch == prev.LeaderEpoch && prev.Replicas != nil {
		return
	}
	if prev.Replicas != nil && s.Leader != replica.NoLeader && s.LeaderEpoch > prev.LeaderEpoch &&
		s.Leader != prev.Leader && !slices.Contains(prev.ISR, s.Leader) {
		c.UncleanElections++
	}
	c.State = s
	c.tracef("controller: %+v", s)
}

// ElectPreferring makes id leader in a new leader epoch if it is alive and
// in the ISR (a controlled election), with the controller's ElectReplica.
// It reports whether the controller elected id.
func (c *Cluster) ElectPreferring(id int32) bool {
	c.T.Helper()
	if err := c.plane.electReplica(c.TP, id); err != nil {
		c.tracef("elect %d: %v", id, err)
		return false
	}
	c.applyUpdates()
	return true
}

// Crash stops node id abruptly: its disk keeps only what was synced (or,
// with keepUnsynced, everything written). It then ticks until the
// controller's session timeout fences the node — removes it from the ISR
// (unless it is the last member, as KRaft keeps one) and elects a new
// leader if it led.
func (c *Cluster) Crash(id int32, keepUnsynced bool) {
	c.T.Helper()
	if !c.crash(id, keepUnsynced) {
		return
	}
	for i := 0; !c.plane.nodes()[id].Fenced; i++ {
		if i > 1000 {
			c.Fatalf("the controller never fenced crashed node %d", id)
		}
		c.Tick()
	}
}

// Kill stops node id abruptly, as Crash does, but returns at once: until
// its session times out the controller still counts the node as alive,
// leading or in the ISR.
func (c *Cluster) Kill(id int32, keepUnsynced bool) {
	c.T.Helper()
	c.crash(id, keepUnsynced)
}

// RestartController replaces the controller by a new one that replays the
// old one's metadata store, as a controller failover does: the nodes keep
// their registrations and get a full session to heartbeat in; updates the
// old one had not handed out are lost, and the nodes keep the states they
// applied.
func (c *Cluster) RestartController() {
	c.T.Helper()
	if c.Quorum != nil {
		c.Fatalf("RestartController is for a single controller: crash and start a quorum's members")
	}
	ctrl, err := controller.NewMachine(c.store, c.ctrlOpts)
	if err != nil {
		c.Fatalf("restart controller: %v", err)
	}
	c.Controller, c.plane = ctrl, machinePlane{ctrl}
	c.tracef("controller restarted")
}

// crash stops node id abruptly, as Crash does, without waiting for the
// controller to notice. It reports whether the node was up.
func (c *Cluster) crash(id int32, keepUnsynced bool) bool {
	c.T.Helper()
	n := c.Nodes[id]
	if !n.Up() {
		return false
	}
	policy := vfs.KeepNone
	if keepUnsynced {
		policy = vfs.KeepAll
	}
	n.FS = n.FS.CrashClone(vfs.CrashOptions{Seed: c.rng.Int64(), KeepUnsynced: policy})
	n.Log.Close() // the old disk is gone; closing only frees it
	n.Log, n.Replica, n.pending = nil, nil, nil
	c.tracef("crash %d keepUnsynced=%v", id, keepUnsynced)
	return true
}

// Bounce crashes node id and starts it again at once, before the
// controller notices: the node keeps its registration and broker epoch,
// as a ZooKeeper-era broker whose session outlived its restart did, so it
// stays in the ISR and keeps its role's epoch. Its disk keeps only what
// was synced.
func (c *Cluster) Bounce(id int32) {
	c.T.Helper()
	n := c.Nodes[id]
	if !n.Up() {
		return
	}
	n.FS = n.FS.CrashClone(vfs.CrashOptions{Seed: c.rng.Int64()})
	n.Log.Close()
	c.open(n)
	c.tracef("bounce %d: log end %d", id, n.Log.LogEndOffset())
	if err := n.Replica.Apply(c.State); err != nil {
		c.Fatalf("apply %+v to bounced node %d: %v", c.State, id, err)
	}
}

// Wipe crashes node id, gives it an empty disk (and no high watermark
// checkpoint), and starts it again at once: a replaced drive. It does not
// wait for the session timeout: registering again fences the node's old
// incarnation, so the node is out of the ISR (unless it is the last
// member) before its empty replica starts, and nothing else happens in
// between.
func (c *Cluster) Wipe(id int32) {
	c.T.Helper()
	c.crash(id, false)
	n := c.Nodes[id]
	n.FS = vfs.NewMem()
	n.HighWatermark = 0
	c.tracef("wipe %d", id)
	c.Restart(id)
}

// Restart starts a crashed node again on what its disk kept: it registers
// with the controller in a new broker epoch, recovers, and applies the
// controller's state. If the partition had no leader, the controller
// elects one as the node registers.
func (c *Cluster) Restart(id int32) {
	c.T.Helper()
	n := c.Nodes[id]
	if n.Up() || !c.register(n) {
		return
	}
	c.open(n)
	c.tracef("restart %d: log end %d, high watermark %d, epochs %v", id, n.Log.LogEndOffset(), n.Replica.HighWatermark(), n.Log.EpochEntries())
	c.applyUpdates()
}

// Produce appends a batch of values to node id (the leader, or NoLeader)
// with acks, returning its record, or the error Propose returned
// (kafka.ErrLeaderNotAvailable for NoLeader).
func (c *Cluster) Produce(id int32, acks kafka.Acks, values ...string) (*Produced, error) {
	c.T.Helper()
	n := c.Nodes[id]
	p := &Produced{Token: len(c.Produced), Node: id, Acks: acks, Values: values, BaseOffset: -1}
	if n == nil {
		return p, fmt.Errorf("%w: %s has no leader", kafka.ErrLeaderNotAvailable, c.TP)
	}
	if !n.Up() {
		return p, kafka.ErrNotLeaderOrFollower
	}
	b := record.NewBuilder(record.DefaultBatchOptions())
	for _, v := range values {
		b.Append(record.Record{Timestamp: int64(len(c.Produced)), Value: []byte(v)})
	}
	prop, err := n.Replica.Propose(b.Build(), acks)
	if err != nil {
		return p, err
	}
	p.BaseOffset, p.Epoch = prop.BaseOffset, c.State.LeaderEpoch
	c.Produced = append(c.Produced, p)
	if acks == kafka.AcksNone {
		p.Done = true
	} else {
		n.pending[prop.ID] = p.Token
	}
	return p, nil
}

// Leader returns the controller's leader, or NoLeader.
func (c *Cluster) Leader() int32 { return c.State.Leader }

// Tick advances the network, the controller (every running node
// heartbeats) and every running, unpaused node by one tick, then
// stabilizes.
func (c *Cluster) Tick() {
	c.T.Helper()
	c.Net.Tick()
	for len(c.alters) > 0 && c.alters[0].due <= c.Net.Now() {
		a := c.alters[0]
		c.alters = c.alters[1:]
		c.alterPartition(a.from, a.change)
	}
	if err := c.plane.tick(); err != nil {
		c.Fatalf("controller tick: %v", err)
	}
	// Every running node heartbeats at the new time, so the controller
	// fences one exactly a session timeout after its last tick up. A
	// paused node heartbeats too: Pause stalls its replica, not its
	// session.
	for _, id := range c.Cfg.Replicas {
		if n := c.Nodes[id]; n.Up() {
			if err := c.plane.heartbeat(id, n.brokerEpoch); err != nil {
				if c.Quorum == nil {
					c.Fatalf("node %d heartbeat: %v", id, err)
				}
				c.tracef("node %d heartbeat: %v", id, err)
			}
		}
	}
	c.applyUpdates()
	for _, id := range c.Cfg.Replicas {
		if n := c.Nodes[id]; n.Up() && !c.Net.Paused(id) {
			n.Replica.Tick()
		}
	}
	c.Stabilize()
}

// RunTicks ticks n times.
func (c *Cluster) RunTicks(n int) {
	c.T.Helper()
	for range n {
		c.Tick()
	}
}

// Stabilize handles every Ready and delivers every message due, until
// nothing is left to do in this tick.
func (c *Cluster) Stabilize() {
	c.T.Helper()
	maxRounds := c.MaxRounds
	if maxRounds == 0 {
		maxRounds = 10000
	}
	for round := 0; ; round++ {
		if round == maxRounds {
			c.Fatalf("no quiescence after %d rounds", maxRounds)
		}
		busy := false
		for _, id := range c.Cfg.Replicas {
			n := c.Nodes[id]
			for n.Up() && !c.Net.Paused(id) && n.Replica.HasReady() {
				busy = true
				c.handleReady(n)
			}
		}
		for _, m := range c.Net.Deliver() {
			busy = true
			n := c.Nodes[m.To]
			if n == nil || !n.Up() {
				continue
			}
			if err := n.Replica.Step(m); err != nil {
				c.Fatalf("node %d step %v: %v", m.To, m, err)
			}
		}
		if !busy {
			return
		}
	}
}

// handleReady is the driver: it carries out one Ready, in the order the
// replica package documents.
func (c *Cluster) handleReady(n *Broker) {
	c.T.Helper()
	rd := n.Replica.Ready()
	if rd.Truncate != nil {
		c.tracef("node %d truncates to %+v (log end %d)", n.ID, *rd.Truncate, n.Log.LogEndOffset())
	}
	if c.Cfg.NoSync {
		rd.MustSync = false
	}
	if err := rd.Persist(n.Log); err != nil {
		if c.Cfg.OnWriteError == nil {
			c.Fatalf("node %d persist: %v", n.ID, err)
		}
		c.Cfg.OnWriteError(n.ID, err)
		c.crash(n.ID, true)
		return
	}
	for _, m := range rd.Messages {
		if r := m.FetchResponse; r != nil && r.DivergingEpoch != nil {
			c.tracef("%v", m)
		}
		c.Net.Send(m)
	}
	if rd.HighWatermark >= 0 {
		lossy := c.Cfg.Unclean == controller.AllowUnclean || c.truncToHW || (c.lossAt >= 0 && rd.HighWatermark >= c.lossAt)
		if rd.HighWatermark < n.lastHW && !lossy {
			c.Fatalf("node %d high watermark went back from %d to %d", n.ID, n.lastHW, rd.HighWatermark)
		}
		c.tracef("node %d (%s) high watermark %d", n.ID, n.Replica.Role(), rd.HighWatermark)
		n.lastHW = rd.HighWatermark
		n.HighWatermark = rd.HighWatermark
		c.checkCommitted(n, rd.HighWatermark)
	}
	if a := rd.AlterPartition; a != nil {
		if c.Cfg.AlterPartitionDelay == 0 {
			c.alterPartition(n.ID, *a)
		} else {
			c.alters = append(c.alters, pendingAlter{due: c.Net.Now() + c.Cfg.AlterPartitionDelay, from: n.ID, change: *a})
		}
	}
	for _, comp := range rd.Completed {
		tok, ok := n.pending[comp.ID]
		if !ok {
			c.Fatalf("node %d completed unknown proposal %d", n.ID, comp.ID)
		}
		delete(n.pending, comp.ID)
		p := c.Produced[tok]
		p.Done, p.Err = true, comp.Err
		if comp.Err == nil && comp.BaseOffset != p.BaseOffset {
			c.Fatalf("produce %d completed at %d, proposed at %d", tok, comp.BaseOffset, p.BaseOffset)
		}
	}
	if err := n.Replica.Advance(); err != nil {
		c.Fatalf("node %d advance: %v", n.ID, err)
	}
}

// PendingAlters returns how many ISR changes the controller has yet to
// answer.
func (c *Cluster) PendingAlters() int { return len(c.alters) }

// alterPartition sends a leader's ISR change to the controller, applies
// the state it commits, and tells the leader, if it still runs, when the
// controller refuses the change.
func (c *Cluster) alterPartition(from int32, a replica.ISRChange) {
	c.T.Helper()
	orig := a
	if c.Cfg.IgnoreBrokerEpochs {
		nodes := c.plane.nodes()
		a.BrokerEpochs = slices.Clone(a.BrokerEpochs)
		for i, id := range a.ISR {
			if ns, ok := nodes[id]; ok && id != from {
				a.BrokerEpochs[i] = ns.BrokerEpoch
			}
		}
	}
	s, err := c.plane.alterPartition(from, c.TP, a)
	if err != nil {
		if errors.Is(err, kafka.ErrInvalidRequest) {
			c.Fatalf("malformed ISR change %+v: %v", a, err)
		}
		c.tracef("refuse ISR change %+v from %d: %v", a, from, err)
		if n := c.Nodes[from]; n.Up() && (c.Quorum == nil || !kafka.IsRetriable(err)) {
			n.Replica.RejectISRChange(orig) // unanswered, the leader asks again
		}
		return
	}
	if n := c.Nodes[from]; c.Quorum != nil && n.Up() && slices.Contains(s.Replicas, from) {
		// The leader applies the state the answer holds, as a broker does.
		if err := n.Replica.Apply(s); err != nil {
			c.tracef("node %d applies its ISR change's answer %+v: %v", from, s, err)
		}
	}
	c.applyUpdates()
}
