package controller_test

import (
	"context"
	"crypto/tls"
	"crypto/x509/pkix"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/partlog/partlog/controller"
	"github.com/partlog/partlog/internal/testcert"
	"github.com/partlog/partlog/kafka"
)

// startTCPQuorum starts a quorum of n controllers serving on loopback,
// with node ids 1 to n, and returns them and their addresses.
func startTCPQuorum(t *testing.T, n int) ([]*controller.Controller, []string) {
	t.Helper()
	return startTCPQuorumWith(t, n, nil, nil)
}

// startTCPQuorumWith is startTCPQuorum with the controllers' listeners
// served with serverTLS and their Raft messages sent with peerTLS.
func startTCPQuorumWith(t *testing.T, n int, serverTLS, peerTLS *tls.Config) ([]*controller.Controller, []string) {
	t.Helper()
	voters := map[int32]string{}
	var lns []net.Listener
	var addrs []string
	for i := range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		lns = append(lns, ln)
		addrs = append(addrs, ln.Addr().String())
		voters[int32(i+1)] = ln.Addr().String()
	}
	var cs []*controller.Controller
	for i, ln := range lns {
		c, err := controller.Open(t.TempDir(), controller.Options{NodeID: int32(i + 1), Voters: voters,
			TickInterval: 10 * time.Millisecond, ElectionTimeout: 100 * time.Millisecond, SessionTimeout: time.Minute,
			TLS: serverTLS, PeerTLS: peerTLS})
		require.NoError(t, err)
		t.Cleanup(func() { c.Close() })
		go c.Serve(ln)
		cs = append(cs, c)
	}
	return cs, addrs
}

// TestQuorumOverTCP: three controllers on loopback elect one active
// controller, which a Client finds among the addresses it has; when the
// active controller stops, another takes over with the committed
// metadata, and the client follows it.
func TestQuorumOverTCP(t *testing.T) {
	cs, addrs := startTCPQuorum(t, 3)
	client := controller.Dial(addrs...)
	defer client.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	// retry calls fn until the quorum answers it: while no controller is
	// active, every one answers NOT_CONTROLLER.
	retry := func(fn func() error) {
		t.Helper()
		for {
			err := fn()
			if err == nil {
				return
			}
			if !errors.Is(err, kafka.ErrNotController) && !errors.Is(err, kafka.ErrNetwork) &&
				!errors.Is(err, kafka.ErrCoordinatorNotAvailable) {
				t.Fatalf("call failed: %v", err)
			}
			select {
			case <-ctx.Done():
				t.Fatalf("no active controller: %v", err)
			case <-time.After(20 * time.Millisecond):
			}
		}
	}
	var epoch int64
	retry(func() (err error) { epoch, err = client.Register(ctx, 7, "n7:9092"); return err })
	retry(func() error {
		_, err := client.CreateTopic(ctx, "before", controller.NewTopic{Partitions: 1, ReplicationFactor: 1})
		return err
	})

	active := -1
	for i, c := range cs {
		if c.Active() {
			require.Equal(t, -1, active, "two active controllers")
			active = i
		}
	}
	require.NotEqual(t, -1, active)
	require.NoError(t, cs[active].Close())

	retry(func() error {
		_, err := client.CreateTopic(ctx, "after", controller.NewTopic{Partitions: 1, ReplicationFactor: 1})
		return err
	})
	for i, c := range cs {
		if i == active {
			continue
		}
		require.NoError(t, c.WaitFor(ctx, func(s controller.ClusterState) bool {
			_, before := s.Topics["before"]
			_, after := s.Topics["after"]
			return before && after && s.Nodes[7].BrokerEpoch == epoch && s.Nodes[7].Address == "n7:9092"
		}), "controller %d", i+1)
	}
}

// TestClientLeavesASilentController: a controller that accepts
// connections and answers nothing — cut off behind a switch that still
// takes the SYN, or stalled — holds a call no longer than the client's
// AttemptTimeout; the call goes on to the next controller and succeeds
// within its deadline. Before, the call waited out its whole deadline on
// the silent one, and a broker's heartbeats missed the new active
// controller's failover session: healthy brokers were fenced.
func TestClientLeavesASilentController(t *testing.T) {
	silent, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer silent.Close()
	go func() {
		var held []net.Conn
		defer func() {
			for _, c := range held {
				c.Close()
			}
		}()
		for {
			c, err := silent.Accept()
			if err != nil {
				return
			}
			held = append(held, c) // read nothing, answer nothing
		}
	}()
	c, err := controller.Open(t.TempDir(), controller.Options{})
	require.NoError(t, err)
	defer c.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	go c.Serve(ln)

	client := controller.NewClient([]string{silent.Addr().String(), ln.Addr().String()},
		controller.ClientOptions{AttemptTimeout: 200 * time.Millisecond})
	defer client.Close()
	// Within the dial timeout (2 s), which alone would not leave the
	// silent controller in time.
	ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
	defer cancel()
	_, err = client.Register(ctx, 1, "n1:9092")
	require.NoError(t, err, "the call left the silent controller for the active one")
}

// TestQuorumOverTLS: three controllers whose listeners require client
// certificates elect an active controller over TLS (their Raft messages
// go with PeerTLS), and a node's client with a certificate registers and
// creates a topic, which every controller commits; a client without a
// certificate is refused.
func TestQuorumOverTLS(t *testing.T) {
	ca, err := testcert.NewCA("quorum CA")
	require.NoError(t, err)
	cert, err := ca.Issue(pkix.Name{CommonName: "controller"})
	require.NoError(t, err)
	server := &tls.Config{Certificates: []tls.Certificate{cert}, ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: ca.Pool}
	peer := &tls.Config{Certificates: []tls.Certificate{cert}, RootCAs: ca.Pool}
	cs, addrs := startTCPQuorumWith(t, 3, server, peer)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	client := controller.NewClient(addrs, controller.ClientOptions{TLS: peer})
	defer client.Close()
	_, err = client.Register(ctx, 7, "n7:9092")
	require.NoError(t, err)
	_, err = client.CreateTopic(ctx, "secured", controller.NewTopic{Partitions: 1, ReplicationFactor: 1})
	require.NoError(t, err)
	for i, c := range cs {
		require.NoError(t, c.WaitFor(ctx, func(s controller.ClusterState) bool {
			_, ok := s.Topics["secured"]
			return ok
		}), "controller %d", i+1)
	}
	plain := controller.NewClient(addrs, controller.ClientOptions{TLS: &tls.Config{RootCAs: ca.Pool}})
	defer plain.Close()
	short, cancelShort := context.WithTimeout(ctx, 2*time.Second)
	defer cancelShort()
	_, err = plain.Register(short, 8, "n8:9092")
	require.Error(t, err, "a client without a certificate")
}
