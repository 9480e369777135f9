package group

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"maps"
	"slices"
	"time"

	"github.com/partlog/partlog/kafka"
)

// shareGroupConfig configures the share groups of a coordinator. Its
// zero value works: withDefaults fills it with Kafka's defaults.
type shareGroupConfig struct {
	// SessionTimeout is group.share.session.timeout.ms: a member that
	// does not heartbeat for this long is removed. Zero means 45s.
	SessionTimeout time.Duration
	// HeartbeatInterval is group.share.heartbeat.interval.ms, what the
	// answers tell members to heartbeat at. Zero means 5s.
	HeartbeatInterval time.Duration
	// MaxSize is group.share.max.size: a member may not join a group that
	// has this many. Zero means 200.
	MaxSize int
	// InitializeRetryInterval is group.share.initialize.retry.interval.ms:
	// partitions whose share-group state has been being initialized for
	// this long are asked for again. Zero means 30s.
	InitializeRetryInterval time.Duration
}

// withDefaults returns c with its zero fields set to their defaults.
func (c shareGroupConfig) withDefaults() shareGroupConfig {
	if c.SessionTimeout == 0 {
		c.SessionTimeout = 45 * time.Second
	}
	if c.HeartbeatInterval == 0 {
		c.HeartbeatInterval = 5 * time.Second
	}
	if c.MaxSize == 0 {
		c.MaxSize = 200
	}
	if c.InitializeRetryInterval == 0 {
		c.InitializeRetryInterval = 30 * time.Second
	}
	return c
}

// shareGroupState is a share group's state as Kafka's ShareGroup has it:
// Empty without members, else Stable (a share group has no rebalance to
// wait for).
type shareGroupState int8

// The share group states.
const (
	// shareGroupEmpty: the group has no members.
	shareGroupEmpty shareGroupState = iota
	// shareGroupStable: the group has members.
	shareGroupStable
)

// String returns the state as Kafka spells it.
func (s shareGroupState) String() string {
	switch s {
	case shareGroupEmpty:
		return "Empty"
	case shareGroupStable:
		return "Stable"
	}
	return "Unknown"
}

// simpleAssignorName is the name of Kafka's only share group assignor
// (group.share.assignors), which describe reports.
const simpleAssignorName = "simple"

// shareGroup is one share group (KIP-932), Kafka's ShareGroup with the
// logic of its GroupMetadataManager: a pure state machine like
// consumerGroup. It does no I/O and reads no clock; each call returns the
// records that persist its effects, for the caller to write to
// __consumer_offsets before it answers. It is not safe for concurrent
// use.
//
// Its state: the group epoch, bumped when the members, their
// subscriptions or the subscribed topics change; a target assignment
// computed by the simple assignor at the first heartbeat after a bump,
// with the epoch it was computed at; each member's assignment, which is
// its target as soon as it heartbeats (there is nothing to revoke: a
// partition may be assigned to several members); and the partitions
// whose share-group state is initialized (only those are assigned) or
// being initialized.
type shareGroup struct {
	id     string
	config shareGroupConfig

	groupEpoch int32
	// metadataHash is the hash of the subscribed topics as of the group
	// epoch (see topicsHash); a change of it bumps the epoch.
	metadataHash int64
	members      map[string]*shareMember

	// targetEpoch is the group epoch target was computed at.
	targetEpoch int32
	// target is the target assignment: member id → topic → partitions.
	target map[string]map[string][]int32

	// initialized are the partitions whose share-group state the share
	// coordinator has, topic → sorted partitions; initializing those
	// asked for and not yet confirmed, each topic since
	// initializingSince; deleting the topics whose state is being
	// deleted (read, never written by this package).
	initialized       map[string][]int32
	initializing      map[string][]int32
	initializingSince map[string]time.Time
	deleting          []string
	// stateTopicIDs are the ids of the topics of initialized and
	// initializing when they were seen: a topic recreated under its name
	// has another id, and its state is not the old topic's.
	stateTopicIDs map[string][16]byte
	// hasState says a ShareGroupStatePartitionMetadata record is live.
	hasState bool

	// topics are the cluster's topics, as setTopics last gave them.
	topics map[string]TopicInfo
	// deleted is set by the group's tombstone.
	deleted bool
}

// clone returns a deep copy of g, which the coordinator puts back when
// the records of a change to g cannot be written: the group in memory
// never runs ahead of its log.
func (g *shareGroup) clone() *shareGroup {
	c := *g
	c.members = make(map[string]*shareMember, len(g.members))
	for id, m := range g.members {
		c.members[id] = m.clone()
	}
	c.target = make(map[string]map[string][]int32, len(g.target))
	for id, t := range g.target {
		c.target[id] = clonePartitions(t)
	}
	c.initialized = clonePartitions(g.initialized)
	c.initializing = clonePartitions(g.initializing)
	c.initializingSince = maps.Clone(g.initializingSince)
	c.deleting = slices.Clone(g.deleting)
	c.stateTopicIDs = maps.Clone(g.stateTopicIDs)
	c.topics = maps.Clone(g.topics)
	return &c
}

// newShareGroup returns an empty share group: epoch 0, no members.
func newShareGroup(id string, config shareGroupConfig) *shareGroup {
	return &shareGroup{
		id: id, config: config.withDefaults(),
		members: map[string]*shareMember{}, target: map[string]map[string][]int32{},
		initializingSince: map[string]time.Time{}, stateTopicIDs: map[string][16]byte{},
		topics: map[string]TopicInfo{},
	}
}

// shareHeartbeat is a ShareGroupHeartbeat request (API 76, version 1). As
// Kafka's, it carries only what changed since the member's last
// heartbeat: a nil field leaves it as it is.
type shareHeartbeat struct {
	// MemberID is the member's id, generated by the client; it may not
	// be empty.
	MemberID string
	// MemberEpoch is 0 to join, -1 to leave, else the member's epoch.
	MemberEpoch int32
	// RackID is the client's rack; nil when unchanged. It may not be
	// empty.
	RackID *string
	// SubscribedTopicNames are the topics the member subscribes to; nil
	// when unchanged. A join must send some.
	SubscribedTopicNames []string
	// ClientID and ClientHost come from the request's header and
	// connection; empty leaves them as they are.
	ClientID, ClientHost string
}

// shareHeartbeatAnswer is a ShareGroupHeartbeat response, and what the
// broker must do for it.
type shareHeartbeatAnswer struct {
	// Err is the error, nil for none; heartbeat returns it too.
	Err error
	// MemberID is the member's id.
	MemberID string
	// MemberEpoch is the member's epoch now; -1 after a leave.
	MemberEpoch int32
	// HeartbeatInterval is when the member should heartbeat next.
	HeartbeatInterval time.Duration
	// Assignment is the member's assignment, topic → sorted partitions,
	// when it changed or the request was a full one (a join, or one with
	// the subscription); nil otherwise.
	Assignment map[string][]int32
	// Initialize are the partitions whose share-group state the broker
	// must initialize (InitializeShareGroupState to the share
	// coordinator, state epoch StateEpoch) and then confirm with
	// initialized; nil for none. They are assigned once confirmed.
	Initialize map[string][]int32
	// StateEpoch is the group epoch the state is initialized at.
	StateEpoch int32
}

// heartbeat handles a ShareGroupHeartbeat at time now, as Kafka's
// GroupMetadataManager.shareGroupHeartbeat does: it joins (epoch 0),
// leaves (-1) or heartbeats (the member's epoch); updates the member's
// subscription and bumps the group epoch if it, or the subscribed
// topics, or the partitions initialized, changed; computes a new target
// assignment if the group epoch is ahead of the target's; moves the
// member to its target at once; restarts its session; and asks for the
// subscribed partitions not yet initialized. It returns the answer and
// the records to persist; on an error, g is unchanged and there are none.
//
// The errors: kafka.ErrInvalidRequest for a malformed request (an empty
// member id or rack id, a join without subscribed topics, an epoch below
// -1); kafka.ErrGroupMaxSizeReached for a member the group does not have
// when it is full; kafka.ErrUnknownMemberID for a heartbeat or leave of
// a member the group does not have; kafka.ErrFencedMemberEpoch for an
// epoch ahead of the member's, or behind it and not its previous one —
// a join (0) of a member the group has included, unless 0 is its
// previous epoch (its join's answer was lost), as in Kafka.
func (g *shareGroup) heartbeat(req shareHeartbeat, now time.Time) (shareHeartbeatAnswer, []shareRecord, error) {
	fail := func(err error) (shareHeartbeatAnswer, []shareRecord, error) {
		return shareHeartbeatAnswer{Err: err, MemberID: req.MemberID, MemberEpoch: req.MemberEpoch}, nil, err
	}
	if err := validateShareHeartbeat(req); err != nil {
		return fail(err)
	}
	if req.MemberEpoch == leaveEpoch {
		m := g.members[req.MemberID]
		if m == nil {
			return fail(fmt.Errorf("%w: %s", kafka.ErrUnknownMemberID, req.MemberID))
		}
		var recs []shareRecord
		g.fence(&recs, m)
		return shareHeartbeatAnswer{MemberID: req.MemberID, MemberEpoch: leaveEpoch}, recs, nil
	}
	old := g.members[req.MemberID]
	if old == nil && len(g.members) >= g.config.MaxSize {
		return fail(fmt.Errorf("%w: the share group has %d members", kafka.ErrGroupMaxSizeReached, len(g.members)))
	}
	switch {
	case old == nil && req.MemberEpoch != joinEpoch:
		return fail(fmt.Errorf("%w: %s", kafka.ErrUnknownMemberID, req.MemberID))
	case old != nil && req.MemberEpoch > old.memberEpoch:
		return fail(fmt.Errorf("%w: epoch %d is ahead of the member's %d", kafka.ErrFencedMemberEpoch, req.MemberEpoch, old.memberEpoch))
	case old != nil && req.MemberEpoch < old.memberEpoch && req.MemberEpoch != old.previousMemberEpoch:
		return fail(fmt.Errorf("%w: epoch %d is behind the member's %d and is not its previous %d",
			kafka.ErrFencedMemberEpoch, req.MemberEpoch, old.memberEpoch, old.previousMemberEpoch))
	}
	base := old
	if base == nil {
		base = &shareMember{id: req.MemberID}
	}
	assignedBefore := clonePartitions(base.assigned) // old changes as records are written
	updated := base.clone()
	if req.RackID != nil {
		updated.rackID = *req.RackID
	}
	if req.ClientID != "" {
		updated.clientID = req.ClientID
	}
	if req.ClientHost != "" {
		updated.clientHost = req.ClientHost
	}
	if req.SubscribedTopicNames != nil {
		updated.subscribedTopicNames = slices.Compact(slices.Sorted(slices.Values(req.SubscribedTopicNames)))
	}
	subscriptionChanged := old == nil || !slices.Equal(updated.subscribedTopicNames, base.subscribedTopicNames)
	members := g.membersWith(updated, "")

	var recs []shareRecord
	if old == nil || !updated.sameMetadata(old) {
		g.write(&recs, g.memberMetadataRecord(updated))
	}
	bump := subscriptionChanged || g.initializedAssignmentPending(members)
	hash := g.topicsHash(members)
	if bump || hash != g.metadataHash {
		g.write(&recs, shareGroupMetadata{GroupID: g.id, Epoch: g.groupEpoch + 1, MetadataHash: hash})
	}
	if g.groupEpoch > g.targetEpoch {
		g.writeTarget(&recs, g.computeTarget(members), g.groupEpoch)
	}

	// The member takes its target at once; a new subscription filters
	// what it is given.
	m := g.members[req.MemberID]
	next := m.clone()
	if m.memberEpoch != g.targetEpoch || subscriptionChanged {
		next.assigned = partitionsWhere(g.target[m.id], func(t string, _ int32) bool { return m.subscribes(t) })
		if m.memberEpoch != g.targetEpoch {
			next.previousMemberEpoch, next.memberEpoch = m.memberEpoch, g.targetEpoch
		}
	}
	if old == nil || !next.sameAssignment(m) {
		g.write(&recs, g.currentAssignmentRecord(next))
	}
	m.sessionDeadline = now.Add(g.config.SessionTimeout)

	answer := shareHeartbeatAnswer{MemberID: m.id, MemberEpoch: m.memberEpoch, HeartbeatInterval: g.config.HeartbeatInterval,
		StateEpoch: g.groupEpoch}
	if req.MemberEpoch == joinEpoch || req.SubscribedTopicNames != nil || !equalPartitions(assignedBefore, m.assigned) {
		answer.Assignment = clonePartitions(m.assigned)
		if answer.Assignment == nil {
			answer.Assignment = map[string][]int32{}
		}
	}
	answer.Initialize = g.askInitialize(&recs, now)
	return answer, recs, nil
}

// validateShareHeartbeat checks a request as Kafka's
// throwIfShareGroupHeartbeatRequestIsInvalid does.
func validateShareHeartbeat(req shareHeartbeat) error {
	invalid := func(why string) error { return fmt.Errorf("%w: %s", kafka.ErrInvalidRequest, why) }
	switch {
	case req.MemberID == "":
		return invalid("member id can't be empty")
	case req.RackID != nil && *req.RackID == "":
		return invalid("rack id can't be empty")
	case req.MemberEpoch == joinEpoch && len(req.SubscribedTopicNames) == 0:
		return invalid("subscribed topic names must be set when joining")
	case req.MemberEpoch < leaveEpoch:
		return invalid(fmt.Sprintf("member epoch %d is invalid", req.MemberEpoch))
	}
	return nil
}

// membersWith returns g's members sorted by id, with updated in place of
// (or added as) the member with its id, and the member with id removed
// left out.
func (g *shareGroup) membersWith(updated *shareMember, removed string) []*shareMember {
	out := make([]*shareMember, 0, len(g.members)+1)
	for id, m := range g.members {
		if id == removed || updated != nil && id == updated.id {
			continue
		}
		out = append(out, m)
	}
	if updated != nil && updated.id != removed {
		out = append(out, updated)
	}
	slices.SortFunc(out, func(a, b *shareMember) int { return cmp.Compare(a.id, b.id) })
	return out
}

// subscribedTopics returns the topics that exist and that some of members
// subscribes to, sorted.
func (g *shareGroup) subscribedTopics(members []*shareMember) []string {
	var out []string
	for _, m := range members {
		for _, t := range m.subscribedTopicNames {
			if _, ok := g.topics[t]; ok {
				out = append(out, t)
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// topicsHash returns the metadata hash of the topics members subscribe
// to: 0 for none, else FNV-1a (64 bits) over each existing topic, by
// name, of its id, name and partition count. It plays the part of Kafka
// 4.1's MetadataHash (KIP-1101) — a change of topics bumps the epoch,
// also across a coordinator change — but is not Kafka's XXH3 value:
// a Kafka coordinator taking over finds it different and bumps the epoch
// once.
func (g *shareGroup) topicsHash(members []*shareMember) int64 {
	topics := g.subscribedTopics(members)
	if len(topics) == 0 {
		return 0
	}
	h := fnv.New64a()
	var n [4]byte
	for _, t := range topics {
		info := g.topics[t]
		h.Write(info.ID[:])
		binary.BigEndian.PutUint32(n[:], uint32(len(t)))
		h.Write(n[:])
		h.Write([]byte(t))
		binary.BigEndian.PutUint32(n[:], uint32(info.Partitions))
		h.Write(n[:])
	}
	return int64(h.Sum64())
}

// assignable returns the partitions of topic t the assignor may give out:
// those whose share-group state is initialized, of the topic as it is.
func (g *shareGroup) assignable(t string) []int32 {
	info, ok := g.topics[t]
	if !ok || g.stateTopicIDs[t] != info.ID {
		return nil
	}
	return partitionsWhere(map[string][]int32{t: g.initialized[t]}, func(_ string, p int32) bool { return p < info.Partitions })[t]
}

// initializedAssignmentPending reports whether partitions of a subscribed
// topic were initialized (or went) since the target was computed, as
// Kafka's initializedAssignmentPending does: the target must be computed
// again to give them out.
func (g *shareGroup) initializedAssignmentPending(members []*shareMember) bool {
	if len(members) == 0 {
		return false
	}
	for _, t := range g.subscribedTopics(members) {
		var targeted map[string][]int32
		for _, a := range g.target {
			targeted = unionPartitions(targeted, map[string][]int32{t: a[t]})
		}
		if !slices.Equal(targeted[t], g.assignable(t)) {
			return true
		}
	}
	return false
}

// computeTarget runs the simple assignor on members over the assignable
// partitions of the topics they subscribe to. It changes nothing.
func (g *shareGroup) computeTarget(members []*shareMember) GroupAssignment {
	spec := shareAssignmentSpec{Partitions: map[string][]int32{}}
	for _, t := range g.subscribedTopics(members) {
		if ps := g.assignable(t); len(ps) > 0 {
			spec.Partitions[t] = ps
		}
	}
	for _, m := range members {
		spec.Members = append(spec.Members, AssignmentMember{MemberID: m.id, RackID: m.rackID,
			Topics: slices.Clone(m.subscribedTopicNames), Assignment: clonePartitions(g.target[m.id])})
	}
	return simpleAssign(spec)
}

// writeTarget writes the target assignment target of epoch: the members'
// assignments that changed, then the epoch, as Kafka does.
func (g *shareGroup) writeTarget(out *[]shareRecord, target GroupAssignment, epoch int32) {
	for _, id := range slices.Sorted(maps.Keys(target)) {
		if _, ok := g.target[id]; !ok || !equalPartitions(g.target[id], target[id]) {
			g.write(out, shareGroupTargetAssignmentMember{GroupID: g.id, MemberID: id, TopicPartitions: clonePartitions(target[id])})
		}
	}
	g.write(out, shareGroupTargetAssignmentMetadata{GroupID: g.id, AssignmentEpoch: epoch})
}

// askInitialize returns the partitions of the subscribed topics whose
// share-group state is neither initialized nor being initialized (or has
// been for InitializeRetryInterval), and writes them as initializing, as
// Kafka's maybeCreateInitializeShareGroupStateRequest does; nil for none.
func (g *shareGroup) askInitialize(out *[]shareRecord, now time.Time) map[string][]int32 {
	var need map[string][]int32
	for _, t := range g.subscribedTopics(g.membersWith(nil, "")) {
		info := g.topics[t]
		have := g.assignable(t)
		if since, ok := g.initializingSince[t]; ok && now.Sub(since) < g.config.InitializeRetryInterval && g.stateTopicIDs[t] == info.ID {
			have = unionPartitions(map[string][]int32{t: have}, map[string][]int32{t: g.initializing[t]})[t]
		}
		for p := range info.Partitions {
			if _, ok := slices.BinarySearch(have, p); !ok {
				if need == nil {
					need = map[string][]int32{}
				}
				need[t] = append(need[t], p)
			}
		}
	}
	if need == nil {
		return nil
	}
	for t := range need {
		g.stateTopicIDs[t] = g.topics[t].ID
	}
	g.write(out, g.stateRecord(unionPartitions(g.initializing, need), g.initialized))
	for t := range need {
		g.initializingSince[t] = now
	}
	return clonePartitions(need)
}

// initialized records that the share-group state of partitions (topic →
// partitions) is initialized, as Kafka's initializeShareGroupState does:
// they move from initializing to initialized, and the next heartbeat
// assigns them. It returns the records; none when nothing changes.
func (g *shareGroup) markInitialized(partitions map[string][]int32) []shareRecord {
	partitions = normalizePartitions(partitions)
	if len(partitions) == 0 || subsetPartitions(partitions, g.initialized) && !overlapsPartitions(partitions, g.initializing) {
		return nil
	}
	for t := range partitions {
		if _, ok := g.stateTopicIDs[t]; !ok {
			g.stateTopicIDs[t] = g.topics[t].ID
		}
	}
	var recs []shareRecord
	g.write(&recs, g.stateRecord(subtractPartitions(g.initializing, partitions), unionPartitions(g.initialized, partitions)))
	return recs
}

// markUninitialized drops partitions from initializing, as Kafka's
// uninitializeShareGroupState does when initializing them failed, so
// that the next heartbeat asks for them again. It returns the records.
func (g *shareGroup) markUninitialized(partitions map[string][]int32) []shareRecord {
	if !overlapsPartitions(partitions, g.initializing) {
		return nil
	}
	var recs []shareRecord
	g.write(&recs, g.stateRecord(subtractPartitions(g.initializing, normalizePartitions(partitions)), g.initialized))
	return recs
}

// stateRecord returns the ShareGroupStatePartitionMetadata record with
// initializing and initialized as given and g's deleting topics.
func (g *shareGroup) stateRecord(initializing, initialized map[string][]int32) shareGroupStatePartitionMetadata {
	return shareGroupStatePartitionMetadata{GroupID: g.id, InitializingTopics: clonePartitions(initializing),
		InitializedTopics: clonePartitions(initialized), DeletingTopics: slices.Clone(g.deleting)}
}

// setTopics tells the group the topics that exist. The state of topics
// deleted since (or recreated: another id under the name) is forgotten;
// it returns the record that says so, if any. A change of the subscribed
// topics' partitions bumps the group epoch at the next heartbeat (or
// fence), which compares the metadata hash. The group keeps a copy of
// topics.
func (g *shareGroup) setTopics(topics map[string]TopicInfo) []shareRecord {
	g.topics = maps.Clone(topics)
	if g.topics == nil {
		g.topics = map[string]TopicInfo{}
	}
	gone := func(t string) bool {
		info, ok := g.topics[t]
		if !ok {
			return true
		}
		id, known := g.stateTopicIDs[t]
		if !known {
			g.stateTopicIDs[t] = info.ID
			return false
		}
		return id != info.ID
	}
	var dropped []string
	for _, t := range slices.Sorted(maps.Keys(unionPartitions(g.initializing, g.initialized))) {
		if gone(t) {
			dropped = append(dropped, t)
		}
	}
	if len(dropped) == 0 {
		return nil
	}
	keep := func(t string, _ int32) bool { return !slices.Contains(dropped, t) }
	var recs []shareRecord
	g.write(&recs, g.stateRecord(partitionsWhere(g.initializing, keep), partitionsWhere(g.initialized, keep)))
	for _, t := range dropped {
		delete(g.stateTopicIDs, t)
	}
	return recs
}

// learnTopicIDs notes the ids of the topics with share state, from
// topics, for a group just replayed: its records name topics by name, and
// the ids are what tells a topic recreated under its name from the one
// whose state the group has (see setTopics).
func (g *shareGroup) learnTopicIDs(topics map[string]TopicInfo) {
	for t := range unionPartitions(g.initializing, g.initialized) {
		if _, known := g.stateTopicIDs[t]; !known {
			if info, ok := topics[t]; ok {
				g.stateTopicIDs[t] = info.ID
			}
		}
	}
}

// fence removes member m and bumps the group epoch, as Kafka's
// shareGroupFenceMember does; the next heartbeat computes a target
// assignment without it.
func (g *shareGroup) fence(out *[]shareRecord, m *shareMember) {
	g.writeRemoveMember(out, m.id)
	g.write(out, shareGroupMetadata{GroupID: g.id, Epoch: g.groupEpoch + 1, MetadataHash: g.topicsHash(g.membersWith(nil, ""))})
}

// tick removes, at time now, the members whose session expired, bumping
// the group epoch for each, and returns the records.
func (g *shareGroup) tick(now time.Time) []shareRecord {
	var recs []shareRecord
	for _, id := range slices.Sorted(maps.Keys(g.members)) {
		if m := g.members[id]; !now.Before(m.sessionDeadline) {
			g.fence(&recs, m)
		}
	}
	return recs
}

// state returns the group's state: Empty without members, else Stable.
func (g *shareGroup) state() shareGroupState {
	if len(g.members) == 0 {
		return shareGroupEmpty
	}
	return shareGroupStable
}

// shareGroupDescription is a group as ShareGroupDescribe (API 77)
// describes it, plus its target assignment and share state, which Kafka
// keeps to itself.
type shareGroupDescription struct {
	GroupID         string
	State           shareGroupState
	GroupEpoch      int32
	AssignmentEpoch int32
	AssignorName    string
	// Members are sorted by member id.
	Members []shareMemberDescription
	// Initialized and Initializing are the partitions whose share-group
	// state is initialized and being initialized.
	Initialized, Initializing map[string][]int32
}

// shareMemberDescription is one member in a shareGroupDescription.
type shareMemberDescription struct {
	MemberID             string
	RackID               string
	ClientID             string
	ClientHost           string
	MemberEpoch          int32
	SubscribedTopicNames []string
	// Assignment is what the member has assigned; TargetAssignment what
	// the target gives it.
	Assignment       map[string][]int32
	TargetAssignment map[string][]int32
}

// describe returns the group's description. It shares nothing with g.
func (g *shareGroup) describe() shareGroupDescription {
	d := shareGroupDescription{
		GroupID: g.id, State: g.state(), GroupEpoch: g.groupEpoch, AssignmentEpoch: g.targetEpoch,
		AssignorName: simpleAssignorName, Initialized: clonePartitions(g.initialized), Initializing: clonePartitions(g.initializing),
	}
	for _, m := range g.membersWith(nil, "") {
		d.Members = append(d.Members, shareMemberDescription{
			MemberID: m.id, RackID: m.rackID, ClientID: m.clientID, ClientHost: m.clientHost, MemberEpoch: m.memberEpoch,
			SubscribedTopicNames: slices.Clone(m.subscribedTopicNames),
			Assignment:           clonePartitions(m.assigned), TargetAssignment: clonePartitions(g.target[m.id]),
		})
	}
	return d
}
