// Package memnet is an in-memory network between the brokers of a cluster
// in one process, for examples and tests: brokers attach to it under
// their node ids, replica messages between them are handed over in memory,
// and clients reach them at "mem:<node id>" addresses through a
// transport.ClusterClient, as they would over TCP.
//
// Faults are named as package replicatest names them: Cut and Heal one
// direction of a link, Partition cuts both, Isolate cuts a node off from
// every other, HealAll restores every link. The network reaches only the
// brokers; a node's calls to its controller are not cut (the controller
// fences a node whose heartbeats stop, not one whose peers cannot reach
// it).
package memnet

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/replica"
	"github.com/partlog/partlog/transport"
)

// Endpoint is a broker on the network: the Kafka requests it answers, and
// the replica messages it takes from its peers.
type Endpoint interface {
	transport.Client
	transport.ProducerIDClient
	transport.GroupClient
	transport.TxnClient
	// StepReplicas hands msgs, sent by another broker, to the replicas
	// they are for. The endpoint owns msgs and the bytes they hold.
	StepReplicas(ctx context.Context, msgs []replica.Message) error
}

// Network is an in-memory network. It is safe for concurrent use.
type Network struct {
	mu       sync.Mutex
	nodes    map[int32]Endpoint
	cut      map[[2]int32]bool // from, to
	isolated map[int32]bool
}

// New returns a network with no brokers and every link up.
func New() *Network {
	return &Network{nodes: map[int32]Endpoint{}, cut: map[[2]int32]bool{}, isolated: map[int32]bool{}}
}

// Address is the address of node id on a Network, as Metadata answers
// name it and Connect resolves it.
func Address(id int32) string { return fmt.Sprintf("mem:%d", id) }

// Attach puts e on the network as node id, in place of any endpoint
// there before.
func (n *Network) Attach(id int32, e Endpoint) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.nodes[id] = e
}

// Detach takes e off the network, if it is still node id there.
func (n *Network) Detach(id int32, e Endpoint) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.nodes[id] == e {
		delete(n.nodes, id)
	}
}

// Cut drops what from sends to to, until Heal(from, to) or HealAll.
func (n *Network) Cut(from, to int32) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.cut[[2]int32{from, to}] = true
}

// Heal restores what Cut(from, to) dropped.
func (n *Network) Heal(from, to int32) {
	n.mu.Lock()
	defer n.mu.Unlock()
	delete(n.cut, [2]int32{from, to})
}

// Partition cuts the link between a and b, both ways.
func (n *Network) Partition(a, b int32) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.cut[[2]int32{a, b}] = true
	n.cut[[2]int32{b, a}] = true
}

// Isolate cuts node id off from every other broker, until HealAll.
func (n *Network) Isolate(id int32) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.isolated[id] = true
}

// HealAll restores every link.
func (n *Network) HealAll() {
	n.mu.Lock()
	defer n.mu.Unlock()
	clear(n.cut)
	clear(n.isolated)
}

// Send delivers msgs from node from to node to, or fails with
// kafka.ErrNetwork when to is not on the network or the link is cut. The
// receiver gets its own copy of the record bytes, as over a wire; Send
// does not keep msgs.
func (n *Network) Send(ctx context.Context, from, to int32, msgs []replica.Message) error {
	n.mu.Lock()
	e := n.nodes[to]
	cut := n.cut[[2]int32{from, to}] || n.isolated[from] || n.isolated[to]
	n.mu.Unlock()
	if e == nil || cut {
		return fmt.Errorf("%w: node %d is unreachable from %d", kafka.ErrNetwork, to, from)
	}
	for i := range msgs {
		if r := msgs[i].FetchResponse; r != nil && len(r.Records) > 0 {
			c := *r
			c.Records = append([]byte(nil), r.Records...)
			msgs[i].FetchResponse = &c
		}
	}
	return e.StepReplicas(ctx, msgs)
}

// Connect returns a client of the broker at addr ("mem:<node id>"), for a
// transport.ClusterClient over the network (transport.NewClusterClient).
// Closing the client leaves the broker open.
func (n *Network) Connect(_ context.Context, addr string) (transport.NodeClient, error) {
	var id int32
	if _, err := fmt.Sscanf(addr, "mem:%d", &id); err != nil {
		return nil, fmt.Errorf("%w: %q is not an in-memory address", kafka.ErrNetwork, addr)
	}
	c := client{n, id}
	if _, err := c.endpoint(); err != nil {
		return nil, err
	}
	return c, nil
}

// Client returns a client of the whole cluster on the network, which
// sends each partition's requests to its leader and follows leadership as
// it moves, as a Kafka client does: give it to producer.New and
// consumer.New. Close it when done.
func (n *Network) Client(ctx context.Context) (*transport.ClusterClient, error) {
	n.mu.Lock()
	var addrs []string
	for id := range n.nodes {
		addrs = append(addrs, Address(id))
	}
	n.mu.Unlock()
	return transport.NewClusterClient(ctx, addrs, n.Connect)
}

// client is a broker's address on the network as a ClusterClient's node.
// Each call goes to the endpoint at that id now, as a TCP client
// reconnects to whatever serves its address: a broker that closed is
// unreachable (kafka.ErrNetwork, which a client retries elsewhere), and
// the broker opened again in its place is reached again.
type client struct {
	net *Network
	id  int32
}

// Close does nothing: the broker stays open.
func (client) Close() error { return nil }

// endpoint returns the endpoint on the network at the client's id.
func (c client) endpoint() (Endpoint, error) {
	c.net.mu.Lock()
	e := c.net.nodes[c.id]
	c.net.mu.Unlock()
	if e == nil {
		return nil, fmt.Errorf("%w: node %d is not on the network", kafka.ErrNetwork, c.id)
	}
	return e, nil
}

// call calls a method of the client's endpoint; a closed broker
// (kafka.ErrClosed) is unreachable here (kafka.ErrNetwork).
func call[Req, Resp any](ctx context.Context, c client, req Req, method func(Endpoint, context.Context, Req) (Resp, error)) (Resp, error) {
	var zero Resp
	e, err := c.endpoint()
	if err != nil {
		return zero, err
	}
	resp, err := method(e, ctx, req)
	if errors.Is(err, kafka.ErrClosed) {
		return zero, fmt.Errorf("%w: %w", kafka.ErrNetwork, err)
	}
	return resp, err
}
