package controller

import (
	"context"
	"fmt"
	"sync"
	"time"

	pb "go.etcd.io/raft/v3/raftpb"

	"github.com/partlog/partlog/kafka"
)

// Local is the API of a quorum's controllers in this process — three
// Controllers joined by a MemRaft, say — for nodes in the same process:
// each call goes to the active controller, whichever it is, and while
// none is (an election), waits for one as a Client does. It is safe for
// concurrent use.
type Local struct {
	calls
	ctls []*Controller
}

// NewLocal returns the API of ctls, a quorum's controllers.
func NewLocal(ctls ...*Controller) *Local {
	l := &Local{ctls: ctls}
	l.calls = calls{l}
	return l
}

// call answers req at the active controller.
func (l *Local) call(ctx context.Context, req *request) (*response, error) {
	deadline := time.Now().Add(electionWait)
	for {
		var err error
		for _, c := range l.ctls {
			var resp *response
			if resp, err = c.call(ctx, req); err == nil || !movesOn(err) {
				return resp, err
			}
		}
		if err == nil {
			err = fmt.Errorf("%w: no controllers", kafka.ErrCoordinatorNotAvailable)
		}
		if !waitForElection(ctx, deadline) {
			return nil, err
		}
	}
}

// MemRaft is an in-memory RaftTransport for the controllers of a quorum
// in one process: give every controller it as Options.RaftTransport, and
// Attach each once opened. A message to a controller not attached (yet,
// or any more) is lost, as to one that is down. It is safe for concurrent
// use.
type MemRaft struct {
	mu   sync.Mutex
	ctls map[int32]*Controller
}

// NewMemRaft returns an empty in-memory Raft network.
func NewMemRaft() *MemRaft { return &MemRaft{ctls: map[int32]*Controller{}} }

// Attach makes controller id, c, reachable; nil detaches it.
func (n *MemRaft) Attach(id int32, c *Controller) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if c == nil {
		delete(n.ctls, id)
		return
	}
	n.ctls[id] = c
}

// Send implements RaftTransport. The messages go through their encoding,
// as over TCP, so that the receiver shares nothing with the sender.
func (n *MemRaft) Send(ctx context.Context, to int32, msgs []*pb.Message) error {
	n.mu.Lock()
	c := n.ctls[to]
	n.mu.Unlock()
	if c == nil {
		return fmt.Errorf("%w: controller %d is not attached", kafka.ErrNetwork, to)
	}
	body, err := encodeRaftMessages(msgs)
	if err != nil {
		return err
	}
	return c.stepRaftBody(body)
}

var _ API = (*Local)(nil)
