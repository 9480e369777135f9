package broker

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/partlog/partlog/internal/nodehooks"
	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/record"
	"github.com/partlog/partlog/replica"
	"github.com/partlog/partlog/transport"
	"github.com/partlog/partlog/transport/memnet"
	"github.com/partlog/partlog/txn"
)

// markerTimeout bounds the writing of one transaction's markers.
const markerTimeout = 10 * time.Second

// writeMarkers writes mw's marker to each of its partitions — appended
// here to those this node leads, sent in one WriteTxnMarkers to each
// other leader — and returns each partition's outcome.
func (n *Broker) writeMarkers(mw txn.MarkerWrite) []txn.MarkerResult {
	ctx, cancel := context.WithTimeout(context.Background(), markerTimeout)
	defer cancel()
	md, _ := n.member.metadata()
	results := make([]txn.MarkerResult, len(mw.Partitions))
	remote := map[int32][]int{} // leader -> indexes into results
	for i, tp := range mw.Partitions {
		results[i].Partition = tp
		if err := n.txnStepFault(func() nodehooks.TxnStep { return nodehooks.TxnStep{Marker: tp, IsMarker: true} }); err != nil {
			results[i].Err = err
			continue
		}
		t, ok := md.Topics[tp.Topic]
		if !ok || tp.Partition < 0 || int(tp.Partition) >= len(t.Partitions) {
			results[i].Err = fmt.Errorf("%w: %s", txn.ErrPartitionDeleted, tp)
			continue
		}
		switch leader := t.Partitions[tp.Partition].Leader; leader {
		case n.meta.NodeID:
			results[i].Err = n.appendMarker(ctx, tp, mw.ProducerID, mw.ProducerEpoch, mw.CoordinatorEpoch, mw.Result == txn.Commit)
		case replica.NoLeader:
			results[i].Err = fmt.Errorf("%w: %s has no leader", kafka.ErrLeaderNotAvailable, tp)
		default:
			remote[leader] = append(remote[leader], i)
		}
	}
	for leader, idx := range remote {
		n.sendMarkers(ctx, leader, mw, idx, results)
	}
	return results
}

// sendMarkers sends mw's marker for the partitions results[idx] to node
// leader and fills in their outcomes.
func (n *Broker) sendMarkers(ctx context.Context, leader int32, mw txn.MarkerWrite, idx []int, results []txn.MarkerResult) {
	fail := func(err error) {
		for _, i := range idx {
			results[i].Err = err
		}
	}
	c, err := n.member.nodeClient(ctx, leader)
	if err != nil {
		fail(err)
		return
	}
	m := transport.TxnMarker{ProducerID: mw.ProducerID, ProducerEpoch: mw.ProducerEpoch, CoordinatorEpoch: mw.CoordinatorEpoch,
		Result: transport.TxnResult(mw.Result == txn.Commit)}
	for _, i := range idx {
		m.Partitions = append(m.Partitions, results[i].Partition)
	}
	resp, err := c.WriteTxnMarkers(ctx, &transport.WriteTxnMarkersRequest{Markers: []transport.TxnMarker{m}})
	if err != nil {
		n.member.forgetNodeClient(leader)
		fail(fmt.Errorf("%w: WriteTxnMarkers to node %d: %v", kafka.ErrRequestTimedOut, leader, err))
		return
	}
	answered := map[kafka.TopicPartition]error{}
	for _, mr := range resp.Markers {
		for _, pr := range mr.Partitions {
			answered[pr.TopicPartition] = pr.Err
		}
	}
	for _, i := range idx {
		err, ok := answered[results[i].Partition]
		if !ok {
			err = fmt.Errorf("%w: node %d did not answer for %s", kafka.ErrRequestTimedOut, leader, results[i].Partition)
		}
		results[i].Err = err
	}
}

// appendMarker appends a transaction's COMMIT or ABORT marker to tp,
// which this node must lead, as an acks=all write; a marker that reaches
// a partition of __consumer_offsets also ends the transaction's pending
// offsets there.
func (n *Broker) appendMarker(ctx context.Context, tp kafka.TopicPartition, producerID int64, producerEpoch int16, coordinatorEpoch int32, commit bool) error {
	h, err := n.leaderReplica(tp.Topic, tp.Partition)
	if err != nil {
		return err
	}
	typ := record.ControlAbort
	if commit {
		typ = record.ControlCommit
	}
	batch := record.ControlBatch(typ, producerID, producerEpoch, coordinatorEpoch, n.opts.Now().UnixMilli())
	if _, _, err := n.appendReplicated(ctx, h, batch, kafka.AcksAll, markerTimeout); err != nil {
		return err
	}
	if tp.Topic == kafka.OffsetsTopic {
		if c := n.groups.loadedCoordinator(); c != nil {
			c.CompleteTxn(tp.Partition, producerID, commit)
		}
	}
	return nil
}

// nodeClients are a member's clients of other nodes, for the requests a
// node sends another as a Kafka client would (WriteTxnMarkers).
type nodeClients struct {
	mu      sync.Mutex
	clients map[int32]*nodeClient
}

// nodeClient is a TCP client of a node at an address.
type nodeClient struct {
	addr   string
	client *transport.TCPClient
}

// nodeClient returns a client of node id: over the in-memory network the
// member is on, or over TCP at the address the node registered (kept for
// the next call).
func (m *clusterMember) nodeClient(ctx context.Context, id int32) (transport.TxnClient, error) {
	if m.opts.network != nil {
		c, err := m.opts.network.Connect(ctx, memnet.Address(id))
		if err != nil {
			return nil, err
		}
		return c.(transport.TxnClient), nil
	}
	addr := m.address(id)
	if addr == "" {
		return nil, fmt.Errorf("%w: no address known for node %d", kafka.ErrNetwork, id)
	}
	m.peers.mu.Lock()
	defer m.peers.mu.Unlock()
	if c := m.peers.clients[id]; c != nil && c.addr == addr {
		return c.client, nil
	}
	c, err := transport.Dial(ctx, addr, transport.DialOptions{ClientID: "partlog-txn-markers", DialTimeout: 2 * time.Second, TLS: m.n.opts.PeerTLS, SASL: m.n.opts.PeerSASL})
	if err != nil {
		return nil, err
	}
	if old := m.peers.clients[id]; old != nil {
		old.client.Close()
	}
	if m.peers.clients == nil {
		m.peers.clients = map[int32]*nodeClient{}
	}
	m.peers.clients[id] = &nodeClient{addr: addr, client: c}
	return c, nil
}

// forgetNodeClient closes the client of node id, after a failed call.
func (m *clusterMember) forgetNodeClient(id int32) {
	m.peers.mu.Lock()
	defer m.peers.mu.Unlock()
	if c := m.peers.clients[id]; c != nil {
		c.client.Close()
		delete(m.peers.clients, id)
	}
}

// closeNodeClients closes every client of other nodes.
func (m *clusterMember) closeNodeClients() {
	m.peers.mu.Lock()
	defer m.peers.mu.Unlock()
	for id, c := range m.peers.clients {
		c.client.Close()
		delete(m.peers.clients, id)
	}
}
