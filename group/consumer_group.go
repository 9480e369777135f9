package group

import (
	"cmp"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/partlog/partlog/kafka"
)

// consumerGroupConfig configures the consumer groups of a coordinator.
// Its zero value works: withDefaults fills it with Kafka's defaults.
type consumerGroupConfig struct {
	// SessionTimeout is group.consumer.session.timeout.ms: a member that
	// does not heartbeat for this long is removed. Zero means 45s.
	SessionTimeout time.Duration
	// HeartbeatInterval is group.consumer.heartbeat.interval.ms, what
	// the answers tell members to heartbeat at. Zero means 5s.
	HeartbeatInterval time.Duration
	// Assignors are group.consumer.assignors: the server assignors
	// members may choose; the first is the group's default. Empty means
	// uniform, then range.
	Assignors []ServerAssignor
	// MaxSize is group.consumer.max.size: a member may not join a group
	// that has this many. Zero means no limit.
	MaxSize int
}

// withDefaults returns c with its zero fields set to their defaults.
func (c consumerGroupConfig) withDefaults() consumerGroupConfig {
	if c.SessionTimeout == 0 {
		c.SessionTimeout = 45 * time.Second
	}
	if c.HeartbeatInterval == 0 {
		c.HeartbeatInterval = 5 * time.Second
	}
	if len(c.Assignors) == 0 {
		c.Assignors = defaultServerAssignors()
	}
	return c
}

// assignor returns the assignor called name, nil if there is none.
func (c consumerGroupConfig) assignor(name string) ServerAssignor {
	for _, a := range c.Assignors {
		if a.Name() == name {
			return a
		}
	}
	return nil
}

// consumerGroupState is a consumer group's state as Kafka's
// ConsumerGroup computes it for ConsumerGroupDescribe and ListGroups.
type consumerGroupState int8

// The consumer group states.
const (
	// consumerGroupEmpty: the group has no members.
	consumerGroupEmpty consumerGroupState = iota
	// consumerGroupAssigning: the group epoch is ahead of the target
	// assignment's; the next heartbeat computes a new target.
	consumerGroupAssigning
	// consumerGroupReconciling: some member is not yet Stable at the
	// target epoch.
	consumerGroupReconciling
	// consumerGroupStable: every member has its target assignment.
	consumerGroupStable
)

// String returns the state as Kafka spells it.
func (s consumerGroupState) String() string {
	switch s {
	case consumerGroupEmpty:
		return "Empty"
	case consumerGroupAssigning:
		return "Assigning"
	case consumerGroupReconciling:
		return "Reconciling"
	case consumerGroupStable:
		return "Stable"
	}
	return "Unknown"
}

// consumerGroup is one group of Kafka's consumer protocol (KIP-848),
// Kafka's ConsumerGroup with the logic of its GroupMetadataManager: a
// pure state machine. It does no I/O and reads no clock: time comes in as
// arguments. Each call returns the records that persist its effects; the
// caller writes them to __consumer_offsets before it sends the answer
// (and if the write fails, puts back a clone taken before the call), as
// Kafka's coordinator does. It is not safe for concurrent use.
//
// The group's state: its epoch, bumped whenever the members, their
// subscriptions or the subscribed topics change; a target assignment,
// computed by a ServerAssignor at the first heartbeat after a bump, with
// the epoch it was computed at; and each member's current assignment,
// which reconcile moves towards the target heartbeat by heartbeat. Its
// invariant: no partition is held (assigned or pending revocation) by two
// members at once.
type consumerGroup struct {
	id     string
	config consumerGroupConfig

	groupEpoch int32
	// members by member id; staticMembers maps an instance id to the id
	// of the member that holds it.
	members       map[string]*consumerMember
	staticMembers map[string]string

	// targetEpoch is the group epoch target was computed at.
	targetEpoch int32
	// target is the target assignment: member id → topic → partitions.
	target map[string]map[string][]int32

	// subscriptionMetadata is the partition count of every topic some
	// member subscribes to that exists, as of the group epoch; a change
	// of it bumps the epoch.
	subscriptionMetadata map[string]int32
	// topics are the partition counts of all the topics, as setTopics
	// last gave them; regexes are resolved against them.
	topics map[string]int32

	// holders maps each partition a member holds (assigned or pending
	// revocation) to that member's id.
	holders map[kafka.TopicPartition]string
	// regexps caches the compiled subscribed topic regexes.
	regexps map[string]*regexp.Regexp
	// deleted is set by the group's tombstone.
	deleted bool
}

// clone returns a deep copy of g. The coordinator keeps one across a
// change and puts it back when the change's records could not be
// written, so that the group in memory never runs ahead of its log (as
// Kafka reverts its timeline to the last committed offset).
func (g *consumerGroup) clone() *consumerGroup {
	c := *g
	c.members = make(map[string]*consumerMember, len(g.members))
	for id, m := range g.members {
		c.members[id] = m.clone()
	}
	c.staticMembers = maps.Clone(g.staticMembers)
	c.target = make(map[string]map[string][]int32, len(g.target))
	for id, t := range g.target {
		ct := make(map[string][]int32, len(t))
		for topic, ps := range t {
			ct[topic] = slices.Clone(ps)
		}
		c.target[id] = ct
	}
	c.subscriptionMetadata = maps.Clone(g.subscriptionMetadata)
	c.topics = maps.Clone(g.topics)
	c.holders = maps.Clone(g.holders)
	c.regexps = maps.Clone(g.regexps)
	return &c
}

// newConsumerGroup returns an empty group: epoch 0, no members.
func newConsumerGroup(id string, config consumerGroupConfig) *consumerGroup {
	return &consumerGroup{
		id:            id,
		config:        config.withDefaults(),
		members:       map[string]*consumerMember{},
		staticMembers: map[string]string{},
		target:        map[string]map[string][]int32{},
		topics:        map[string]int32{},
		holders:       map[kafka.TopicPartition]string{},
		regexps:       map[string]*regexp.Regexp{},
	}
}

// consumerHeartbeat is a ConsumerGroupHeartbeat request (API 68). As in
// Kafka's, a request carries only what changed since the member's last
// heartbeat: a nil field leaves it as it is. A join (epoch 0) sends them
// all.
type consumerHeartbeat struct {
	// MemberID is the member's id, chosen by the client (KIP-1082); it
	// may not be empty.
	MemberID string
	// MemberEpoch is 0 to join, -1 to leave, -2 for a static member's
	// temporary leave, and else the epoch the member is at.
	MemberEpoch int32
	// InstanceID is the member's group.instance.id, making it a static
	// member; nil when unchanged (or dynamic). It may not be empty.
	InstanceID *string
	// RackID is the client's rack; nil when unchanged. It may not be
	// empty.
	RackID *string
	// ClientID and ClientHost come from the request's header and
	// connection; empty leaves them as they are.
	ClientID, ClientHost string
	// RebalanceTimeout is how long the member may take to revoke
	// partitions before it is fenced (max.poll.interval.ms in Kafka's
	// consumer); kept to the millisecond. Nil when unchanged; required
	// to join.
	RebalanceTimeout *time.Duration
	// SubscribedTopicNames are the topics the member subscribes to by
	// name; nil when unchanged.
	SubscribedTopicNames []string
	// SubscribedTopicRegex is a regular expression in RE2 syntax that
	// the whole name of each further topic the member subscribes to
	// matches; nil when unchanged, empty for none. A join sets the names
	// or the regex.
	SubscribedTopicRegex *string
	// ServerAssignor is the server assignor the member prefers; nil when
	// unchanged, empty for the group's default.
	ServerAssignor *string
	// OwnedPartitions are the partitions the member owns, topic →
	// partitions; nil when not sent (unchanged). A join sends an empty,
	// non-nil map.
	OwnedPartitions map[string][]int32
}

// consumerHeartbeatAnswer is a ConsumerGroupHeartbeat response.
type consumerHeartbeatAnswer struct {
	// Err is the error, nil for none; heartbeat returns it too.
	Err error
	// MemberID is the member's id.
	MemberID string
	// MemberEpoch is the member's epoch now; -1 or -2 after a leave.
	MemberEpoch int32
	// HeartbeatInterval is when the member should heartbeat next.
	HeartbeatInterval time.Duration
	// Assignment is the partitions the member may consume, topic →
	// sorted partitions, when they changed or the request was a full one
	// (a join, or one with every field set); nil otherwise. A member
	// revokes what it owns outside it.
	Assignment map[string][]int32
}

// heartbeat handles a ConsumerGroupHeartbeat at time now, with Kafka's
// semantics: it joins (epoch 0; a member the group has rejoins, as after
// being fenced), leaves (-1; -2 for a static member's temporary leave)
// or heartbeats (the member's epoch). It updates the
// member's subscription and bumps the group epoch if it changed, computes
// a new target assignment if the group epoch is ahead of the target's,
// reconciles the member towards its target, and restarts its session. It
// returns the answer and the records to persist; on an error, g is
// unchanged and there are none.
//
// The errors: kafka.ErrInvalidRequest for a malformed request (an empty
// member id, a join without a rebalance timeout or a subscription, a
// join with owned partitions, an epoch below -2, a static leave without
// an instance id); kafka.ErrUnknownMemberID for a member the group does
// not have; FENCED_MEMBER_EPOCH for an epoch neither the member's nor
// (with owned partitions its assignment holds) its previous one;
// kafka.ErrFencedInstanceID for an instance id another member took over;
// UNRELEASED_INSTANCE_ID for a join with an instance id another member
// holds; UNSUPPORTED_ASSIGNOR; INVALID_REGULAR_EXPRESSION;
// kafka.ErrGroupMaxSizeReached; and the assignor's error, if it fails.
func (g *consumerGroup) heartbeat(req consumerHeartbeat, now time.Time) (consumerHeartbeatAnswer, []consumerRecord, error) {
	fail := func(err error) (consumerHeartbeatAnswer, []consumerRecord, error) {
		return consumerHeartbeatAnswer{Err: err, MemberID: req.MemberID, MemberEpoch: req.MemberEpoch}, nil, err
	}
	if err := g.validate(req); err != nil {
		return fail(err)
	}
	if req.MemberEpoch == leaveEpoch || req.MemberEpoch == staticLeaveEpoch {
		return g.leave(req, now)
	}
	owned, ownedKnown := normalizePartitions(req.OwnedPartitions), req.OwnedPartitions != nil

	// The member as it is (nil for a new one), and the static member it
	// replaces, if any.
	old, replaced, err := g.lookup(req, owned, ownedKnown)
	if err != nil {
		return fail(err)
	}
	if old == nil && replaced == nil && g.config.MaxSize > 0 && len(g.members) >= g.config.MaxSize {
		return fail(fmt.Errorf("%w: the group has %d members", kafka.ErrGroupMaxSizeReached, len(g.members)))
	}
	base := old
	switch {
	case replaced != nil:
		// The new member takes over the static member's subscription and
		// assignment, at epoch 0 (Kafka's replaceMember).
		base = replaced.clone()
		base.id = req.MemberID
		base.memberEpoch, base.previousMemberEpoch = joinEpoch, joinEpoch
	case old == nil:
		base = &consumerMember{id: req.MemberID}
	}
	assignedBefore := clonePartitions(base.assigned)
	updated := base.clone()
	updateSubscription(updated, req)
	bump := old == nil && replaced == nil ||
		!slices.Equal(updated.subscribedTopicNames, base.subscribedTopicNames) ||
		updated.subscribedTopicRegex != base.subscribedTopicRegex ||
		updated.serverAssignor != base.serverAssignor

	// Compute everything that can fail before changing anything.
	removed := ""
	if replaced != nil {
		removed = replaced.id
	}
	groupEpoch, subscriptionMetadata := g.groupEpoch, g.subscriptionMetadata
	if bump {
		groupEpoch++
		subscriptionMetadata = g.computeSubscriptionMetadata(updated, removed)
	}
	var target GroupAssignment
	if groupEpoch > g.targetEpoch {
		if target, err = g.computeTarget(updated, removed, subscriptionMetadata); err != nil {
			return fail(err)
		}
	}

	// Write the records, applying each to g.
	var recs []consumerRecord
	if replaced != nil {
		replacedTarget := g.target[replaced.id]
		g.writeRemoveMember(&recs, replaced.id)
		g.write(&recs, g.memberMetadataRecord(updated))
		g.write(&recs, consumerGroupTargetAssignmentMember{GroupID: g.id, MemberID: updated.id, TopicPartitions: clonePartitions(replacedTarget)})
		g.write(&recs, g.currentAssignmentRecord(base))
	} else if old == nil || !updated.sameMetadata(old) {
		g.write(&recs, g.memberMetadataRecord(updated))
	}
	if !maps.Equal(subscriptionMetadata, g.subscriptionMetadata) {
		g.write(&recs, consumerGroupPartitionMetadata{GroupID: g.id, Topics: cloneCounts(subscriptionMetadata)})
	}
	if groupEpoch != g.groupEpoch {
		g.write(&recs, consumerGroupMetadata{GroupID: g.id, Epoch: groupEpoch})
	}
	if target != nil {
		g.writeTarget(&recs, target, groupEpoch)
	}

	// Reconcile the member towards its target.
	m := g.members[req.MemberID]
	next := reconcile(m, g.targetEpoch, g.target[m.id], owned, ownedKnown, func(t string, p int32) bool {
		h, ok := g.holders[kafka.TopicPartition{Topic: t, Partition: p}]
		return ok && h != m.id
	})
	if next != m {
		g.write(&recs, g.currentAssignmentRecord(next))
		m.rebalanceDeadline = time.Time{}
		if m.state == consumerMemberUnrevokedPartitions {
			m.rebalanceDeadline = now.Add(m.rebalanceTimeout)
		}
	}
	m.sessionDeadline = now.Add(g.config.SessionTimeout)

	answer := consumerHeartbeatAnswer{
		MemberID: m.id, MemberEpoch: m.memberEpoch, HeartbeatInterval: g.config.HeartbeatInterval,
	}
	full := req.MemberEpoch == joinEpoch ||
		req.RebalanceTimeout != nil && (req.SubscribedTopicNames != nil || req.SubscribedTopicRegex != nil) && ownedKnown
	if full || !equalPartitions(assignedBefore, m.assigned) {
		answer.Assignment = clonePartitions(m.assigned)
		if answer.Assignment == nil {
			answer.Assignment = map[string][]int32{}
		}
	}
	return answer, recs, nil
}

// validate checks a heartbeat request as Kafka's
// throwIfConsumerGroupHeartbeatRequestIsInvalid does.
func (g *consumerGroup) validate(req consumerHeartbeat) error {
	invalid := func(why string) error { return fmt.Errorf("%w: %s", kafka.ErrInvalidRequest, why) }
	switch {
	case req.MemberID == "":
		return invalid("member id can't be empty")
	case req.InstanceID != nil && *req.InstanceID == "":
		return invalid("instance id can't be empty")
	case req.RackID != nil && *req.RackID == "":
		return invalid("rack id can't be empty")
	case req.RebalanceTimeout != nil && *req.RebalanceTimeout < 0:
		return invalid("rebalance timeout can't be negative")
	case req.MemberEpoch < staticLeaveEpoch:
		return invalid(fmt.Sprintf("member epoch %d is invalid", req.MemberEpoch))
	case req.MemberEpoch == staticLeaveEpoch && req.InstanceID == nil:
		return invalid("a static member's leave (epoch -2) needs its instance id")
	}
	if req.MemberEpoch == joinEpoch {
		switch {
		case req.RebalanceTimeout == nil:
			return invalid("rebalance timeout must be given when joining")
		case req.OwnedPartitions == nil || countPartitions(req.OwnedPartitions) > 0:
			return invalid("owned partitions must be empty when joining")
		case req.SubscribedTopicNames == nil && req.SubscribedTopicRegex == nil:
			return invalid("subscribed topic names or regex must be given when joining")
		}
	}
	if req.SubscribedTopicRegex != nil && *req.SubscribedTopicRegex != "" {
		if _, err := g.regexp(*req.SubscribedTopicRegex); err != nil {
			return fmt.Errorf("%w: %v", kafka.ErrInvalidRegularExpression, err)
		}
	}
	if req.ServerAssignor != nil && *req.ServerAssignor != "" && g.config.assignor(*req.ServerAssignor) == nil {
		names := make([]string, len(g.config.Assignors))
		for i, a := range g.config.Assignors {
			names[i] = a.Name()
		}
		return fmt.Errorf("%w: %q; the coordinator has %s", kafka.ErrUnsupportedAssignor, *req.ServerAssignor, strings.Join(names, ", "))
	}
	return nil
}

// lookup finds the member a join or heartbeat is from, as Kafka's
// getOrMaybeSubscribe{Dynamic,Static}ConsumerGroupMember do: the member
// (nil for a new one), or the static member that a join with its
// instance id replaces, and checks the epoch.
//
// Unlike Kafka, a static member that joins again with epoch 0 and its own
// member id (after being fenced, or when the answer to its join was
// lost) is let in as a dynamic one is, rather than refused with
// UNRELEASED_INSTANCE_ID.
func (g *consumerGroup) lookup(req consumerHeartbeat, owned map[string][]int32, ownedKnown bool) (old, replaced *consumerMember, err error) {
	check := func(m *consumerMember) (*consumerMember, *consumerMember, error) {
		return m, nil, checkEpoch(m, req.MemberEpoch, owned, ownedKnown)
	}
	if req.InstanceID == nil {
		m := g.members[req.MemberID]
		if m == nil {
			if req.MemberEpoch != joinEpoch {
				return nil, nil, fmt.Errorf("%w: %s", kafka.ErrUnknownMemberID, req.MemberID)
			}
			return nil, nil, nil
		}
		return check(m)
	}
	instance := *req.InstanceID
	existing := g.members[g.staticMembers[instance]]
	if req.MemberEpoch != joinEpoch {
		switch {
		case existing == nil:
			return nil, nil, fmt.Errorf("%w: no member has instance id %s", kafka.ErrUnknownMemberID, instance)
		case existing.id != req.MemberID:
			return nil, nil, fmt.Errorf("%w: member %s has instance id %s", kafka.ErrFencedInstanceID, existing.id, instance)
		}
		return check(existing)
	}
	switch {
	case existing == nil:
		if m := g.members[req.MemberID]; m != nil {
			return check(m)
		}
		return nil, nil, nil
	case existing.memberEpoch == staticLeaveEpoch:
		if m := g.members[req.MemberID]; m != nil && m != existing {
			return nil, nil, fmt.Errorf("%w: member id %s is another member's", kafka.ErrInvalidRequest, req.MemberID)
		}
		return nil, existing, nil
	case existing.id == req.MemberID:
		return check(existing)
	}
	return nil, nil, fmt.Errorf("%w: member %s holds instance id %s", kafka.ErrUnreleasedInstanceID, existing.id, instance)
}

// checkEpoch checks the epoch of a heartbeat from m, as Kafka's
// throwIfConsumerGroupMemberEpochIsInvalid does: it must be m's epoch,
// or m's previous epoch with owned partitions that m's assignment holds
// (the answer that moved m to its epoch was lost). Epoch 0 is m joining
// again, as a member does after it was fenced, and is accepted
// (KAFKA-19233): m gets its assignment again, and since a join owns
// nothing, what it had to revoke is revoked.
func checkEpoch(m *consumerMember, epoch int32, owned map[string][]int32, ownedKnown bool) error {
	switch {
	case epoch == joinEpoch:
		return nil
	case epoch > m.memberEpoch:
		return fmt.Errorf("%w: epoch %d is ahead of the member's %d", kafka.ErrFencedMemberEpoch, epoch, m.memberEpoch)
	case epoch < m.memberEpoch && (epoch != m.previousMemberEpoch || !ownedKnown || !subsetPartitions(owned, m.assigned)):
		return fmt.Errorf("%w: epoch %d is behind the member's %d", kafka.ErrFencedMemberEpoch, epoch, m.memberEpoch)
	}
	return nil
}

// updateSubscription sets the fields of m that req changes.
func updateSubscription(m *consumerMember, req consumerHeartbeat) {
	if req.InstanceID != nil {
		m.instanceID = *req.InstanceID
	}
	if req.RackID != nil {
		m.rackID = *req.RackID
	}
	if req.ClientID != "" {
		m.clientID = req.ClientID
	}
	if req.ClientHost != "" {
		m.clientHost = req.ClientHost
	}
	if req.RebalanceTimeout != nil {
		m.rebalanceTimeout = req.RebalanceTimeout.Truncate(time.Millisecond)
	}
	if req.SubscribedTopicNames != nil {
		m.subscribedTopicNames = slices.Compact(slices.Sorted(slices.Values(req.SubscribedTopicNames)))
	}
	if req.SubscribedTopicRegex != nil {
		m.subscribedTopicRegex = *req.SubscribedTopicRegex
	}
	if req.ServerAssignor != nil {
		m.serverAssignor = *req.ServerAssignor
	}
}

// leave handles a heartbeat with epoch -1 or -2, as Kafka's
// consumerGroupLeave does. A dynamic member's leave, or a static
// member's with -1, removes the member and bumps the group epoch. A
// static member's leave with -2 keeps it in the group at epoch -2 with
// its assignment (less what it had to revoke), so that a new member with
// its instance id takes over; it is removed if none does before its
// session, restarted now, expires.
func (g *consumerGroup) leave(req consumerHeartbeat, now time.Time) (consumerHeartbeatAnswer, []consumerRecord, error) {
	fail := func(err error) (consumerHeartbeatAnswer, []consumerRecord, error) {
		return consumerHeartbeatAnswer{Err: err, MemberID: req.MemberID, MemberEpoch: req.MemberEpoch}, nil, err
	}
	var m *consumerMember
	if req.InstanceID == nil {
		if m = g.members[req.MemberID]; m == nil {
			return fail(fmt.Errorf("%w: %s", kafka.ErrUnknownMemberID, req.MemberID))
		}
	} else {
		if m = g.members[g.staticMembers[*req.InstanceID]]; m == nil {
			return fail(fmt.Errorf("%w: no member has instance id %s", kafka.ErrUnknownMemberID, *req.InstanceID))
		}
		if m.id != req.MemberID {
			return fail(fmt.Errorf("%w: member %s has instance id %s", kafka.ErrFencedInstanceID, m.id, *req.InstanceID))
		}
	}
	answer := consumerHeartbeatAnswer{MemberID: req.MemberID, MemberEpoch: req.MemberEpoch}
	var recs []consumerRecord
	if req.MemberEpoch == staticLeaveEpoch {
		next := m.clone()
		next.memberEpoch = staticLeaveEpoch
		next.pendingRevocation = nil
		g.write(&recs, g.currentAssignmentRecord(next))
		m.sessionDeadline = now.Add(g.config.SessionTimeout)
		m.rebalanceDeadline = time.Time{}
		return answer, recs, nil
	}
	g.fence(&recs, m)
	return answer, recs, nil
}

// fence removes member m and bumps the group epoch, as Kafka's
// consumerGroupFenceMember does; the next heartbeat computes a target
// assignment without it.
func (g *consumerGroup) fence(out *[]consumerRecord, m *consumerMember) {
	g.writeRemoveMember(out, m.id)
	if meta := g.computeSubscriptionMetadata(nil, ""); !maps.Equal(meta, g.subscriptionMetadata) {
		g.write(out, consumerGroupPartitionMetadata{GroupID: g.id, Topics: meta})
	}
	g.write(out, consumerGroupMetadata{GroupID: g.id, Epoch: g.groupEpoch + 1})
}

// tick removes, at time now, the members whose session expired (static
// members too, those that left with -2 included) and those that still
// hold partitions to revoke past their rebalance timeout, bumping the
// group epoch for each, and returns the records. The coordinator calls
// it periodically, and at least at nextDeadline.
func (g *consumerGroup) tick(now time.Time) []consumerRecord {
	var recs []consumerRecord
	for _, id := range slices.Sorted(maps.Keys(g.members)) {
		m := g.members[id]
		expired := !now.Before(m.sessionDeadline)
		late := m.state == consumerMemberUnrevokedPartitions && !m.rebalanceDeadline.IsZero() && !now.Before(m.rebalanceDeadline)
		if expired || late {
			g.fence(&recs, m)
		}
	}
	return recs
}

// nextDeadline returns when tick next has something to do: the earliest
// session or rebalance deadline; zero if the group has no members.
func (g *consumerGroup) nextDeadline() time.Time {
	var next time.Time
	for _, m := range g.members {
		for _, d := range []time.Time{m.sessionDeadline, m.rebalanceDeadline} {
			if !d.IsZero() && (next.IsZero() || d.Before(next)) {
				next = d
			}
		}
	}
	return next
}

// setTopics tells the group the topics that exist, name → partition
// count, as of now. If the partition counts of the topics its members
// subscribe to (by name or regex) change — a topic created, deleted or
// grown — the group epoch is bumped, and the next heartbeat computes a
// new target assignment. It returns the records. The group keeps a copy
// of topics; now is not used (Kafka refreshes the metadata on an
// interval, not needed when the coordinator says when it changes).
func (g *consumerGroup) setTopics(topics map[string]int32, now time.Time) []consumerRecord {
	g.topics = maps.Clone(topics)
	meta := g.computeSubscriptionMetadata(nil, "")
	if maps.Equal(meta, g.subscriptionMetadata) {
		return nil
	}
	var recs []consumerRecord
	g.write(&recs, consumerGroupPartitionMetadata{GroupID: g.id, Topics: meta})
	g.write(&recs, consumerGroupMetadata{GroupID: g.id, Epoch: g.groupEpoch + 1})
	return recs
}

// regexp returns the compiled form of a subscribed topic regex: one that
// the whole topic name matches, as Kafka's RE2/J matches() does.
func (g *consumerGroup) regexp(expr string) (*regexp.Regexp, error) {
	if re, ok := g.regexps[expr]; ok {
		return re, nil
	}
	re, err := regexp.Compile("^(?:" + expr + ")$")
	if err != nil {
		return nil, err
	}
	g.regexps[expr] = re
	return re, nil
}

// subscribedTopics returns the topics m subscribes to, sorted: those it
// names and those of g.topics its regex matches — internal topics too,
// as Kafka's coordinator matches a regex against every topic (a client
// that wants them left out says so in its regex).
func (g *consumerGroup) subscribedTopics(m *consumerMember) []string {
	if m.subscribedTopicRegex == "" {
		return m.subscribedTopicNames
	}
	out := slices.Clone(m.subscribedTopicNames)
	if re, err := g.regexp(m.subscribedTopicRegex); err == nil {
		for t := range g.topics {
			if re.MatchString(t) {
				out = append(out, t)
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// membersWith returns g's members sorted by id, with updated in place of
// (or added as) the member with its id and the member with id removed
// left out.
func (g *consumerGroup) membersWith(updated *consumerMember, removed string) []*consumerMember {
	out := make([]*consumerMember, 0, len(g.members)+1)
	for id, m := range g.members {
		if id == removed || updated != nil && id == updated.id {
			continue
		}
		out = append(out, m)
	}
	if updated != nil {
		out = append(out, updated)
	}
	slices.SortFunc(out, func(a, b *consumerMember) int { return cmp.Compare(a.id, b.id) })
	return out
}

// computeSubscriptionMetadata returns the partition counts of the topics
// that exist and that the members subscribe to, the members being g's as
// membersWith(updated, removed) gives them; nil for none.
func (g *consumerGroup) computeSubscriptionMetadata(updated *consumerMember, removed string) map[string]int32 {
	var out map[string]int32
	for _, m := range g.membersWith(updated, removed) {
		for _, t := range g.subscribedTopics(m) {
			if n, ok := g.topics[t]; ok {
				if out == nil {
					out = map[string]int32{}
				}
				out[t] = n
			}
		}
	}
	return out
}

// preferredAssignor returns the assignor of the group, its members being
// those given: the one most of them prefer (ties to the first name),
// else the default, as Kafka's computePreferredServerAssignor does.
func (g *consumerGroup) preferredAssignor(members []*consumerMember) ServerAssignor {
	votes := map[string]int{}
	for _, m := range members {
		if m.serverAssignor != "" {
			votes[m.serverAssignor]++
		}
	}
	best := ""
	for _, name := range slices.Sorted(maps.Keys(votes)) {
		if votes[name] > votes[best] && g.config.assignor(name) != nil {
			best = name
		}
	}
	if best == "" {
		return g.config.Assignors[0]
	}
	return g.config.assignor(best)
}

// computeTarget runs the group's assignor on its members as
// membersWith(updated, removed) gives them, over the topics of
// subscriptionMetadata, as Kafka's TargetAssignmentBuilder does. A member
// replacing the static member removed starts from that member's target.
// It returns a target for every member and changes nothing.
func (g *consumerGroup) computeTarget(updated *consumerMember, removed string, subscriptionMetadata map[string]int32) (GroupAssignment, error) {
	members := g.membersWith(updated, removed)
	spec := AssignmentSpec{Topics: maps.Clone(subscriptionMetadata)}
	if spec.Topics == nil {
		spec.Topics = map[string]int32{}
	}
	for _, m := range members {
		current := g.target[m.id]
		if m == updated && removed != "" {
			current = g.target[removed]
		}
		spec.Members = append(spec.Members, AssignmentMember{
			MemberID: m.id, InstanceID: m.instanceID, RackID: m.rackID,
			Topics: slices.Clone(g.subscribedTopics(m)), Assignment: clonePartitions(current),
		})
	}
	assignor := g.preferredAssignor(members)
	target, err := assignor.Assign(spec)
	if err != nil {
		return nil, fmt.Errorf("%w: assignor %s failed: %v", kafka.ErrUnknownServerError, assignor.Name(), err)
	}
	out := make(GroupAssignment, len(members))
	for _, m := range members {
		out[m.id] = normalizePartitions(target[m.id])
	}
	return out, nil
}

// writeTarget writes the target assignment target of epoch: the members'
// assignments that changed, then the epoch, as Kafka does.
func (g *consumerGroup) writeTarget(out *[]consumerRecord, target GroupAssignment, epoch int32) {
	for _, id := range slices.Sorted(maps.Keys(target)) {
		if _, ok := g.target[id]; !ok || !equalPartitions(g.target[id], target[id]) {
			g.write(out, consumerGroupTargetAssignmentMember{GroupID: g.id, MemberID: id, TopicPartitions: clonePartitions(target[id])})
		}
	}
	g.write(out, consumerGroupTargetAssignmentMetadata{GroupID: g.id, AssignmentEpoch: epoch})
}

// state returns the group's state as Kafka's ConsumerGroup computes it:
// Empty without members, Assigning while the group epoch is ahead of the
// target's, Reconciling while a member is not Stable at the target
// epoch, else Stable.
func (g *consumerGroup) state() consumerGroupState {
	switch {
	case len(g.members) == 0:
		return consumerGroupEmpty
	case g.groupEpoch > g.targetEpoch:
		return consumerGroupAssigning
	}
	for _, m := range g.members {
		if !m.isReconciledTo(g.targetEpoch) {
			return consumerGroupReconciling
		}
	}
	return consumerGroupStable
}

// consumerGroupDescription is a group as ConsumerGroupDescribe (API 69)
// describes it.
type consumerGroupDescription struct {
	GroupID         string
	State           consumerGroupState
	GroupEpoch      int32
	AssignmentEpoch int32
	// AssignorName is the server assignor the group uses.
	AssignorName string
	// Members are sorted by member id.
	Members []consumerMemberDescription
}

// consumerMemberDescription is one member in a consumerGroupDescription.
type consumerMemberDescription struct {
	MemberID             string
	InstanceID           string
	RackID               string
	ClientID             string
	ClientHost           string
	MemberEpoch          int32
	SubscribedTopicNames []string
	SubscribedTopicRegex string
	// Assignment is what the member has assigned; TargetAssignment what
	// the target gives it.
	Assignment       map[string][]int32
	TargetAssignment map[string][]int32
}

// describe returns the group's description. It shares nothing with g.
func (g *consumerGroup) describe() consumerGroupDescription {
	members := g.membersWith(nil, "")
	d := consumerGroupDescription{
		GroupID: g.id, State: g.state(), GroupEpoch: g.groupEpoch, AssignmentEpoch: g.targetEpoch,
		AssignorName: g.preferredAssignor(members).Name(),
	}
	for _, m := range members {
		d.Members = append(d.Members, consumerMemberDescription{
			MemberID: m.id, InstanceID: m.instanceID, RackID: m.rackID, ClientID: m.clientID, ClientHost: m.clientHost,
			MemberEpoch: m.memberEpoch, SubscribedTopicNames: slices.Clone(m.subscribedTopicNames),
			SubscribedTopicRegex: m.subscribedTopicRegex,
			Assignment:           clonePartitions(m.assigned), TargetAssignment: clonePartitions(g.target[m.id]),
		})
	}
	return d
}
