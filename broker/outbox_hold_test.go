package broker

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/replica"
)

// movingNetwork fails deliveries to every address but the one node 2 is
// at now, as a node restarted at another port would.
type movingNetwork struct {
	mu   sync.Mutex
	addr string // where node 2 is
	got  chan delivered
}

type delivered struct {
	addr string
	msgs []replica.Message
	err  error
}

func (n *movingNetwork) where(int32) string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.addr
}

func (n *movingNetwork) move(addr string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.addr = addr
}

func (n *movingNetwork) deliver(_ context.Context, _, _ int32, addr string, msgs []replica.Message) error {
	var err error
	if addr == "old" {
		err = errors.New("connection refused")
	}
	n.got <- delivered{addr, append([]replica.Message(nil), msgs...), err}
	return err
}

func (n *movingNetwork) close() {}

// A fetch answer the outbox failed to deliver to a node's old address is
// sent again once the metadata gives the node's new one, rather than lost
// (which would hold the follower for its FetchTimeout); the outbox asks
// for the metadata when deliveries start failing.
func TestOutboxHoldsFailedBatchForNewAddress(t *testing.T) {
	net := &movingNetwork{addr: "old", got: make(chan delivered, 8)}
	refreshed := make(chan struct{}, 8)
	o := newOutbox(1, net, net.where, func(int32, error) { refreshed <- struct{}{} })
	defer o.close()
	answer := replica.Message{Type: replica.MsgFetchResponse, From: 1, To: 2, Seq: 7,
		FetchResponse: &kafka.ReplicaFetchPartitionResponse{Topic: "t", Partition: 0}}
	require.NoError(t, o.Send(context.Background(), 2, answer))

	first := <-net.got
	require.Equal(t, "old", first.addr)
	require.Error(t, first.err)
	<-refreshed // the node asks for the metadata at once
	net.move("new")
	again := <-net.got
	require.Equal(t, "new", again.addr, "the held answer goes to the new address")
	require.NoError(t, again.err)
	require.Equal(t, []replica.Message{answer}, again.msgs)
	require.Empty(t, refreshed, "one refresh for the run of failures")
}

// Messages queued while a failed batch is held go out with it, after it.
func TestOutboxHeldBatchGoesFirst(t *testing.T) {
	net := &movingNetwork{addr: "old", got: make(chan delivered, 8)}
	o := newOutbox(1, net, net.where, nil)
	defer o.close()
	msg := func(seq uint64) replica.Message {
		return replica.Message{Type: replica.MsgFetchResponse, From: 1, To: 2, Seq: seq,
			FetchResponse: &kafka.ReplicaFetchPartitionResponse{Topic: "t", Partition: 0}}
	}
	ctx := context.Background()
	require.NoError(t, o.Send(ctx, 2, msg(1)))
	require.Error(t, (<-net.got).err)
	net.move("new")
	require.NoError(t, o.Send(ctx, 2, msg(2)))
	var seqs []uint64
	for len(seqs) < 2 {
		d := <-net.got
		require.NoError(t, d.err)
		for _, m := range d.msgs {
			seqs = append(seqs, m.Seq)
		}
	}
	require.Equal(t, []uint64{1, 2}, seqs)
}
