package controller

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/transport"
)

// Client calls a controller over TCP (see Controller.Serve). It implements
// API, and is safe for concurrent use. A server answers one connection's
// requests in order, so a long-polling heartbeat has a connection of its
// own, and never holds up an AlterPartition.
type Client struct {
	calls
	addr string

	mu      sync.Mutex
	clients [2]*transport.TCPClient // for other calls, and for long polls
}

// Dial returns a client of the controller at addr (host:port). It
// connects on its first call, and again after a connection fails.
func Dial(addr string) *Client {
	c := &Client{addr: addr}
	c.calls = calls{c}
	return c
}

// call sends req as JSON under transport.APIController.
func (t *Client) call(ctx context.Context, req *request) (*response, error) {
	kind := 0
	if req.Op == opHeartbeat && req.WaitMs > 0 {
		kind = 1
	}
	t.mu.Lock()
	cl := t.clients[kind]
	t.mu.Unlock()
	if cl == nil {
		var err error
		if cl, err = transport.Dial(ctx, t.addr, transport.DialOptions{ClientID: "partlog-node", DialTimeout: 2 * time.Second}); err != nil {
			return nil, err
		}
		t.mu.Lock()
		if t.clients[kind] == nil {
			t.clients[kind] = cl
		} else {
			cl.Close()
			cl = t.clients[kind]
		}
		t.mu.Unlock()
	}
	body, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	out, err := cl.CallInternal(ctx, transport.APIController, body)
	if err != nil {
		return nil, err
	}
	resp := &response{}
	if err := json.Unmarshal(out, resp); err != nil {
		return nil, fmt.Errorf("%w: controller answer: %v", kafka.ErrCorruptMessage, err)
	}
	return resp, nil
}

// Close closes the client's connections.
func (t *Client) Close() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	for i, cl := range t.clients {
		if cl != nil {
			cl.Close()
			t.clients[i] = nil
		}
	}
	return nil
}
