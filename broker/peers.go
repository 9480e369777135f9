package broker

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/partlog/partlog/internal/bufpool"
	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/replica"
	"github.com/partlog/partlog/transport"
	"github.com/partlog/partlog/transport/memnet"
)

// peerNetwork delivers a batch of replica messages from one node to
// another: in process (MemNetwork) or over TCP. Delivery may fail or lose
// messages; the replicas recover.
type peerNetwork interface {
	deliver(ctx context.Context, from, to int32, addr string, msgs []replica.Message) error
	close()
}

// outbox sends a node's replica messages, batched per destination as
// Kafka's fetcher threads batch a source broker's partitions into one
// Fetch: one sender goroutine per destination takes every message queued
// for it since its last send and delivers them as one request. It is the
// replica.Transport of every replica on the node.
type outbox struct {
	from  int32
	net   peerNetwork
	addrs func(id int32) string
	// failed is told when deliveries to a destination start failing, and
	// why: it may have restarted at another address, which the metadata
	// will tell, or refused this node.
	failed func(to int32, err error)
	ctx    context.Context // ends at close: deliveries in progress stop
	cancel context.CancelFunc

	mu      sync.Mutex
	closed  bool
	senders map[int32]*sender
	wg      sync.WaitGroup
}

// sender is the queue of one destination.
type sender struct {
	mu     sync.Mutex
	queue  []replica.Message
	wake   chan struct{}
	closed bool
}

// maxQueued bounds a destination's queue: past it new messages are
// dropped, as a lossy transport may (the replicas re-send on timeout).
const maxQueued = 4096

func newOutbox(from int32, net peerNetwork, addrs func(int32) string, failed func(to int32, err error)) *outbox {
	ctx, cancel := context.WithCancel(context.Background())
	return &outbox{from: from, net: net, addrs: addrs, failed: failed, ctx: ctx, cancel: cancel, senders: map[int32]*sender{}}
}

// heldFor is how long messages whose delivery failed wait for their
// destination's new address (a node restarted elsewhere) or for more
// messages to the destination, to go with them, before they are dropped.
// A fetch answer lost instead holds its follower for its whole
// FetchTimeout.
const heldFor = 5 * time.Second

// Send queues m for node to; it never blocks on the network. m is queued
// as it is, not copied: its bytes (a fetch answer's records, which the
// leader read into a buffer of their own) must stay unchanged until it is
// delivered or dropped, and no replica touches them again. Over TCP the
// delivery gives a fetch answer's buffer back to the node's pool once it
// was written (tcpPeers.deliver); a batch that is dropped leaves its
// buffers to the collector.
func (o *outbox) Send(_ context.Context, to int32, m replica.Message) error {
	o.mu.Lock()
	if o.closed {
		o.mu.Unlock()
		return ErrClosed
	}
	s := o.senders[to]
	if s == nil {
		s = &sender{wake: make(chan struct{}, 1)}
		o.senders[to] = s
		o.wg.Go(func() { o.run(to, s) })
	}
	o.mu.Unlock()
	// The wake-up goes under s.mu, after a look at s.closed: close closes
	// wake once it has set closed, and Send may race with it (a request
	// from another node answered while this one closes).
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	if len(s.queue) >= maxQueued {
		return fmt.Errorf("%w: the queue to node %d is full", kafka.ErrNetwork, to)
	}
	s.queue = append(s.queue, m)
	select {
	case s.wake <- struct{}{}:
	default:
	}
	return nil
}

// run delivers a destination's queue until close.
func (o *outbox) run(to int32, s *sender) {
	ctx := o.ctx
	var heldUntil time.Time // while deliveries fail: when what failed first is dropped
	for range s.wake {
		for {
			s.mu.Lock()
			batch := s.queue
			s.queue = nil
			closed := s.closed
			s.mu.Unlock()
			if closed {
				return
			}
			if len(batch) == 0 {
				break
			}
			addr := o.addrs(to)
			dctx, dcancel := context.WithTimeout(ctx, 10*time.Second)
			err := o.net.deliver(dctx, o.from, to, addr, batch)
			dcancel()
			if err == nil {
				heldUntil = time.Time{}
				break
			}
			if heldUntil.IsZero() { // the first failure of a run
				heldUntil = time.Now().Add(heldFor)
				if o.failed != nil {
					o.failed(to, err)
				}
			}
			if !o.hold(to, s, addr, batch, heldUntil) {
				heldUntil = time.Time{}
				break
			}
		}
	}
}

// hold keeps a batch whose delivery to addr failed until the destination
// has a new address or more messages are queued for it, and then queues
// it again in front of them and returns true; at deadline (heldFor after
// the first of a run of failures), or once the outbox closes, it returns
// false and the batch is lost: the replicas fetch again after FetchTimeout
// or FetchBackoff. Replicas take repeated and late messages in their
// stride. It checks every 50 ms, so that a node that is down is not
// hammered.
func (o *outbox) hold(to int32, s *sender, addr string, batch []replica.Message, deadline time.Time) bool {
	t := time.NewTicker(50 * time.Millisecond)
	defer t.Stop()
	for time.Now().Before(deadline) {
		select {
		case <-t.C:
		case <-o.ctx.Done():
			return false
		}
		moved := o.addrs(to) != addr
		s.mu.Lock()
		if len(s.queue) > 0 || moved {
			s.queue = append(batch, s.queue...)
			s.mu.Unlock()
			return true
		}
		s.mu.Unlock()
	}
	return false
}

// close stops every sender and waits for them.
func (o *outbox) close() {
	o.mu.Lock()
	o.closed = true
	senders := o.senders
	o.mu.Unlock()
	o.cancel()
	for _, s := range senders {
		s.mu.Lock()
		s.closed = true
		s.mu.Unlock()
		close(s.wake)
	}
	o.wg.Wait()
}

// memPeers delivers over an in-memory network.
type memPeers struct{ net *memnet.Network }

func (p memPeers) deliver(ctx context.Context, from, to int32, _ string, msgs []replica.Message) error {
	return p.net.Send(ctx, from, to, msgs)
}

func (memPeers) close() {}

// tcpPeers delivers replica messages over TCP, to the address each node
// registered with the controller.
type tcpPeers struct {
	// answers takes back the records of fetch answers once delivered
	// (see clusterMember.answers).
	answers *bufpool.Pool
	// dial are the options peers are dialled with (TLS and SASL).
	dial transport.DialOptions

	mu      sync.Mutex
	clients map[int32]*tcpPeer
}

type tcpPeer struct {
	addr   string
	client *transport.TCPClient
}

func newTCPPeers(answers *bufpool.Pool, dial transport.DialOptions) *tcpPeers {
	return &tcpPeers{answers: answers, dial: dial, clients: map[int32]*tcpPeer{}}
}

func (t *tcpPeers) deliver(ctx context.Context, _, to int32, addr string, msgs []replica.Message) error {
	if addr == "" {
		return fmt.Errorf("%w: no address known for node %d", kafka.ErrNetwork, to)
	}
	t.mu.Lock()
	p := t.clients[to]
	if p != nil && p.addr != addr {
		p.client.Close()
		delete(t.clients, to)
		p = nil
	}
	t.mu.Unlock()
	if p == nil {
		cl, err := transport.Dial(ctx, addr, transport.DialOptions{ClientID: "partlog-replica", DialTimeout: 2 * time.Second, TLS: t.dial.TLS, SASL: t.dial.SASL})
		if err != nil {
			return err
		}
		t.mu.Lock()
		if q := t.clients[to]; q != nil {
			cl.Close()
			p = q
		} else {
			p = &tcpPeer{addr: addr, client: cl}
			t.clients[to] = p
		}
		t.mu.Unlock()
	}
	// Encoded straight into the request: a fetch answer's records are
	// copied once, not into a buffer of their own first.
	_, err := p.client.CallInternalAppend(ctx, transport.APIReplicaMessages,
		func(dst []byte) []byte { return replica.AppendMessages(dst, msgs) })
	if err != nil {
		return err // the outbox may send msgs again: their records stay
	}
	// Written to the connection and answered: nothing reads the fetch
	// answers' records any more (the outbox drops a delivered batch).
	for _, m := range msgs {
		if m.Type == replica.MsgFetchResponse && m.FetchResponse != nil && t.answers != nil {
			t.answers.Put(m.FetchResponse.Records)
		}
	}
	return nil
}

func (t *tcpPeers) close() {
	t.mu.Lock()
	defer t.mu.Unlock()
	for id, p := range t.clients {
		p.client.Close()
		delete(t.clients, id)
	}
}
