package broker

import (
	"context"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/transport"
)

// A share session (KIP-932) is a member's ShareFetch and ShareAcknowledge
// requests to one node: the partitions it fetches from there, which a
// request names once and the session keeps until forgotten, and an epoch
// that orders the requests. Epoch 0 opens a session (replacing one the
// member had), -1 closes it after its acknowledgements (giving back what
// the member still holds), and any other must be the session's next:
// each request answered moves the epoch on by one.

// shareSessionIdle is how long a share session may go unused before the
// node evicts it and gives back what its member held, as Kafka's fetch
// session cache lets an incremental fetch session go after 120 s: a
// member that polls sends a ShareFetch at least every FetchMaxWait, so
// its member is gone — killed, or cut off — or has not polled for so long
// that its acquisition locks expired. A group whose record lock duration
// is longer keeps its sessions that long. The member's next request finds
// SHARE_SESSION_NOT_FOUND, and opens a new session.
const shareSessionIdle = 2 * time.Minute

// shareSessionKey names a share session: a member of a group.
type shareSessionKey struct{ group, member string }

// shareSession is one member's share session on the node.
type shareSession struct {
	// epoch is the epoch of the session's next request.
	epoch int32
	// used is when the session's last request came, by the node's clock.
	used time.Time
	// parts are the partitions the session fetches from, in the order
	// they were added.
	parts []shareSessionPartition
}

// shareSessionPartition is a partition of a share session, its topic by
// id as the wire names it.
type shareSessionPartition struct {
	topicID   [16]byte
	partition int32
}

// nextShareSessionEpoch is the epoch after e: one more, wrapping to 1.
func nextShareSessionEpoch(e int32) int32 {
	if e == math.MaxInt32 {
		return 1
	}
	return e + 1
}

// shareSessionStep is what a request does to its session: the partitions
// the session fetches from (for ShareFetch), whether the request closes
// it, and the partitions of a session it replaced or closed, whose
// records the member gives back.
type shareSessionStep struct {
	parts  []shareSessionPartition
	final  bool
	closed []shareSessionPartition
}

// stepSession applies a request's epoch to the member's session: opens,
// checks and moves on, or closes it. forFetch says the request is a
// ShareFetch, whose topics add partitions to the session and whose
// forgotten topics remove them; a ShareAcknowledge may not open one.
// The errors: SHARE_SESSION_NOT_FOUND, INVALID_SHARE_SESSION_EPOCH.
func (h *shareHost) stepSession(group, member string, epoch int32, forFetch bool, add []transport.ShareFetchTopic, forget []transport.TopicIDPartitions, now time.Time) (shareSessionStep, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	k := shareSessionKey{group, member}
	s := h.sessions[k]
	var step shareSessionStep
	switch {
	case epoch == 0 && !forFetch:
		return step, fmt.Errorf("%w: ShareAcknowledge cannot open a share session", kafka.ErrInvalidShareSessionEpoch)
	case epoch == 0:
		if s != nil {
			step.closed = s.parts // the member starts over
		}
		s = &shareSession{epoch: 0}
		h.sessions[k] = s
	case s == nil:
		return step, fmt.Errorf("%w: member %q of group %q has none on this node", kafka.ErrShareSessionNotFound, member, group)
	case epoch == -1:
		delete(h.sessions, k)
		step.final, step.closed = true, s.parts
		return step, nil
	case epoch != s.epoch:
		return step, fmt.Errorf("%w: %d, the session is at %d", kafka.ErrInvalidShareSessionEpoch, epoch, s.epoch)
	}
	for _, t := range add {
		for _, p := range t.Partitions {
			sp := shareSessionPartition{t.TopicID, p.Partition}
			if !slices.Contains(s.parts, sp) {
				s.parts = append(s.parts, sp)
			}
		}
	}
	for _, t := range forget {
		s.parts = slices.DeleteFunc(s.parts, func(sp shareSessionPartition) bool {
			return sp.topicID == t.TopicID && slices.Contains(t.Partitions, sp.partition)
		})
	}
	s.epoch = nextShareSessionEpoch(s.epoch)
	s.used = now
	step.parts = slices.Clone(s.parts)
	return step, nil
}

// evictIdle evicts the share sessions unused for shareSessionIdle (or
// their group's record lock duration, when longer) by now, and gives back
// what their members held.
func (h *shareHost) evictIdle(now time.Time) {
	type evicted struct {
		key   shareSessionKey
		parts []shareSessionPartition
	}
	var gone []evicted
	h.mu.Lock()
	for k, s := range h.sessions {
		if now.Sub(s.used) >= max(shareSessionIdle, h.configOf(k.group).RecordLockDuration) {
			delete(h.sessions, k)
			gone = append(gone, evicted{k, s.parts})
		}
	}
	h.mu.Unlock()
	if len(gone) == 0 {
		return
	}
	_, names := h.n.topicIDs()
	for _, e := range gone {
		h.n.logger.Info("evicted an idle share session", "group", e.key.group, "member", e.key.member, "partitions", len(e.parts))
		ctx, cancel := context.WithTimeout(context.Background(), offsetsCommitTimeout)
		h.n.releaseShares(ctx, e.key.group, e.key.member, names, e.parts)
		cancel()
	}
}
