package broker

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/sharecoord"
	"github.com/partlog/partlog/transport"
)

// sharePersister returns the node's sharePersister: a call about a share
// partition whose partition of __share_group_state the node leads and has
// loaded goes to its own share coordinator; any other goes to that
// partition's leader as Kafka's InitializeShareGroupState,
// ReadShareGroupState, WriteShareGroupState or DeleteShareGroupState,
// through the member's client of the node (as transaction markers go).
//
// It does not hold the node (begin): its callers are requests that do.
func (n *Broker) sharePersister() sharePersister { return shareStatePersister{n} }

// shareStatePersister is the node's sharePersister.
type shareStatePersister struct{ n *Broker }

// The retry backoff of a call whose coordinator moves or loads: from
// shareStateBackoffMin, doubling up to shareStateBackoffMax.
const (
	shareStateBackoffMin = 20 * time.Millisecond
	shareStateBackoffMax = 500 * time.Millisecond
)

func (p shareStatePersister) initialize(ctx context.Context, sp sharecoord.SharePartition, stateEpoch int32, startOffset int64) error {
	return p.call(ctx, sp, "InitializeShareGroupState",
		func(c *sharecoord.Coordinator) error { return c.Initialize(sp, stateEpoch, startOffset) },
		func(ctx context.Context, sc transport.ShareStateClient) (error, error) {
			resp, err := sc.InitializeShareGroupState(ctx, &transport.InitializeShareGroupStateRequest{Group: sp.Group,
				Topics: []transport.InitializeShareGroupStateTopic{{TopicID: sp.TopicID,
					Partitions: []transport.InitializeShareGroupStatePartition{{Partition: sp.Partition, StateEpoch: stateEpoch, StartOffset: startOffset}}}}})
			if err != nil {
				return nil, err
			}
			return resultOf(resp.Topics, sp), nil
		})
}

// read returns sp's state. Its LeaderEpoch is leaderEpoch, on both paths:
// ReadShareGroupState does not carry the coordinator's, which a read with
// a leader epoch (not -1) that succeeds has made leaderEpoch.
func (p shareStatePersister) read(ctx context.Context, sp sharecoord.SharePartition, leaderEpoch int32) (sharecoord.State, error) {
	var st sharecoord.State
	err := p.call(ctx, sp, "ReadShareGroupState",
		func(c *sharecoord.Coordinator) (err error) {
			st, err = c.Read(sp, leaderEpoch)
			return err
		},
		func(ctx context.Context, sc transport.ShareStateClient) (error, error) {
			resp, err := sc.ReadShareGroupState(ctx, &transport.ReadShareGroupStateRequest{Group: sp.Group,
				Topics: []transport.ReadShareGroupStateTopic{{TopicID: sp.TopicID,
					Partitions: []transport.ReadShareGroupStatePartition{{Partition: sp.Partition, LeaderEpoch: leaderEpoch}}}}})
			if err != nil {
				return nil, err
			}
			for _, t := range resp.Topics {
				for _, r := range t.Partitions {
					if t.TopicID == sp.TopicID && r.Partition == sp.Partition {
						st = sharecoord.State{StateEpoch: r.StateEpoch, StartOffset: r.StartOffset, Batches: stateBatchesFromWire(r.StateBatches)}
						return r.Err, nil
					}
				}
			}
			return fmt.Errorf("%w: the answer says nothing about %s", kafka.ErrCoordinatorNotAvailable, sp), nil
		})
	if err != nil {
		return sharecoord.State{}, err
	}
	st.LeaderEpoch = leaderEpoch
	return st, nil
}

func (p shareStatePersister) write(ctx context.Context, sp sharecoord.SharePartition, w sharecoord.Write) error {
	return p.call(ctx, sp, "WriteShareGroupState",
		func(c *sharecoord.Coordinator) error { return c.Write(sp, w) },
		func(ctx context.Context, sc transport.ShareStateClient) (error, error) {
			resp, err := sc.WriteShareGroupState(ctx, &transport.WriteShareGroupStateRequest{Group: sp.Group,
				Topics: []transport.WriteShareGroupStateTopic{{TopicID: sp.TopicID,
					Partitions: []transport.WriteShareGroupStatePartition{{Partition: sp.Partition, StateEpoch: w.StateEpoch,
						LeaderEpoch: w.LeaderEpoch, StartOffset: w.StartOffset, StateBatches: stateBatchesToWire(w.Batches)}}}}})
			if err != nil {
				return nil, err
			}
			return resultOf(resp.Topics, sp), nil
		})
}

func (p shareStatePersister) delete(ctx context.Context, sp sharecoord.SharePartition) error {
	return p.call(ctx, sp, "DeleteShareGroupState",
		func(c *sharecoord.Coordinator) error { return c.Delete(sp) },
		func(ctx context.Context, sc transport.ShareStateClient) (error, error) {
			resp, err := sc.DeleteShareGroupState(ctx, &transport.DeleteShareGroupStateRequest{Group: sp.Group,
				Topics: []transport.TopicIDPartitions{{TopicID: sp.TopicID, Partitions: []int32{sp.Partition}}}})
			if err != nil {
				return nil, err
			}
			return resultOf(resp.Topics, sp), nil
		})
}

// resultOf returns the error a share state answer gives sp.
func resultOf(topics []transport.ShareStateTopicResult, sp sharecoord.SharePartition) error {
	for _, t := range topics {
		for _, r := range t.Partitions {
			if t.TopicID == sp.TopicID && r.Partition == sp.Partition {
				return r.Err
			}
		}
	}
	return fmt.Errorf("%w: the answer says nothing about %s", kafka.ErrCoordinatorNotAvailable, sp)
}

// call runs a call about sp at its coordinator — local on this node's
// coordinator, or remote, an RPC named api to the node that leads sp's
// partition of __share_group_state — and retries, with a backoff, while
// the coordinator moves or loads, until ctx ends or the node leaves its
// cluster; then it returns the last error with why it stopped. A share
// partition without a group id is refused with kafka.ErrInvalidRequest,
// as the coordinator answers none over the wire.
func (p shareStatePersister) call(ctx context.Context, sp sharecoord.SharePartition, api string,
	local func(*sharecoord.Coordinator) error, remote shareStateCall) error {
	if sp.Group == "" {
		return fmt.Errorf("%w: %s: empty group id", kafka.ErrInvalidRequest, sp)
	}
	backoff := shareStateBackoffMin
	for {
		err := p.once(ctx, sp, api, local, remote)
		if !shareStateRetriable(err) {
			return err
		}
		t := time.NewTimer(backoff)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("%w (gave up: %w)", err, ctx.Err())
		case <-p.n.member.ctx.Done():
			t.Stop()
			return fmt.Errorf("%w (gave up: %w)", err, ErrClosed)
		}
		backoff = min(2*backoff, shareStateBackoffMax)
	}
}

// once makes one attempt of call.
func (p shareStatePersister) once(ctx context.Context, sp sharecoord.SharePartition, api string,
	local func(*sharecoord.Coordinator) error, remote shareStateCall) error {
	n := p.n
	c, err := n.shareCoordinatorOf(ctx, sp)
	if err == nil {
		return local(c)
	}
	if !errors.Is(err, kafka.ErrNotCoordinator) {
		return err
	}
	partitions, configs := n.shareStateTopicConfigs()
	leader, _, _, err := n.shareStates.state.coordinatorNode(ctx, sp.String(), partitions, configs)
	if err != nil {
		return err
	}
	if leader == n.meta.NodeID {
		// The metadata names this node, which has not taken the
		// leadership up yet.
		return fmt.Errorf("%w: node %d is taking %s's coordinator up", kafka.ErrCoordinatorLoadInProgress, leader, sp)
	}
	nc, err := n.member.nodeClient(ctx, leader)
	if err != nil {
		return fmt.Errorf("%w: reaching node %d: %v", kafka.ErrCoordinatorNotAvailable, leader, err)
	}
	sc, ok := nc.(transport.ShareStateClient)
	if !ok {
		return fmt.Errorf("%w: the client of node %d sends no share state calls", kafka.ErrCoordinatorNotAvailable, leader)
	}
	answer, err := remote(ctx, sc)
	if err != nil {
		// No answer (the connection broke, the node is gone): the next
		// attempt dials again.
		n.member.forgetNodeClient(leader)
		return fmt.Errorf("%w: %s to node %d: %v", kafka.ErrCoordinatorNotAvailable, api, leader, err)
	}
	return answer
}

// shareStateCall sends a share state call with sc and returns the
// answer's error for the share partition, or err when the call got no
// answer.
type shareStateCall func(ctx context.Context, sc transport.ShareStateClient) (answer, err error)

// shareStateRetriable reports whether a call that failed with err may be
// tried again: its coordinator moves, loads, or could not be reached.
func shareStateRetriable(err error) bool {
	return errors.Is(err, kafka.ErrNotCoordinator) || errors.Is(err, kafka.ErrCoordinatorLoadInProgress) ||
		errors.Is(err, kafka.ErrCoordinatorNotAvailable)
}
