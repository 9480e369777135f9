package transport

// internal.go carries partlog's own calls between nodes: replica messages
// and calls to the controller. Their bodies are encoded by the packages
// that make them (replica, the root package); here they are opaque bytes
// in a frame that looks like any other Kafka frame, under API keys outside
// Kafka's key space.
//
// A request frame is a request header v1 and the body as it is:
//
//	+--------+---------+----------------+--------------------+------+
//	| length | api key | api version 0  | correlation id     | ...  |
//	| int32  | int16   | int16          | int32              |      |
//	+--------+---------+----------------+--------------------+------+
//	  ... | client id (int16 length, -1 = null) | body bytes |
//
// and its response frame is
//
//	+--------+----------------+------------+-------------------------+--------------+
//	| length | correlation id | error code | error message           | answer bytes |
//	| int32  | int32          | int16      | int16 length, -1 = null |              |
//	+--------+----------------+------------+-------------------------+--------------+

import (
	"context"
	"encoding/binary"
	"fmt"

	"github.com/partlog/partlog/kafka"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Internal API keys: partlog's own calls between nodes, outside Kafka's
// key space (Kafka's keys are below 100). A Server advertises them in
// ApiVersions, in version 0 only, when its handler implements
// InternalHandler.
const (
	// APIReplicaMessages carries replica messages between nodes. They are
	// one-way in meaning: the answer only says the node took them.
	APIReplicaMessages int16 = 10000
	// APIController carries calls to the cluster controller: register,
	// heartbeat, AlterPartition, create and delete topic, cluster
	// metadata.
	APIController int16 = 10001
	// APIControllerRaft carries Raft messages between the controllers of
	// a quorum, one-way in meaning as replica messages are.
	APIControllerRaft int16 = 10002
)

// InternalHandler is an optional interface of a Server's handler: a
// handler that implements it answers the internal API keys
// (APIReplicaMessages, APIController, APIControllerRaft) with opaque
// bodies.
//
// The server calls it for one request of a connection at a time, in the
// order they came, as it does every request; the TCPClient sends each key
// on a connection of its own, so replica messages never wait behind a
// controller call. ctx ends when the server closes.
type InternalHandler interface {
	// HandleInternal answers one call with API key key. body is the
	// caller's bytes, which the handler owns and may keep. An error is
	// sent back as its Kafka code (kafka.CodeOf) and text, and the TCPClient
	// returns it as that code's sentinel, so errors.Is works across the
	// network; with an error, the answer bytes are not sent.
	HandleInternal(ctx context.Context, key int16, body []byte) ([]byte, error)
}

func isInternalHandler(h Client) bool { _, ok := h.(InternalHandler); return ok }

// isInternalKey reports whether key is one of partlog's own API keys.
func isInternalKey(key int16) bool {
	return key == APIReplicaMessages || key == APIController || key == APIControllerRaft
}

// apiName names an API key for error messages: Kafka's name, or the name
// of one of partlog's internal keys.
func apiName(key int16) string {
	switch key {
	case APIReplicaMessages:
		return "ReplicaMessages"
	case APIController:
		return "Controller"
	case APIControllerRaft:
		return "ControllerRaft"
	}
	return kmsg.NameForKey(key)
}

// requestForKey returns an empty request of an API key: Kafka's, as kmsg
// knows them, or an internalRequest. It returns nil for an unknown key.
func requestForKey(key int16) kmsg.Request {
	if isInternalKey(key) {
		return &internalRequest{key: key}
	}
	return kmsg.RequestForKey(key)
}

// CallInternal sends body under one of the internal API keys
// (APIReplicaMessages, APIController or APIControllerRaft) and returns the node's answer,
// which the caller owns. CallInternal does not keep body. Each key has a
// connection of its own, pipelined as the others are.
//
// The error is the node's answer when its handler failed — the sentinel
// of the code it sent, wrapped with its message, so that errors.Is(err,
// kafka.ErrNotLeaderOrFollower) works — or, with no answer, kafka.ErrNetwork
// (retriable: the connection is dialled again by the next call),
// kafka.ErrClosed, ctx's error, or kafka.ErrUnsupportedVersion when the node does not
// advertise the key.
func (c *TCPClient) CallInternal(ctx context.Context, key int16, body []byte) ([]byte, error) {
	return c.callInternal(ctx, key, &internalRequest{key: key, body: body})
}

// CallInternalAppend is CallInternal with a body that appendBody appends
// to the request it is given, straight into the connection's buffer, for
// a large body that would otherwise be encoded and then copied: replica
// messages carrying records. appendBody may be called more than once (a
// request sent again on a new connection) and must append the same bytes
// each time; CallInternalAppend does not keep it.
func (c *TCPClient) CallInternalAppend(ctx context.Context, key int16, appendBody func(dst []byte) []byte) ([]byte, error) {
	return c.callInternal(ctx, key, &internalRequest{key: key, appendBody: appendBody})
}

// callInternal sends req, whose key is an internal one.
func (c *TCPClient) callInternal(ctx context.Context, key int16, req *internalRequest) ([]byte, error) {
	kind := connController
	switch key {
	case APIReplicaMessages:
		kind = connReplica
	case APIControllerRaft:
		kind = connRaft
	case APIController:
	default:
		return nil, fmt.Errorf("%w: api key %d is not an internal one", kafka.ErrInvalidRequest, key)
	}
	if _, err := c.version(key); err != nil {
		return nil, err
	}
	resp, err := c.send(ctx, kind, req)
	if err != nil {
		return nil, err
	}
	r := resp.(*internalResponse)
	if err := wireError(r.code, r.msg); err != nil {
		return nil, err
	}
	return r.body, nil
}

// answerInternal answers one internal request with the server's handler.
func (s *Server) answerInternal(req *internalRequest) (kmsg.Response, error) {
	h, ok := s.handler.(InternalHandler)
	if !ok { // not advertised either: answer checks that first
		return nil, fmt.Errorf("%w: %s is not supported", kafka.ErrInvalidRequest, apiName(req.key))
	}
	answer, err := h.HandleInternal(s.ctx, req.key, req.body)
	if err != nil && s.ctx.Err() != nil {
		// The server is closing: the call ended with it and was not
		// answered. The client sees the connection close (kafka.ErrNetwork,
		// retriable), not a failure of the call.
		return nil, fmt.Errorf("%s: %w", apiName(req.key), err)
	}
	resp := &internalResponse{key: req.key}
	if err != nil {
		resp.code, resp.msg = kafka.CodeOf(err), errorMessage(err)
	} else {
		resp.body = answer
	}
	return resp, nil
}

// internalRequest is the request of an internal API key as kmsg sees one:
// its body is written and read as it is, so the TCPClient's pipelined
// connections and the server's frame parsing carry it like any Kafka
// request.
type internalRequest struct {
	key  int16
	body []byte
	// appendBody, when set, appends the body in place of body.
	appendBody func(dst []byte) []byte
}

func (r *internalRequest) Key() int16        { return r.key }
func (r *internalRequest) MaxVersion() int16 { return 0 }
func (r *internalRequest) SetVersion(int16)  {}
func (r *internalRequest) GetVersion() int16 { return 0 }
func (r *internalRequest) IsFlexible() bool  { return false }
func (r *internalRequest) AppendTo(dst []byte) []byte {
	if r.appendBody != nil {
		return r.appendBody(dst)
	}
	return append(dst, r.body...)
}

// ReadFrom takes src as the body, without copying: the server reads each
// frame into fresh bytes, which the handler then owns.
func (r *internalRequest) ReadFrom(src []byte) error {
	r.body = src
	return nil
}

func (r *internalRequest) ResponseKind() kmsg.Response { return &internalResponse{key: r.key} }

// internalResponse is the answer to an internalRequest: an error code, a
// nullable error message, and the handler's answer bytes.
type internalResponse struct {
	key  int16
	code int16
	msg  *string
	body []byte
}

func (r *internalResponse) Key() int16        { return r.key }
func (r *internalResponse) MaxVersion() int16 { return 0 }
func (r *internalResponse) SetVersion(int16)  {}
func (r *internalResponse) GetVersion() int16 { return 0 }
func (r *internalResponse) IsFlexible() bool  { return false }

func (r *internalResponse) AppendTo(dst []byte) []byte {
	dst = binary.BigEndian.AppendUint16(dst, uint16(r.code))
	if r.msg == nil {
		dst = binary.BigEndian.AppendUint16(dst, 0xffff) // -1: null
	} else {
		msg := *r.msg
		if len(msg) > 1<<15-1 {
			msg = msg[:1<<15-1]
		}
		dst = binary.BigEndian.AppendUint16(dst, uint16(len(msg)))
		dst = append(dst, msg...)
	}
	return append(dst, r.body...)
}

// ReadFrom decodes src, keeping the answer bytes in it: the client reads
// each frame into fresh bytes, which the caller then owns.
func (r *internalResponse) ReadFrom(src []byte) error {
	if len(src) < 4 {
		return fmt.Errorf("internal response of %d bytes", len(src))
	}
	r.code = int16(binary.BigEndian.Uint16(src))
	n := int16(binary.BigEndian.Uint16(src[2:]))
	src = src[4:]
	r.msg = nil
	switch {
	case n < -1:
		return fmt.Errorf("error message length %d", n)
	case n >= 0:
		if int(n) > len(src) {
			return fmt.Errorf("error message of %d bytes in %d", n, len(src))
		}
		msg := string(src[:n])
		r.msg = &msg
		src = src[n:]
	}
	r.body = src
	return nil
}

func (r *internalResponse) RequestKind() kmsg.Request { return &internalRequest{key: r.key} }

var (
	_ kmsg.Request  = (*internalRequest)(nil)
	_ kmsg.Response = (*internalResponse)(nil)
)
