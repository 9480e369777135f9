package replicatest

import (
	"errors"
	"fmt"

	pb "go.etcd.io/raft/v3/raftpb"

	"github.com/partlog/partlog/controller"
	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/log"
	"github.com/partlog/partlog/replica"
	"github.com/partlog/partlog/vfs"
)

// controlPlane is what the cluster asks of its controller: a
// controller.Machine it calls directly, or a quorum of controller.Members
// on a seeded network of their own (Config.Quorum).
type controlPlane interface {
	register(id int32) (int64, error)
	heartbeat(id int32, brokerEpoch int64) error
	alterPartition(from int32, tp kafka.TopicPartition, a replica.ISRChange) (replica.LeaderAndISR, error)
	electReplica(tp kafka.TopicPartition, id int32) error
	createTopic(name string, partitions, rf int, cfg controller.TopicConfig) error
	// nodes returns the registered nodes as the metadata has them.
	nodes() map[int32]controller.NodeState
	tick() error
	// updates returns the states nodes must apply since the last call, and
	// the partition's state in the newest metadata.
	updates(tp kafka.TopicPartition) ([]controller.Update, replica.LeaderAndISR, error)
}

// machinePlane is a single controller.Machine, answering at once.
type machinePlane struct{ m *controller.Machine }

func (p machinePlane) register(id int32) (int64, error)  { return p.m.RegisterNode(id, "") }
func (p machinePlane) heartbeat(id int32, e int64) error { return p.m.Heartbeat(id, e) }
func (p machinePlane) alterPartition(from int32, tp kafka.TopicPartition, a replica.ISRChange) (replica.LeaderAndISR, error) {
	return p.m.AlterPartition(from, tp, a)
}
func (p machinePlane) electReplica(tp kafka.TopicPartition, id int32) error {
	_, err := p.m.ElectReplica(tp, id)
	return err
}
func (p machinePlane) createTopic(name string, partitions, rf int, cfg controller.TopicConfig) error {
	return p.m.CreateTopic(name, partitions, rf, cfg)
}
func (p machinePlane) nodes() map[int32]controller.NodeState { return p.m.State().Nodes }
func (p machinePlane) tick() error                           { return p.m.Tick() }
func (p machinePlane) updates(tp kafka.TopicPartition) ([]controller.Update, replica.LeaderAndISR, error) {
	u := p.m.Updates()
	s, err := p.m.Partition(tp)
	return u, s, err
}

// Quorum is the cluster's controllers as a Raft quorum (Config.Quorum):
// members on disks of their own that survive their crashes, exchanging
// Raft messages on a network that loses them at random and can be cut.
// Brokers call the active controller, and apply the metadata of the
// member that has committed the most: a call while no member is active, or
// whose change the quorum did not commit within the tick, fails, as a
// call to a controller that stops answering does.
type Quorum struct {
	c    *Cluster
	opts controller.Options
	// Voters are the controllers' ids.
	Voters  []int32
	members map[int32]*quorumMember
	queue   []*pb.Message
	cut     map[[2]int32]bool
	// Drop is the chance that a Raft message is lost.
	Drop float64

	applied      int64            // the metadata version the brokers applied last
	activeInTerm map[uint64]int32 // the member active in each term seen
	// actBeforeCommit makes every member acknowledge its changes as soon
	// as it proposes them (Config.QuorumActBeforeCommit).
	actBeforeCommit bool
}

// quorumMember is one controller of a Quorum.
type quorumMember struct {
	fs     *vfs.MemFS
	logs   *log.Dir
	m      *controller.Member // nil while down
	paused bool
}

// newQuorum starts n controllers, ids 1 to n.
func newQuorum(c *Cluster, n int, opts controller.Options, actBeforeCommit bool) *Quorum {
	q := &Quorum{c: c, opts: opts, members: map[int32]*quorumMember{}, cut: map[[2]int32]bool{},
		activeInTerm: map[uint64]int32{}, applied: -1, actBeforeCommit: actBeforeCommit}
	for id := int32(1); id <= int32(n); id++ {
		q.Voters = append(q.Voters, id)
		q.members[id] = &quorumMember{fs: vfs.NewMem()}
	}
	for _, id := range q.Voters {
		q.Start(id)
	}
	for range 200 { // elect a first active controller
		if q.active() != nil {
			return q
		}
		if err := q.tick(); err != nil {
			c.Fatalf("quorum: %v", err)
		}
	}
	c.Fatalf("quorum: no active controller after 200 ticks")
	return nil
}

// Start starts controller id on what its disk kept.
func (q *Quorum) Start(id int32) {
	qm := q.members[id]
	if qm.m != nil {
		return
	}
	logs, err := log.OpenDir("/controller", log.DirOptions{FS: qm.fs})
	if err != nil {
		q.c.Fatalf("controller %d: %v", id, err)
	}
	opts := q.opts
	opts.FS = qm.fs
	m, err := controller.OpenMember(id, q.Voters, logs, opts)
	if err != nil {
		q.c.Fatalf("controller %d: %v", id, err)
	}
	if q.actBeforeCommit {
		m.ActBeforeCommitForTesting()
	}
	qm.logs, qm.m, qm.paused = logs, m, false
	q.c.tracef("controller %d starts", id)
}

// Crash stops controller id abruptly: its disk keeps what was synced.
func (q *Quorum) Crash(id int32) {
	qm := q.members[id]
	if qm.m == nil {
		return
	}
	qm.fs = qm.fs.CrashClone(vfs.CrashOptions{Seed: q.c.rng.Int64(), KeepUnsynced: vfs.KeepNone})
	qm.logs.Close()
	qm.m, qm.logs = nil, nil
	q.c.tracef("controller %d crashes", id)
}

// Pause stalls controller id, or resumes it: a stalled member neither
// ticks nor handles messages, which are lost.
func (q *Quorum) Pause(id int32, paused bool) {
	q.members[id].paused = paused
	q.c.tracef("controller %d paused=%v", id, paused)
}

// Cut cuts the link from controller a to b, or heals it.
func (q *Quorum) Cut(a, b int32, cut bool) {
	if cut {
		q.cut[[2]int32{a, b}] = true
		q.c.tracef("controller link %d->%d cut", a, b)
	} else {
		delete(q.cut, [2]int32{a, b})
	}
}

// HealAll heals every link, resumes every member and starts those down.
func (q *Quorum) HealAll() {
	clear(q.cut)
	for _, id := range q.Voters {
		q.members[id].paused = false
		q.Start(id)
	}
}

// running returns the members that run and are not stalled.
func (q *Quorum) running() []*controller.Member {
	var out []*controller.Member
	for _, id := range q.Voters {
		if qm := q.members[id]; qm.m != nil && !qm.paused {
			out = append(out, qm.m)
		}
	}
	return out
}

// active returns the running member that is the active controller, or nil.
func (q *Quorum) active() *controller.Member {
	for _, m := range q.running() {
		if m.Active() {
			return m
		}
	}
	return nil
}

// pump processes the running members and delivers their messages until
// none is left, checking after each round that at most one member is
// active in any term.
func (q *Quorum) pump() error {
	for round := 0; ; round++ {
		if round == 1000 {
			return fmt.Errorf("the quorum did not settle in 1000 rounds")
		}
		for _, m := range q.running() {
			msgs, err := m.Process()
			if err != nil {
				return fmt.Errorf("controller %d: %w", m.ID(), err)
			}
			q.queue = append(q.queue, msgs...)
			if m.Active() {
				if other, ok := q.activeInTerm[m.Term()]; ok && other != m.ID() {
					return fmt.Errorf("controllers %d and %d both active in term %d", other, m.ID(), m.Term())
				}
				q.activeInTerm[m.Term()] = m.ID()
			}
		}
		if len(q.queue) == 0 {
			return nil
		}
		batch := q.queue
		q.queue = nil
		for _, msg := range batch {
			from, to := int32(msg.GetFrom()-1), int32(msg.GetTo()-1)
			dst := q.members[to]
			lost := dst == nil || dst.m == nil || dst.paused || q.cut[[2]int32{from, to}] || q.c.rng.Float64() < q.Drop
			if src := q.members[from]; src.m != nil && msg.GetType() == pb.MessageType_MsgSnap {
				src.m.ReportSnapshot(to, !lost)
			}
			if lost {
				continue
			}
			if err := dst.m.Step(msg); err != nil {
				q.c.tracef("controller %d refuses %v: %v", to, msg.GetType(), err)
			}
		}
	}
}

// do runs fn on the active controller's machine and waits, within the
// tick, for the quorum to commit its changes.
func (q *Quorum) do(fn func(*controller.Machine) error) (int64, error) {
	a := q.active()
	if a == nil {
		return 0, fmt.Errorf("%w: no active controller", kafka.ErrNotController)
	}
	p, err := a.Do(fn)
	if err != nil {
		return 0, err
	}
	if err := q.pump(); err != nil {
		q.c.Fatalf("quorum: %v", err)
	}
	select {
	case <-p.Done():
		return p.Result()
	default:
		return 0, fmt.Errorf("%w: the change was not committed in time", kafka.ErrRequestTimedOut)
	}
}

func (q *Quorum) register(id int32) (epoch int64, err error) {
	_, err = q.do(func(m *controller.Machine) (err error) { epoch, err = m.RegisterNode(id, ""); return err })
	return epoch, err
}

func (q *Quorum) heartbeat(id int32, e int64) error {
	_, err := q.do(func(m *controller.Machine) error { return m.Heartbeat(id, e) })
	return err
}

func (q *Quorum) alterPartition(from int32, tp kafka.TopicPartition, a replica.ISRChange) (s replica.LeaderAndISR, err error) {
	_, err = q.do(func(m *controller.Machine) (err error) { s, err = m.AlterPartition(from, tp, a); return err })
	return s, err
}

func (q *Quorum) electReplica(tp kafka.TopicPartition, id int32) error {
	_, err := q.do(func(m *controller.Machine) error { _, err := m.ElectReplica(tp, id); return err })
	return err
}

func (q *Quorum) createTopic(name string, partitions, rf int, cfg controller.TopicConfig) error {
	_, err := q.do(func(m *controller.Machine) error { return m.CreateTopic(name, partitions, rf, cfg) })
	return err
}

// newest returns the running member that has committed the most.
func (q *Quorum) newest() *controller.Member {
	var best *controller.Member
	for _, m := range q.running() {
		if best == nil || m.Version() > best.Version() {
			best = m
		}
	}
	return best
}

func (q *Quorum) nodes() map[int32]controller.NodeState {
	if m := q.newest(); m != nil {
		return m.State().Nodes
	}
	return nil
}

func (q *Quorum) tick() error {
	for _, m := range q.running() {
		if err := m.Tick(); err != nil {
			if !errors.Is(err, kafka.ErrNotController) {
				return fmt.Errorf("controller %d tick: %w", m.ID(), err)
			}
			// It stopped leading as it proposed a fence: the next active
			// controller fences the node.
			q.c.tracef("controller %d tick: %v", m.ID(), err)
		}
	}
	return q.pump()
}

// updates hands the brokers the partition's state of the newest metadata,
// when it is newer than the last they applied — as nodes take metadata
// only when its version is newer than theirs — and checks that metadata
// never goes back: a newer version never holds older epochs.
func (q *Quorum) updates(tp kafka.TopicPartition) ([]controller.Update, replica.LeaderAndISR, error) {
	m := q.newest()
	if m == nil || m.Version() <= q.applied {
		return nil, q.c.State, nil
	}
	st := m.State()
	t, ok := st.Topics[tp.Topic]
	if !ok || int(tp.Partition) >= len(t.Partitions) {
		return nil, q.c.State, nil
	}
	s := t.Partitions[tp.Partition]
	prev := q.c.State
	if prev.Replicas != nil && (s.LeaderEpoch < prev.LeaderEpoch || s.PartitionEpoch < prev.PartitionEpoch) {
		return nil, s, fmt.Errorf("metadata went back: version %d holds %+v after %+v", m.Version(), s, prev)
	}
	q.applied = m.Version()
	var ups []controller.Update
	for _, id := range s.Replicas {
		ups = append(ups, controller.Update{Node: id, TopicPartition: tp, State: s.Clone()})
	}
	return ups, s, nil
}
