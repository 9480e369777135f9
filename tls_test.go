package partlog_test

import (
	"context"
	"crypto/tls"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/partlog/partlog"
	"github.com/partlog/partlog/auth"
	"github.com/partlog/partlog/consumer"
	"github.com/partlog/partlog/internal/testcert"
	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/producer"
	"github.com/partlog/partlog/transport"
)

// principals is a node's client that notes the principal of every
// Metadata request's connection.
type principals struct {
	transport.Client
	mu   sync.Mutex
	seen map[auth.Principal]int
}

func (p *principals) Metadata(ctx context.Context, req *transport.MetadataRequest) (*transport.MetadataResponse, error) {
	who, ok := auth.FromContext(ctx)
	if !ok {
		who = auth.Principal{Name: "none"}
	}
	p.mu.Lock()
	p.seen[who]++
	p.mu.Unlock()
	return p.Client.Metadata(ctx, req)
}

func (p *principals) take() map[auth.Principal]int {
	p.mu.Lock()
	defer p.mu.Unlock()
	seen := p.seen
	p.seen = map[auth.Principal]int{}
	return seen
}

// watchedNode opens a node on the OS filesystem, with topic (of two
// partitions) unless it is empty, closed when the test ends, and the
// client of it that notes its requests' principals.
func watchedNode(t *testing.T, topic string) (*partlog.Node, *principals) {
	t.Helper()
	n, err := partlog.Open(t.TempDir())
	require.NoError(t, err)
	t.Cleanup(func() { n.Close() })
	if topic != "" {
		require.NoError(t, n.CreateTopic(context.Background(), partlog.NewTopic{Name: topic, Partitions: 2}))
	}
	return n, &principals{Client: n.Client(), seen: map[auth.Principal]int{}}
}

// serveWith serves h on a loopback port with opts and returns the address.
func serveWith(t *testing.T, h transport.Client, opts transport.ServerOptions) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	s := transport.NewServer(h, opts)
	go s.Serve(ln)
	t.Cleanup(func() { s.Close() })
	return ln.Addr().String()
}

// tlsWorld is a certificate authority and the certificates a TLS test
// needs.
type tlsWorld struct {
	ca, other    *testcert.CA
	server       tls.Certificate
	alice, bob   tls.Certificate // CN=alice,OU=eng and CN=bob,OU=ops of ca
	mallory      tls.Certificate // CN=alice,OU=eng of other, a CA nobody trusts
	mappingRules auth.MappingRules
}

func newTLSWorld(t *testing.T) *tlsWorld {
	t.Helper()
	var w tlsWorld
	var err error
	w.ca, err = testcert.NewCA("partlog test CA")
	require.NoError(t, err)
	w.other, err = testcert.NewCA("another CA")
	require.NoError(t, err)
	w.server, err = w.ca.Issue(pkix.Name{CommonName: "node-1"})
	require.NoError(t, err)
	w.alice, err = w.ca.Issue(pkix.Name{CommonName: "alice", OrganizationalUnit: []string{"eng"}})
	require.NoError(t, err)
	w.bob, err = w.ca.Issue(pkix.Name{CommonName: "bob", OrganizationalUnit: []string{"ops"}})
	require.NoError(t, err)
	w.mallory, err = w.other.Issue(pkix.Name{CommonName: "alice", OrganizationalUnit: []string{"eng"}})
	require.NoError(t, err)
	w.mappingRules, err = auth.ParseMappingRules("RULE:^CN=(.*?),OU=eng$/$1/")
	require.NoError(t, err)
	return &w
}

// serverConfig returns a listener's TLS configuration with the server's
// certificate, requiring client certificates the CA signed.
func (w *tlsWorld) serverConfig() *tls.Config {
	return &tls.Config{Certificates: []tls.Certificate{w.server}, ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: w.ca.Pool}
}

// client returns a client's TLS configuration that trusts roots and
// presents certs.
func (w *tlsWorld) client(roots *testcert.CA, certs ...tls.Certificate) *tls.Config {
	return &tls.Config{RootCAs: roots.Pool, Certificates: certs}
}

// TestTLSClients serves a node with mutual TLS (ssl.client.auth=required)
// and mapping rules that make CN=alice,OU=eng the user alice. franz-go and
// partlog's own producer and consumer, with alice's certificate, produce
// and consume every record byte for byte — through the TLS connection,
// not sendfile, although the node's records are in files on the OS
// filesystem — as User:alice. A client without a certificate, with one
// from a CA the node does not trust, with one no rule maps, or speaking
// plaintext, is refused; so is a client that does not trust the node.
func TestTLSClients(t *testing.T) {
	w := newTLSWorld(t)
	n, h := watchedNode(t, "secure")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	addr := serveWith(t, h, transport.ServerOptions{
		TLS:                   &tls.Config{Certificates: []tls.Certificate{w.server}, ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: w.ca.Pool},
		PrincipalMappingRules: w.mappingRules,
	})

	// franz-go, a Kafka client, over TLS with alice's certificate.
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DialTLSConfig(w.client(w.ca, w.alice)),
		kgo.DefaultProduceTopic("secure"), kgo.DisableIdempotentWrite(), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"secure": {0: kgo.NewOffset().AtStart(), 1: kgo.NewOffset().AtStart()}}))
	require.NoError(t, err)
	defer cl.Close()
	const total = 300
	values := map[string]bool{}
	for i := range total {
		v := fmt.Sprintf("kgo %d %x", i, make([]byte, i%97))
		values[v] = true
		require.NoError(t, cl.ProduceSync(ctx, &kgo.Record{Key: fmt.Appendf(nil, "k%d", i%5), Value: []byte(v)}).FirstErr())
	}
	// partlog's own producer, over TLS too.
	c, err := transport.Dial(ctx, addr, transport.DialOptions{TLS: w.client(w.ca, w.alice)})
	require.NoError(t, err)
	defer c.Close()
	p, err := producer.New(c, producer.Acks(kafka.AcksLeader))
	require.NoError(t, err)
	for i := range total {
		v := fmt.Sprintf("partlog %d %x", i, make([]byte, i%89))
		values[v] = true
		require.NoError(t, p.ProduceSync(ctx, &producer.Record{Topic: "secure", Value: []byte(v)}).FirstErr())
	}
	require.NoError(t, p.Close())

	// Both clients read back every record, once each, as written.
	got := map[string]int{}
	for len(got) < 2*total {
		fs := cl.PollFetches(ctx)
		require.NoError(t, ctx.Err())
		for _, e := range fs.Errors() {
			t.Fatalf("fetch error: %v", e.Err)
		}
		fs.EachRecord(func(r *kgo.Record) { got[string(r.Value)]++ })
	}
	require.Len(t, got, len(values))
	for v, count := range got {
		require.True(t, values[v], "a record no client wrote: %q", v)
		require.Equal(t, 1, count, "record %q", v)
	}
	cons, err := consumer.New(c, consumer.Topics("secure"), consumer.AutoOffsetReset(consumer.Earliest))
	require.NoError(t, err)
	defer cons.Close()
	got = map[string]int{}
	for rec, err := range cons.Records(ctx) {
		require.NoError(t, err)
		require.True(t, values[string(rec.Value)], "a record no client wrote: %q", rec.Value)
		if got[string(rec.Value)]++; len(got) == len(values) {
			break
		}
	}
	require.Len(t, got, len(values))
	seen := h.take()
	require.NotZero(t, seen[auth.User("alice")])
	require.Len(t, seen, 1, "every connection is alice's: %v", seen)

	// Refused: no certificate, a certificate of a CA the node does not
	// trust, one no rule maps, plaintext, and a client that does not
	// trust the node.
	for _, tc := range []struct {
		name string
		cfg  *tls.Config
	}{
		{"no client certificate", w.client(w.ca)},
		{"an untrusted CA's certificate", w.client(w.ca, w.mallory)},
		{"a subject no rule maps", w.client(w.ca, w.bob)},
		{"plaintext", nil},
		{"the node's CA not trusted", w.client(w.other, w.alice)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := transport.Dial(ctx, addr, transport.DialOptions{TLS: tc.cfg, DialTimeout: 2 * time.Second})
			if err == nil {
				c.Close()
				t.Fatal("the node took the client")
			}
			if tc.cfg != nil {
				require.ErrorIs(t, err, transport.ErrSSLAuthentication)
			}
			opts := []kgo.Opt{kgo.SeedBrokers(addr), kgo.DefaultProduceTopic("secure"), kgo.DisableIdempotentWrite(),
				kgo.RecordDeliveryTimeout(time.Second), kgo.RequestRetries(0)}
			if tc.cfg != nil {
				opts = append(opts, kgo.DialTLSConfig(tc.cfg))
			}
			cl, err := kgo.NewClient(opts...)
			require.NoError(t, err)
			defer cl.Close()
			require.Error(t, cl.ProduceSync(ctx, &kgo.Record{Value: []byte("refused")}).FirstErr())
		})
	}
	require.Empty(t, h.take(), "a refused client reached the node")
	d, err := n.DescribeTopics("secure")
	require.NoError(t, err)
	require.Equal(t, int64(2*total), d[0].Partitions[0].LogEndOffset+d[0].Partitions[1].LogEndOffset)
}

// TestTLSWithoutClientCertificates serves TLS without asking clients for
// certificates (ssl.client.auth=none): they are User:ANONYMOUS, and a
// client speaking TLS to a plaintext listener fails with
// ErrSSLAuthentication rather than waiting.
func TestTLSWithoutClientCertificates(t *testing.T) {
	w := newTLSWorld(t)
	_, h := watchedNode(t, "")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	addr := serveWith(t, h, transport.ServerOptions{TLS: &tls.Config{Certificates: []tls.Certificate{w.server}}})
	c, err := transport.Dial(ctx, addr, transport.DialOptions{TLS: w.client(w.ca)})
	require.NoError(t, err)
	_, err = c.Metadata(ctx, &transport.MetadataRequest{})
	require.NoError(t, err)
	c.Close()
	require.Equal(t, map[auth.Principal]int{auth.Anonymous: 1}, h.take())

	plain := serveWith(t, h, transport.ServerOptions{})
	_, err = transport.Dial(ctx, plain, transport.DialOptions{TLS: w.client(w.ca), DialTimeout: 5 * time.Second})
	require.ErrorIs(t, err, transport.ErrSSLAuthentication)
	require.False(t, errors.Is(err, kafka.ErrNetwork), "not retriable: %v", err)
}

// TestClusterOverTLS runs a controller and three nodes whose listeners
// require client certificates, and which reach each other and the
// controller with their own: a client over
// TLS produces with acks=all to a partition that needs all three
// replicas in sync (min.insync.replicas=3), so every record was
// replicated over TLS before its ack; it reads them all back, and the
// replicas hold the same batches byte for byte.
func TestClusterOverTLS(t *testing.T) {
	w := newTLSWorld(t)
	c := newCluster(t, w, 1, 2, 3)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	require.NoError(t, c.nodes[1].CreateTopic(ctx, partlog.NewTopic{Name: "secure", ReplicationFactor: 3,
		Configs: map[string]string{"min.insync.replicas": "3"}}))
	requireReplicatedSecurely(t, c, transport.DialOptions{TLS: w.client(w.ca, w.alice)})
}

// requireReplicatedSecurely has a client dialled with opts produce 500
// records with acks=all to topic "secure" of c (partition 0, all replicas
// in sync), read them back, and finds the replicas byte-identical.
func requireReplicatedSecurely(t *testing.T, c *tcpCluster, opts transport.DialOptions) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	client, err := transport.DialCluster(ctx, []string{c.addrs[1], c.addrs[2], c.addrs[3]}, opts)
	require.NoError(t, err)
	defer client.Close()
	values := clusterValues(0, 500)
	acked := produceValues(t, client, "secure", values)
	require.Equal(t, values, acked[0])
	require.Equal(t, acked, consumeCluster(t, client, "secure", len(values)))
	requireIdenticalReplicas(t, c, "secure", len(values))
}
