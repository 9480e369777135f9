package group

import (
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/partlog/partlog/internal/xsync"
	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/transport"
)

// Record is a record of __consumer_offsets: a key and a value as this
// package encodes them. A nil Value is a tombstone.
type Record struct {
	// Key and Value are the record's key and value (Key.Encode and an
	// OffsetValue or GroupValue's Encode); Value is nil for a tombstone.
	Key, Value []byte
	// Transactional says the record is in a transactional batch of
	// ProducerID's: its offset stays pending until the transaction's
	// marker.
	Transactional bool
	// ProducerID is the producer of a transactional record or marker.
	ProducerID int64
	// Marker, when not NoMarker, makes the record ProducerID's transaction
	// marker (a control record; Key and Value are not used).
	Marker Marker
}

// Log is where the coordinator keeps its state: the partitions of
// __consumer_offsets.
type Log interface {
	// Append writes recs, in order, to a partition of __consumer_offsets
	// and returns once they are as durable as an acks=all produce.
	Append(partition int32, recs []Record) error
	// AppendTransactional is Append as one transactional batch of the
	// producer's (producerID, producerEpoch), in its open transaction.
	AppendTransactional(partition int32, producerID int64, producerEpoch int16, recs []Record) error
}

// Coordinator is Kafka's group coordinator for the partitions of
// __consumer_offsets one node leads: it runs each group's membership
// state machine (see State), fences commits by generation, and keeps
// committed offsets, writing every change to the group's partition before
// it answers.
//
// It has no goroutine and reads no clock but Options.Now: a driver calls
// Tick to expire sessions and rebalance timeouts. Join and Sync may answer
// later, from another call or from Tick, through the callback they are
// given. Callbacks run with the coordinator's lock held: they must not
// block or call the coordinator. A Coordinator is safe for concurrent use.
type Coordinator struct {
	log  Log
	opts Options

	// mu is held across the writes of group metadata to the log, which
	// wait for replication: an xsync.Mutex, so that a bubble's clock
	// moves on while requests wait for it.
	mu     xsync.Mutex
	groups map[string]*group
	closed bool
	// commitLocks orders each group's commits: a commit holds its group's
	// lock from its checks to its cache update, and the coordinator's
	// lock only around them, not while its records are written, so that
	// the commits of different groups share fsyncs.
	commitLocks map[string]*xsync.Mutex
	// pending holds the offsets of open transactions, by partition of
	// __consumer_offsets, then producer id (txn_offsets.go).
	pending map[int32]map[int64]pendingTxn
}

// New returns a coordinator that writes to log. Load replays what log holds
// before requests come in.
func New(log Log, opts Options) *Coordinator {
	return &Coordinator{log: log, opts: opts.withDefaults(), groups: map[string]*group{}, commitLocks: map[string]*xsync.Mutex{},
		pending: map[int32]map[int64]pendingTxn{}}
}

// Partitions returns the number of partitions of __consumer_offsets.
func (c *Coordinator) Partitions() int32 { return c.opts.Partitions }

// PartitionFor returns the partition of __consumer_offsets that holds
// group.
func (c *Coordinator) PartitionFor(group string) int32 { return PartitionFor(group, c.opts.Partitions) }

// Close answers every JoinGroup and SyncGroup that waits with
// kafka.ErrNotCoordinator, as Kafka does when a coordinator unloads
// its groups, and makes later calls answer the same.
func (c *Coordinator) Close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return
	}
	c.closed = true
	for _, g := range c.groups {
		for _, m := range g.members {
			m.failWaits(errClosed)
		}
	}
}

func (c *Coordinator) logger(g *group) *slog.Logger {
	return c.opts.Logger.With("group", g.id)
}

// errClosed is the answer to a request after Close.
var errClosed = fmt.Errorf("%w: the coordinator closed", kafka.ErrNotCoordinator)

// Join handles a JoinGroup. respond is called once, now or when the
// rebalance the member joins completes.
func (c *Coordinator) Join(req *transport.JoinGroupRequest, respond func(*transport.JoinGroupResponse)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	fail := func(err error) {
		respond(&transport.JoinGroupResponse{Err: err, MemberID: req.MemberID, GenerationID: transport.NoGeneration})
	}
	switch {
	case c.closed:
		fail(errClosed)
		return
	case req.Group == "":
		fail(fmt.Errorf("%w: empty group id", kafka.ErrInvalidGroupID))
		return
	case req.SessionTimeout < c.opts.MinSessionTimeout || req.SessionTimeout > c.opts.MaxSessionTimeout:
		fail(fmt.Errorf("%w: %v is not within %v and %v", kafka.ErrInvalidSessionTimeout, req.SessionTimeout, c.opts.MinSessionTimeout, c.opts.MaxSessionTimeout))
		return
	case req.ProtocolType == "" || len(req.Protocols) == 0:
		fail(fmt.Errorf("%w: no protocol type or no protocols", kafka.ErrInconsistentGroupProtocol))
		return
	}
	now := c.opts.Now()
	g := c.groups[req.Group]
	if g != nil && g.share != nil {
		fail(fmt.Errorf("%w: group %q is a share group", kafka.ErrInconsistentGroupProtocol, g.id))
		return
	}
	if g == nil {
		if req.MemberID != "" {
			fail(fmt.Errorf("%w: group %q has no members", kafka.ErrUnknownMemberID, req.Group))
			return
		}
		g = newGroup(req.Group, c.PartitionFor(req.Group), now)
		c.groups[req.Group] = g
	}
	if g.consumer != nil {
		if len(g.consumer.members) > 0 {
			fail(fmt.Errorf("%w: group %q uses the consumer group protocol", kafka.ErrInconsistentGroupProtocol, g.id))
			return
		}
		// An empty consumer-protocol group becomes classic, offsets and
		// all: its consumer-protocol records are deleted.
		if err := c.storeConsumerLocked(g, g.consumer.tombstones(), c.topicsLocked()); err != nil {
			fail(err)
			return
		}
		g.consumer = nil
	}
	if len(g.members) > 0 && req.ProtocolType != g.protocolType || !g.supports(req.Protocols) {
		fail(fmt.Errorf("%w: group %q uses protocol type %q and protocols %v", kafka.ErrInconsistentGroupProtocol, g.id, g.protocolType, g.candidates()))
		return
	}
	rebalanceTimeout := req.RebalanceTimeout
	if rebalanceTimeout <= 0 {
		rebalanceTimeout = req.SessionTimeout
	}
	if req.MemberID == "" {
		if old := g.memberByInstance(req.GroupInstanceID); old != nil {
			fenced := fmt.Errorf("%w: instance %q rejoined", kafka.ErrFencedInstanceID, old.instanceID)
			if g.state == Stable && old.id != g.leader && old.sameProtocols(req.Protocols) {
				// A static member restarted (KIP-345): it takes its place
				// and assignment back under a new member id, which fences
				// the old instance, and the group does not rebalance.
				c.replaceStaticMemberLocked(g, old, req, rebalanceTimeout, respond, fenced, now)
				return
			}
			c.removeMemberLocked(g, old, fenced, "was replaced by a new instance of "+old.instanceID, now)
		}
		if c.opts.MaxSize > 0 && len(g.members) >= c.opts.MaxSize {
			fail(fmt.Errorf("%w: %d members", kafka.ErrGroupMaxSizeReached, len(g.members)))
			return
		}
		m := &member{
			id: c.opts.NewMemberID(req.ClientID), instanceID: req.GroupInstanceID,
			clientID: req.ClientID, clientHost: req.ClientHost,
			sessionTimeout: req.SessionTimeout, rebalanceTimeout: rebalanceTimeout,
			protocols: slices.Clone(req.Protocols), lastHeartbeat: now, joinWait: respond,
		}
		if len(g.members) == 0 {
			g.protocolType = req.ProtocolType
		}
		wasEmpty := g.state == Empty
		g.members = append(g.members, m)
		c.prepareRebalanceLocked(g, "member "+m.id+" joined", now)
		if delay := c.opts.InitialRebalanceDelay; delay > 0 && (wasEmpty || !g.joinsUntil.IsZero()) {
			// The group's first rebalance waits for the members that
			// start with this one (Kafka's InitialDelayedJoin).
			g.joinsUntil = minTime(now.Add(delay), g.rebalanceDeadline)
		}
		c.tryCompleteJoinLocked(g, now)
		return
	}
	m := g.member(req.MemberID)
	if m == nil {
		fail(fmt.Errorf("%w: %q", kafka.ErrUnknownMemberID, req.MemberID))
		return
	}
	if m.instanceID != req.GroupInstanceID {
		fail(fmt.Errorf("%w: member %q has instance id %q", kafka.ErrFencedInstanceID, m.id, m.instanceID))
		return
	}
	m.lastHeartbeat = now
	m.sessionTimeout, m.rebalanceTimeout = req.SessionTimeout, rebalanceTimeout
	changed := !m.sameProtocols(req.Protocols)
	m.protocols = slices.Clone(req.Protocols)
	switch g.state {
	case PreparingRebalance:
		if m.joinWait != nil {
			m.joinWait(&transport.JoinGroupResponse{Err: fmt.Errorf("%w: the member joined again", kafka.ErrRebalanceInProgress), MemberID: m.id, GenerationID: transport.NoGeneration})
		}
		m.joinWait = respond
		c.tryCompleteJoinLocked(g, now)
	case CompletingRebalance, Stable:
		if !changed && (g.state == CompletingRebalance || m.id != g.leader) {
			// Nothing changed: the member lost the answer; send it again.
			respond(c.joinResponseLocked(g, m))
			return
		}
		m.joinWait = respond
		c.prepareRebalanceLocked(g, "member "+m.id+" rejoined with new metadata", now)
		c.tryCompleteJoinLocked(g, now)
	default:
		fail(fmt.Errorf("%w: group %q is %v", kafka.ErrUnknownMemberID, g.id, g.state))
	}
}

// replaceStaticMemberLocked gives a static member's place to its new
// instance, as Kafka's updateStaticMemberAndRebalance does when nothing
// else changed.
func (c *Coordinator) replaceStaticMemberLocked(g *group, m *member, req *transport.JoinGroupRequest, rebalanceTimeout time.Duration,
	respond func(*transport.JoinGroupResponse), fenced error, now time.Time) {
	m.failWaits(fenced)
	oldID := m.id
	m.id = c.opts.NewMemberID(req.ClientID)
	m.clientID, m.clientHost = req.ClientID, req.ClientHost
	m.sessionTimeout, m.rebalanceTimeout = req.SessionTimeout, rebalanceTimeout
	m.lastHeartbeat = now
	if err := c.storeGroupLocked(g); err != nil {
		m.id = oldID
		respond(&transport.JoinGroupResponse{Err: fmt.Errorf("%w: writing the group failed: %v", kafka.ErrCoordinatorNotAvailable, err),
			GenerationID: transport.NoGeneration})
		return
	}
	c.logger(g).Info("static member rejoined", "instance", m.instanceID, "member", m.id, "was", oldID)
	respond(c.joinResponseLocked(g, m))
}

// prepareRebalanceLocked starts a rebalance, unless one is being prepared.
func (c *Coordinator) prepareRebalanceLocked(g *group, reason string, now time.Time) {
	if g.state == PreparingRebalance {
		return
	}
	if g.state == CompletingRebalance {
		for _, m := range g.members {
			m.assignment = nil
			if m.syncWait != nil {
				m.syncWait(&transport.SyncGroupResponse{Err: fmt.Errorf("%w: %s", kafka.ErrRebalanceInProgress, reason)})
				m.syncWait = nil
			}
		}
	}
	var timeout time.Duration
	for _, m := range g.members {
		timeout = max(timeout, m.rebalanceTimeout)
	}
	g.rebalanceDeadline = now.Add(timeout)
	g.transition(PreparingRebalance, now)
	c.logger(g).Info("preparing to rebalance", "reason", reason, "generation", g.generation, "members", len(g.members))
}

// tryCompleteJoinLocked completes the join phase when every member has
// rejoined, or when the rebalance timeout has passed (dropping the members
// that did not rejoin).
func (c *Coordinator) tryCompleteJoinLocked(g *group, now time.Time) {
	if g.state != PreparingRebalance {
		return
	}
	if !g.joinsUntil.IsZero() && now.Before(g.joinsUntil) {
		return // the first rebalance waits for more members
	}
	if !now.Before(g.rebalanceDeadline) {
		for _, m := range slices.Clone(g.members) {
			if m.joinWait == nil {
				c.logger(g).Info("member did not rejoin in time", "member", m.id)
				c.dropMemberLocked(g, m, fmt.Errorf("%w: did not rejoin within the rebalance timeout", kafka.ErrUnknownMemberID))
			}
		}
	}
	for _, m := range g.members {
		if m.joinWait == nil {
			return
		}
	}
	c.completeJoinLocked(g, now)
}

// completeJoinLocked starts the next generation and answers every member's
// JoinGroup: the leader gets the members to assign to.
func (c *Coordinator) completeJoinLocked(g *group, now time.Time) {
	g.generation++
	g.joinsUntil = time.Time{}
	if len(g.members) == 0 {
		g.protocol, g.leader = "", ""
		g.transition(Empty, now)
		if err := c.storeGroupLocked(g); err != nil {
			c.logger(g).Error("writing the empty group failed", "err", err)
		}
		c.logger(g).Info("group is empty", "generation", g.generation)
		return
	}
	g.protocol = g.selectProtocol()
	if g.member(g.leader) == nil {
		g.leader = g.members[0].id
	}
	g.transition(CompletingRebalance, now)
	c.logger(g).Info("rebalance: generation joined", "generation", g.generation, "protocol", g.protocol, "leader", g.leader, "members", len(g.members))
	for _, m := range g.members {
		m.lastHeartbeat = now
		m.assignment = nil
		respond := m.joinWait
		m.joinWait = nil
		respond(c.joinResponseLocked(g, m))
	}
}

func (c *Coordinator) joinResponseLocked(g *group, m *member) *transport.JoinGroupResponse {
	r := &transport.JoinGroupResponse{
		GenerationID: g.generation, ProtocolType: g.protocolType, ProtocolName: g.protocol,
		Leader: g.leader, MemberID: m.id,
	}
	if m.id == g.leader {
		for _, o := range g.members {
			r.Members = append(r.Members, transport.JoinGroupMember{MemberID: o.id, GroupInstanceID: o.instanceID, Metadata: o.metadata(g.protocol)})
		}
	}
	return r
}

// dropMemberLocked takes m out of g, answering what it waits for with err.
func (c *Coordinator) dropMemberLocked(g *group, m *member, err error) {
	i := slices.Index(g.members, m)
	g.members = slices.Delete(g.members, i, i+1)
	m.failWaits(err)
	if g.leader == m.id {
		g.leader = ""
	}
}

// removeMemberLocked takes m out of g and rebalances what is left: err
// answers what m waits for, why is the rebalance's reason, in words (a
// member leaving is no error).
func (c *Coordinator) removeMemberLocked(g *group, m *member, err error, why string, now time.Time) {
	c.dropMemberLocked(g, m, err)
	switch g.state {
	case Stable, CompletingRebalance:
		c.prepareRebalanceLocked(g, "member "+m.id+" "+why, now)
		c.tryCompleteJoinLocked(g, now)
	case PreparingRebalance:
		c.tryCompleteJoinLocked(g, now)
	}
}

// Sync handles a SyncGroup. respond is called once, now or when the
// leader's assignment arrives.
func (c *Coordinator) Sync(req *transport.SyncGroupRequest, respond func(*transport.SyncGroupResponse)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	fail := func(err error) { respond(&transport.SyncGroupResponse{Err: err}) }
	if c.closed {
		fail(errClosed)
		return
	}
	g, m, err := c.memberLocked(req.Group, req.MemberID, req.GroupInstanceID, req.GenerationID)
	if err != nil {
		fail(err)
		return
	}
	if req.ProtocolType != "" && req.ProtocolType != g.protocolType || req.ProtocolName != "" && req.ProtocolName != g.protocol {
		fail(fmt.Errorf("%w: the group's protocol is %s/%s", kafka.ErrInconsistentGroupProtocol, g.protocolType, g.protocol))
		return
	}
	now := c.opts.Now()
	m.lastHeartbeat = now
	switch g.state {
	case PreparingRebalance:
		fail(fmt.Errorf("%w: group %q", kafka.ErrRebalanceInProgress, g.id))
	case Stable:
		respond(&transport.SyncGroupResponse{ProtocolType: g.protocolType, ProtocolName: g.protocol, Assignment: m.assignment})
	case CompletingRebalance:
		m.syncWait = respond
		if m.id != g.leader {
			return
		}
		for _, mm := range g.members {
			mm.assignment = nil
		}
		for _, a := range req.Assignments {
			if mm := g.member(a.MemberID); mm != nil {
				mm.assignment = a.Assignment
			}
		}
		g.transition(Stable, now)
		if err := c.storeGroupLocked(g); err != nil {
			// As Kafka: the members learn of it and the group rebalances.
			err = fmt.Errorf("%w: writing the group failed: %v", kafka.ErrCoordinatorNotAvailable, err)
			for _, mm := range g.members {
				if mm.syncWait != nil {
					mm.syncWait(&transport.SyncGroupResponse{Err: err})
					mm.syncWait = nil
				}
			}
			g.transition(CompletingRebalance, now)
			c.prepareRebalanceLocked(g, "writing the group failed", now)
			return
		}
		c.logger(g).Info("rebalance: generation stable", "generation", g.generation)
		for _, mm := range g.members {
			if mm.syncWait != nil {
				mm.syncWait(&transport.SyncGroupResponse{ProtocolType: g.protocolType, ProtocolName: g.protocol, Assignment: mm.assignment})
				mm.syncWait = nil
			}
		}
	}
}

// memberLocked finds a member of a group in the given generation.
func (c *Coordinator) memberLocked(groupID, memberID, instanceID string, generation int32) (*group, *member, error) {
	g := c.groups[groupID]
	if g == nil || g.state == Empty || g.state == Dead {
		return nil, nil, fmt.Errorf("%w: group %q has no members", kafka.ErrUnknownMemberID, groupID)
	}
	m := g.member(memberID)
	if m == nil {
		if instanceID != "" && g.memberByInstance(instanceID) != nil {
			return nil, nil, fmt.Errorf("%w: instance %q", kafka.ErrFencedInstanceID, instanceID)
		}
		return nil, nil, fmt.Errorf("%w: %q", kafka.ErrUnknownMemberID, memberID)
	}
	if generation != g.generation {
		return nil, nil, fmt.Errorf("%w: generation %d, the group is at %d", kafka.ErrIllegalGeneration, generation, g.generation)
	}
	return g, m, nil
}

// storeGroupLocked writes g's metadata to its partition.
func (c *Coordinator) storeGroupLocked(g *group) error {
	return c.log.Append(g.partition, []Record{{Key: GroupKey(g.id).Encode(), Value: g.value().Encode()}})
}

// Heartbeat handles a Heartbeat. ErrRebalanceInProgress in the answer tells
// the member to rejoin.
func (c *Coordinator) Heartbeat(req *transport.HeartbeatRequest) *transport.HeartbeatResponse {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return &transport.HeartbeatResponse{Err: errClosed}
	}
	g, m, err := c.memberLocked(req.Group, req.MemberID, req.GroupInstanceID, req.GenerationID)
	if err != nil {
		return &transport.HeartbeatResponse{Err: err}
	}
	m.lastHeartbeat = c.opts.Now()
	if g.state == PreparingRebalance {
		return &transport.HeartbeatResponse{Err: fmt.Errorf("%w: group %q", kafka.ErrRebalanceInProgress, g.id)}
	}
	return &transport.HeartbeatResponse{}
}

// Leave handles a LeaveGroup: the members leave at once, and the group
// rebalances.
func (c *Coordinator) Leave(req *transport.LeaveGroupRequest) *transport.LeaveGroupResponse {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return &transport.LeaveGroupResponse{Err: errClosed}
	}
	g := c.groups[req.Group]
	resp := &transport.LeaveGroupResponse{}
	now := c.opts.Now()
	for _, lm := range req.Members {
		r := transport.LeaveGroupMemberResponse{MemberID: lm.MemberID, GroupInstanceID: lm.GroupInstanceID}
		var m *member
		if g != nil {
			if m = g.member(lm.MemberID); m == nil && lm.MemberID == "" {
				m = g.memberByInstance(lm.GroupInstanceID)
			}
		}
		switch {
		case m == nil:
			r.Err = fmt.Errorf("%w: %q", kafka.ErrUnknownMemberID, lm.MemberID)
		case lm.GroupInstanceID != "" && m.instanceID != lm.GroupInstanceID:
			r.Err = fmt.Errorf("%w: member %q has instance id %q", kafka.ErrFencedInstanceID, m.id, m.instanceID)
		default:
			reason := lm.Reason
			if reason == "" {
				reason = "the member left the group"
			}
			c.removeMemberLocked(g, m, fmt.Errorf("%w: %s", kafka.ErrUnknownMemberID, reason), "left the group: "+reason, now)
		}
		resp.Members = append(resp.Members, r)
	}
	return resp
}

// Tick expires what is due: a member not heard from for its session
// timeout (unless it waits in a JoinGroup or SyncGroup) leaves its group,
// a rebalance whose timeout passed completes without the members that did
// not rejoin, and a group Empty for OffsetsRetention is deleted with its
// offsets. A driver calls it every so often.
func (c *Coordinator) Tick() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return
	}
	now := c.opts.Now()
	for _, g := range c.groups {
		if g.consumer != nil {
			c.tickConsumerLocked(g, now)
			continue
		}
		if g.share != nil {
			c.tickShareLocked(g, now) // share groups do not expire
			continue
		}
		for _, m := range slices.Clone(g.members) {
			if m.joinWait != nil || m.syncWait != nil || now.Sub(m.lastHeartbeat) < m.sessionTimeout {
				continue
			}
			c.logger(g).Info("member session expired", "member", m.id, "session_timeout", m.sessionTimeout)
			c.removeMemberLocked(g, m, fmt.Errorf("%w: session timed out", kafka.ErrUnknownMemberID), "was not heard from within its session timeout", now)
		}
		if g.state == PreparingRebalance && (!now.Before(g.rebalanceDeadline) || !g.joinsUntil.IsZero() && !now.Before(g.joinsUntil)) {
			c.tryCompleteJoinLocked(g, now)
		}
		c.expireLocked(g, now)
	}
}

// Describe handles a DescribeGroups. A group the coordinator does not know
// is described as Dead, as Kafka does.
func (c *Coordinator) Describe(req *transport.DescribeGroupsRequest) *transport.DescribeGroupsResponse {
	c.mu.Lock()
	defer c.mu.Unlock()
	resp := &transport.DescribeGroupsResponse{}
	for _, id := range req.Groups {
		d := transport.DescribedGroup{Group: id, State: Dead.String(), GenerationID: transport.NoGeneration}
		if c.closed {
			d.Err = errClosed
		} else if g := c.groups[id]; g != nil {
			d.State, d.ProtocolType, d.Protocol, d.GenerationID, d.Leader = g.state.String(), g.protocolType, g.protocol, g.generation, g.leader
			for _, m := range g.members {
				d.Members = append(d.Members, transport.DescribedMember{
					MemberID: m.id, GroupInstanceID: m.instanceID, ClientID: m.clientID, ClientHost: m.clientHost,
					Metadata: m.metadata(g.protocol), Assignment: m.assignment,
				})
			}
		}
		resp.Groups = append(resp.Groups, d)
	}
	return resp
}

// List handles a ListGroups: every group, sorted by id, or those in the
// states asked for.
func (c *Coordinator) List(req *transport.ListGroupsRequest) *transport.ListGroupsResponse {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return &transport.ListGroupsResponse{Err: errClosed}
	}
	resp := &transport.ListGroupsResponse{}
	for _, g := range c.groups {
		protocolType, state := g.protocolType, g.state.String()
		if g.consumer != nil {
			protocolType, state = "consumer", g.consumer.state().String()
		}
		if g.share != nil {
			protocolType, state = "share", g.share.state().String()
		}
		if len(req.StatesFilter) > 0 && !slices.Contains(req.StatesFilter, state) {
			continue
		}
		resp.Groups = append(resp.Groups, transport.ListedGroup{Group: g.id, ProtocolType: protocolType, State: state})
	}
	slices.SortFunc(resp.Groups, func(a, b transport.ListedGroup) int { return strings.Compare(a.Group, b.Group) })
	return resp
}

// Delete handles a DeleteGroups: a group without members is deleted with
// its offsets — tombstones for its offset and group metadata keys are
// written to its partition, so that it stays deleted after a reload and
// compaction drops its records. A group with members is refused with
// kafka.ErrNonEmptyGroup, an unknown one with ErrGroupIDNotFound.
func (c *Coordinator) Delete(req *transport.DeleteGroupsRequest) *transport.DeleteGroupsResponse {
	c.mu.Lock()
	defer c.mu.Unlock()
	resp := &transport.DeleteGroupsResponse{}
	for _, id := range req.Groups {
		r := transport.DeletedGroup{Group: id}
		g := c.groups[id]
		switch {
		case c.closed:
			r.Err = errClosed
		case g == nil:
			r.Err = fmt.Errorf("%w: %q", kafka.ErrGroupIDNotFound, id)
		case len(g.members) > 0:
			r.Err = fmt.Errorf("%w: group %q has %d members", kafka.ErrNonEmptyGroup, id, len(g.members))
		case g.consumer != nil && len(g.consumer.members) > 0:
			r.Err = fmt.Errorf("%w: group %q has %d members", kafka.ErrNonEmptyGroup, id, len(g.consumer.members))
		case g.share != nil && len(g.share.members) > 0:
			r.Err = fmt.Errorf("%w: group %q has %d members", kafka.ErrNonEmptyGroup, id, len(g.share.members))
		default:
			r.Err = c.deleteGroupLocked(g)
		}
		resp.Results = append(resp.Results, r)
	}
	return resp
}

// deleteGroupLocked writes tombstones for g's offsets and metadata, and
// forgets g.
func (c *Coordinator) deleteGroupLocked(g *group) error {
	tps := g.sortedPartitions()
	recs := make([]Record, 0, len(tps)+1)
	for _, tp := range tps {
		recs = append(recs, Record{Key: OffsetKey(g.id, tp.Topic, tp.Partition).Encode()})
	}
	recs = append(recs, Record{Key: GroupKey(g.id).Encode()})
	if g.consumer != nil {
		ix := c.topicsLocked()
		for _, r := range g.consumer.tombstones() {
			key, value := encodeConsumerRecord(g.id, r, ix.id)
			recs = append(recs, Record{Key: key, Value: value})
		}
	}
	if g.share != nil {
		ix := c.topicsLocked()
		for _, r := range g.share.tombstones() {
			key, value := encodeShareRecord(g.id, r, ix.id)
			recs = append(recs, Record{Key: key, Value: value})
		}
	}
	if err := c.log.Append(g.partition, recs); err != nil {
		return fmt.Errorf("%w: writing the tombstones failed: %v", kafka.ErrCoordinatorNotAvailable, err)
	}
	g.transition(Dead, c.opts.Now())
	delete(c.groups, g.id)
	return nil
}

// expireLocked deletes g when it has been Empty for OffsetsRetention with
// no commit meanwhile, as Kafka expires offsets (KIP-211).
func (c *Coordinator) expireLocked(g *group, now time.Time) {
	if g.state != Empty || len(g.members) > 0 {
		return
	}
	last := g.stateTime
	for _, v := range g.offsets {
		if t := time.UnixMilli(v.CommitTimestamp); t.After(last) {
			last = t
		}
	}
	if now.Sub(last) < c.opts.OffsetsRetention {
		return
	}
	if lock := c.commitLocks[g.id]; lock != nil && !lock.TryLock() {
		return // a commit is on its way: not idle
	} else if lock != nil {
		defer lock.Unlock()
	}
	if err := c.deleteGroupLocked(g); err != nil {
		c.logger(g).Error("expiring the group's offsets failed", "err", err)
		return
	}
	c.logger(g).Info("group expired: empty for offsets.retention.minutes", "retention", c.opts.OffsetsRetention)
}

// Load replays one partition of __consumer_offsets, read in offset order
// through recs, into the coordinator's state: the latest offset of each
// group and partition, and the latest metadata of each group. A group
// loaded with members is Stable, and each member's session starts now;
// one without is Empty. Call it for each partition before requests come
// in, as Kafka loads a partition when it becomes its coordinator.
func (c *Coordinator) Load(partition int32, recs func(yield func(Record) bool) error) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.opts.Now()
	groupOf := func(id string) *group {
		g := c.groups[id]
		if g == nil {
			g = newGroup(id, partition, now)
			c.groups[id] = g
		}
		return g
	}
	var bad error
	ix := c.topicsLocked()
	consumerRecs := map[string][]consumerRecord{} // by group, in log order
	var consumerOrder []string
	shareRecs := map[string][]shareRecord{} // by group, in log order
	var shareOrder []string
	err := recs(func(r Record) bool {
		switch r.Marker {
		case CommitMarker, AbortMarker:
			c.completeTxnLocked(partition, r.ProducerID, r.Marker == CommitMarker)
			return true
		}
		k, err := DecodeKey(r.Key)
		if err != nil {
			bad = err
			return false
		}
		if k.IsConsumerGroup() {
			cr, err := decodeConsumerRecord(k, r.Value, ix.name)
			if _, unknown := errors.AsType[*unknownTopicIDsError](err); err != nil && !unknown {
				bad = err
				return false
			}
			// A topic deleted since is left out of what the record says.
			if consumerRecs[k.Group] == nil {
				consumerOrder = append(consumerOrder, k.Group)
			}
			consumerRecs[k.Group] = append(consumerRecs[k.Group], cr)
			return true
		}
		if k.IsShareGroup() {
			sr, err := decodeShareRecord(k, r.Value, ix.name)
			if _, unknown := errors.AsType[*unknownTopicIDsError](err); err != nil && !unknown {
				bad = err
				return false
			}
			if shareRecs[k.Group] == nil {
				shareOrder = append(shareOrder, k.Group)
			}
			shareRecs[k.Group] = append(shareRecs[k.Group], sr)
			return true
		}
		if k.IsGroup() {
			if r.Value == nil {
				if g := c.groups[k.Group]; g != nil {
					g.members, g.state, g.protocol, g.leader = nil, Empty, "", ""
					if len(g.offsets) == 0 {
						delete(c.groups, k.Group)
					}
				}
				return true
			}
			v, err := DecodeGroupValue(r.Value)
			if err != nil {
				bad = err
				return false
			}
			g := groupOf(k.Group)
			g.protocolType, g.generation, g.protocol, g.leader = v.ProtocolType, v.Generation, v.Protocol, v.Leader
			g.members = g.members[:0]
			for _, mv := range v.Members {
				m := &member{
					id: mv.MemberID, instanceID: mv.GroupInstanceID, clientID: mv.ClientID, clientHost: mv.ClientHost,
					sessionTimeout:   time.Duration(mv.SessionTimeout) * time.Millisecond,
					rebalanceTimeout: time.Duration(mv.RebalanceTimeout) * time.Millisecond,
					assignment:       mv.Assignment, lastHeartbeat: now,
				}
				if v.Protocol != "" {
					m.protocols = []transport.JoinGroupProtocol{{Name: v.Protocol, Metadata: mv.Subscription}}
				}
				g.members = append(g.members, m)
			}
			g.state = Empty
			g.stateTime = now
			if len(g.members) > 0 {
				g.state = Stable
			} else if v.CurrentStateTimestamp > 0 {
				g.stateTime = time.UnixMilli(v.CurrentStateTimestamp) // for OffsetsRetention
			}
			return true
		}
		tp := kafka.TopicPartition{Topic: k.Topic, Partition: k.Partition}
		if r.Value == nil {
			if g := c.groups[k.Group]; g != nil {
				delete(g.offsets, tp)
			}
			return true
		}
		v, err := DecodeOffsetValue(r.Value)
		if err != nil {
			bad = err
			return false
		}
		if r.Transactional {
			c.addPendingLocked(partition, r.ProducerID, k.Group, tp, v)
			return true
		}
		groupOf(k.Group).offsets[tp] = v
		return true
	})
	if err == nil {
		err = bad
	}
	if err != nil {
		return fmt.Errorf("group: load %s-%d: %w", OffsetsTopic, partition, err)
	}
	for _, id := range consumerOrder {
		cg := replayConsumerGroup(c.consumerConfig(), consumerRecs[id], now)
		if cg == nil { // deleted
			continue
		}
		g := groupOf(id)
		g.consumer = cg
		g.members, g.state, g.protocolType, g.protocol, g.leader = nil, Empty, "", "", ""
	}
	for _, id := range shareOrder {
		sg := replayShareGroup(c.shareConfig(), shareRecs[id], now)
		if sg != nil {
			sg.learnTopicIDs(ix.byName)
		}
		if sg == nil { // deleted
			if g := c.groups[id]; g != nil && g.consumer == nil && len(g.members) == 0 && len(g.offsets) == 0 {
				delete(c.groups, id)
			}
			continue
		}
		g := groupOf(id)
		g.share = sg
		g.members, g.state, g.protocolType, g.protocol, g.leader = nil, Empty, "", "", ""
	}
	return nil
}

// minTime returns the earlier of a and b.
func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}
