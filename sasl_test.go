package partlog_test

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/partlog/partlog"
	"github.com/partlog/partlog/auth"
	"github.com/partlog/partlog/consumer"
	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/producer"
	"github.com/partlog/partlog/transport"
)

// saslUsers returns alice and bob with their passwords.
func saslUsers(t *testing.T) *auth.Users {
	t.Helper()
	users := auth.NewUsers()
	require.NoError(t, users.SetPassword("alice", "alice-secret"))
	require.NoError(t, users.SetPassword("bob", "bob-secret"))
	return users
}

// kgoSASL is franz-go's mechanism for ours.
func kgoSASL(mechanism, user, password string) sasl.Mechanism {
	switch mechanism {
	case auth.MechanismPlain:
		return plain.Auth{User: user, Pass: password}.AsMechanism()
	case auth.MechanismScramSHA256:
		return scram.Auth{User: user, Pass: password}.AsSha256Mechanism()
	}
	return scram.Auth{User: user, Pass: password}.AsSha512Mechanism()
}

// TestSASLClients serves a node with SASL over TLS (SASL_SSL) and in
// plaintext (SASL_PLAINTEXT). With each mechanism, franz-go and partlog's
// own clients authenticate as alice, produce and read back every record
// byte for byte, and every request reaches the node as User:alice. A
// wrong password, an unknown user and a mechanism the listener does not
// offer are refused, with Kafka's errors, and write nothing.
func TestSASLClients(t *testing.T) {
	w := newTLSWorld(t)
	users := saslUsers(t)
	for _, listener := range []string{"SASL_SSL", "SASL_PLAINTEXT"} {
		t.Run(listener, func(t *testing.T) {
			n, h := watchedNode(t, "secure")
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			opts := transport.ServerOptions{SASL: &transport.SASL{Credentials: users}}
			var clientTLS *tls.Config
			if listener == "SASL_SSL" {
				opts.TLS = &tls.Config{Certificates: []tls.Certificate{w.server}}
				clientTLS = w.client(w.ca)
			}
			addr := serveWith(t, h, opts)
			values := map[string]bool{}
			for _, m := range auth.Mechanisms {
				kopts := []kgo.Opt{kgo.SeedBrokers(addr), kgo.SASL(kgoSASL(m, "alice", "alice-secret")),
					kgo.DefaultProduceTopic("secure"), kgo.DisableIdempotentWrite()}
				if clientTLS != nil {
					kopts = append(kopts, kgo.DialTLSConfig(clientTLS))
				}
				cl, err := kgo.NewClient(kopts...)
				require.NoError(t, err)
				for i := range 50 {
					v := fmt.Sprintf("kgo %s %d", m, i)
					values[v] = true
					require.NoError(t, cl.ProduceSync(ctx, &kgo.Record{Value: []byte(v)}).FirstErr(), m)
				}
				cl.Close()

				c, err := transport.Dial(ctx, addr, transport.DialOptions{TLS: clientTLS,
					SASL: &transport.SASLCredentials{Mechanism: m, User: "alice", Password: "alice-secret"}})
				require.NoError(t, err, m)
				p, err := producer.New(c, producer.Acks(kafka.AcksLeader))
				require.NoError(t, err)
				for i := range 50 {
					v := fmt.Sprintf("partlog %s %d", m, i)
					values[v] = true
					require.NoError(t, p.ProduceSync(ctx, &producer.Record{Topic: "secure", Value: []byte(v)}).FirstErr(), m)
				}
				require.NoError(t, p.Close())
				c.Close()
			}
			c, err := transport.Dial(ctx, addr, transport.DialOptions{TLS: clientTLS,
				SASL: &transport.SASLCredentials{Mechanism: auth.MechanismScramSHA512, User: "alice", Password: "alice-secret"}})
			require.NoError(t, err)
			defer c.Close()
			cons, err := consumer.New(c, consumer.Topics("secure"), consumer.AutoOffsetReset(consumer.Earliest))
			require.NoError(t, err)
			defer cons.Close()
			got := map[string]int{}
			for rec, err := range cons.Records(ctx) {
				require.NoError(t, err)
				require.True(t, values[string(rec.Value)], "a record no client wrote: %q", rec.Value)
				if got[string(rec.Value)]++; len(got) == len(values) {
					break
				}
			}
			for v, count := range got {
				require.Equal(t, 1, count, v)
			}
			seen := h.take()
			require.NotZero(t, seen[auth.User("alice")])
			require.Len(t, seen, 1, "every request is alice's: %v", seen)

			for _, bad := range []struct{ mechanism, user, password string }{
				{auth.MechanismScramSHA256, "alice", "bob-secret"},
				{auth.MechanismScramSHA512, "carol", "alice-secret"},
				{auth.MechanismPlain, "alice", "wrong"},
			} {
				_, err := transport.Dial(ctx, addr, transport.DialOptions{TLS: clientTLS,
					SASL: &transport.SASLCredentials{Mechanism: bad.mechanism, User: bad.user, Password: bad.password}})
				require.ErrorIs(t, err, kafka.ErrSaslAuthenticationFailed, "%v", bad)
				kopts := []kgo.Opt{kgo.SeedBrokers(addr), kgo.SASL(kgoSASL(bad.mechanism, bad.user, bad.password)),
					kgo.DefaultProduceTopic("secure"), kgo.DisableIdempotentWrite(), kgo.RecordDeliveryTimeout(time.Second)}
				if clientTLS != nil {
					kopts = append(kopts, kgo.DialTLSConfig(clientTLS))
				}
				cl, err := kgo.NewClient(kopts...)
				require.NoError(t, err)
				require.Error(t, cl.ProduceSync(ctx, &kgo.Record{Value: []byte("refused")}).FirstErr(), "%v", bad)
				cl.Close()
			}
			_, err = transport.Dial(ctx, addr, transport.DialOptions{TLS: clientTLS,
				SASL: &transport.SASLCredentials{Mechanism: "OAUTHBEARER", User: "alice", Password: "x"}})
			require.ErrorIs(t, err, kafka.ErrUnsupportedSaslMechanism)
			require.Empty(t, h.take(), "a refused client reached the node")
			d, err := n.DescribeTopics("secure")
			require.NoError(t, err)
			require.Equal(t, int64(len(values)), d[0].Partitions[0].LogEndOffset+d[0].Partitions[1].LogEndOffset)
		})
	}
}

// TestSASLNothingBeforeAuthentication sends requests to a SASL listener
// without authenticating: ApiVersions is answered (it lists the SASL
// APIs), a Metadata or Produce request closes the connection without
// reaching the node, and so does a SaslAuthenticate before a handshake.
func TestSASLNothingBeforeAuthentication(t *testing.T) {
	_, h := watchedNode(t, "")
	addr := serveWith(t, h, transport.ServerOptions{SASL: &transport.SASL{Credentials: saslUsers(t)}})

	// roundTrip sends reqs on a new connection and returns the answers
	// until the node closes it.
	roundTrip := func(reqs ...kmsg.Request) []kmsg.Response {
		t.Helper()
		conn, err := net.Dial("tcp", addr)
		require.NoError(t, err)
		defer conn.Close()
		conn.SetDeadline(time.Now().Add(10 * time.Second))
		f := kmsg.NewRequestFormatter(kmsg.FormatterClientID("raw"))
		r := bufio.NewReader(conn)
		var out []kmsg.Response
		for i, req := range reqs {
			if _, err := conn.Write(f.AppendRequest(nil, req, int32(i))); err != nil {
				require.True(t, closedByPeer(err), "closed: %v", err)
				return out
			}
			var size [4]byte
			if _, err := io.ReadFull(r, size[:]); err != nil {
				require.True(t, closedByPeer(err), "closed: %v", err)
				return out
			}
			body := make([]byte, binary.BigEndian.Uint32(size[:]))
			_, err = io.ReadFull(r, body)
			require.NoError(t, err)
			resp := req.ResponseKind()
			body = body[4:] // the correlation id
			if resp.IsFlexible() && resp.Key() != 18 {
				body = body[1:] // no tagged fields in the header
			}
			require.NoError(t, resp.ReadFrom(body))
			out = append(out, resp)
		}
		return out
	}
	av := kmsg.NewPtrApiVersionsRequest()
	av.Version = 3
	md := kmsg.NewPtrMetadataRequest()
	md.Version = 9
	got := roundTrip(av, md)
	require.Len(t, got, 1, "the Metadata request closed the connection")
	keys := map[int16]bool{}
	for _, k := range got[0].(*kmsg.ApiVersionsResponse).ApiKeys {
		keys[k.ApiKey] = true
	}
	require.True(t, keys[17] && keys[36], "ApiVersions lists SaslHandshake and SaslAuthenticate")

	pr := kmsg.NewPtrProduceRequest()
	pr.Version, pr.Acks, pr.TimeoutMillis = 9, 1, 1000
	require.Empty(t, roundTrip(pr), "a Produce first closed the connection")
	sa := kmsg.NewPtrSASLAuthenticateRequest()
	sa.Version, sa.SASLAuthBytes = 1, []byte("\x00alice\x00alice-secret")
	got = roundTrip(sa, md)
	require.Len(t, got, 1)
	require.Equal(t, kafka.ErrIllegalSaslState.Code, got[0].(*kmsg.SASLAuthenticateResponse).ErrorCode)

	// A handshake for a mechanism not offered lists those that are; PLAIN
	// with a wrong password is told so, then cut off.
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.Version, hs.Mechanism = 1, "GSSAPI"
	got = roundTrip(hs)
	require.Equal(t, kafka.ErrUnsupportedSaslMechanism.Code, got[0].(*kmsg.SASLHandshakeResponse).ErrorCode)
	require.Equal(t, auth.Mechanisms, got[0].(*kmsg.SASLHandshakeResponse).SupportedMechanisms)
	hs.Mechanism = "PLAIN"
	sa.SASLAuthBytes = []byte("\x00alice\x00wrong")
	got = roundTrip(hs, sa, md)
	require.Len(t, got, 2)
	require.Equal(t, kafka.ErrSaslAuthenticationFailed.Code, got[1].(*kmsg.SASLAuthenticateResponse).ErrorCode)
	require.Empty(t, h.take(), "no request reached the node")

	// With the right password the same connection is served.
	sa.SASLAuthBytes = []byte("\x00alice\x00alice-secret")
	got = roundTrip(hs, sa, md)
	require.Len(t, got, 3)
	require.Zero(t, got[1].(*kmsg.SASLAuthenticateResponse).ErrorCode)
	require.Equal(t, map[auth.Principal]int{auth.User("alice"): 1}, h.take())
}

// TestClusterOverSASLSSL runs three nodes on SASL_SSL listeners (mutual
// TLS and SCRAM): the nodes authenticate to each other as the user node,
// and a client as alice produces with acks=all to a partition that needs
// all three replicas in sync, so that every record was replicated over
// authenticated connections before its ack; it reads them all back, and
// the replicas hold the same batches byte for byte.
func TestClusterOverSASLSSL(t *testing.T) {
	w := newTLSWorld(t)
	users := saslUsers(t)
	require.NoError(t, users.SetPassword("node", "node-secret"))
	c := newSecureCluster(t, w, users, 1, 2, 3)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	require.NoError(t, c.nodes[1].CreateTopic(ctx, partlog.NewTopic{Name: "secure", ReplicationFactor: 3,
		Configs: map[string]string{"min.insync.replicas": "3"}}))
	requireReplicatedSecurely(t, c, transport.DialOptions{TLS: w.client(w.ca, w.alice),
		SASL: &transport.SASLCredentials{Mechanism: auth.MechanismScramSHA256, User: "alice", Password: "alice-secret"}})
}

// TestSASLHandshakeV0 authenticates as clients before Kafka 1.0 did (and
// sarama does by default): after a SaslHandshake v0 the mechanism's
// messages go as frames of their own, without a request header, and so
// do the node's answers. A wrong password closes the connection.
func TestSASLHandshakeV0(t *testing.T) {
	_, h := watchedNode(t, "")
	addr := serveWith(t, h, transport.ServerOptions{SASL: &transport.SASL{Credentials: saslUsers(t)}})
	f := kmsg.NewRequestFormatter(kmsg.FormatterClientID("v0"))
	for _, tc := range []struct {
		password string
		served   bool
	}{{"alice-secret", true}, {"wrong", false}} {
		conn, err := net.Dial("tcp", addr)
		require.NoError(t, err)
		conn.SetDeadline(time.Now().Add(10 * time.Second))
		r := bufio.NewReader(conn)
		readFrame := func() ([]byte, error) {
			var size [4]byte
			if _, err := io.ReadFull(r, size[:]); err != nil {
				return nil, err
			}
			b := make([]byte, binary.BigEndian.Uint32(size[:]))
			_, err := io.ReadFull(r, b)
			return b, err
		}
		hs := kmsg.NewPtrSASLHandshakeRequest()
		hs.Version, hs.Mechanism = 0, auth.MechanismPlain
		_, err = conn.Write(f.AppendRequest(nil, hs, 1))
		require.NoError(t, err)
		b, err := readFrame()
		require.NoError(t, err)
		resp := kmsg.NewPtrSASLHandshakeResponse()
		resp.Version = 0
		require.NoError(t, resp.ReadFrom(b[4:]))
		require.Zero(t, resp.ErrorCode)

		token := []byte("\x00alice\x00" + tc.password)
		_, err = conn.Write(append(binary.BigEndian.AppendUint32(nil, uint32(len(token))), token...))
		require.NoError(t, err)
		b, err = readFrame()
		if !tc.served {
			require.True(t, closedByPeer(err), "a wrong password closes the connection: %v", err)
			conn.Close()
			continue
		}
		require.NoError(t, err)
		require.Empty(t, b, "PLAIN's answer is an empty frame")
		md := kmsg.NewPtrMetadataRequest()
		md.Version = 1
		_, err = conn.Write(f.AppendRequest(nil, md, 2))
		require.NoError(t, err)
		_, err = readFrame()
		require.NoError(t, err)
		conn.Close()
	}
	require.Equal(t, map[auth.Principal]int{auth.User("alice"): 1}, h.take())
}

// closedByPeer reports whether err says the other end closed the
// connection: an EOF, or a reset when it closed with bytes of ours
// unread.
func closedByPeer(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}
