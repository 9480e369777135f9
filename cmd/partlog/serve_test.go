package main

import (
	"context"
	"encoding/json"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/partlog/partlog"
	"github.com/partlog/partlog/producer"
	"github.com/partlog/partlog/transport"
)

// TestServe runs "partlog serve", produces to it over TCP from a client,
// interrupts it, and finds the records in the directory it closed.
func TestServe(t *testing.T) {
	dir := newTopic(t, 2)
	interrupt := interruptible(t)
	ready := make(chan string, 1)
	serveReady = func(addr string) { ready <- addr }
	defer func() { serveReady = nil }()
	type result struct {
		stderr string
		code   int
	}
	done := make(chan result, 1)
	go func() {
		_, stderr, code := cli(t, "serve", "--dir", dir, "--listen", "127.0.0.1:0")
		done <- result{stderr, code}
	}()
	addr := <-ready

	ctx := context.Background()
	c, err := transport.Dial(ctx, addr, transport.DialOptions{})
	require.NoError(t, err)
	p, err := producer.New(c)
	require.NoError(t, err)
	var recs []*producer.Record
	for _, v := range []string{"a", "b", "c", "d", "e"} {
		recs = append(recs, &producer.Record{Topic: "t", Value: []byte(v)})
	}
	require.NoError(t, p.ProduceSync(ctx, recs...).FirstErr())
	require.NoError(t, p.Close())
	require.NoError(t, c.Close())

	interrupt()
	r := <-done
	require.Equal(t, exitOK, r.code, r.stderr)
	require.Equal(t, "partlog: node 1 serving "+dir+" on "+addr+"\npartlog: closed cleanly\n", r.stderr)
	ends := topicEnds(t, dir)
	require.Equal(t, int64(5), ends[0]+ends[1])
}

func TestServeDirectoryInUse(t *testing.T) {
	dir := newTopic(t, 1)
	interrupt := interruptible(t)
	ready := make(chan string, 1)
	serveReady = func(addr string) { ready <- addr }
	defer func() { serveReady = nil }()
	done := make(chan int, 1)
	go func() {
		_, _, code := cli(t, "serve", "--dir", dir, "--listen", "127.0.0.1:0")
		done <- code
	}()
	<-ready
	_, stderr, code := cli(t, "topics", "list", "--dir", dir)
	require.Equal(t, exitFailure, code)
	require.Contains(t, stderr, "is in use by another partlog")
	interrupt()
	require.Equal(t, exitOK, <-done)
}

// TestServeShutsDownBeforeItStopsServing interrupts a cluster member's
// "partlog serve" and checks that its controlled shutdown reaches the
// controller while the node still serves, as a Kafka broker's controlled
// shutdown comes before its socket server stops. A node whose server
// closed first was cut off from its followers while it still heartbeat:
// its leaders shrank their ISRs to themselves, and the controlled
// shutdown then left those partitions without a leader
// (TestClusterProcessesKillLeader, under load).
func TestServeShutsDownBeforeItStopsServing(t *testing.T) {
	// A session the test outlasts: the node is fenced by its controlled
	// shutdown only.
	ctl, err := partlog.OpenController(t.TempDir(), partlog.ControllerOptions{SessionTimeout: time.Minute})
	require.NoError(t, err)
	defer ctl.Close()
	spy := &shutdownSpy{c: ctl, serving: make(chan error, 1)}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := transport.NewServer(spy, transport.ServerOptions{})
	go srv.Serve(ln)
	defer srv.Close()

	interrupt := interruptible(t)
	ready := make(chan string, 1)
	serveReady = func(addr string) { ready <- addr }
	defer func() { serveReady = nil }()
	type result struct {
		stderr string
		code   int
	}
	done := make(chan result, 1)
	go func() {
		_, stderr, code := cli(t, "serve", "--dir", t.TempDir(), "--node-id", "1", "--controller", ln.Addr().String(),
			"--listen", "127.0.0.1:0", "--heartbeat", "100ms")
		done <- result{stderr, code}
	}()
	spy.setNode(<-ready)

	interrupt()
	r := <-done
	require.Equal(t, exitOK, r.code, r.stderr)
	select {
	case err := <-spy.serving:
		require.NoError(t, err, "the node served during its controlled shutdown")
	default:
		require.FailNow(t, "the node made no controlled shutdown")
	}
}

// shutdownSpy is a controller's TCP handler that, when a node asks for its
// controlled shutdown, connects to the node first and reports whether it
// could.
type shutdownSpy struct {
	transport.Client // nil: nodes reach their controller through HandleInternal only
	c                *partlog.Controller
	serving          chan error // the connection's error, at the shutdown

	mu   sync.Mutex
	node string // the node's address
}

func (s *shutdownSpy) setNode(addr string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.node = addr
}

func (s *shutdownSpy) HandleInternal(ctx context.Context, key int16, body []byte) ([]byte, error) {
	var req struct {
		Op string `json:"op"` // the controller's wire format (controller/api.go)
	}
	if json.Unmarshal(body, &req) == nil && req.Op == "shutdown" {
		s.mu.Lock()
		addr := s.node
		s.mu.Unlock()
		dctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		c, err := transport.Dial(dctx, addr, transport.DialOptions{})
		cancel()
		if err == nil {
			c.Close()
		}
		select {
		case s.serving <- err:
		default:
		}
	}
	return s.c.HandleInternal(ctx, key, body)
}
