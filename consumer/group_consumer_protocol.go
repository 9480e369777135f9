package consumer

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/transport"
)

// A member of the consumer group protocol (KIP-848), as Kafka 4's consumer
// runs one: a goroutine heartbeats (ConsumerGroupHeartbeat) every interval
// the coordinator gives, carrying only what changed since the last
// heartbeat; an answer may carry the member's new assignment, which the
// goroutine keeps as the target and wakes Poll for. Poll reconciles, in
// the goroutine that polls as the classic protocol's rebalances run:
// partitions no longer assigned are revoked (committed first when
// auto-commit is on, then OnPartitionsRevoked), the new ones start at the
// group's committed offsets (OnPartitionsAssigned), and the next
// heartbeat, sent at once, tells the coordinator what the member owns —
// which is what lets it give the revoked partitions to other members.
// The coordinator never assigns a partition another member still owns,
// so a record is consumed by one member at a time.
//
// The member id is the client's (KIP-1082), chosen once and kept through
// rejoins. The member epoch stands where the classic protocol's
// generation does, in commits too: generation is the epoch, -1
// (transport.NoGeneration) while the consumer is not a member.

// startConsumerProtocol sets the member up and starts its heartbeats,
// the first of which joins the group.
func (g *groupMember) startConsumerProtocol() error {
	cg, ok := g.c.client.(transport.ConsumerGroupClient)
	if !ok {
		return errors.New("consumer: GroupProtocol(ConsumerProtocol) needs a client that implements transport.ConsumerGroupClient")
	}
	id := make([]byte, 16)
	rand.Read(id)
	g.cg = cg
	g.memberID = base64.RawURLEncoding.EncodeToString(id)
	g.topicNames, g.topicIDs = map[[16]byte]string{}, map[string][16]byte{}
	g.heartbeatNow = make(chan struct{}, 1)
	g.hbStop, g.hbDone = make(chan struct{}), make(chan struct{})
	// At once when the member joins or reconciled, else every interval
	// the coordinator asks for.
	go runHeartbeats(g.hbStop, g.heartbeatNow, g.hbDone, g.consumerHeartbeat)
	return nil
}

// heartbeatSoonLocked makes the heartbeat goroutine send its next
// heartbeat now.
func (g *groupMember) heartbeatSoonLocked() {
	select {
	case g.heartbeatNow <- struct{}{}:
	default:
	}
}

// fencedLocked ends the member's epoch: the partitions it owns are lost
// and it joins again with epoch 0 and the same member id, as Kafka's
// consumer does on FENCED_MEMBER_EPOCH and UNKNOWN_MEMBER_ID — once the
// next Poll has given them up (OnPartitionsLost), as Kafka's consumer
// rejoins only after its callback: until then the member sends no
// heartbeat, so that the coordinator never gives the partitions it still
// works on back to it, or another member, as a new assignment meanwhile.
func (g *groupMember) fencedLocked() {
	g.generation = transport.NoGeneration
	g.target, g.targetDue = nil, false
	if len(g.owned) > 0 {
		g.lost = true
		return
	}
	g.heartbeatSoonLocked()
}

// heartbeatIdle is how long the heartbeat goroutine waits when it has
// nothing to send: heartbeatNow wakes it when it has.
const heartbeatIdle = time.Hour

// runHeartbeats is the heartbeat goroutine of a member of the consumer
// or share group protocol: it calls beat at once, then when the time beat
// returned has passed or now has a value, until stop is closed; then it
// closes done. beat sends one heartbeat and returns when the next is due;
// r is its retry state.
func runHeartbeats(stop <-chan struct{}, now <-chan struct{}, done chan<- struct{}, beat func(r *retry) time.Duration) {
	defer close(done)
	var r retry
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-now:
		case <-t.C:
		}
		t.Reset(beat(&r))
	}
}

// consumerHeartbeat sends one heartbeat, handles its answer and returns
// when the next one is due.
func (g *groupMember) consumerHeartbeat(r *retry) time.Duration {
	g.mu.Lock()
	if g.leaving || g.fatal != nil || g.stalled || g.lost {
		// lost: fenced, and rejoining once Poll gave the partitions up.
		g.mu.Unlock()
		return heartbeatIdle
	}
	if g.generation > 0 && time.Since(g.lastPoll) > g.cfg.maxPollInterval {
		// Kafka's consumer leaves when Poll is not called for
		// max.poll.interval.ms, and joins again at the next Poll.
		g.stalled = true
		g.fencedLocked()
		id := g.memberID
		g.mu.Unlock()
		g.cg.ConsumerGroupHeartbeat(g.c.ctx, &transport.ConsumerGroupHeartbeatRequest{
			Group: g.cfg.group, MemberID: id, MemberEpoch: leaveEpoch(g.cfg.instanceID), RebalanceTimeoutMillis: -1,
		})
		g.wake()
		return heartbeatIdle
	}
	req, full, ownedVersion := g.heartbeatRequestLocked()
	g.mu.Unlock()

	resp, err := g.cg.ConsumerGroupHeartbeat(g.c.ctx, req)
	if err == nil {
		err = resp.Err
	}
	g.mu.Lock()
	wait, wake := g.heartbeatAnsweredLocked(req, resp, err, full, ownedVersion, r)
	g.mu.Unlock()
	if wake {
		g.wake()
	}
	return wait
}

// heartbeatAnsweredLocked handles the answer to req (resp, or err): it
// returns when the next heartbeat is due and whether Poll has work.
func (g *groupMember) heartbeatAnsweredLocked(req *transport.ConsumerGroupHeartbeatRequest, resp *transport.ConsumerGroupHeartbeatResponse, err error, full bool, ownedVersion int, r *retry) (wait time.Duration, wake bool) {
	if g.leaving || g.stalled || req.MemberEpoch != 0 && g.generation != req.MemberEpoch {
		return 0, false // the member moved on meanwhile (fenced by a commit, left)
	}
	switch {
	case err == nil:
		r.failures = 0
		if full {
			g.fullHeartbeat = false
		}
		if req.Owned != nil {
			g.ownedSent = ownedVersion
		}
		g.generation = resp.MemberEpoch
		if resp.Assignment != nil {
			g.target, g.targetDue, wake = resp.Assignment, true, true
		}
		if g.ownedSent != g.ownedVersion {
			return 0, wake
		}
		return max(time.Duration(resp.HeartbeatIntervalMillis)*time.Millisecond, time.Millisecond), wake
	case errors.Is(err, kafka.ErrFencedMemberEpoch), errors.Is(err, kafka.ErrUnknownMemberID):
		g.fencedLocked()
		return 0, true
	case kafka.IsRetriable(err) || !errors.As(err, new(*kafka.Error)):
		// The coordinator moved, loads, or cannot be reached: the next
		// heartbeat, after the backoff, says everything again, since
		// this one may or may not have been applied.
		g.fullHeartbeat = true
		r.fail(&g.c.cfg, time.Now(), false)
		return time.Until(r.until), false
	default:
		// UNSUPPORTED_ASSIGNOR, UNRELEASED_INSTANCE_ID,
		// GROUP_AUTHORIZATION_FAILED, INCONSISTENT_GROUP_PROTOCOL, ...:
		// Poll reports it.
		g.fatal = fmt.Errorf("consumer: group %q refused the member: %w", g.cfg.group, err)
		return heartbeatIdle, true
	}
}

// heartbeatRequestLocked builds the next heartbeat: every field when the
// member joins or the last heartbeat went unanswered, else the epoch and,
// when they changed, the partitions owned. It returns whether it is full
// and the version of owned it carries.
func (g *groupMember) heartbeatRequestLocked() (req *transport.ConsumerGroupHeartbeatRequest, full bool, ownedVersion int) {
	req = &transport.ConsumerGroupHeartbeatRequest{
		Group: g.cfg.group, MemberID: g.memberID, MemberEpoch: max(g.generation, 0), RebalanceTimeoutMillis: -1,
		// A served node takes the request header's client id instead.
		ClientID: g.cfg.clientID,
	}
	full = g.generation <= 0 || g.fullHeartbeat
	if full {
		req.RebalanceTimeoutMillis = int32(g.cfg.maxPollInterval.Milliseconds())
		req.SubscribedTopicNames = slices.Clone(g.c.cfg.topics)
		if g.cfg.instanceID != "" {
			req.InstanceID = &g.cfg.instanceID
		}
		if g.cfg.remoteAssignor != "" {
			req.ServerAssignor = &g.cfg.remoteAssignor
		}
	}
	if full || g.ownedSent != g.ownedVersion {
		req.Owned = []transport.TopicIDPartitions{}
		if g.generation > 0 {
			req.Owned = g.ownedByIDLocked()
		}
	}
	return req, full, g.ownedVersion
}

// ownedByIDLocked returns the partitions owned, their topics by id.
func (g *groupMember) ownedByIDLocked() []transport.TopicIDPartitions {
	out := []transport.TopicIDPartitions{}
	for _, tp := range g.owned {
		id := g.topicIDs[tp.Topic]
		if n := len(out); n > 0 && out[n-1].TopicID == id {
			out[n-1].Partitions = append(out[n-1].Partitions, tp.Partition)
			continue
		}
		out = append(out, transport.TopicIDPartitions{TopicID: id, Partitions: []int32{tp.Partition}})
	}
	return out
}

// leaveEpoch is the epoch a member leaves with: -1, or -2 for a static
// member, whose instance may come back and take its partitions again.
func leaveEpoch(instanceID string) int32 {
	if instanceID != "" {
		return -2
	}
	return -1
}

// reconcile is what Poll does for a member of the consumer protocol: it
// reports a refusal for good, gives up lost partitions, rejoins after
// MaxPollInterval passed, and moves the consumer to the last assignment
// received.
func (g *groupMember) reconcile(ctx context.Context) error {
	g.rebalanceMu.Lock()
	defer g.rebalanceMu.Unlock()
	// Close cancels a reconciliation in progress, as it does a classic
	// rebalance: its commits and offset fetches may wait on a
	// coordinator that does not answer.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(g.c.ctx, cancel)()
	g.mu.Lock()
	if g.leaving {
		g.mu.Unlock()
		return ErrClosed
	}
	g.cancelRebalance = cancel
	g.mu.Unlock()
	defer func() {
		g.mu.Lock()
		g.cancelRebalance = nil
		g.mu.Unlock()
	}()
	g.mu.Lock()
	if g.fatal != nil {
		err := g.fatal
		g.mu.Unlock()
		return err
	}
	if g.stalled {
		g.stalled = false
		g.heartbeatSoonLocked()
	}
	lost, owned := g.lost, slices.Clone(g.owned)
	target, due := g.target, g.targetDue
	g.targetDue = false
	g.mu.Unlock()
	if lost {
		g.giveUp(ctx, owned, true)
		owned = nil
		g.mu.Lock()
		g.lost = false
		g.heartbeatSoonLocked() // rejoin, now that they are given up
		g.mu.Unlock()
	}
	if !due {
		return nil
	}
	assigned, resolved := g.resolve(ctx, target)
	if !resolved {
		// A topic id the metadata does not know yet: the next Poll
		// tries again.
		g.mu.Lock()
		if !g.targetDue {
			g.target, g.targetDue = target, true
		}
		g.mu.Unlock()
	}
	revoked, added := diffPartitions(owned, assigned)
	g.giveUp(ctx, revoked, false)
	err := g.take(ctx, added)
	if err != nil {
		// The committed offsets could not be had (the coordinator is
		// away, or Poll's ctx ended): the partitions are not taken, and
		// the next Poll tries the assignment again.
		g.mu.Lock()
		if !g.targetDue {
			g.target, g.targetDue = target, true
		}
		g.mu.Unlock()
	}
	g.mu.Lock()
	if len(revoked)+len(added) > 0 {
		g.rebalances++
	}
	g.heartbeatSoonLocked()
	g.mu.Unlock()
	return err
}

// resolve names the topics of an assignment, whose topics are ids,
// reading the subscribed topics' metadata for ids it does not know. It
// leaves out what it cannot name, and says whether it named everything.
func (g *groupMember) resolve(ctx context.Context, target []transport.TopicIDPartitions) (assigned []kafka.TopicPartition, resolved bool) {
	g.mu.Lock()
	known := true
	for _, t := range target {
		if _, ok := g.topicNames[t.TopicID]; !ok {
			known = false
		}
	}
	g.mu.Unlock()
	if !known {
		if md, err := g.c.client.Metadata(ctx, &transport.MetadataRequest{Topics: g.c.cfg.topics}); err == nil {
			g.mu.Lock()
			for _, t := range md.Topics {
				if t.Err == nil {
					g.topicNames[t.TopicID], g.topicIDs[t.Topic] = t.Topic, t.TopicID
				}
			}
			g.mu.Unlock()
		}
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	resolved = true
	for _, t := range target {
		name, ok := g.topicNames[t.TopicID]
		if !ok {
			resolved = false
			continue
		}
		for _, p := range t.Partitions {
			assigned = append(assigned, kafka.TopicPartition{Topic: name, Partition: p})
		}
	}
	sortTPs(assigned)
	return assigned, resolved
}

// leaveConsumerProtocol ends the membership for Close: a heartbeat with
// epoch -1, or -2 for a static member, which keeps its partitions for it
// until the session timeout.
func (g *groupMember) leaveConsumerProtocol(ctx context.Context, id string, epoch int32) {
	if epoch <= 0 {
		return
	}
	g.cg.ConsumerGroupHeartbeat(ctx, &transport.ConsumerGroupHeartbeatRequest{
		Group: g.cfg.group, MemberID: id, MemberEpoch: leaveEpoch(g.cfg.instanceID), RebalanceTimeoutMillis: -1,
	})
}
