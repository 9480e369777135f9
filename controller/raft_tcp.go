package controller

import (
	"context"
	"crypto/tls"
	"encoding/binary"
	"fmt"
	"sync"
	"time"

	pb "go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"

	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/transport"
)

// TCPRaft is a RaftTransport over TCP: it sends each batch of Raft
// messages to the controller serving at the voter's address, under
// transport.APIControllerRaft, where Controller.HandleInternal steps them.
// It is safe for concurrent use.
type TCPRaft struct {
	voters map[int32]string
	tls    *tls.Config // how voters are dialled; nil for plaintext

	mu      sync.Mutex
	clients map[int32]*transport.TCPClient
	closed  bool
}

// NewTCPRaft returns a transport to the voters at their addresses
// (host:port, by node id), Kafka's controller.quorum.voters. It connects
// to each on the first message, and again after a connection fails.
func NewTCPRaft(voters map[int32]string, tls *tls.Config) *TCPRaft {
	return &TCPRaft{voters: voters, tls: tls, clients: map[int32]*transport.TCPClient{}}
}

// Send implements RaftTransport.
func (t *TCPRaft) Send(ctx context.Context, to int32, msgs []*pb.Message) error {
	cl, err := t.client(ctx, to)
	if err != nil {
		return err
	}
	body, err := encodeRaftMessages(msgs)
	if err != nil {
		return err
	}
	_, err = cl.CallInternal(ctx, transport.APIControllerRaft, body)
	return err
}

// client returns the connection to voter to, dialling it if needed.
func (t *TCPRaft) client(ctx context.Context, to int32) (*transport.TCPClient, error) {
	t.mu.Lock()
	cl, closed := t.clients[to], t.closed
	t.mu.Unlock()
	switch {
	case closed:
		return nil, fmt.Errorf("%w: the Raft transport is closed", kafka.ErrClosed)
	case cl != nil:
		return cl, nil
	}
	addr, ok := t.voters[to]
	if !ok {
		return nil, fmt.Errorf("%w: controller %d is not a voter", kafka.ErrInvalidRequest, to)
	}
	cl, err := transport.Dial(ctx, addr, transport.DialOptions{ClientID: "partlog-controller", DialTimeout: time.Second, TLS: t.tls})
	if err != nil {
		return nil, err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if other := t.clients[to]; other != nil || t.closed {
		cl.Close()
		if other == nil {
			return nil, fmt.Errorf("%w: the Raft transport is closed", kafka.ErrClosed)
		}
		return other, nil
	}
	t.clients[to] = cl
	return cl, nil
}

// Close closes the transport's connections; Send fails after it.
func (t *TCPRaft) Close() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.closed = true
	for id, cl := range t.clients {
		cl.Close()
		delete(t.clients, id)
	}
	return nil
}

// maxRaftMessage bounds one encoded Raft message a controller accepts:
// a snapshot of the metadata is the largest.
const maxRaftMessage = 256 << 20

// encodeRaftMessages encodes msgs as one body: each message's length (u32,
// big endian) and its protobuf encoding.
func encodeRaftMessages(msgs []*pb.Message) ([]byte, error) {
	var body []byte
	for _, m := range msgs {
		b, err := proto.Marshal(m)
		if err != nil {
			return nil, fmt.Errorf("controller: encode a Raft message: %w", err)
		}
		body = binary.BigEndian.AppendUint32(body, uint32(len(b)))
		body = append(body, b...)
	}
	return body, nil
}

// decodeRaftMessages decodes a body encodeRaftMessages wrote, or fails
// with kafka.ErrCorruptMessage. The messages share nothing with body.
func decodeRaftMessages(body []byte) ([]*pb.Message, error) {
	var msgs []*pb.Message
	for len(body) > 0 {
		if len(body) < 4 {
			return nil, fmt.Errorf("%w: a Raft message cut short", kafka.ErrCorruptMessage)
		}
		n := binary.BigEndian.Uint32(body)
		if n > maxRaftMessage || uint64(n) > uint64(len(body)-4) {
			return nil, fmt.Errorf("%w: a Raft message of %d bytes in %d", kafka.ErrCorruptMessage, n, len(body)-4)
		}
		m := &pb.Message{}
		if err := proto.Unmarshal(body[4:4+n], m); err != nil {
			return nil, fmt.Errorf("%w: a Raft message: %v", kafka.ErrCorruptMessage, err)
		}
		msgs = append(msgs, m)
		body = body[4+n:]
	}
	return msgs, nil
}
