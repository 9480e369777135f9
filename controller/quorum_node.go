package controller

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	pb "go.etcd.io/raft/v3/raftpb"

	"github.com/partlog/partlog/kafka"
)

// RaftTransport carries Raft messages between the controllers of a
// quorum. Send delivers msgs, in order, to controller to, which hands
// them to its QuorumNode.Step; it returns an error when they may not
// have arrived. It is called from one goroutine per destination. The
// messages are the sender's: Send reads them until it returns, changes
// none, and keeps none (TCPRaft encodes them; MemRaft delivers copies).
type RaftTransport interface {
	Send(ctx context.Context, to int32, msgs []*pb.Message) error
}

// QuorumNode runs a Member on goroutines of its own, as raft.Node wraps a
// RawNode: it ticks the member every TickInterval, steps the messages
// that arrive, processes after each, and sends what the member has to
// send through a RaftTransport, one goroutine per destination, so that a
// slow or unreachable controller holds up no other. It is safe for
// concurrent use.
type QuorumNode struct {
	transport RaftTransport
	logger    *slog.Logger
	tick      time.Duration

	mu      sync.Mutex
	member  *Member
	failed  error         // the member's failure to persist: it stopped
	changed chan struct{} // closed and replaced when the committed version moves
	version int64

	inbox     chan *pb.Message
	reports   chan func(*Member)
	peers     map[int32]chan []*pb.Message
	stop      chan struct{}
	closeOnce sync.Once
	wg        sync.WaitGroup
}

// sendQueue is how many batches of messages wait for one destination
// before more are dropped: Raft sends again what is lost.
const sendQueue = 64

// StartQuorumNode starts running m, whose quorum's other voters are
// peers, with messages sent through t. Close stops it; m's log stays the
// caller's.
func StartQuorumNode(m *Member, peers []int32, t RaftTransport) *QuorumNode {
	q := &QuorumNode{transport: t, logger: m.logger, tick: m.opts.TickInterval, member: m,
		changed: make(chan struct{}), version: m.Version(),
		inbox: make(chan *pb.Message, 256), reports: make(chan func(*Member), 64),
		peers: map[int32]chan []*pb.Message{}, stop: make(chan struct{})}
	for _, id := range peers {
		if id == m.ID() {
			continue
		}
		ch := make(chan []*pb.Message, sendQueue)
		q.peers[id] = ch
		q.wg.Add(1)
		go q.send(id, ch)
	}
	q.wg.Add(1)
	go q.run()
	return q
}

// run ticks the member and steps what arrives, until Close.
func (q *QuorumNode) run() {
	defer q.wg.Done()
	t := time.NewTicker(q.tick)
	defer t.Stop()
	for {
		var do func(*Member)
		select {
		case <-q.stop:
			return
		case <-t.C:
			do = func(m *Member) {
				if err := m.Tick(); err != nil {
					q.logger.Warn("controller tick failed", "err", err)
				}
			}
		case msg := <-q.inbox:
			do = func(m *Member) {
				if err := m.Step(msg); err != nil {
					q.logger.Debug("a Raft message was refused", "type", msg.GetType().String(), "from", nodeID(msg.GetFrom()), "err", err)
				}
			}
		case do = <-q.reports:
		}
		q.mu.Lock()
		if q.failed == nil {
			do(q.member)
			q.processLocked()
		}
		q.mu.Unlock()
	}
}

// processLocked processes the member and queues what it sends. The
// caller holds mu.
func (q *QuorumNode) processLocked() {
	msgs, err := q.member.Process()
	if err != nil {
		q.failed = err
		q.logger.Error("controller stopped: its metadata log failed", "err", err)
	}
	if v := q.member.Version(); v != q.version {
		q.version = v
		close(q.changed)
		q.changed = make(chan struct{})
	}
	byPeer := map[int32][]*pb.Message{}
	for _, msg := range msgs {
		to := nodeID(msg.GetTo())
		byPeer[to] = append(byPeer[to], msg)
	}
	for to, batch := range byPeer {
		ch, ok := q.peers[to]
		if !ok {
			continue
		}
		select {
		case ch <- batch:
		default: // the peer is slow: Raft sends again
			q.member.ReportUnreachable(to)
			reportSnapshots(q.member, to, batch, false)
		}
	}
}

// reportSnapshots reports to m whether the snapshots in msgs reached to.
func reportSnapshots(m *Member, to int32, msgs []*pb.Message, delivered bool) {
	for _, msg := range msgs {
		if msg.GetType() == pb.MessageType_MsgSnap {
			m.ReportSnapshot(to, delivered)
		}
	}
}

// send sends the batches queued for controller to, until Close.
func (q *QuorumNode) send(to int32, ch chan []*pb.Message) {
	defer q.wg.Done()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		<-q.stop
		cancel()
	}()
	for {
		select {
		case <-q.stop:
			return
		case batch := <-ch:
			sendCtx, done := context.WithTimeout(ctx, 5*q.tick)
			err := q.transport.Send(sendCtx, to, batch)
			done()
			var report func(*Member)
			switch {
			case err != nil:
				report = func(m *Member) {
					m.ReportUnreachable(to)
					reportSnapshots(m, to, batch, false)
				}
			case hasSnapshot(batch):
				report = func(m *Member) { reportSnapshots(m, to, batch, true) }
			default:
				continue
			}
			select {
			case q.reports <- report:
			case <-q.stop:
				return
			}
		}
	}
}

// hasSnapshot reports whether msgs hold a snapshot.
func hasSnapshot(msgs []*pb.Message) bool {
	for _, msg := range msgs {
		if msg.GetType() == pb.MessageType_MsgSnap {
			return true
		}
	}
	return false
}

// Step hands the node a message another controller sent it. It does not
// wait for the message to be processed, and drops it when the node is
// behind: Raft sends again. The node keeps msg: the caller must not change
// it afterwards.
func (q *QuorumNode) Step(msg *pb.Message) {
	select {
	case q.inbox <- msg:
	default:
	}
}

// Do runs fn on the active controller's machine (see Member.Do) and
// waits until its changes are committed, returning the metadata version
// that holds them. It fails with kafka.ErrNotController on a controller
// that is not active, or that stops being active before they commit;
// with ctx's error when ctx ends first (the changes may yet commit).
func (q *QuorumNode) Do(ctx context.Context, fn func(*Machine) error) (int64, error) {
	q.mu.Lock()
	if q.failed != nil {
		q.mu.Unlock()
		return 0, fmt.Errorf("%w: controller %d stopped: %w", kafka.ErrNotController, q.member.ID(), q.failed)
	}
	p, err := q.member.Do(fn)
	if err == nil && p != nil {
		q.processLocked() // send the proposal now, not at the next tick
	}
	q.mu.Unlock()
	if err != nil {
		return 0, err
	}
	select {
	case <-p.Done(): // a quorum of one commits before Do waits
		return p.Result()
	default:
	}
	select {
	case <-p.Done():
		return p.Result()
	case <-ctx.Done():
		return 0, ctx.Err()
	}
}

// Read calls fn with the committed metadata and its version, under the
// node's lock: fn must not keep st past its return.
func (q *QuorumNode) Read(fn func(st ClusterState, version int64)) {
	q.mu.Lock()
	defer q.mu.Unlock()
	fn(q.member.State(), q.member.Version())
}

// Version returns the version of the committed metadata, and a channel
// closed when it next moves.
func (q *QuorumNode) Version() (int64, <-chan struct{}) {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.version, q.changed
}

// Active reports whether this controller is the active one, and the
// leader it knows of when it is not.
func (q *QuorumNode) Active() (active bool, leader int32, known bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	leader, known = q.member.Leader()
	return q.member.Active(), leader, known
}

// Close stops the node and waits for its goroutines. Changes still
// pending fail with kafka.ErrNotController: they may yet commit.
func (q *QuorumNode) Close() {
	q.closeOnce.Do(func() {
		close(q.stop)
		q.wg.Wait()
		q.mu.Lock()
		defer q.mu.Unlock()
		q.member.failPending(fmt.Errorf("%w: controller %d closed", kafka.ErrNotController, q.member.ID()))
	})
}
