package replica

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/partlog/partlog/kafka"
)

// Transport carries a replica's messages to the other nodes: the only
// network seam of package replica. Send hands m over for delivery to node
// to and returns without waiting for it to arrive; it may lose, delay,
// duplicate or reorder messages (the replicas recover), but it must not
// block for long, since the sending replica's loop waits for it. The
// receiving side passes each message to that node's Node.Step.
type Transport interface {
	Send(ctx context.Context, to int32, m Message) error
}

// NodeOptions configures a Node. The zero value works.
type NodeOptions struct {
	// OnHighWatermark is called from the Node's loop with each new high
	// watermark, after the records below it are written; readers may read
	// below it. Nil ignores it (HighWatermark still reports it).
	OnHighWatermark func(hw int64)
	// OnAlterPartition is called from the Node's loop with each ISR change
	// the leader proposes, for the controller; the controller answers with
	// Apply or RejectISRChange. Nil drops proposals.
	OnAlterPartition func(c ISRChange)
	// OnStop is called once from the Node's goroutine when the loop stops
	// on a log write failure (not on Close), with the failure, after every
	// waiting proposal was answered with it as kafka.ErrKafkaStorage. It
	// must not wait for the Node: Close waits for the goroutine that calls
	// it. Nil ignores it (Err still reports it).
	OnStop func(err error)
	// Logger receives send failures and the error that stops the Node.
	// Nil discards them.
	Logger *slog.Logger
}

// Node runs a Replica on a goroutine, as etcd raft's Node runs a RawNode:
// it ticks the replica every Options.TickInterval, feeds it messages and
// commands, and carries out every Ready — writing the log, sending through
// the Transport, publishing the high watermark, passing ISR changes on and
// answering producers. All its methods are safe for concurrent use.
type Node struct {
	r    *Replica
	log  LogWriter
	tr   Transport
	opts NodeOptions

	stepc   chan Message
	propc   chan proposal
	applyc  chan apply
	rejectc chan ISRChange
	statusc chan chan Status
	minISRc chan int
	stopc   chan struct{}
	donec   chan struct{}

	hw       atomic.Int64
	stopOnce sync.Once
	err      error // why the loop stopped; read after donec closes
}

type proposal struct {
	batch []byte
	acks  kafka.Acks
	res   chan Completion
	// released is closed once the loop no longer reads batch: it was
	// refused, written, or dropped by a truncation or by the loop's end.
	released chan struct{}
	// written is an acks=0 proposal's answer, sent once it is written.
	written Completion
}

type apply struct {
	state LeaderAndISR
	res   chan error
}

// StartNode starts r's loop over its log l (the Storage r reads) and
// transport tr. Close stops it.
func StartNode(r *Replica, l LogWriter, tr Transport, opts NodeOptions) *Node {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	n := &Node{
		r: r, log: l, tr: tr, opts: opts,
		stepc:   make(chan Message, 256),
		propc:   make(chan proposal),
		applyc:  make(chan apply),
		rejectc: make(chan ISRChange),
		statusc: make(chan chan Status),
		minISRc: make(chan int),
		stopc:   make(chan struct{}),
		donec:   make(chan struct{}),
	}
	n.hw.Store(r.HighWatermark())
	go n.run()
	return n
}

// maxProposalsPerTurn bounds the proposals one turn of the loop takes
// before it carries out their Ready, for a leader without followers.
const maxProposalsPerTurn = 256

// proposalsPerTurn is how many proposals one turn of the loop may take:
// maxProposalsPerTurn for a leader that is its partition's only replica,
// and one for a leader with followers.
func (n *Node) proposalsPerTurn() int {
	if n.r.role == RoleLeader && len(n.r.state.Replicas) == 1 {
		return maxProposalsPerTurn
	}
	return 1
}

// run is the loop: one input (or, for a leader without followers, every
// proposal waiting, up to maxProposalsPerTurn), then every Ready.
func (n *Node) run() {
	defer close(n.donec)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ticker := time.NewTicker(n.r.opts.TickInterval)
	defer ticker.Stop()
	waiting := map[uint64]chan Completion{}
	// held are the proposals accepted since the last turn's Readies were
	// carried out: their batches are in the replica's unstable appends.
	var held []proposal
	// applied is the Apply of this turn, answered after its Readies.
	var applied *apply
	var appliedErr error
	var failure error // the log write failure that stopped the loop
	defer func() {
		err := fmt.Errorf("%w: %w", kafka.ErrNotLeaderOrFollower, ErrClosed)
		if failure != nil {
			err = fmt.Errorf("%w: %w", kafka.ErrKafkaStorage, failure)
		}
		for _, res := range waiting {
			res <- Completion{Err: err}
		}
		release(held, n.err)
		if failure != nil && n.opts.OnStop != nil {
			n.opts.OnStop(failure)
		}
	}()
	propose := func(p proposal) {
		prop, err := n.r.Propose(p.batch, p.acks)
		switch {
		case err != nil:
			p.res <- Completion{Err: err}
			close(p.released)
		case prop.ID == 0: // acks=0: answered once written, below
			p.written = Completion{BaseOffset: prop.BaseOffset, LastOffset: prop.LastOffset}
			held = append(held, p)
		default:
			waiting[prop.ID] = p.res
			held = append(held, p)
		}
	}
	for {
		select {
		case <-ticker.C:
			n.r.Tick()
		case m := <-n.stepc:
			if err := n.r.Step(m); err != nil {
				n.opts.Logger.Warn("bad message", "partition", n.r.tp.String(), "err", err)
			}
		case p := <-n.propc:
			propose(p)
			// A leader without followers takes the proposals already
			// waiting too, so that one Ready — one write and one sync —
			// carries them all: group commit. One with followers takes one
			// proposal a turn, so that its followers' fetches interleave
			// with the appends: taking every waiting proposal let a busy
			// leader run ahead of every fetch until its followers left the
			// ISR (TestClusterProcessesKillLeader, under load).
			for more := n.proposalsPerTurn() - 1; more > 0; more-- {
				select {
				case p := <-n.propc:
					propose(p)
					continue
				default:
				}
				break
			}
		case a := <-n.applyc:
			// Answered once this turn's Readies are carried out, so that
			// the caller finds the new role's high watermark published.
			applied, appliedErr = &a, n.r.Apply(a.state)
		case c := <-n.rejectc:
			n.r.RejectISRChange(c)
		case res := <-n.statusc:
			res <- n.r.Status()
		case v := <-n.minISRc:
			n.r.SetMinInsyncReplicas(v)
		case <-n.stopc:
			n.err = ErrClosed
			return
		}
		for n.r.HasReady() {
			if err := n.handleReady(ctx, waiting); err != nil {
				failure = err
				n.err = fmt.Errorf("%w: %w", ErrClosed, err)
				n.opts.Logger.Error("replica stopped", "partition", n.r.tp.String(), "err", err)
				return
			}
		}
		// Every Ready is carried out: the appends proposed this turn are
		// written (or were dropped), and their batches are the callers'
		// again.
		release(held, nil)
		held = held[:0]
		if applied != nil {
			applied.res <- appliedErr
			applied = nil
		}
	}
}

// release hands proposals' batches back to their callers once the loop is
// done with them, answering acks=0 ones: with err if the loop stopped
// before writing them.
func release(ps []proposal, err error) {
	for _, p := range ps {
		if p.acks == kafka.AcksNone {
			if err != nil {
				p.res <- Completion{Err: err}
			} else {
				p.res <- p.written
			}
		}
		close(p.released)
	}
}

// handleReady carries out one Ready, in the order the package
// documentation gives.
func (n *Node) handleReady(ctx context.Context, waiting map[uint64]chan Completion) error {
	rd := n.r.Ready()
	if err := rd.Persist(n.log); err != nil {
		return err
	}
	for _, m := range rd.Messages {
		if err := n.tr.Send(ctx, m.To, m); err != nil {
			n.opts.Logger.Debug("send failed", "partition", n.r.tp.String(), "to", m.To, "err", err)
		}
	}
	if rd.HighWatermark >= 0 {
		n.hw.Store(rd.HighWatermark)
		if n.opts.OnHighWatermark != nil {
			n.opts.OnHighWatermark(rd.HighWatermark)
		}
	}
	if rd.AlterPartition != nil && n.opts.OnAlterPartition != nil {
		n.opts.OnAlterPartition(*rd.AlterPartition)
	}
	for _, c := range rd.Completed {
		if res, ok := waiting[c.ID]; ok {
			res <- c
			delete(waiting, c.ID)
		}
	}
	return n.r.Advance()
}

// send hands v to the loop on c, or fails when the Node stopped or ctx
// ended.
func send[T any](ctx context.Context, n *Node, c chan T, v T) error {
	select {
	case c <- v:
		return nil
	case <-n.donec:
		return n.Err()
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Step passes a message from another node to the replica, which keeps its
// records until it has written them (see Replica.Step): the caller hands
// m's bytes over and must not reuse them.
func (n *Node) Step(ctx context.Context, m Message) error { return send(ctx, n, n.stepc, m) }

// Propose appends batch as the leader and waits for its Completion: with
// acks=1 until it is written, with acks=all until the high watermark
// passes it, with acks=0 until it is written. Errors are Propose's, the Completion's, ctx's, or
// ErrClosed; a Completion whose error is nil is an acknowledgement.
//
// The Node borrows batch until Propose returns: it rewrites the batch's
// base offset and leader epoch in place and writes it from the caller's
// bytes. Propose does not return, not even when ctx ends, while the
// Node may still read them; once it has returned, the caller may reuse
// batch.
func (n *Node) Propose(ctx context.Context, batch []byte, acks kafka.Acks) (Completion, error) {
	p := proposal{batch: batch, acks: acks, res: make(chan Completion, 1), released: make(chan struct{})}
	if err := send(ctx, n, n.propc, p); err != nil {
		return Completion{}, err
	}
	select {
	case c := <-p.res:
		<-p.released
		return c, c.Err
	case <-ctx.Done():
		<-p.released // a write in progress ends soon; the caller reuses batch after
		return Completion{}, ctx.Err()
	}
}

// Apply passes the controller's state to the replica and returns
// Replica.Apply's error, once the Ready the state made is carried out: a
// new leader's high watermark is published (OnHighWatermark) before Apply
// returns.
func (n *Node) Apply(ctx context.Context, s LeaderAndISR) error {
	res := make(chan error, 1)
	if err := send(ctx, n, n.applyc, apply{state: s, res: res}); err != nil {
		return err
	}
	select {
	case err := <-res:
		return err
	case <-n.donec:
		select {
		case err := <-res:
			return err
		default:
			return n.Err()
		}
	case <-ctx.Done():
		return ctx.Err()
	}
}

// RejectISRChange tells the replica the controller refused c.
func (n *Node) RejectISRChange(ctx context.Context, c ISRChange) error {
	return send(ctx, n, n.rejectc, c)
}

// SetMinInsyncReplicas changes the replica's min.insync.replicas, as a
// topic config change does: see Replica.SetMinInsyncReplicas.
func (n *Node) SetMinInsyncReplicas(ctx context.Context, v int) error {
	return send(ctx, n, n.minISRc, v)
}

// Status returns the replica's state.
func (n *Node) Status(ctx context.Context) (Status, error) {
	res := make(chan Status, 1)
	if err := send(ctx, n, n.statusc, res); err != nil {
		return Status{}, err
	}
	select {
	case s := <-res:
		return s, nil
	case <-ctx.Done():
		return Status{}, ctx.Err()
	}
}

// HighWatermark returns the last high watermark the Node published.
func (n *Node) HighWatermark() int64 { return n.hw.Load() }

// Err returns why the Node stopped: nil while it runs, ErrClosed after
// Close, or ErrClosed wrapping the log write failure that stopped it.
func (n *Node) Err() error {
	select {
	case <-n.donec:
		return n.err
	default:
		return nil
	}
}

// Close stops the loop and waits for it. Appends still waiting fail with
// ErrClosed. It does not close the log.
func (n *Node) Close() error {
	n.stopOnce.Do(func() { close(n.stopc) })
	<-n.donec
	if errors.Is(n.err, ErrClosed) && n.err != ErrClosed {
		return n.err
	}
	return nil
}
