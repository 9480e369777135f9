package transport

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"sync"
	"testing"

	"github.com/partlog/partlog/kafka"
	"github.com/stretchr/testify/require"
)

// internalNode is a fakeNode that answers the internal API keys: with the
// key (2 bytes) and then the body, or, for the bodies below, an error or a
// call that waits.
type internalNode struct {
	*fakeNode
	// started gets a value when a "block" call arrives; release ends it.
	started chan struct{}
	release chan struct{}

	mu     sync.Mutex
	bodies [][]byte // every body the handler took, kept as given
}

func newInternalNode() *internalNode {
	return &internalNode{fakeNode: &fakeNode{}, started: make(chan struct{}, 1), release: make(chan struct{})}
}

func (n *internalNode) HandleInternal(ctx context.Context, key int16, body []byte) ([]byte, error) {
	n.mu.Lock()
	n.bodies = append(n.bodies, body)
	n.mu.Unlock()
	switch string(body) {
	case "not leader":
		return []byte("dropped"), fmt.Errorf("%w: t-0 is led by node 2", kafka.ErrNotLeaderOrFollower)
	case "boom":
		return nil, errors.New("controller: boom")
	case "block":
		n.started <- struct{}{}
		select {
		case <-n.release:
			return []byte("released"), nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return echo(key, body), nil
}

// echo is what internalNode answers to body under key.
func echo(key int16, body []byte) []byte {
	return append([]byte{byte(uint16(key) >> 8), byte(key)}, body...)
}

// randomBytes returns n bytes from a seeded source.
func randomBytes(seed uint64, n int) []byte {
	r := rand.New(rand.NewPCG(seed, seed))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// TestInternalRoundTrip checks that bodies of 0, 1 byte and 4 MiB reach
// the handler exactly and that its answers come back exactly, under both
// keys, given whole (CallInternal) or appended (CallInternalAppend); that the server advertises both keys in version 0; and that the
// handler may keep the bodies it was given (the server does not reuse
// their bytes for later frames).
func TestInternalRoundTrip(t *testing.T) {
	n := newInternalNode()
	s, addr := serve(t, n, ServerOptions{})
	for _, key := range []int16{APIReplicaMessages, APIController} {
		rng, ok := findRange(s.apis, key)
		require.True(t, ok, "%s advertised", apiName(key))
		require.Equal(t, apiRange{key: key, min: 0, max: 0}, rng)
	}
	c := dial(t, addr)
	ctx := context.Background()
	var sent [][]byte
	for i, size := range []int{0, 1, 4 << 20, 1, 0} {
		for _, key := range []int16{APIReplicaMessages, APIController} {
			body := randomBytes(uint64(i), size)
			answer, err := c.CallInternal(ctx, key, body)
			require.NoError(t, err, "%d bytes to %s", size, apiName(key))
			require.True(t, bytes.Equal(echo(key, body), answer), "%d bytes to %s: answer differs", size, apiName(key))
			sent = append(sent, body)
			// The same body appended in place: it lands after the
			// request header, and arrives the same.
			answer, err = c.CallInternalAppend(ctx, key, func(dst []byte) []byte { return append(dst, body...) })
			require.NoError(t, err, "%d bytes appended to %s", size, apiName(key))
			require.True(t, bytes.Equal(echo(key, body), answer), "%d bytes appended to %s: answer differs", size, apiName(key))
			sent = append(sent, body)
		}
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	require.Len(t, n.bodies, len(sent))
	for i := range sent {
		require.True(t, bytes.Equal(sent[i], n.bodies[i]), "body %d the handler kept changed", i)
	}
}

// TestInternalHandlerError checks that a handler's error arrives as the
// sentinel of its code, with its message, that an error without a Kafka
// code arrives as UNKNOWN_SERVER_ERROR with its text, and that the
// connection carries the next call.
func TestInternalHandlerError(t *testing.T) {
	_, addr := serve(t, newInternalNode(), ServerOptions{})
	c := dial(t, addr)
	ctx := context.Background()

	answer, err := c.CallInternal(ctx, APIController, []byte("not leader"))
	require.ErrorIs(t, err, kafka.ErrNotLeaderOrFollower)
	require.True(t, kafka.IsRetriable(err))
	require.Contains(t, err.Error(), "t-0 is led by node 2")
	require.Nil(t, answer, "no answer comes with an error")
	wc := c.conns[connController]

	_, err = c.CallInternal(ctx, APIController, []byte("boom"))
	require.ErrorIs(t, err, kafka.ErrUnknownServerError)
	require.Contains(t, err.Error(), "controller: boom")

	answer, err = c.CallInternal(ctx, APIController, []byte("fine"))
	require.NoError(t, err)
	require.Equal(t, echo(APIController, []byte("fine")), answer)
	require.Same(t, wc, c.conns[connController], "the errors kept the connection open")
	require.False(t, wc.dead())
}

// TestInternalPipelined checks that many calls in flight at once on the
// two keys' connections each get their own answer, with no reconnection.
func TestInternalPipelined(t *testing.T) {
	_, addr := serve(t, newInternalNode(), ServerOptions{})
	c := dial(t, addr)
	ctx := context.Background()
	// Open both connections first, to see that the calls keep to them.
	for _, key := range []int16{APIReplicaMessages, APIController} {
		_, err := c.CallInternal(ctx, key, nil)
		require.NoError(t, err)
	}
	replicaConn, controllerConn := c.conns[connReplica], c.conns[connController]
	require.NotSame(t, replicaConn, controllerConn)

	const goroutines, calls = 16, 100
	errc := make(chan error, goroutines)
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			key := []int16{APIReplicaMessages, APIController}[g%2]
			for i := range calls {
				body := fmt.Appendf(nil, "goroutine %d call %d %s", g, i, bytes.Repeat([]byte{byte(i)}, i*37))
				answer, err := c.CallInternal(ctx, key, body)
				if err != nil {
					errc <- fmt.Errorf("goroutine %d call %d: %w", g, i, err)
					return
				}
				if !bytes.Equal(echo(key, body), answer) {
					errc <- fmt.Errorf("goroutine %d call %d: answer %q", g, i, answer[:min(len(answer), 40)])
					return
				}
			}
		})
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Error(err)
	}
	require.Same(t, replicaConn, c.conns[connReplica])
	require.Same(t, controllerConn, c.conns[connController])
}

// TestInternalUnsupported checks that a server whose handler is not an
// InternalHandler advertises neither key, that the client then fails the
// call with kafka.ErrUnsupportedVersion without sending it, and that a raw
// internal frame sent anyway makes the server close the connection. A key
// that is not internal is refused.
func TestInternalUnsupported(t *testing.T) {
	s, addr := serve(t, &fakeNode{}, ServerOptions{})
	c := dial(t, addr)
	ctx := context.Background()
	for _, key := range []int16{APIReplicaMessages, APIController} {
		_, ok := findRange(s.apis, key)
		require.False(t, ok)
		_, err := c.CallInternal(ctx, key, []byte("x"))
		require.ErrorIs(t, err, kafka.ErrUnsupportedVersion)
		require.Contains(t, err.Error(), apiName(key))
	}
	_, err := c.CallInternal(ctx, 3, []byte("x"))
	require.ErrorIs(t, err, kafka.ErrInvalidRequest)
	require.Nil(t, c.conns[connReplica], "nothing was sent")
	require.Nil(t, c.conns[connController], "nothing was sent")

	nc, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	wc := newWireConn(nc, c.fmt, 1<<20)
	defer wc.fail(kafka.ErrClosed)
	_, err = wc.request(ctx, &internalRequest{key: APIController, body: []byte("x")})
	require.ErrorIs(t, err, kafka.ErrNetwork, "the server closed the connection")

	_, err = c.Metadata(ctx, &MetadataRequest{})
	require.NoError(t, err)
}

// TestInternalBesideKafka checks that Kafka requests work on a server
// that answers internal calls, and that neither a Kafka request nor a
// replica message waits behind a controller call in progress.
func TestInternalBesideKafka(t *testing.T) {
	n := newInternalNode()
	_, addr := serve(t, n, ServerOptions{})
	c := dial(t, addr)
	ctx := context.Background()

	blocked := make(chan error, 1)
	go func() {
		answer, err := c.CallInternal(ctx, APIController, []byte("block"))
		if err == nil && string(answer) != "released" {
			err = fmt.Errorf("answer %q", answer)
		}
		blocked <- err
	}()
	<-n.started // the controller call is in the handler

	answer, err := c.CallInternal(ctx, APIReplicaMessages, []byte("heartbeat"))
	require.NoError(t, err)
	require.Equal(t, echo(APIReplicaMessages, []byte("heartbeat")), answer)
	presp, err := c.Produce(ctx, &ProduceRequest{Acks: kafka.AcksAll, Topics: []ProduceTopic{
		{Topic: "t", Partitions: []ProducePartition{{Partition: 0, Records: []byte("abc")}}},
	}})
	require.NoError(t, err)
	require.Equal(t, int64(3), presp.Topics[0].Partitions[0].BaseOffset)
	mresp, err := c.Metadata(ctx, &MetadataRequest{})
	require.NoError(t, err)
	require.Equal(t, "cluster-1", mresp.ClusterID)

	close(n.release)
	require.NoError(t, <-blocked)
}

// TestInternalServerRestart checks that a call in progress when its server
// closes fails with a retriable kafka.ErrNetwork, and that the next call, once a
// server listens on the address again, reconnects and succeeds.
func TestInternalServerRestart(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	n := newInternalNode()
	s := NewServer(n, ServerOptions{})
	go s.Serve(ln)
	c := dial(t, addr)
	ctx := context.Background()
	_, err = c.CallInternal(ctx, APIReplicaMessages, []byte("before"))
	require.NoError(t, err)

	inFlight := make(chan error, 1)
	go func() {
		_, err := c.CallInternal(ctx, APIReplicaMessages, []byte("block"))
		inFlight <- err
	}()
	<-n.started
	require.NoError(t, s.Close())
	err = <-inFlight
	require.ErrorIs(t, err, kafka.ErrNetwork)
	require.True(t, kafka.IsRetriable(err))

	ln2, err := net.Listen("tcp", addr)
	require.NoError(t, err)
	s2 := NewServer(newInternalNode(), ServerOptions{})
	go s2.Serve(ln2)
	defer s2.Close()
	answer, err := c.CallInternal(ctx, APIReplicaMessages, []byte("after"))
	require.NoError(t, err)
	require.Equal(t, echo(APIReplicaMessages, []byte("after")), answer)
}

// FuzzInternalResponse feeds arbitrary bytes to the decoder of internal
// answers: it fails or decodes, never panics, and what it decodes encodes
// back to the same bytes.
func FuzzInternalResponse(f *testing.F) {
	msg := "NOT_LEADER_OR_FOLLOWER: t-0"
	for _, r := range []*internalResponse{
		{},
		{body: []byte("answer")},
		{code: 6, msg: &msg},
		{code: -1, msg: new(string)},
	} {
		f.Add(r.AppendTo(nil))
	}
	f.Add([]byte{0, 0, 0x80, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		r := &internalResponse{key: APIController}
		if err := r.ReadFrom(b); err != nil {
			return
		}
		if got := r.AppendTo(nil); !bytes.Equal(got, b) {
			t.Fatalf("decoded %x, encoded again %x", b, got)
		}
		_ = wireError(r.code, r.msg)
	})
}

// BenchmarkCallInternal measures a CallInternal round trip on loopback,
// one call at a time and with many in flight on the connection.
func BenchmarkCallInternal(b *testing.B) {
	for _, size := range []int{100, 64 << 10} {
		for _, parallel := range []bool{false, true} {
			b.Run(fmt.Sprintf("bytes=%d/parallel=%v", size, parallel), func(b *testing.B) {
				ln, err := net.Listen("tcp", "127.0.0.1:0")
				require.NoError(b, err)
				s := NewServer(newInternalNode(), ServerOptions{})
				go s.Serve(ln)
				defer s.Close()
				c, err := Dial(context.Background(), ln.Addr().String(), DialOptions{})
				require.NoError(b, err)
				defer c.Close()
				body := randomBytes(1, size)
				b.SetBytes(int64(size))
				b.ReportAllocs()
				call := func() {
					if _, err := c.CallInternal(context.Background(), APIReplicaMessages, body); err != nil {
						b.Error(err)
					}
				}
				if !parallel {
					for b.Loop() {
						call()
					}
					return
				}
				b.SetParallelism(16) // 32 callers on 2 CPUs: calls pipeline
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						call()
					}
				})
			})
		}
	}
}
