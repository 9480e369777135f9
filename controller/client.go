package controller

import (
	"cmp"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/transport"
)

// Client calls a controller over TCP (see Controller.Serve): the active
// one of a quorum, whichever it is. It implements API, and is safe for
// concurrent use. A server answers one connection's requests in order, so
// a long-polling heartbeat has a connection of its own, and never holds
// up an AlterPartition.
type Client struct {
	calls
	addrs   []string
	attempt time.Duration
	tls     *tls.Config // how controllers are dialled; nil for plaintext

	mu      sync.Mutex
	closed  bool
	cur     int                     // the index in addrs of the controller called
	clients [2]*transport.TCPClient // to it: for other calls, and for long polls
}

// Dial returns a client of the controllers at addrs (host:port each), the
// quorum's voters. It calls one, and moves to the next when that one
// answers kafka.ErrNotController or cannot be reached; when none answers,
// the quorum may be electing one, and the call tries them all again for a
// while. It connects on its first call, and again after a connection
// fails.
func Dial(addrs ...string) *Client { return NewClient(addrs, ClientOptions{}) }

// ClientOptions configures a Client.
type ClientOptions struct {
	// AttemptTimeout bounds one attempt at one controller, a heartbeat's
	// long poll not counted: a controller that does not answer in time —
	// cut off from the network, or stalled — is left for the next, within
	// the call's own deadline. Keep it well under the controllers'
	// FailoverSessionTimeout, so that a node finds a new active controller
	// before that fences it. Zero means 2 s.
	AttemptTimeout time.Duration
	// TLS, when set, speaks TLS to the controllers, whose listeners serve
	// it (Options.TLS). Nil is plaintext.
	TLS *tls.Config
}

// NewClient is Dial with options.
func NewClient(addrs []string, opts ClientOptions) *Client {
	c := &Client{addrs: addrs, attempt: cmp.Or(opts.AttemptTimeout, 2*time.Second), tls: opts.TLS}
	c.calls = calls{c}
	return c
}

// call sends req as JSON under transport.APIController to the active
// controller.
func (t *Client) call(ctx context.Context, req *request) (*response, error) {
	if len(t.addrs) == 0 {
		return nil, fmt.Errorf("%w: no controller addresses", kafka.ErrCoordinatorNotAvailable)
	}
	body, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	kind := 0
	if req.Op == opHeartbeat && req.WaitMs > 0 {
		kind = 1
	}
	var deadline time.Time
	for tries := 1; ; tries++ {
		actx, cancel := context.WithTimeout(ctx, t.attempt+time.Duration(req.WaitMs)*time.Millisecond)
		out, at, err := t.send(actx, kind, body)
		timedOut := err != nil && actx.Err() != nil
		cancel()
		if err == nil {
			resp := &response{}
			if err := json.Unmarshal(out, resp); err != nil {
				return nil, fmt.Errorf("%w: controller answer: %v", kafka.ErrCorruptMessage, err)
			}
			return resp, nil
		}
		if ctx.Err() != nil {
			// No answer in time: the next call tries another controller,
			// as this one may be cut off.
			t.moveOn(at)
			return nil, err
		}
		if !(movesOn(err) || timedOut) || t.isClosed() {
			return nil, err
		}
		t.moveOn(at)
		if tries%len(t.addrs) != 0 {
			continue
		}
		// Every controller was tried: the quorum may be electing one.
		if deadline.IsZero() {
			deadline = time.Now().Add(electionWait)
		}
		if !waitForElection(ctx, deadline) {
			return nil, err
		}
	}
}

// waitForElection waits electionBackoff for a quorum that has no active
// controller to elect one, and reports false instead once deadline has
// passed or when ctx ends.
func waitForElection(ctx context.Context, deadline time.Time) bool {
	if time.Now().After(deadline) {
		return false
	}
	select {
	case <-time.After(electionBackoff):
		return true
	case <-ctx.Done():
		return false
	}
}

// While no controller of a quorum is active — it is electing one — a call
// tries them all again every electionBackoff, for up to electionWait (or
// until its ctx ends), as a Kafka broker's forwarding manager waits for a
// new controller.
const (
	electionWait    = 10 * time.Second
	electionBackoff = 50 * time.Millisecond
)

// movesOn reports whether a call that failed with err should go to
// another controller: this one is not active, or cannot be reached, or
// another call moved the client on and closed the connection this one
// used.
func movesOn(err error) bool {
	return errors.Is(err, kafka.ErrNotController) || errors.Is(err, kafka.ErrNetwork) ||
		errors.Is(err, kafka.ErrCoordinatorNotAvailable) || errors.Is(err, kafka.ErrClosed)
}

// isClosed reports whether Close was called.
func (t *Client) isClosed() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.closed
}

// send sends body to the controller called now, over the connection of
// kind, and returns its answer and the controller's index.
func (t *Client) send(ctx context.Context, kind int, body []byte) ([]byte, int, error) {
	t.mu.Lock()
	at, cl, closed := t.cur, t.clients[kind], t.closed
	t.mu.Unlock()
	if closed {
		return nil, at, fmt.Errorf("%w: the controller client is closed", kafka.ErrClosed)
	}
	if cl == nil {
		var err error
		if cl, err = transport.Dial(ctx, t.addrs[at], transport.DialOptions{ClientID: "partlog-node", DialTimeout: 2 * time.Second, TLS: t.tls}); err != nil {
			return nil, at, err
		}
		t.mu.Lock()
		switch {
		case t.closed || t.cur != at:
			t.mu.Unlock()
			cl.Close()
			return nil, at, fmt.Errorf("%w: the client moved to another controller", kafka.ErrNotController)
		case t.clients[kind] == nil:
			t.clients[kind] = cl
		default:
			cl.Close()
			cl = t.clients[kind]
		}
		t.mu.Unlock()
	}
	out, err := cl.CallInternal(ctx, transport.APIController, body)
	return out, at, err
}

// moveOn makes the client call the controller after the one at index at,
// unless another call moved it already.
func (t *Client) moveOn(at int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.cur != at {
		return
	}
	t.cur = (at + 1) % len(t.addrs)
	for i, cl := range t.clients {
		if cl != nil {
			cl.Close()
			t.clients[i] = nil
		}
	}
}

// Close closes the client's connections.
func (t *Client) Close() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.closed = true
	for i, cl := range t.clients {
		if cl != nil {
			cl.Close()
			t.clients[i] = nil
		}
	}
	return nil
}
