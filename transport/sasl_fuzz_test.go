package transport

import (
	"context"
	"crypto/tls"
	"crypto/x509/pkix"
	"encoding/binary"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/partlog/partlog/auth"
	"github.com/partlog/partlog/internal/testcert"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// countingClient counts the requests that reach it.
type countingClient struct{ calls atomic.Int64 }

func (c *countingClient) Metadata(context.Context, *MetadataRequest) (*MetadataResponse, error) {
	c.calls.Add(1)
	return &MetadataResponse{}, nil
}

func (c *countingClient) Produce(context.Context, *ProduceRequest) (*ProduceResponse, error) {
	c.calls.Add(1)
	return &ProduceResponse{}, nil
}

func (c *countingClient) Fetch(context.Context, *FetchRequest) (*FetchResponse, error) {
	c.calls.Add(1)
	return &FetchResponse{}, nil
}

func (c *countingClient) ListOffsets(context.Context, *ListOffsetsRequest) (*ListOffsetsResponse, error) {
	c.calls.Add(1)
	return &ListOffsetsResponse{}, nil
}

// splitFrames cuts data into request frames: each a 2-byte length, then
// that many bytes (what remains when it is short).
func splitFrames(data []byte) [][]byte {
	var frames [][]byte
	for len(data) >= 2 {
		n := min(int(binary.BigEndian.Uint16(data)), len(data)-2)
		frames = append(frames, data[2:2+n])
		data = data[2+n:]
	}
	return frames
}

// FuzzSASLServer sends a SASL listener arbitrary sequences of requests on
// one connection: the server never panics, and no request reaches the
// node until the connection authenticated — which random bytes cannot do,
// and the seeds with alice's password do.
func FuzzSASLServer(f *testing.F) {
	users := auth.NewUsers()
	if err := users.SetPassword("alice", "alice-secret"); err != nil {
		f.Fatal(err)
	}
	format := kmsg.NewRequestFormatter(kmsg.FormatterClientID("fuzz"))
	frame := func(req kmsg.Request) []byte {
		b := format.AppendRequest(nil, req, 1)[4:]
		return append(binary.BigEndian.AppendUint16(nil, uint16(len(b))), b...)
	}
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.Version, hs.Mechanism = 1, auth.MechanismPlain
	sa := kmsg.NewPtrSASLAuthenticateRequest()
	sa.Version, sa.SASLAuthBytes = 2, []byte("\x00alice\x00alice-secret")
	md := kmsg.NewPtrMetadataRequest()
	md.Version = 12
	av := kmsg.NewPtrApiVersionsRequest()
	av.Version = 3
	scramFirst := kmsg.NewPtrSASLHandshakeRequest()
	scramFirst.Version, scramFirst.Mechanism = 1, auth.MechanismScramSHA256
	first := kmsg.NewPtrSASLAuthenticateRequest()
	first.Version, first.SASLAuthBytes = 1, []byte("n,,n=alice,r=abcdefgh")
	for _, seed := range [][]kmsg.Request{{hs, sa, md}, {av, md}, {sa, md}, {hs, hs, sa}, {scramFirst, first, first, md}} {
		var data []byte
		for _, r := range seed {
			data = append(data, frame(r)...)
		}
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		h := &countingClient{}
		s := NewServer(h, ServerOptions{SASL: &SASL{Credentials: users}})
		defer s.Close()
		p := &peer{principal: auth.Anonymous, ctx: s.ctx, sasl: &saslSession{}}
		for _, fr := range splitFrames(data) {
			before := p.sasl.done
			_, _, _, err := s.answer(nil, fr, p, nil)
			if !before && h.calls.Load() > 0 {
				t.Fatalf("a request reached the node before authentication: %x", fr)
			}
			if err != nil || p.sasl.failed {
				return // the connection closes
			}
			if p.sasl.done && p.principal != auth.User("alice") {
				t.Fatalf("authenticated as %v", p.principal)
			}
		}
	})
}

// FuzzTLSHandshake writes arbitrary bytes to a TLS listener that requires
// client certificates and serves SASL too, as the first bytes of a
// connection: the server never panics, closes the connection, and nothing
// reaches the node.
func FuzzTLSHandshake(f *testing.F) {
	ca, err := testcert.NewCA("fuzz CA")
	if err != nil {
		f.Fatal(err)
	}
	cert, err := ca.Issue(pkix.Name{CommonName: "node"})
	if err != nil {
		f.Fatal(err)
	}
	f.Add([]byte{0x16, 3, 1, 0, 5, 1, 0, 0, 1, 0})                // a cut ClientHello
	f.Add([]byte{0, 0, 0, 10, 0, 18, 0, 3, 0, 0, 0, 1, 0, 0})     // ApiVersions in plaintext
	f.Add([]byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n"))            // HTTP
	f.Add([]byte{0x16, 3, 3, 0xff, 0xff})                         // a huge record
	f.Add([]byte{0x15, 3, 3, 0, 2, 2, 40})                        // an alert
	f.Add([]byte{0x16, 3, 3, 0, 4, 1, 0xff, 0xff, 0xff, 0, 0, 0}) // a huge handshake message
	h := &countingClient{}
	s := NewServer(h, ServerOptions{
		TLS:              &tls.Config{Certificates: []tls.Certificate{cert}, ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: ca.Pool},
		SASL:             &SASL{Credentials: auth.NewUsers()},
		HandshakeTimeout: time.Second,
	})
	defer s.Close()
	f.Fuzz(func(t *testing.T, data []byte) {
		client, server := net.Pipe()
		s.wg.Add(1)
		done := make(chan struct{})
		go func() {
			defer close(done)
			s.serveConn(server, server.LocalAddr())
		}()
		client.SetDeadline(time.Now().Add(2 * time.Second))
		client.Write(data)
		client.Close()
		<-done
		if h.calls.Load() > 0 {
			t.Fatal("a request reached the node")
		}
	})
}
