package transport

import (
	"bytes"
	"context"
	"sync"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"
)

// copyingNode is a fakeGroupNode whose Produce notes, during the call,
// a copy of each batch and where its bytes are.
type copyingNode struct {
	fakeGroupNode
	cmu     sync.Mutex
	batches [][]byte
	where   []uintptr
}

func (n *copyingNode) Produce(ctx context.Context, req *ProduceRequest) (*ProduceResponse, error) {
	n.cmu.Lock()
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			n.batches = append(n.batches, bytes.Clone(p.Records))
			n.where = append(n.where, uintptr(unsafe.Pointer(unsafe.SliceData(p.Records))))
		}
	}
	n.cmu.Unlock()
	return n.fakeNode.Produce(ctx, req)
}

func filled(size int, b byte) []byte { return bytes.Repeat([]byte{b}, size) }

// TestServerReusesProduceFrames: large produce requests are read into
// reused memory (the second request's records are where the first's
// were), and each handler call sees exactly the bytes sent.
func TestServerReusesProduceFrames(t *testing.T) {
	n := &copyingNode{fakeGroupNode: fakeGroupNode{resp: map[string]any{}}}
	_, addr := serve(t, n, ServerOptions{})
	c := dial(t, addr)
	ctx := context.Background()
	const size = 100 << 10
	for i := range 6 {
		_, err := c.Produce(ctx, &ProduceRequest{Acks: 1, Topics: []ProduceTopic{{Topic: "t",
			Partitions: []ProducePartition{{Partition: 0, Records: filled(size, byte('a'+i))}}}}})
		require.NoError(t, err)
	}
	n.cmu.Lock()
	defer n.cmu.Unlock()
	require.Len(t, n.batches, 6)
	for i, b := range n.batches {
		require.Equal(t, filled(size, byte('a'+i)), b, "batch %d as the handler saw it", i)
	}
	seen := map[uintptr]bool{}
	reused := false
	for _, w := range n.where {
		reused = reused || seen[w]
		seen[w] = true
	}
	require.True(t, reused, "no produce frame was read into memory used before: %v", n.where)
}

// TestServerKeepsOtherFrames: the frame of a request whose handler may
// keep its bytes (here a JoinGroup's protocol metadata) is never reused,
// however many large produce requests follow.
func TestServerKeepsOtherFrames(t *testing.T) {
	n := &copyingNode{fakeGroupNode: fakeGroupNode{resp: map[string]any{}}}
	_, addr := serve(t, n, ServerOptions{})
	c := dial(t, addr)
	ctx := context.Background()
	const size = 100 << 10
	meta := filled(size, 'm')
	_, err := c.JoinGroup(ctx, &JoinGroupRequest{Group: "g", ProtocolType: "consumer",
		Protocols: []JoinGroupProtocol{{Name: "range", Metadata: meta}}})
	require.NoError(t, err)
	for i := range 6 {
		_, err := c.Produce(ctx, &ProduceRequest{Acks: 1, Topics: []ProduceTopic{{Topic: "t",
			Partitions: []ProducePartition{{Partition: 0, Records: filled(size, byte('a'+i))}}}}})
		require.NoError(t, err)
	}
	join := n.fakeGroupNode.got[0].(*JoinGroupRequest)
	require.Equal(t, meta, join.Protocols[0].Metadata, "the kept JoinGroup metadata changed")
}
