package consumer

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/transport"
)

// groupMember is a consumer's part in its group: membership (join, sync,
// heartbeats) when it subscribes, and commits.
//
// Rebalances run in the goroutine that polls, as Kafka's consumer runs
// them inside poll: the heartbeat goroutine only notices that one is due
// (or that the member was dropped) and wakes Poll, which revokes, rejoins,
// resyncs and assigns, calling the rebalance callbacks on the way.
type groupMember struct {
	c     *Consumer
	cfg   *groupConfig
	gc    transport.GroupClient // nil when assigned with a store of the user's
	store OffsetStore
	// member says the consumer takes part in membership (it subscribes).
	member bool
	// protocol is Cooperative when every assignor is.
	protocol RebalanceProtocol

	// rebalanceMu is held by a rebalance, and by leave.
	rebalanceMu sync.Mutex

	mu         sync.Mutex
	memberID   string
	generation int32
	owned      []kafka.TopicPartition
	// rejoin says a rebalance is due, for the next Poll; lost that the
	// partitions owned were lost with the membership.
	rejoin  bool
	lost    bool
	reason  string
	joining bool
	leaving bool
	// lastPoll is when Poll was last called, for MaxPollInterval.
	lastPoll        time.Time
	nextAutoCommit  time.Time
	cancelRebalance context.CancelFunc
	rebalances      int
	// leader says the consumer leads the group's generation; partitions
	// holds the partition counts it assigned, which it checks every
	// MetadataMaxAge (from metadataDue) to rebalance when a subscribed
	// topic appears, goes or grows.
	leader      bool
	partitions  map[string]int32
	metadataDue time.Time

	// The consumer protocol's state (KIP-848), guarded by mu: see
	// group_consumer_protocol.go. generation is the member epoch there.
	cg        transport.ConsumerGroupClient
	target    []transport.TopicIDPartitions // the last assignment received
	targetDue bool                          // target is still to reconcile
	fatal     error                         // the coordinator refused the member for good
	stalled   bool                          // left for MaxPollInterval; the next Poll rejoins
	// ownedVersion counts changes of owned; ownedSent is the version the
	// coordinator was last told of. fullHeartbeat says the next
	// heartbeat sends every field, after one went unanswered.
	ownedVersion, ownedSent int
	fullHeartbeat           bool
	topicNames              map[[16]byte]string
	topicIDs                map[string][16]byte
	heartbeatNow            chan struct{}

	async  sync.WaitGroup // CommitAsync's goroutines
	hbStop chan struct{}
	hbDone chan struct{}
}

// ErrCommitFailed means a commit was refused because the group has moved
// on: a rebalance is in progress or done, or the consumer is no longer a
// member (Kafka's CommitFailedException). It wraps the coordinator's error
// (kafka.ErrIllegalGeneration, ErrUnknownMemberID,
// ErrRebalanceInProgress). The partitions may have another owner now.
var ErrCommitFailed = errors.New("consumer: commit failed: the group rebalanced or the consumer left it")

// newGroupMember sets up c's group part, and starts heartbeats for a
// member.
func newGroupMember(c *Consumer) (*groupMember, error) {
	cfg := &c.cfg.grp
	g := &groupMember{c: c, cfg: cfg, store: cfg.store, member: c.cfg.subscribing, generation: transport.NoGeneration, lastPoll: time.Now()}
	g.gc, _ = c.client.(transport.GroupClient)
	if g.store == nil {
		if g.gc == nil {
			return nil, errors.New("consumer: Group needs a client that implements transport.GroupClient, or an OffsetStore")
		}
		g.store = CoordinatorOffsets(g.gc)
	}
	g.nextAutoCommit = time.Now().Add(cfg.autoCommitInterval)
	if !g.member {
		return g, nil
	}
	if g.gc == nil {
		return nil, errors.New("consumer: Group with Topics needs a client that implements transport.GroupClient")
	}
	if cfg.protocol == ConsumerProtocol {
		return g, g.startConsumerProtocol()
	}
	g.protocol = Cooperative
	for _, a := range cfg.assignors {
		if a.Protocol() != Cooperative {
			g.protocol = Eager
		}
	}
	g.rejoin, g.reason = true, "first poll"
	g.hbStop, g.hbDone = make(chan struct{}), make(chan struct{})
	go g.heartbeats()
	return g, nil
}

// wake makes a waiting Poll look again.
func (g *groupMember) wake() {
	g.c.mu.Lock()
	g.c.broadcastLocked()
	g.c.mu.Unlock()
}

// resetLocked forgets the membership: the next Poll joins as a new member,
// and the partitions owned are lost.
func (g *groupMember) resetLocked(reason string) {
	if g.cfg.protocol == ConsumerProtocol {
		g.fencedLocked()
		return
	}
	g.memberID, g.generation = "", transport.NoGeneration
	g.rejoin, g.reason = true, reason
	if len(g.owned) > 0 {
		g.lost = true
	}
}

// requestRejoinLocked makes the next Poll rejoin, keeping the membership.
func (g *groupMember) requestRejoinLocked(reason string) {
	if !g.rejoin {
		g.rejoin, g.reason = true, reason
	}
}

// heartbeats sends a heartbeat every HeartbeatInterval while the consumer
// is a member, and leaves the group when Poll has not been called for
// MaxPollInterval.
func (g *groupMember) heartbeats() {
	defer close(g.hbDone)
	t := time.NewTicker(g.cfg.heartbeatInterval)
	defer t.Stop()
	for {
		select {
		case <-g.hbStop:
			return
		case <-t.C:
		}
		g.heartbeat()
		g.checkMetadata(g.c.ctx, time.Now())
	}
}

func (g *groupMember) heartbeat() {
	g.mu.Lock()
	if g.memberID == "" || g.generation < 0 || g.joining || g.leaving {
		g.mu.Unlock()
		return
	}
	id, gen := g.memberID, g.generation
	if time.Since(g.lastPoll) > g.cfg.maxPollInterval {
		g.resetLocked("max.poll.interval.ms passed")
		g.mu.Unlock()
		g.gc.LeaveGroup(g.c.ctx, &transport.LeaveGroupRequest{Group: g.cfg.group, Members: []transport.LeaveGroupMember{{
			MemberID: id, GroupInstanceID: g.cfg.instanceID, Reason: "consumer poll timeout has expired (max.poll.interval.ms)",
		}}})
		g.wake()
		return
	}
	g.mu.Unlock()
	resp, err := g.gc.Heartbeat(g.c.ctx, &transport.HeartbeatRequest{Group: g.cfg.group, GenerationID: gen, MemberID: id, GroupInstanceID: g.cfg.instanceID})
	if err != nil || resp.Err == nil {
		return // no answer: the next heartbeat tries again
	}
	g.mu.Lock()
	if g.memberID != id || g.generation != gen {
		g.mu.Unlock()
		return
	}
	switch {
	case errors.Is(resp.Err, kafka.ErrRebalanceInProgress):
		g.requestRejoinLocked("the group is rebalancing")
	case errors.Is(resp.Err, kafka.ErrUnknownMemberID), errors.Is(resp.Err, kafka.ErrIllegalGeneration), errors.Is(resp.Err, kafka.ErrFencedInstanceID):
		g.resetLocked(resp.Err.Error())
	default:
		g.mu.Unlock()
		return // coordinator trouble: retried at the next heartbeat
	}
	g.mu.Unlock()
	g.wake()
}

// poll is what Poll and the Records loop do for the group before they
// take records: note the poll, commit automatically when due, and
// rebalance when one is due.
func (g *groupMember) poll(ctx context.Context) error {
	now := time.Now()
	g.mu.Lock()
	g.lastPoll = now
	rejoin := g.member && g.rejoin
	commit := g.cfg.autoCommit && !now.Before(g.nextAutoCommit) && (!g.member || g.generation >= 0)
	if commit {
		g.nextAutoCommit = now.Add(g.cfg.autoCommitInterval)
	}
	g.mu.Unlock()
	if commit {
		g.c.commitPositions(ctx, nil) // a failure shows at the next commit, or in a rebalance
	}
	if g.member && g.cfg.protocol == ConsumerProtocol {
		return g.reconcile(ctx)
	}
	if rejoin {
		return g.rebalance(ctx)
	}
	return nil
}

// checkMetadata, on the leader, reads the subscribed topics' metadata
// every MetadataMaxAge and makes the group rebalance when their partitions
// differ from those it assigned, as Kafka's leader does. The heartbeat
// goroutine calls it, so that a Poll waiting for records is woken.
func (g *groupMember) checkMetadata(ctx context.Context, now time.Time) {
	g.mu.Lock()
	due := g.member && g.leader && !g.joining && !g.rejoin && g.generation >= 0 && !now.Before(g.metadataDue)
	if due {
		g.metadataDue = now.Add(g.c.cfg.metadataMaxAge)
	}
	assigned := g.partitions
	g.mu.Unlock()
	if !due {
		return
	}
	current, err := g.partitionCounts(ctx, g.c.cfg.topics)
	if err != nil {
		return // looked at again after MetadataMaxAge
	}
	if !maps.Equal(current, assigned) {
		g.setRejoin("the subscribed topics' partitions changed")
		g.wake()
	}
}

// partitionCounts returns the partition count of each of topics that
// exists.
func (g *groupMember) partitionCounts(ctx context.Context, topics []string) (map[string]int32, error) {
	out := map[string]int32{}
	if len(topics) == 0 {
		return out, nil
	}
	md, err := g.c.client.Metadata(ctx, &transport.MetadataRequest{Topics: topics})
	if err != nil {
		return nil, err
	}
	for _, t := range md.Topics {
		if t.Err == nil {
			out[t.Topic] = int32(len(t.Partitions))
		}
	}
	return out, nil
}

// rebalance rejoins the group until the consumer has an assignment in a
// stable generation.
func (g *groupMember) rebalance(ctx context.Context) error {
	g.rebalanceMu.Lock()
	defer g.rebalanceMu.Unlock()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(g.c.ctx, cancel)()
	g.mu.Lock()
	g.cancelRebalance = cancel
	g.mu.Unlock()
	defer func() {
		g.mu.Lock()
		g.cancelRebalance = nil
		g.mu.Unlock()
	}()
	failures := 0
	for {
		g.mu.Lock()
		if g.leaving {
			g.mu.Unlock()
			return ErrClosed
		}
		if !g.rejoin {
			g.mu.Unlock()
			return nil
		}
		lost, owned := g.lost, g.owned
		g.lost = false
		g.mu.Unlock()
		switch {
		case lost:
			g.giveUp(ctx, owned, true)
		case g.protocol == Eager && len(owned) > 0:
			g.giveUp(ctx, owned, false)
		}
		err := g.joinAndSync(ctx)
		if err == nil {
			failures = 0
			continue
		}
		if ctx.Err() != nil {
			if g.c.ctx.Err() != nil {
				return ErrClosed
			}
			return ctx.Err()
		}
		if !kafka.IsRetriable(err) && !errors.Is(err, kafka.ErrRebalanceInProgress) {
			return fmt.Errorf("consumer: joining group %q: %w", g.cfg.group, err)
		}
		failures++
		r := retry{failures: failures - 1}
		r.fail(&g.c.cfg, time.Now(), false)
		select {
		case <-time.After(time.Until(r.until)):
		case <-ctx.Done():
		}
	}
}

// giveUp takes partitions away from the consumer: revoked (committing
// first when auto-commit is on, then OnPartitionsRevoked) or lost
// (OnPartitionsLost).
func (g *groupMember) giveUp(ctx context.Context, tps []kafka.TopicPartition, lost bool) {
	if len(tps) == 0 {
		return
	}
	if lost {
		if g.cfg.onLost != nil {
			g.cfg.onLost(ctx, g.c, tps)
		} else if g.cfg.onRevoked != nil {
			g.cfg.onRevoked(ctx, g.c, tps)
		}
	} else {
		if g.cfg.autoCommit {
			g.c.commitPositions(ctx, tps)
		}
		if g.cfg.onRevoked != nil {
			g.cfg.onRevoked(ctx, g.c, tps)
		}
	}
	g.c.unassign(tps)
	g.mu.Lock()
	g.owned = slices.DeleteFunc(g.owned, func(tp kafka.TopicPartition) bool { return slices.Contains(tps, tp) })
	g.ownedVersion++
	g.mu.Unlock()
}

// joinAndSync runs one JoinGroup and SyncGroup round and applies the
// assignment. A round the coordinator sends back (a new rebalance, a
// member id to use) returns nil with rejoin set again.
func (g *groupMember) joinAndSync(ctx context.Context) error {
	g.mu.Lock()
	g.joining, g.rejoin = true, false
	memberID, owned, gen, reason := g.memberID, slices.Clone(g.owned), g.generation, g.reason
	g.mu.Unlock()
	defer func() {
		g.mu.Lock()
		g.joining = false
		g.mu.Unlock()
	}()
	req := &transport.JoinGroupRequest{
		Group: g.cfg.group, SessionTimeout: g.cfg.sessionTimeout, RebalanceTimeout: g.cfg.maxPollInterval,
		MemberID: memberID, GroupInstanceID: g.cfg.instanceID, ProtocolType: ProtocolType,
		ClientID: g.cfg.clientID, Reason: reason,
	}
	sub := Subscription{Topics: g.c.cfg.topics, Owned: owned, Generation: gen}.Encode()
	for _, a := range g.cfg.assignors {
		req.Protocols = append(req.Protocols, transport.JoinGroupProtocol{Name: a.Name(), Metadata: sub})
	}
	jr, err := g.gc.JoinGroup(ctx, req)
	if err != nil {
		g.setRejoin("join failed")
		return err
	}
	if retry, err := g.roundFailed(jr.Err, jr.MemberID); retry || err != nil {
		return err
	}
	g.mu.Lock()
	g.memberID = jr.MemberID
	g.mu.Unlock()
	var assignments []transport.SyncGroupAssignment
	if jr.Leader == jr.MemberID {
		if assignments, err = g.assign(ctx, jr); err != nil {
			g.setRejoin("assignment failed")
			return err
		}
	}
	sr, err := g.gc.SyncGroup(ctx, &transport.SyncGroupRequest{
		Group: g.cfg.group, GenerationID: jr.GenerationID, MemberID: jr.MemberID, GroupInstanceID: g.cfg.instanceID,
		ProtocolType: ProtocolType, ProtocolName: jr.ProtocolName, Assignments: assignments,
	})
	if err != nil {
		g.setRejoin("sync failed")
		return err
	}
	if retry, err := g.roundFailed(sr.Err, jr.MemberID); retry || err != nil {
		return err
	}
	a, err := DecodeAssignment(sr.Assignment)
	if err != nil {
		g.setRejoin("bad assignment")
		return err
	}
	g.mu.Lock()
	g.generation = jr.GenerationID
	g.leader = jr.Leader == jr.MemberID
	g.rebalances++
	// A member of the generation from here on: it heartbeats while it
	// applies the assignment, whose committed offsets may take a while
	// (a transaction holding them keeps them UNSTABLE_OFFSET_COMMIT).
	g.joining = false
	g.mu.Unlock()
	return g.apply(ctx, a.Partitions)
}

func (g *groupMember) setRejoin(reason string) {
	g.mu.Lock()
	g.requestRejoinLocked(reason)
	g.mu.Unlock()
}

// roundFailed handles the error of a JoinGroup or SyncGroup answer: retry
// says the round is over and the next one is due at once; err is an error
// to back off after, or to report.
func (g *groupMember) roundFailed(err error, memberID string) (retry bool, _ error) {
	if err == nil {
		return false, nil
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	switch {
	case errors.Is(err, kafka.ErrMemberIDRequired):
		g.memberID = memberID
		g.requestRejoinLocked("member id required")
		return true, nil
	case errors.Is(err, kafka.ErrUnknownMemberID), errors.Is(err, kafka.ErrIllegalGeneration):
		g.resetLocked(err.Error())
		return true, nil
	case errors.Is(err, kafka.ErrRebalanceInProgress):
		g.requestRejoinLocked("the group is rebalancing")
		return true, nil
	}
	g.requestRejoinLocked(err.Error())
	return false, err
}

// assign runs the group's assignor, as the leader.
func (g *groupMember) assign(ctx context.Context, jr *transport.JoinGroupResponse) ([]transport.SyncGroupAssignment, error) {
	var assignor Assignor
	for _, a := range g.cfg.assignors {
		if a.Name() == jr.ProtocolName {
			assignor = a
		}
	}
	if assignor == nil {
		return nil, fmt.Errorf("%w: the group chose assignor %q, which this consumer lacks", kafka.ErrInconsistentGroupProtocol, jr.ProtocolName)
	}
	members := make([]GroupMember, 0, len(jr.Members))
	var topics []string
	for _, m := range jr.Members {
		sub, err := DecodeSubscription(m.Metadata)
		if err != nil {
			return nil, fmt.Errorf("member %s: %w", m.MemberID, err)
		}
		members = append(members, GroupMember{MemberID: m.MemberID, InstanceID: m.GroupInstanceID, Subscription: sub})
		for _, t := range sub.Topics {
			if !slices.Contains(topics, t) {
				topics = append(topics, t)
			}
		}
	}
	slices.Sort(topics)
	partitions, err := g.partitionCounts(ctx, topics)
	if err != nil {
		return nil, err
	}
	ours, _ := g.partitionCounts(ctx, g.c.cfg.topics)
	g.mu.Lock()
	g.partitions, g.metadataDue = ours, time.Now().Add(g.c.cfg.metadataMaxAge)
	g.mu.Unlock()
	result := assignor.Assign(members, partitions)
	out := make([]transport.SyncGroupAssignment, 0, len(members))
	for _, m := range members {
		out = append(out, transport.SyncGroupAssignment{MemberID: m.MemberID, Assignment: Assignment{Partitions: result[m.MemberID]}.Encode()})
	}
	return out, nil
}

// apply makes assigned the consumer's partitions: those it owned and was
// not given are revoked (cooperative protocol), which makes a second
// rebalance due; those it is given start at the group's committed
// offsets.
func (g *groupMember) apply(ctx context.Context, assigned []kafka.TopicPartition) error {
	g.mu.Lock()
	owned := slices.Clone(g.owned)
	g.mu.Unlock()
	revoked, added := diffPartitions(owned, assigned)
	if len(revoked) > 0 {
		g.giveUp(ctx, revoked, false)
		g.setRejoin("partitions revoked")
	}
	return g.take(ctx, added)
}

// diffPartitions returns the partitions of owned that assigned leaves
// out, to revoke, and those of assigned that owned lacks, to take.
func diffPartitions(owned, assigned []kafka.TopicPartition) (revoked, added []kafka.TopicPartition) {
	for _, tp := range owned {
		if !slices.Contains(assigned, tp) {
			revoked = append(revoked, tp)
		}
	}
	for _, tp := range assigned {
		if !slices.Contains(owned, tp) {
			added = append(added, tp)
		}
	}
	return revoked, added
}

// take makes added the consumer's, each at the group's committed offset,
// and calls OnPartitionsAssigned. When the committed offsets cannot be
// had, the membership is dropped (the next Poll joins again) and the
// error returned.
func (g *groupMember) take(ctx context.Context, added []kafka.TopicPartition) error {
	var offsets map[kafka.TopicPartition]CommittedOffset
	for failures := 0; len(added) > 0; failures++ {
		var err error
		offsets, err = g.store.FetchOffsets(ctx, g.cfg.group, added)
		if err == nil {
			break
		}
		if ctx.Err() != nil || !kafka.IsRetriable(err) {
			if g.cfg.protocol == ClassicProtocol {
				// The next Poll joins again; under the consumer protocol
				// the membership stays, and reconcile tries again.
				g.mu.Lock()
				g.resetLocked("fetching committed offsets failed")
				g.lost = false
				g.mu.Unlock()
			}
			return fmt.Errorf("consumer: fetching the committed offsets of group %q: %w", g.cfg.group, err)
		}
		r := retry{failures: failures}
		r.fail(&g.c.cfg, time.Now(), false)
		select {
		case <-time.After(time.Until(r.until)):
		case <-ctx.Done():
		}
	}
	g.c.assign(added, offsets)
	g.mu.Lock()
	g.owned = append(g.owned, added...)
	sortTPs(g.owned)
	g.ownedVersion++
	g.mu.Unlock()
	if g.cfg.onAssigned != nil {
		g.cfg.onAssigned(ctx, g.c, added)
	}
	return nil
}

// leave ends the consumer's part in the group, for Close: it commits when
// auto-commit is on, revokes what it owns and leaves the group at once,
// rather than at its session timeout.
func (g *groupMember) leave() {
	g.mu.Lock()
	if g.leaving {
		g.mu.Unlock()
		return
	}
	g.leaving = true
	if g.cancelRebalance != nil {
		g.cancelRebalance()
	}
	g.mu.Unlock()
	g.rebalanceMu.Lock()
	defer g.rebalanceMu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), g.cfg.closeTimeout)
	defer cancel()
	if g.cfg.autoCommit {
		g.c.commitPositions(ctx, nil)
	}
	if !g.member {
		g.async.Wait()
		return
	}
	close(g.hbStop)
	<-g.hbDone
	g.mu.Lock()
	owned, id, gen := slices.Clone(g.owned), g.memberID, g.generation
	g.mu.Unlock()
	if gen >= 0 && len(owned) > 0 && g.cfg.onRevoked != nil {
		g.cfg.onRevoked(ctx, g.c, owned)
	}
	// A static member does not leave: its instance may come back within
	// the session timeout and take its partitions back without a
	// rebalance (KIP-345).
	if g.cfg.protocol == ConsumerProtocol {
		g.leaveConsumerProtocol(ctx, id, gen)
	} else if id != "" && g.cfg.instanceID == "" {
		g.gc.LeaveGroup(ctx, &transport.LeaveGroupRequest{Group: g.cfg.group, Members: []transport.LeaveGroupMember{{
			MemberID: id, GroupInstanceID: g.cfg.instanceID, Reason: "the consumer is closing",
		}}})
	}
	g.mu.Lock()
	g.memberID, g.generation, g.owned = "", transport.NoGeneration, nil
	g.mu.Unlock()
	g.async.Wait()
}

// assign adds tps to the consumer's partitions, each at its committed
// offset, or to be reset as AutoOffsetReset says when it has none.
func (c *Consumer) assign(tps []kafka.TopicPartition, offsets map[kafka.TopicPartition]CommittedOffset) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, tp := range tps {
		p := c.addLocked(tp)
		if o, ok := offsets[tp]; ok && o.Offset >= 0 {
			c.repositionLocked(p, false)
			p.state, p.position, p.fetchOffset = posReady, o.Offset, o.Offset
		}
		c.wakeFetcherLocked(p, true)
	}
	c.broadcastLocked()
}

// unassign removes tps from the consumer's partitions.
func (c *Consumer) unassign(tps []kafka.TopicPartition) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, tp := range tps {
		if p := c.parts[tp]; p != nil {
			c.removeLocked(p)
		}
	}
	c.broadcastLocked()
}
